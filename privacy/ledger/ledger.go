package ledger

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/ptopofl/ptopofl/privacy"
)

// DefaultDelta is the δ a ledger without a budget reports its ε at: the
// campaigns' default dp_delta.
const DefaultDelta = 1e-5

// budgetSlack is how far above its budget a composed ε may come before a
// release is refused: plans meet a budget exactly in exact arithmetic (a
// campaign planned to ε = 10 composes to 10 up to the last bits of a root
// search), and those bits must not refuse it.
const budgetSlack = 1e-9

// Mechanisms a Release may name.
const (
	// Gaussian is Count Gaussian mechanisms, each with noise multiplier
	// Z (noise standard deviation over L2 sensitivity) on a Poisson
	// sample of the records at rate Q (1: every record): a DP-GD or
	// DP-SGD round, a noised descriptor, label summary or metrics
	// release. Params: "z", "q", "count".
	Gaussian = "gaussian"
)

// Splits of a site's data a release reads.
const (
	SplitTrain = "train"
	SplitTest  = "test"
)

// Release is one differentially private release of a site, as its ledger
// records it.
type Release struct {
	// ID names the release's noise (noise.Secret.ReleaseID of its key):
	// a retried activity releases the very same bytes under the same ID
	// and is charged once.
	ID string `json:"id"`
	// Data is the hex SHA-256 of the data the release reads (the split's
	// file or files), Split which split that is ("train" or "test").
	Data  string `json:"data"`
	Split string `json:"split"`
	// Campaign, Attempt, Round and Purpose say what the release was for
	// ("train", "descriptor", "label-summary", "metrics", ...).
	Campaign string `json:"campaign"`
	Attempt  int    `json:"attempt,omitempty"`
	Round    int    `json:"round"`
	Purpose  string `json:"purpose"`
	// Mechanism and Params say how it was made private (Gaussian and its
	// "z", "q", "count").
	Mechanism string             `json:"mechanism"`
	Params    map[string]float64 `json:"params"`
}

// GaussianParams returns the parameters of e as a Gaussian release's
// (Mechanism Gaussian, Params z, q, count).
func GaussianParams(e privacy.Event) map[string]float64 {
	return map[string]float64{"z": e.Z, "q": e.Q, "count": float64(e.Count)}
}

// Validate reports the first field of r that is missing or out of range,
// by name.
func (r Release) Validate() error {
	switch {
	case r.ID == "":
		return errors.New("release: no id")
	case r.Data == "":
		return errors.New("release: no data digest")
	case r.Split != SplitTrain && r.Split != SplitTest:
		return fmt.Errorf("release: split %q: want %q or %q", r.Split, SplitTrain, SplitTest)
	case r.Purpose == "":
		return errors.New("release: no purpose")
	}
	_, err := r.Events()
	return err
}

// Events returns what an accountant composes for r: for a Gaussian
// release, one privacy.Event. An unknown mechanism, or parameters out of
// range, is an error: a ledger that cannot compose a release must not
// report less than it holds.
func (r Release) Events() ([]privacy.Event, error) {
	switch r.Mechanism {
	case Gaussian:
		for _, k := range slices.Sorted(maps.Keys(r.Params)) {
			if k != "z" && k != "q" && k != "count" {
				return nil, fmt.Errorf("release %s: gaussian parameter %q: want z, q and count", r.Purpose, k)
			}
		}
		count := r.Params["count"]
		if count != math.Trunc(count) || count < 1 || count > math.MaxInt32 {
			return nil, fmt.Errorf("release %s: gaussian count %v: want a whole number ≥ 1", r.Purpose, count)
		}
		e := privacy.Event{Z: r.Params["z"], Q: r.Params["q"], Count: int(count)}
		if err := e.Validate(); err != nil {
			return nil, fmt.Errorf("release %s: gaussian %w", r.Purpose, err)
		}
		return []privacy.Event{e}, nil
	}
	return nil, fmt.Errorf("release %s: mechanism %q: this version composes only %q", r.Purpose, r.Mechanism, Gaussian)
}

// Budget is a site operator's lifetime limit: every data file's releases
// must stay (Epsilon, Delta)-DP.
type Budget struct {
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
}

