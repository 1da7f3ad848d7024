package ledger

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/privacy"
)

const tol = 1e-9

// gaussian is a test release of count Gaussian mechanisms at z and q.
func gaussian(id, data, split, campaign string, round int, z, q float64, count int) Release {
	return Release{ID: id, Data: data, Split: split, Campaign: campaign, Round: round, Purpose: "train",
		Mechanism: Gaussian, Params: GaussianParams(privacy.Event{Z: z, Q: q, Count: count})}
}

func newLedger(t *testing.T) *Ledger {
	t.Helper()
	var l Ledger
	if err := l.Apply(Entry{Kind: KindHeader, Format: Format, Site: "site0"}); err != nil {
		t.Fatal(err)
	}
	return &l
}

func charge(t *testing.T, l *Ledger, rs ...Release) {
	t.Helper()
	for _, r := range rs {
		if err := l.Apply(Entry{Kind: KindRelease, Release: &r}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestParseBudget(t *testing.T) {
	for i, c := range []struct {
		in   string
		want Budget
		err  string
	}{
		{"10", Budget{10, 1e-5}, ""},            // 0: δ defaults to the campaigns' dp_delta
		{"8:1e-6", Budget{8, 1e-6}, ""},         // 1
		{" 2.5:0.001 ", Budget{2.5, 0.001}, ""}, // 2
		{"", Budget{}, "is not a number"},       // 3
		{"ten", Budget{}, `ε "ten"`},            // 4
		{"10:x", Budget{}, `δ "x"`},             // 5
		{"0", Budget{}, "ε = 0"},                // 6
		{"-1", Budget{}, "ε = -1"},              // 7
		{"+Inf", Budget{}, "ε = +Inf"},          // 8
		{"10:1", Budget{}, "δ = 1"},             // 9
		{"10:0", Budget{}, "δ = 0"},             // 10
	} {
		got, err := ParseBudget(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%d: %q: err %v, want one saying %q", i, c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%d: %q: %+v, %v; want %+v", i, c.in, got, err, c.want)
		}
		if back, err := ParseBudget(got.String()); err != nil || back != got {
			t.Errorf("%d: %q does not read back: %+v, %v", i, got.String(), back, err)
		}
	}
}

// TestLifetimeOfThreeCampaigns: three campaigns each planned to ε = 6 at
// δ = 1e-5 on every record (Gaussian DP, μ_c = GaussianMu(6, δ) each)
// compose exactly to μ = √k·μ_c: ε 6, 9.0973 and 11.6861 after one, two
// and three (privacy.GaussianEpsilon of √2·μ_c and √3·μ_c, the issue's
// "about 6, 9.1 and 11.7"); the composition is the campaign accountant's
// (privacy.Epsilon of the merged events), per campaign and per data file.
func TestLifetimeOfThreeCampaigns(t *testing.T) {
	muC, err := privacy.GaussianMu(6, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	// 15 rounds of 30 steps at z = √450/μ_c spend exactly μ_c.
	z := math.Sqrt(450) / muC
	l := newLedger(t)
	want := []float64{6, 9.097254875407089, 11.686134464718634} // GaussianEpsilon(√k μ_c, 1e-5), computed by privacy
	for k := 1; k <= 3; k++ {
		c := fmt.Sprintf("c%d", k)
		for r := 1; r <= 15; r++ {
			charge(t, l, gaussian(fmt.Sprintf("%s/%d", c, r), "d-train", SplitTrain, c, r, z, 1, 30))
		}
		got, err := l.Epsilon()
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-want[k-1]) > 1e-6 {
			t.Errorf("after %d campaigns: ε = %v, want %v", k, got, want[k-1])
		}
	}
	s, err := l.Summary()
	if err != nil {
		t.Fatal(err)
	}
	if s.Releases != 45 || len(s.Campaigns) != 3 || len(s.Data) != 1 || s.Delta != 1e-5 || s.Budget != nil {
		t.Fatalf("summary %+v", s)
	}
	for _, c := range s.Campaigns {
		if math.Abs(c.Epsilon-6) > 1e-6 {
			t.Errorf("campaign %s alone: ε = %v, want 6", c.Campaign, c.Epsilon)
		}
	}
	if s.Data[0].Spent.Accountant != privacy.GDP || math.Abs(s.Epsilon-want[2]) > 1e-6 {
		t.Errorf("data %+v, site ε %v", s.Data[0], s.Epsilon)
	}
}

// TestParallelComposition: the site's ε is the largest of its data files'
// (a record is in one file only); a release of another data file adds
// nothing to the first's; Poisson-subsampled releases are composed by RDP
// as privacy.Epsilon composes them.
func TestParallelComposition(t *testing.T) {
	l := newLedger(t)
	charge(t, l,
		gaussian("a", "train-d", SplitTrain, "c", 1, 2, 1, 10),
		gaussian("b", "test-d", SplitTest, "c", 1, 5, 1, 10),
		gaussian("c", "train-d", SplitTrain, "d", 1, 1.1, 0.01, 1000),
	)
	train, _ := privacy.Epsilon([]privacy.Event{{Z: 2, Q: 1, Count: 10}, {Z: 1.1, Q: 0.01, Count: 1000}}, 1e-5, privacy.Auto)
	test, _ := privacy.Epsilon([]privacy.Event{{Z: 5, Q: 1, Count: 10}}, 1e-5, privacy.Auto)
	s, err := l.Summary()
	if err != nil {
		t.Fatal(err)
	}
	if train.Accountant != privacy.RDP || math.Abs(s.Epsilon-max(train.Epsilon, test.Epsilon)) > tol {
		t.Errorf("site ε %v, want max(%v, %v)", s.Epsilon, train.Epsilon, test.Epsilon)
	}
	if len(s.Data) != 2 || s.Data[0].Split != SplitTrain || math.Abs(s.Data[1].Spent.Epsilon-test.Epsilon) > tol {
		t.Errorf("data %+v", s.Data)
	}
	// Campaign d alone read the training file once, subsampled.
	d, _ := privacy.Epsilon([]privacy.Event{{Z: 1.1, Q: 0.01, Count: 1000}}, 1e-5, privacy.Auto)
	if s.Campaigns[1].Campaign != "d" || math.Abs(s.Campaigns[1].Epsilon-d.Epsilon) > tol {
		t.Errorf("campaigns %+v, want d at %v", s.Campaigns, d.Epsilon)
	}
}

// TestCheck: a release already charged (same ID, same data) is free even
// beyond the budget; the same ID on other data is a new release; a release
// that would pass the budget is refused with the data, the split and the
// ε before and after; without a budget nothing is refused.
func TestCheck(t *testing.T) {
	l := newLedger(t)
	first := gaussian("r1", "d", SplitTest, "c", 1, 1, 1, 1)
	charge(t, l, first)
	one, _ := privacy.Epsilon([]privacy.Event{{Z: 1, Q: 1, Count: 1}}, 1e-5, privacy.GDP)
	tight := &Budget{Epsilon: one.Epsilon * (1 + 1e-12), Delta: 1e-5}

	fresh, err := l.Check([]Release{first, first}, tight)
	if err != nil || len(fresh) != 0 {
		t.Errorf("a retry: fresh %v, err %v; want it free", fresh, err)
	}
	second := first
	second.ID = "r2"
	_, err = l.Check([]Release{first, second}, tight)
	var ex *ExceededError
	if !errors.As(err, &ex) || ex.Split != SplitTest || ex.Data != "d" || math.Abs(ex.Before-one.Epsilon) > tol || !(ex.Epsilon > ex.Before) {
		t.Fatalf("beyond the budget: %v (%+v)", err, ex)
	}
	if !strings.Contains(err.Error(), "beyond its operator's budget") {
		t.Errorf("refusal text %q", err)
	}
	if fresh, err := l.Check([]Release{second}, nil); err != nil || len(fresh) != 1 {
		t.Errorf("no budget: fresh %v, err %v", fresh, err)
	}
	other := first
	other.Data = "d2" // the same noise key on other data: other bytes
	if fresh, err := l.Check([]Release{other}, tight); err != nil || len(fresh) != 1 {
		t.Errorf("another data file: fresh %v, err %v", fresh, err)
	}
	if l.Spending() != true || len(l.Releases) != 1 {
		t.Errorf("Check charged something: %d releases", len(l.Releases))
	}
	// Applying a duplicate line adds nothing.
	charge(t, l, first)
	if len(l.Releases) != 1 {
		t.Errorf("a duplicate entry was charged twice")
	}
}

func TestApplyErrors(t *testing.T) {
	good := gaussian("id", "d", SplitTrain, "c", 1, 1, 1, 1)
	bad := func(f func(*Release)) *Release {
		r := good
		r.Params = GaussianParams(privacy.Event{Z: 1, Q: 1, Count: 1})
		f(&r)
		return &r
	}
	for i, c := range []struct {
		pre  bool // apply a header first
		e    Entry
		want string
	}{
		{false, Entry{Kind: KindRelease, Release: &good}, "before the header"},                                  // 0
		{false, Entry{Kind: KindHeader, Format: "other v9", Site: "s"}, `format "other v9"`},                    // 1
		{false, Entry{Kind: KindHeader, Format: Format}, "no site"},                                             // 2
		{true, Entry{Kind: KindHeader, Format: Format, Site: "s"}, "a second header"},                           // 3
		{true, Entry{Kind: "odometer"}, `entry kind "odometer"`},                                                // 4
		{true, Entry{Kind: KindSecret}, "no fingerprint"},                                                       // 5
		{true, Entry{Kind: KindBudget, Epsilon: -1, Delta: 1e-5}, "budget: ε = -1"},                             // 6
		{true, Entry{Kind: KindRelease}, "without a release"},                                                   // 7
		{true, Entry{Kind: KindRelease, Release: bad(func(r *Release) { r.ID = "" })}, "no id"},                 // 8
		{true, Entry{Kind: KindRelease, Release: bad(func(r *Release) { r.Split = "val" })}, `split "val"`},     // 9
		{true, Entry{Kind: KindRelease, Release: bad(func(r *Release) { r.Mechanism = "laplace" })}, "laplace"}, // 10
		{true, Entry{Kind: KindRelease, Release: bad(func(r *Release) { r.Params["count"] = 1.5 })}, "count"},   // 11
		{true, Entry{Kind: KindRelease, Release: bad(func(r *Release) { r.Params["z"] = 0 })}, "Z = 0"},         // 12
		{true, Entry{Kind: KindRelease, Release: bad(func(r *Release) { r.Params["k"] = 1 })}, `parameter "k"`}, // 13
		{true, Entry{Kind: KindRelease, Release: bad(func(r *Release) { r.Data = "" })}, "no data"},             // 14
	} {
		var l Ledger
		if c.pre {
			l.Apply(Entry{Kind: KindHeader, Format: Format, Site: "s"})
		}
		if err := l.Apply(c.e); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d: err %v, want one saying %q", i, err, c.want)
		}
	}
}

// TestBudgetAndSecretEntries: the last budget entry is the ledger's (an
// empty one: none), its δ the one ε is reported at; the last secret entry
// names the secret in use.
func TestBudgetAndSecretEntries(t *testing.T) {
	l := newLedger(t)
	for _, e := range []Entry{
		{Kind: KindSecret, Fingerprint: "aa"}, {Kind: KindBudget, Epsilon: 10, Delta: 1e-6},
		{Kind: KindSecret, Fingerprint: "bb"},
	} {
		if err := l.Apply(e); err != nil {
			t.Fatal(err)
		}
	}
	if l.Secret != "bb" || l.Budget == nil || *l.Budget != (Budget{10, 1e-6}) || l.Delta() != 1e-6 {
		t.Errorf("secret %q, budget %+v, δ %v", l.Secret, l.Budget, l.Delta())
	}
	l.Apply(Entry{Kind: KindBudget})
	if l.Budget != nil || l.Delta() != DefaultDelta {
		t.Errorf("after an empty budget entry: %+v, δ %v", l.Budget, l.Delta())
	}
}

// TestParse: entries round-trip through Encode; a last line cut short by a
// crash is left out and complete stops before it; a complete line that
// does not parse names its line.
func TestParse(t *testing.T) {
	r := gaussian("id", "d", SplitTrain, "c", 1, 2, 0.5, 3)
	var file []byte
	for _, e := range []Entry{{Kind: KindHeader, Format: Format, Site: "s"}, {Kind: KindSecret, Fingerprint: "ab"}, {Kind: KindRelease, Release: &r}} {
		b, err := Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		file = append(file, b...)
	}
	entries, complete, err := Parse(file, 1)
	if err != nil || len(entries) != 3 || complete != len(file) {
		t.Fatalf("%d entries, complete %d of %d, err %v", len(entries), complete, len(file), err)
	}
	if got := entries[2].Release; got == nil || got.Params["q"] != 0.5 || got.Params["count"] != 3 || got.ID != "id" {
		t.Errorf("release read back as %+v", got)
	}
	torn := append(file[:len(file):len(file)], []byte(`{"kind":"release","rel`)...)
	entries, complete, err = Parse(torn, 1)
	if err != nil || len(entries) != 3 || complete != len(file) {
		t.Errorf("torn tail: %d entries, complete %d (want %d), err %v", len(entries), complete, len(file), err)
	}
	broken := append(file[:len(file):len(file)], []byte("{not json}\n")...)
	if _, _, err := Parse(broken, 1); err == nil || !strings.Contains(err.Error(), "line 4") {
		t.Errorf("a broken line: err %v, want one naming line 4", err)
	}
}
