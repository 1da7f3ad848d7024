package secagg

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// run is one simulated run of the protocol: members, their inputs, and the
// members that drop before each stage.
type run struct {
	g       *Group
	members map[string]*Member
	x       map[string][]float64
	// dropped before advertising keys, before sharing them, before
	// sending the masked input, before revealing shares.
	dropAdvertise, dropShare, dropMask, dropUnmask map[string]bool

	tr      Transcript
	inboxes map[string]map[string][]byte
}

func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("site%d", i)
	}
	return out
}

func seedOf(name string) [32]byte { return sha256.Sum256([]byte("seed of " + name)) }

func newRun(t *testing.T, n, dim int, cfg Config) *run {
	t.Helper()
	g, err := NewGroup(Context{Campaign: "c", Attempt: 1, Round: 3, Group: "cluster-0"}, names(n), cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := &run{g: g, members: map[string]*Member{}, x: map[string][]float64{},
		dropAdvertise: map[string]bool{}, dropShare: map[string]bool{}, dropMask: map[string]bool{}, dropUnmask: map[string]bool{}}
	rnd := rand.New(rand.NewPCG(uint64(n), uint64(dim)))
	for _, name := range g.Members() {
		m, err := g.Member(name, seedOf(name))
		if err != nil {
			t.Fatal(err)
		}
		r.members[name] = m
		x := make([]float64, dim)
		for i := range x {
			x[i] = rnd.NormFloat64()
		}
		r.x[name] = x
	}
	return r
}

// play runs the four stages, leaving out the members dropped before each.
func (r *run) play() ([]float64, error) {
	r.tr = Transcript{Public: map[string]PublicKeys{}, Masked: map[string][]uint64{}}
	for _, name := range r.g.Members() {
		if !r.dropAdvertise[name] {
			r.tr.Public[name] = r.members[name].PublicKeys()
		}
	}
	r.inboxes = map[string]map[string][]byte{}
	for _, name := range r.g.Members() {
		if r.dropAdvertise[name] || r.dropShare[name] {
			continue
		}
		out, err := r.members[name].ShareKeys(r.tr.Public)
		if err != nil {
			return nil, err
		}
		r.tr.Shared = append(r.tr.Shared, name)
		for to, ct := range out {
			if r.inboxes[to] == nil {
				r.inboxes[to] = map[string][]byte{}
			}
			r.inboxes[to][name] = ct
		}
	}
	for _, name := range r.tr.Shared {
		if r.dropMask[name] {
			continue
		}
		y, _, err := r.members[name].MaskInput(r.x[name], r.tr.Public, r.tr.Shared)
		if err != nil {
			return nil, err
		}
		r.tr.Masked[name] = y
	}
	survivors, dropped := r.tr.Survivors(), r.tr.Dropped()
	if err := r.g.CheckUnmask(r.tr.Shared, survivors); err != nil {
		return nil, err
	}
	for _, name := range survivors {
		if r.dropUnmask[name] {
			continue
		}
		rv, err := r.members[name].Unmask(r.tr.Public, r.inboxes[name], survivors, dropped)
		if err != nil {
			return nil, err
		}
		r.tr.Reveals = append(r.tr.Reveals, rv)
	}
	return r.g.Aggregate(r.tr)
}

// plainSum is the survivors' sum computed in the clear from the same
// quantised values (the member's own rounding stream), dequantised: what
// secure aggregation must return bit for bit.
func (r *run) plainSum(t *testing.T) []float64 {
	t.Helper()
	cfg := r.g.Config()
	var sum []uint64
	for _, name := range r.tr.Survivors() {
		m := r.members[name]
		q, _, err := Quantize(r.x[name], cfg.Clip, cfg.QuantBits, drbg(m.derive("rounding")))
		if err != nil {
			t.Fatal(err)
		}
		if sum == nil {
			sum = make([]uint64, len(q))
		}
		for i, v := range q {
			sum[i] = (sum[i] + v) & cfg.mask()
		}
	}
	return Dequantize(sum, len(r.tr.Survivors()), cfg.Clip, cfg.QuantBits)
}

// exactSum is the survivors' sum of the unquantised inputs.
func (r *run) exactSum() []float64 {
	var sum []float64
	for _, name := range r.tr.Survivors() {
		if sum == nil {
			sum = make([]float64, len(r.x[name]))
		}
		for i, v := range r.x[name] {
			sum[i] += v
		}
	}
	return sum
}

func maxAbsDiff(a, b []float64) float64 {
	d := 0.0
	for i := range a {
		d = max(d, math.Abs(a[i]-b[i]))
	}
	return d
}

func TestDefaults(t *testing.T) {
	for i, c := range []struct{ n, k, t int }{
		// k = 2⌈log₂ n⌉ + 1 capped at n; t = ⌈2k/3⌉ (Flower's example: 2 of 3).
		{2, 2, 2},   // 0
		{3, 3, 2},   // 1: Flower's example, 2 of 3
		{5, 5, 4},   // 2: 2·3+1 = 7 ≥ 5
		{8, 7, 5},   // 3: 2·3+1
		{9, 9, 6},   // 4: 2·4+1 = 9
		{50, 13, 9}, // 5: 2·6+1
		{200, 17, 12},
	} {
		if k := DefaultShares(c.n); k != c.k {
			t.Errorf("%d: DefaultShares(%d) = %d, want %d", i, c.n, k, c.k)
		}
		if th := DefaultThreshold(c.k); th != c.t {
			t.Errorf("%d: DefaultThreshold(%d) = %d, want %d", i, c.k, th, c.t)
		}
	}
}

func TestNeighbourGraph(t *testing.T) {
	for _, n := range []int{3, 8, 50, 200} {
		g, err := NewGroup(Context{Campaign: "c", Round: 1, Group: "global"}, names(n), Config{})
		if err != nil {
			t.Fatal(err)
		}
		k := g.Config().Shares
		for _, m := range g.Members() {
			nb := g.Neighbours(m)
			if len(nb) != k || !slices.Contains(nb, m) {
				t.Fatalf("n=%d: %s has %d neighbours (itself included: %v), want %d", n, m, len(nb), slices.Contains(nb, m), k)
			}
			for _, v := range nb {
				if !slices.Contains(g.Neighbours(v), m) {
					t.Fatalf("n=%d: %s neighbours %s but not the reverse", n, m, v)
				}
			}
		}
		// The ring is drawn from the Context: another round, another ring;
		// the same Context, the same ring.
		g2, _ := NewGroup(Context{Campaign: "c", Round: 1, Group: "global"}, names(n), Config{})
		g3, _ := NewGroup(Context{Campaign: "c", Round: 2, Group: "global"}, names(n), Config{})
		if !slices.Equal(g.ring, g2.ring) {
			t.Fatalf("n=%d: the same Context placed the members differently", n)
		}
		if n > 3 && slices.Equal(g.ring, g3.ring) {
			t.Fatalf("n=%d: two rounds placed the members alike", n)
		}
	}
}

func TestNewGroupRefuses(t *testing.T) {
	ctx := Context{Campaign: "c", Round: 1, Group: "g"}
	for i, c := range []struct {
		members []string
		cfg     Config
		want    string
	}{
		{names(1), Config{}, "at least 2"},                                   // 0
		{[]string{"a", "a", "b"}, Config{}, "given twice"},                   // 1
		{names(8), Config{Shares: 4}, "must be odd"},                         // 2
		{names(8), Config{Shares: 9}, "between 2 and the group's size 8"},    // 3
		{names(8), Config{Threshold: 8}, "between 1 and shares 7"},           // 4
		{names(8), Config{Clip: math.Inf(1)}, "positive number"},             // 5
		{names(8), Config{QuantBits: 32}, "between 1 and 31"},                // 6
		{names(1100), Config{Shares: 5}, "can exceed the modulus 2³²"},       // 7: 1100·(2²²−1) ≥ 2³²
		{[]string{"a", ""}, Config{}, "a member without a name"},             // 8
		{names(3), Config{Shares: 3, Threshold: -1}, "between 1 and shares"}, // 9
		{names(8), Config{ModulusBits: 48}, "must be 32 or 64"},              // 10
		{names(8), Config{ModulusBits: 64, QuantBits: 60}, "between 1 and 52"},
		{names(5000), Config{Shares: 5, ModulusBits: 64, QuantBits: 52}, "can exceed the modulus 2⁶⁴"}, // 12: 5000·(2⁵²−1) ≥ 2⁶⁴
	} {
		_, err := NewGroup(ctx, c.members, c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d: NewGroup: %v, want an error containing %q", i, err, c.want)
		}
	}
}

// TestSumEqualsPlain: the unmasked sum equals, bit for bit, the sum of the
// same quantised inputs computed in the clear, and the unquantised sum
// within the quantisation error (n members' rounding, each below one step).
func TestSumEqualsPlain(t *testing.T) {
	for _, c := range []struct{ n, dim int }{{3, 10}, {8, 257}, {50, 64}} {
		r := newRun(t, c.n, c.dim, Config{})
		got, err := r.play()
		if err != nil {
			t.Fatalf("n=%d: %v", c.n, err)
		}
		if want := r.plainSum(t); !slices.Equal(got, want) {
			t.Fatalf("n=%d: secure sum differs from the plain quantised sum by %g", c.n, maxAbsDiff(got, want))
		}
		step := 2 * DefaultClip / float64(1<<DefaultQuantBits-1)
		if d := maxAbsDiff(got, r.exactSum()); d > float64(c.n)*step {
			t.Fatalf("n=%d: secure sum is %g from the exact sum, more than n steps %g", c.n, d, float64(c.n)*step)
		}
	}
}

// TestDropouts drops members before each stage, up to what the threshold
// tolerates: the sum is the survivors'.
func TestDropouts(t *testing.T) {
	for i, c := range []struct {
		stage string
		drop  []string
	}{
		{"advertise", []string{"site2"}}, // 0
		{"share", []string{"site5"}},     // 1
		{"mask", []string{"site1"}},      // 2: its pairwise masks are removed with its reconstructed key
		{"mask", []string{"site1", "site6"}},
		{"unmask", []string{"site3"}}, // 4: its input counts; others reveal its self mask
		{"unmask", []string{"site0", "site7"}},
	} {
		r := newRun(t, 8, 33, Config{})
		for _, d := range c.drop {
			map[string]map[string]bool{"advertise": r.dropAdvertise, "share": r.dropShare, "mask": r.dropMask, "unmask": r.dropUnmask}[c.stage][d] = true
		}
		got, err := r.play()
		if err != nil {
			t.Fatalf("%d: dropping %v before %s: %v", i, c.drop, c.stage, err)
		}
		survivors := r.tr.Survivors()
		for _, d := range c.drop {
			if c.stage != "unmask" && slices.Contains(survivors, d) {
				t.Fatalf("%d: %s dropped before %s but counts as a survivor", i, d, c.stage)
			}
		}
		if want := r.plainSum(t); !slices.Equal(got, want) {
			t.Fatalf("%d: dropping %v before %s: the sum differs from the survivors' by %g", i, c.drop, c.stage, maxAbsDiff(got, want))
		}
	}
}

// TestTooManyDropouts: beyond the threshold the run fails with ErrTooFew,
// at the stage where it can no longer finish.
func TestTooManyDropouts(t *testing.T) {
	// n = 8, k = 7, t = 5: a member needs 5 of its 7 share holders.
	r := newRun(t, 8, 5, Config{})
	for _, d := range []string{"site0", "site1", "site2"} {
		r.dropShare[d] = true
	}
	if _, err := r.play(); !errors.Is(err, ErrTooFew) {
		t.Fatalf("3 of 8 dropped before sharing with t = 5 of k = 7: %v, want ErrTooFew", err)
	}
	r = newRun(t, 8, 5, Config{})
	for _, d := range []string{"site1", "site3", "site5", "site7"} {
		r.dropUnmask[d] = true
	}
	if _, err := r.play(); !errors.Is(err, ErrTooFew) {
		t.Fatalf("4 of 8 silent at unmasking with t = 5: %v, want ErrTooFew", err)
	}
}

// TestServerCannotIsolateAMember plays the server that wants one member's
// input: with everything it holds (the transcript, every self mask
// reconstructed), taking one survivor's masked input out of the sum does
// not give the others' sum, and a survivor's masked input minus its self
// mask is not its quantised input: the pairwise masks with surviving
// neighbours, whose secrets are never revealed, still hide it.
func TestServerCannotIsolateAMember(t *testing.T) {
	r := newRun(t, 8, 200, Config{})
	if _, err := r.play(); err != nil {
		t.Fatal(err)
	}
	victim := "site4"
	// 1. Unmask the transcript without the victim's masked input.
	tr := r.tr
	tr.Masked = map[string][]uint64{}
	for m, y := range r.tr.Masked {
		if m != victim {
			tr.Masked[m] = y
		}
	}
	tr.Shared = slices.DeleteFunc(slices.Clone(r.tr.Shared), func(s string) bool { return s == victim })
	tr.Reveals = nil
	for _, rv := range r.tr.Reveals {
		if rv.From == victim {
			continue
		}
		self := map[string][]byte{}
		for o, b := range rv.Self {
			if o != victim {
				self[o] = b
			}
		}
		rv.Self = self
		tr.Reveals = append(tr.Reveals, rv)
	}
	got, err := r.g.Aggregate(tr)
	if err != nil {
		t.Fatalf("unmasking the others: %v", err)
	}
	others := r.plainSum(t)
	for i := range others {
		others[i] -= r.x[victim][i]
	}
	if d := maxAbsDiff(got, others); d < 1 {
		t.Fatalf("unmasking without %s gave the others' sum (within %g)", victim, d)
	}
	// 2. Remove the victim's self mask from its masked input.
	cfg := r.g.Config()
	y := slices.Clone(r.tr.Masked[victim])
	key, err := r.members[victim].selfMaskKey()
	if err != nil {
		t.Fatal(err)
	}
	addMask(y, key, -1, cfg.ModulusBits)
	q, _, _ := Quantize(r.x[victim], cfg.Clip, cfg.QuantBits, drbg(r.members[victim].derive("rounding")))
	same := 0
	for i := range y {
		if y[i] == q[i] {
			same++
		}
	}
	if same > 2 {
		t.Fatalf("%d of %d coordinates of %s's input show through without its pairwise masks", same, len(y), victim)
	}
}

// TestDisconnectedSurvivorsRefused: with k = 3 on a ring of 8, two
// dropouts on opposite sides cut the survivors in two; unmasking would give
// each part's sum, so the server's check refuses.
func TestDisconnectedSurvivorsRefused(t *testing.T) {
	g, err := NewGroup(Context{Campaign: "c", Round: 1, Group: "g"}, names(8), Config{Shares: 3, Threshold: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Members at ring positions 0 and 4 drop.
	a, b := g.members[g.ring[0]], g.members[g.ring[4]]
	var survivors []string
	for _, m := range g.Members() {
		if m != a && m != b {
			survivors = append(survivors, m)
		}
	}
	if err := g.CheckUnmask(g.Members(), survivors); !errors.Is(err, ErrTooFew) || !strings.Contains(err.Error(), "2 parts") {
		t.Fatalf("survivors in two parts: %v, want ErrTooFew naming 2 parts", err)
	}
}

// TestUnmaskRefusesBoth: a member asked to reveal both secrets of one
// neighbour refuses and reveals nothing.
func TestUnmaskRefusesBoth(t *testing.T) {
	r := newRun(t, 5, 4, Config{})
	if _, err := r.play(); err != nil {
		t.Fatal(err)
	}
	m := r.members["site0"]
	nb := r.g.Neighbours("site0")
	other := nb[0]
	if other == "site0" {
		other = nb[1]
	}
	_, err := m.Unmask(r.tr.Public, r.inboxes["site0"], []string{"site0", other}, []string{other})
	if err == nil || !strings.Contains(err.Error(), "both a survivor and dropped") {
		t.Fatalf("asked for both of %s's secrets: %v", other, err)
	}
}

// TestTamperedShareDetected: a reveal whose share was altered reconstructs
// a secret the owner did not commit to, and the server says whose.
func TestTamperedShareDetected(t *testing.T) {
	r := newRun(t, 5, 4, Config{})
	if _, err := r.play(); err != nil {
		t.Fatal(err)
	}
	tr := r.tr
	tr.Reveals = slices.Clone(r.tr.Reveals)
	rv := tr.Reveals[0]
	self := map[string][]byte{}
	for o, b := range rv.Self {
		b = slices.Clone(b)
		b[len(b)-1] ^= 1
		self[o] = b
	}
	rv.Self = self
	tr.Reveals[0] = rv
	if _, err := r.g.Aggregate(tr); err == nil || !strings.Contains(err.Error(), "did not commit to") {
		t.Fatalf("altered share: %v", err)
	}
}

// TestDeterministic: a stage run again from the same seed sends the same
// bytes (a retried activity), and another round's keys differ.
func TestDeterministic(t *testing.T) {
	r1, r2 := newRun(t, 5, 16, Config{}), newRun(t, 5, 16, Config{})
	if _, err := r1.play(); err != nil {
		t.Fatal(err)
	}
	if _, err := r2.play(); err != nil {
		t.Fatal(err)
	}
	for _, m := range r1.g.Members() {
		if !slices.Equal(r1.tr.Masked[m], r2.tr.Masked[m]) {
			t.Fatalf("%s's masked input differs between two runs from one seed", m)
		}
		for to, ct := range r1.inboxes[m] {
			if string(ct) != string(r2.inboxes[m][to]) {
				t.Fatalf("%s's ciphertext from %s differs between two runs", m, to)
			}
		}
	}
	g3, _ := NewGroup(Context{Campaign: "c", Attempt: 1, Round: 4, Group: "cluster-0"}, names(5), Config{})
	m3, _ := g3.Member("site0", seedOf("site0"))
	if string(m3.PublicKeys().Mask) == string(r1.tr.Public["site0"].Mask) {
		t.Fatal("two rounds gave site0 the same mask key")
	}
}

// TestCiphertextBoundToRecipient: shares encrypted to one neighbour do not
// open for another.
func TestCiphertextBoundToRecipient(t *testing.T) {
	r := newRun(t, 5, 4, Config{})
	if _, err := r.play(); err != nil {
		t.Fatal(err)
	}
	// Give site1 the ciphertext site0 sent to site2, as if from site0.
	inbox := map[string][]byte{}
	for from, ct := range r.inboxes["site1"] {
		inbox[from] = ct
	}
	inbox["site0"] = r.inboxes["site2"]["site0"]
	if _, err := r.members["site1"].Unmask(r.tr.Public, inbox, r.tr.Survivors(), nil); err == nil || !strings.Contains(err.Error(), "do not open") {
		t.Fatalf("a ciphertext for site2 opened at site1: %v", err)
	}
}

// TestQuantizeUnbiased: stochastic rounding's mean error over many draws
// is near zero (its standard deviation is at most half a step over √n), and
// each draw is within one step.
func TestQuantizeUnbiased(t *testing.T) {
	const c, b, n = 1.0, 8, 20000
	step := 2 * c / float64(1<<b-1)
	x := make([]float64, n)
	for i := range x {
		x[i] = 0.123456 // between two grid points
	}
	q, clipped, err := Quantize(x, c, b, rand.NewPCG(1, 2))
	if err != nil || clipped != 0 {
		t.Fatal(err, clipped)
	}
	back := Dequantize(q, 1, c, b)
	mean := 0.0
	for i, v := range back {
		if math.Abs(v-x[i]) > step {
			t.Fatalf("coordinate %d: %g from %g, more than a step %g", i, v, x[i], step)
		}
		mean += v - x[i]
	}
	mean /= n
	if bound := 4 * 0.5 * step / math.Sqrt(n); math.Abs(mean) > bound {
		t.Fatalf("mean rounding error %g beyond 4 standard deviations %g", mean, bound)
	}
	if _, _, err := Quantize([]float64{1, math.NaN()}, c, b, rand.NewPCG(1, 2)); err == nil || !strings.Contains(err.Error(), "coordinate 1") {
		t.Fatalf("NaN: %v", err)
	}
	_, clipped, _ = Quantize([]float64{-5, 0, 5}, c, b, rand.NewPCG(1, 2))
	if clipped != 2 {
		t.Fatalf("clipped %d of [-5 0 5] at c = 1, want 2", clipped)
	}
}

func BenchmarkRound(b *testing.B) {
	for _, c := range []struct{ n, dim int }{{8, 100_000}, {50, 10_000}, {200, 1_000}} {
		b.Run(fmt.Sprintf("n=%d/dim=%d", c.n, c.dim), func(b *testing.B) {
			t := &testing.T{}
			for b.Loop() {
				r := newRun(t, c.n, c.dim, Config{})
				if _, err := r.play(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