// ParseBudget reads a budget as the worker's --privacy-budget gives it:
// "EPS" (δ DefaultDelta) or "EPS:DELTA", ε a positive finite number and δ
// in (0, 1).
func ParseBudget(s string) (Budget, error) {
	epsText, deltaText, hasDelta := strings.Cut(strings.TrimSpace(s), ":")
	b := Budget{Delta: DefaultDelta}
	var err error
	if b.Epsilon, err = strconv.ParseFloat(epsText, 64); err != nil {
		return Budget{}, fmt.Errorf("privacy budget %q: ε %q is not a number (want EPS or EPS:DELTA, e.g. 10 or 10:1e-6)", s, epsText)
	}
	if hasDelta {
		if b.Delta, err = strconv.ParseFloat(deltaText, 64); err != nil {
			return Budget{}, fmt.Errorf("privacy budget %q: δ %q is not a number (want EPS or EPS:DELTA, e.g. 10 or 10:1e-6)", s, deltaText)
		}
	}
	if err := b.Validate(); err != nil {
		return Budget{}, fmt.Errorf("privacy budget %q: %w", s, err)
	}
	return b, nil
}

// Validate reports an ε that is not a positive finite number or a δ
// outside (0, 1).
func (b Budget) Validate() error {
	switch {
	case !(b.Epsilon > 0) || math.IsInf(b.Epsilon, 1):
		return fmt.Errorf("ε = %v: must be a positive finite number", b.Epsilon)
	case !(b.Delta > 0 && b.Delta < 1):
		return fmt.Errorf("δ = %v: must be in (0, 1)", b.Delta)
	}
	return nil
}

// String prints b as ParseBudget reads it.
func (b Budget) String() string {
	return strconv.FormatFloat(b.Epsilon, 'g', -1, 64) + ":" + strconv.FormatFloat(b.Delta, 'g', -1, 64)
}

// Ledger is a site's ledger as replayed from its entries (Apply). The
// zero Ledger is empty and ready.
type Ledger struct {
	// Site is the header's site name.
	Site string
	// Secret is the fingerprint of the secret the site releases with
	// now (the last secret entry; "" before any).
	Secret string
	// Budget is the budget the site's worker last started with (nil:
	// none).
	Budget *Budget
	// Releases are the releases charged, in the order they were.
	Releases []Release

	header bool
	seen   map[string]bool // releaseKey → charged
	// spent caches each data file's composition at cachedDelta.
	spent       map[string]privacy.Spent
	cachedDelta float64
}

func releaseKey(r Release) string { return r.ID + "\x00" + r.Data }

// Apply replays one entry: the header first (once), then any of secret,
// budget and release entries. It fails, saying why, on an entry out of
// place or invalid; l is then unchanged.
func (l *Ledger) Apply(e Entry) error {
	if !l.header && e.Kind != KindHeader {
		return fmt.Errorf("entry %q before the header", e.Kind)
	}
	switch e.Kind {
	case KindHeader:
		if l.header {
			return errors.New("a second header")
		}
		if e.Format != Format {
			return fmt.Errorf("format %q: this version reads %q", e.Format, Format)
		}
		if e.Site == "" {
			return errors.New("header: no site")
		}
		l.header, l.Site = true, e.Site
	case KindSecret:
		if e.Fingerprint == "" {
			return errors.New("secret: no fingerprint")
		}
		l.Secret = e.Fingerprint
	case KindBudget:
		if e.Epsilon == 0 && e.Delta == 0 {
			l.Budget = nil
			return nil
		}
		b := Budget{Epsilon: e.Epsilon, Delta: e.Delta}
		if err := b.Validate(); err != nil {
			return fmt.Errorf("budget: %w", err)
		}
		l.Budget = &b
	case KindRelease:
		if e.Release == nil {
			return errors.New("release entry without a release")
		}
		r := *e.Release
		if err := r.Validate(); err != nil {
			return err
		}
		if l.seen[releaseKey(r)] {
			return nil // charged once; a duplicate line adds nothing
		}
		if l.seen == nil {
			l.seen = map[string]bool{}
		}
		l.seen[releaseKey(r)] = true
		l.Releases = append(l.Releases, r)
		delete(l.spent, r.Data)
	default:
		return fmt.Errorf("entry kind %q: want %s, %s, %s or %s", e.Kind, KindHeader, KindSecret, KindBudget, KindRelease)
	}
	return nil
}

