package noise

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func testSecret(t *testing.T, b byte) Secret {
	t.Helper()
	s, err := SecretFromBytes(bytes.Repeat([]byte{b}, SecretSize))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestStreamKeys checks that a stream is a function of the secret and
// every field of the key, and of nothing else.
func TestStreamKeys(t *testing.T) {
	s := testSecret(t, 7)
	base := Key{Campaign: "c", Attempt: 1, Round: 3, Site: "site0", Purpose: "train"}
	first := s.Stream(base).Uint64()
	if again := s.Stream(base).Uint64(); again != first {
		t.Fatalf("same key gave %x then %x", first, again)
	}
	// Attempt 0 and 1 both mean the first attempt.
	k0 := base
	k0.Attempt = 0
	if got := s.Stream(k0).Uint64(); got != first {
		t.Errorf("attempt 0 drew %x, attempt 1 %x: both are the first attempt", got, first)
	}
	variants := []Key{
		{Campaign: "d", Attempt: 1, Round: 3, Site: "site0", Purpose: "train"},
		{Campaign: "c", Attempt: 2, Round: 3, Site: "site0", Purpose: "train"},
		{Campaign: "c", Attempt: 1, Round: 4, Site: "site0", Purpose: "train"},
		{Campaign: "c", Attempt: 1, Round: 3, Site: "site1", Purpose: "train"},
		{Campaign: "c", Attempt: 1, Round: 3, Site: "site0", Purpose: "metrics"},
		{Campaign: "c", Attempt: 1, Round: 3, Site: "site0", Purpose: "train", Input: [32]byte{1}},
		// Length prefixes: moving a byte between fields changes the key.
		{Campaign: "cs", Attempt: 1, Round: 3, Site: "ite0", Purpose: "train"},
	}
	for i, k := range variants {
		if got := s.Stream(k).Uint64(); got == first {
			t.Errorf("%d: key %+v drew the same first word as the base key", i, k)
		}
	}
	if other := testSecret(t, 8).Stream(base).Uint64(); other == first {
		t.Error("another secret drew the same first word")
	}
}

func TestSecretNeverPrinted(t *testing.T) {
	s := testSecret(t, 0xab)
	for i, f := range []string{"%v", "%+v", "%#v", "%s"} {
		out := fmt.Sprintf(f, s)
		if strings.Contains(out, "abab") || strings.Contains(out, "171") {
			t.Errorf("%d: %s printed %q", i, f, out)
		}
		if !strings.Contains(out, "redacted") {
			t.Errorf("%d: %s printed %q, want it redacted", i, f, out)
		}
	}
}

func TestLoadOrCreateSecret(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "secrets", "site0.secret")
	a, created, err := LoadOrCreateSecret(path)
	if err != nil || !created {
		t.Fatalf("first call: created %v, err %v", created, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("secret file mode %04o, want 0600", fi.Mode().Perm())
	}
	b, created, err := LoadOrCreateSecret(path)
	if err != nil || created {
		t.Fatalf("second call: created %v, err %v", created, err)
	}
	k := Key{Campaign: "x", Purpose: "p"}
	if a.Stream(k).Uint64() != b.Stream(k).Uint64() {
		t.Error("the secret read back differs from the one written")
	}
	// A file others may read is refused.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreateSecret(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("world-readable secret: err %v, want a refusal that says chmod 600", err)
	}
	// A file that is not a secret is refused, not replaced.
	bad := filepath.Join(dir, "bad.secret")
	if err := os.WriteFile(bad, []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreateSecret(bad); err == nil {
		t.Error("a file that is not a secret was accepted")
	}
	if got, _ := os.ReadFile(bad); string(got) != "hello\n" {
		t.Errorf("a bad secret file was rewritten: %q", got)
	}
}

func TestGrid(t *testing.T) {
	for i, c := range []struct {
		sens float64
		d    int
		want float64 // largest power of two ≤ sens·2⁻¹⁰/√d, by hand
	}{
		{1, 1, 0x1p-10},         // 0: exactly 2⁻¹⁰
		{1, 4, 0x1p-11},         // 1: 2⁻¹⁰/2
		{1, 20, 0x1p-13},        // 2: 2⁻¹⁰/4.47 = 2⁻¹²·⁽¹⁶⁾ → 2⁻¹³
		{3, 1, 0x1p-9},          // 3: 3·2⁻¹⁰ = 1.5·2⁻⁹
		{0.5, 28938, 0x1p-19},   // 4: 2⁻¹¹/170.1 = 2⁻¹⁸·⁴ → 2⁻¹⁹
		{1, 6603710, 0x1p-22},   // 5: 2⁻¹⁰/2569.8 = 2⁻²¹·³ → 2⁻²²
		{1e-3, 48, 0x1p-23},     // 6: 9.77e-7/6.93 = 1.41e-7 = 2⁻²²·⁸ → 2⁻²³
		{1, 1 << 20, 0x1p-20},   // 7: 2⁻¹⁰/2¹⁰
		{1.0 / 80, 48, 0x1p-20}, // 8: 1.22e-5/6.93 = 1.76e-6 = 2⁻¹⁹·¹ → 2⁻²⁰
	} {
		got := Grid(c.sens, c.d)
		if got != c.want {
			t.Errorf("%d: Grid(%v, %d) = %g, want %g", i, c.sens, c.d, got, c.want)
		}
		if got*math.Sqrt(float64(c.d)) > c.sens*GridSlack {
			t.Errorf("%d: γ√d = %g exceeds Δ·GridSlack = %g", i, got*math.Sqrt(float64(c.d)), c.sens*GridSlack)
		}
	}
}

// TestGaussianOnGrid checks that every output is a multiple of the grid,
// that the output depends on the input only through its grid rounding
// (two inputs that round alike give identical outputs from the same
// stream), and that the grid rounding moves two neighbouring inputs apart
// by at most Δ·GridSlack beyond their distance.
func TestGaussianOnGrid(t *testing.T) {
	s := testSecret(t, 1)
	const sens, z = 1.0, 2.0
	d := 21
	g := Grid(sens, d)
	x := make([]float64, d)
	y := make([]float64, d)
	for i := range x {
		x[i] = 0.1 * float64(i+1)
		// y differs from x in its low-order bits only.
		y[i] = math.Nextafter(x[i], math.Inf(1))
		if math.Round(x[i]/g) != math.Round(y[i]/g) {
			y[i] = x[i]
		}
	}
	k := Key{Campaign: "grid", Purpose: "t"}
	a, b := append([]float64(nil), x...), append([]float64(nil), y...)
	s.Stream(k).Gaussian(a, sens, z)
	s.Stream(k).Gaussian(b, sens, z)
	for i := range a {
		if a[i] != b[i] {
			t.Errorf("coordinate %d: inputs %v and %v (same grid cell) gave %v and %v", i, x[i], y[i], a[i], b[i])
		}
		if q := a[i] / g; q != math.Round(q) {
			t.Errorf("coordinate %d: output %v is not a multiple of the grid %g", i, a[i], g)
		}
	}
	// Rounding to the grid: ‖r(x) − r(x')‖ ≤ ‖x − x'‖ + γ√d ≤ Δ(1 + slack)
	// for ‖x − x'‖ ≤ Δ, checked on adversarial pairs sitting on cell edges.
	xr := make([]float64, d)
	xp := make([]float64, d)
	for trial := 0; trial < 200; trial++ {
		st := s.Stream(Key{Campaign: "edges", Round: trial})
		dir := make([]float64, d)
		norm := 0.0
		for i := range dir {
			dir[i] = st.Normal()
			norm += dir[i] * dir[i]
		}
		norm = math.Sqrt(norm)
		for i := range xr {
			base := (math.Floor(st.Float64()*1000) + 0.5) * g // on a rounding edge
			xr[i] = base
			xp[i] = base + sens*dir[i]/norm
		}
		dist := 0.0
		for i := range xr {
			e := g*math.Round(xr[i]/g) - g*math.Round(xp[i]/g)
			dist += e * e
		}
		if math.Sqrt(dist) > sens*(1+GridSlack) {
			t.Fatalf("trial %d: rounded distance %v exceeds Δ(1+slack) = %v", trial, math.Sqrt(dist), sens*(1+GridSlack))
		}
	}
}

// TestGaussianMoments checks the noise's mean, variance and shape against
// N(0, σ²) with σ = Sigma(Δ, z) on a fixed stream (so the test is
// deterministic): mean within 4 standard errors, variance within 2 %, and
// the empirical CDF within 0.005 of Φ at five points (the Kolmogorov
// distance of 200,000 draws is about 0.003 at the 99.9th percentile).
func TestGaussianMoments(t *testing.T) {
	s := testSecret(t, 3)
	const n = 200000
	for i, c := range []struct{ sens, z float64 }{
		{1, 1},      // 0
		{0.05, 3.3}, // 1: a descriptor-sized release
		{1, 12.7},   // 2: DP-GD at ε = 8 over 450 steps
	} {
		v := make([]float64, n)
		s.Stream(Key{Campaign: "moments", Round: i}).Gaussian(v, c.sens, c.z)
		sigma := Sigma(c.sens, c.z)
		mean, sq := 0.0, 0.0
		for _, x := range v {
			mean += x
			sq += x * x
		}
		mean /= n
		variance := sq/n - mean*mean
		if math.Abs(mean) > 4*sigma/math.Sqrt(n) {
			t.Errorf("%d: mean %v, want 0 ± %v", i, mean, 4*sigma/math.Sqrt(n))
		}
		if r := variance / (sigma * sigma); math.Abs(r-1) > 0.02 {
			t.Errorf("%d: variance/σ² = %v, want 1 ± 0.02", i, r)
		}
		for _, q := range []float64{-2, -1, 0, 1, 2} {
			below := 0
			for _, x := range v {
				if x <= q*sigma {
					below++
				}
			}
			phi := 0.5 * math.Erfc(-q/math.Sqrt2)
			if d := math.Abs(float64(below)/n - phi); d > 0.005 {
				t.Errorf("%d: P[X ≤ %vσ] = %v, Φ = %v", i, q, float64(below)/n, phi)
			}
		}
	}
}

func TestGaussian32MatchesFloat64(t *testing.T) {
	s := testSecret(t, 5)
	k := Key{Campaign: "f32", Purpose: "train"}
	v64 := []float64{0.25, -1.5, 3, 0}
	v32 := []float32{0.25, -1.5, 3, 0}
	s.Stream(k).Gaussian(v64, 1, 1.5)
	s.Stream(k).Gaussian32(v32, 1, 1.5)
	for i := range v64 {
		if float32(v64[i]) != v32[i] {
			t.Errorf("%d: float64 %v, float32 %v", i, v64[i], v32[i])
		}
	}
}

func TestZeroNoiseOnlyRounds(t *testing.T) {
	s := testSecret(t, 9)
	v := []float64{0.3, -0.7}
	s.Stream(Key{}).Gaussian(v, 1, 0)
	g := Grid(1, 2)
	for i, want := range []float64{g * math.Round(0.3/g), g * math.Round(-0.7/g)} {
		if v[i] != want {
			t.Errorf("%d: %v, want %v", i, v[i], want)
		}
	}
}

func TestSample(t *testing.T) {
	s := testSecret(t, 11)
	st := s.Stream(Key{Purpose: "subsample"})
	idx := st.Sample(100, 80)
	seen := map[int]bool{}
	for _, i := range idx {
		if i < 0 || i >= 100 || seen[i] {
			t.Fatalf("Sample(100, 80) = %v: out of range or repeated", idx)
		}
		seen[i] = true
	}
	if len(idx) != 80 {
		t.Fatalf("len %d, want 80", len(idx))
	}
	// Uniform inclusion: each of 10 items in a 3-of-10 sample appears with
	// probability 0.3; over 30,000 samples within 4 standard errors.
	counts := make([]int, 10)
	const trials = 30000
	for i := 0; i < trials; i++ {
		for _, j := range st.Sample(10, 3) {
			counts[j]++
		}
	}
	se := math.Sqrt(0.3 * 0.7 / trials)
	for j, c := range counts {
		if p := float64(c) / trials; math.Abs(p-0.3) > 4*se {
			t.Errorf("item %d included with frequency %v, want 0.3 ± %v", j, p, 4*se)
		}
	}
}