// Charged reports whether r (its ID and data) is already in the ledger:
// the same release again, which costs nothing.
func (l *Ledger) Charged(r Release) bool { return l.seen[releaseKey(r)] }

// Spending reports whether the ledger holds any release.
func (l *Ledger) Spending() bool { return len(l.Releases) > 0 }

// Delta is the δ the ledger reports its ε at: its budget's, else
// DefaultDelta.
func (l *Ledger) Delta() float64 {
	if l.Budget != nil {
		return l.Budget.Delta
	}
	return DefaultDelta
}

// Compose returns the ε at delta of releases, all of them reading the
// same data: their events merged by noise multiplier and sampling rate
// and composed by privacy.Epsilon with the accountant that applies
// (exact Gaussian DP when every release reads every record, Rényi DP
// otherwise), as the campaign's accountant composes a split.
func Compose(releases []Release, delta float64) (privacy.Spent, error) {
	var events []privacy.Event
	for _, r := range releases {
		es, err := r.Events()
		if err != nil {
			return privacy.Spent{}, err
		}
		events = append(events, es...)
	}
	return privacy.Epsilon(merge(events), delta, privacy.Auto)
}

// merge adds up the counts of events with the same noise multiplier and
// sampling rate (the composition is the same, and a ledger of thousands
// of rounds stays a few events long for the accountant).
func merge(events []privacy.Event) []privacy.Event {
	var out []privacy.Event
	idx := map[[2]float64]int{}
	for _, e := range events {
		if e.Count == 0 {
			continue
		}
		k := [2]float64{e.Z, e.Q}
		if i, ok := idx[k]; ok {
			out[i].Count += e.Count
			continue
		}
		idx[k] = len(out)
		out = append(out, e)
	}
	return out
}

// dataSpent returns the composition of data's releases at delta, cached
// until a release on data is applied.
func (l *Ledger) dataSpent(data string, delta float64, extra []Release) (privacy.Spent, error) {
	if len(extra) == 0 && l.cachedDelta == delta {
		if s, ok := l.spent[data]; ok {
			return s, nil
		}
	}
	var rs []Release
	for _, r := range l.Releases {
		if r.Data == data {
			rs = append(rs, r)
		}
	}
	s, err := Compose(append(rs, extra...), delta)
	if err != nil || len(extra) > 0 {
		return s, err
	}
	if l.cachedDelta != delta || l.spent == nil {
		l.spent, l.cachedDelta = map[string]privacy.Spent{}, delta
	}
	l.spent[data] = s
	return s, nil
}

// ExceededError is Check's refusal: the releases would take the site's
// privacy loss on one data file to Epsilon, beyond Budget.
type ExceededError struct {
	Data, Split string
	// Before is the file's ε before the releases, Epsilon after.
	Before, Epsilon float64
	Budget          Budget
}

func (e *ExceededError) Error() string {
	split := "training"
	if e.Split == SplitTest {
		split = "test"
	}
	return fmt.Sprintf("the release would take the site's privacy loss on its %s data (sha256 %s) from ε = %.4g to ε = %.4g at δ = %g, beyond its operator's budget ε = %g",
		split, short(e.Data), e.Before, e.Epsilon, e.Budget.Delta, e.Budget.Epsilon)
}

func short(digest string) string {
	if len(digest) > 12 {
		return digest[:12] + "…"
	}
	return digest
}

// Check returns the releases of rs not yet charged (a retry's are free)
// and refuses them, with an *ExceededError, when composing them with the
// ledger would take any data file's ε at b.Delta beyond b.Epsilon (b nil:
// no limit, nothing refused). It charges nothing.
func (l *Ledger) Check(rs []Release, b *Budget) (fresh []Release, err error) {
	for _, r := range rs {
		if err := r.Validate(); err != nil {
			return nil, err
		}
		if !l.Charged(r) && !slices.ContainsFunc(fresh, func(f Release) bool { return releaseKey(f) == releaseKey(r) }) {
			fresh = append(fresh, r)
		}
	}
	if b == nil || len(fresh) == 0 {
		return fresh, nil
	}
	byData := map[string][]Release{}
	var order []string
	for _, r := range fresh {
		if _, ok := byData[r.Data]; !ok {
			order = append(order, r.Data)
		}
		byData[r.Data] = append(byData[r.Data], r)
	}
	for _, d := range order {
		before, err := l.dataSpent(d, b.Delta, nil)
		if err != nil {
			return nil, err
		}
		after, err := l.dataSpent(d, b.Delta, byData[d])
		if err != nil {
			return nil, err
		}
		if after.Epsilon > b.Epsilon*(1+budgetSlack) {
			return nil, &ExceededError{Data: d, Split: byData[d][0].Split, Before: before.Epsilon, Epsilon: after.Epsilon, Budget: *b}
		}
	}
	return fresh, nil
}

// DataSpend is what the releases from one data file spent.
type DataSpend struct {
	Data, Split string
	Releases    int
	Spent       privacy.Spent
}

// CampaignSpend is the ε of one campaign's releases alone (the largest
// over the data files it read), in the order the campaigns first released.
type CampaignSpend struct {
	Campaign string  `json:"campaign"`
	Epsilon  float64 `json:"epsilon"`
}

// Summary is what a ledger has spent, at its Delta.
type Summary struct {
	Site string
	// Epsilon is the site's lifetime ε: the largest over its data files
	// (a record is in one file only: parallel composition).
	Epsilon, Delta float64
	Budget         *Budget
	Releases       int
	Data           []DataSpend
	Campaigns      []CampaignSpend
}

// Epsilon returns the site's lifetime ε at the ledger's Delta, the
// largest over its data files (0 for none).
func (l *Ledger) Epsilon() (float64, error) {
	delta := l.Delta()
	eps := 0.0
	seen := map[string]bool{}
	for _, r := range l.Releases {
		if seen[r.Data] {
			continue
		}
		seen[r.Data] = true
		s, err := l.dataSpent(r.Data, delta, nil)
		if err != nil {
			return 0, err
		}
		eps = max(eps, s.Epsilon)
	}
	return eps, nil
}

// Summary composes the whole ledger at its Delta: per data file, per
// campaign and for the site.
func (l *Ledger) Summary() (Summary, error) {
	delta := l.Delta()
	s := Summary{Site: l.Site, Delta: delta, Budget: l.Budget, Releases: len(l.Releases), Data: []DataSpend{}, Campaigns: []CampaignSpend{}}
	type group struct {
		key  string
		rels []Release
	}
	groups := func(key func(Release) string) []group {
		var out []group
		idx := map[string]int{}
		for _, r := range l.Releases {
			k := key(r)
			i, ok := idx[k]
			if !ok {
				i = len(out)
				idx[k] = i
				out = append(out, group{key: k})
			}
			out[i].rels = append(out[i].rels, r)
		}
		return out
	}
	for _, g := range groups(func(r Release) string { return r.Data }) {
		spent, err := l.dataSpent(g.key, delta, nil)
		if err != nil {
			return Summary{}, err
		}
		s.Data = append(s.Data, DataSpend{Data: g.key, Split: g.rels[0].Split, Releases: len(g.rels), Spent: spent})
		s.Epsilon = max(s.Epsilon, spent.Epsilon)
	}
	for _, g := range groups(func(r Release) string { return r.Campaign }) {
		c := CampaignSpend{Campaign: g.key}
		byData := map[string][]Release{}
		var order []string
		for _, r := range g.rels {
			if _, ok := byData[r.Data]; !ok {
				order = append(order, r.Data)
			}
			byData[r.Data] = append(byData[r.Data], r)
		}
		for _, d := range order {
			spent, err := Compose(byData[d], delta)
			if err != nil {
				return Summary{}, err
			}
			c.Epsilon = max(c.Epsilon, spent.Epsilon)
		}
		s.Campaigns = append(s.Campaigns, c)
	}
	slices.SortStableFunc(s.Data, func(a, b DataSpend) int { return cmp.Compare(splitOrder(a.Split), splitOrder(b.Split)) })
	return s, nil
}

func splitOrder(s string) int {
	if s == SplitTrain {
		return 0
	}
	return 1
}
