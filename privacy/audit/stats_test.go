package audit

import (
	"math"
	"testing"
)

// tolCP is the tolerance on Clopper–Pearson bounds quoted to 4 decimals.
const tolCP = 5e-5

// binomCDF returns P[Bin(n, p) ≤ k] by summing the probabilities, an
// independent check of the beta quantiles.
func binomCDF(k, n int, p float64) float64 {
	var s float64
	for i := 0; i <= k; i++ {
		lg, _ := math.Lgamma(float64(n + 1))
		la, _ := math.Lgamma(float64(i + 1))
		lb, _ := math.Lgamma(float64(n - i + 1))
		s += math.Exp(lg - la - lb + float64(i)*math.Log(p) + float64(n-i)*math.Log1p(-p))
	}
	return s
}

func TestClopperPearson(t *testing.T) {
	for i, c := range []struct {
		k, n           int
		conf           float64
		wantLo, wantHi float64
	}{
		// 0: one-sided 95 % upper bound for 0 of 10 (two-sided 90 %):
		// 1 − 0.05^(1/10), by hand.
		{0, 10, 0.90, 0, 0.2588655509},
		// 1: k = 5 of 10, two-sided 95 %: [0.1871, 0.8129]
		// (scipy.stats.beta.ppf, statsmodels proportion_confint
		// method="beta").
		{5, 10, 0.95, 0.1870860, 0.8129140},
		// 2: k = 1 of 10, two-sided 95 %: the textbook [0.0025, 0.4450];
		// lo = 1 − 0.975^(1/10) by hand.
		{1, 10, 0.95, 0.0025285, 0.4450161},
		// 3: k = n = 10, two-sided 90 %: lo = 0.05^(1/10), by hand.
		{10, 10, 0.90, 0.7411344491, 1},
		// 4: 0 of 50,000 (AuditDPGD's evaluation half), one-sided 95 %:
		// 1 − 0.05^(1/50000), by hand.
		{0, 50000, 0.90, 0, 5.99137e-5},
	} {
		lo, hi := ClopperPearson(c.k, c.n, c.conf)
		if math.Abs(lo-c.wantLo) > tolCP*math.Max(1, c.wantLo) || math.Abs(hi-c.wantHi) > tolCP*math.Max(1e-3, c.wantHi) {
			t.Errorf("%d: ClopperPearson(%d, %d, %v) = [%.7f, %.7f], want [%.7f, %.7f]", i, c.k, c.n, c.conf, lo, hi, c.wantLo, c.wantHi)
		}
		// Independent check: the binomial tails at the bounds are α/2.
		alpha := (1 - c.conf) / 2
		if c.k < c.n {
			if got := binomCDF(c.k, c.n, hi); math.Abs(got-alpha) > 1e-9 {
				t.Errorf("%d: P[Bin(%d, %v) ≤ %d] = %v, want %v", i, c.n, hi, c.k, got, alpha)
			}
		}
		if c.k > 0 {
			if got := 1 - binomCDF(c.k-1, c.n, lo); math.Abs(got-alpha) > 1e-9 {
				t.Errorf("%d: P[Bin(%d, %v) ≥ %d] = %v, want %v", i, c.n, lo, c.k, got, alpha)
			}
		}
	}
	for i, c := range []struct {
		k, n int
		conf float64
	}{{-1, 10, 0.95}, {11, 10, 0.95}, {0, 0, 0.95}, {1, 10, 0}, {1, 10, 1}, {1, 10, math.NaN()}} {
		if lo, hi := ClopperPearson(c.k, c.n, c.conf); !math.IsNaN(lo) || !math.IsNaN(hi) {
			t.Errorf("invalid %d: ClopperPearson(%d, %d, %v) = [%v, %v], want NaNs", i, c.k, c.n, c.conf, lo, hi)
		}
	}
}

func TestTPRAtFPR(t *testing.T) {
	for i, c := range []struct {
		scores, labels []float64
		fpr, want      float64
	}{
		// Cases by hand: call "member" when score ≥ τ.
		{[]float64{4, 3, 2, 1}, []float64{1, 0, 1, 0}, 0, 0.5},         // 0: τ = 4
		{[]float64{4, 3, 2, 1}, []float64{1, 0, 1, 0}, 0.49, 0.5},      // 1: τ = 3 costs 0.5
		{[]float64{4, 3, 2, 1}, []float64{1, 0, 1, 0}, 0.5, 1},         // 2: τ = 2
		{[]float64{1, 1}, []float64{1, 0}, 0, 0},                       // 3: a tie is never split
		{[]float64{1, 1}, []float64{1, 0}, 1, 1},                       // 4
		{[]float64{0.9, 0.8, 0.1, 0.2}, []float64{1, 1, 0, 0}, 0, 1},   // 5: separated
		{[]float64{0.1, 0.2, 0.9, 0.8}, []float64{1, 1, 0, 0}, 0.5, 0}, // 6: inverted
	} {
		got, err := TPRAtFPR(c.scores, c.labels, c.fpr)
		if err != nil || got != c.want {
			t.Errorf("%d: TPRAtFPR = %v, %v, want %v", i, got, err, c.want)
		}
	}
	for i, c := range []struct {
		scores, labels []float64
		fpr            float64
	}{
		{[]float64{1}, []float64{1, 0}, 0.1},                 // 0: lengths
		{[]float64{1, 2}, []float64{1, 1}, 0.1},              // 1: one class
		{[]float64{1, math.NaN()}, []float64{1, 0}, 0.1},     // 2: NaN score
		{[]float64{1, 2}, []float64{1, 2}, 0.1},              // 3: bad label
		{[]float64{1, 2}, []float64{1, 0}, 1.5},              // 4: bad rate
		{[]float64{1, 2}, []float64{1, 0}, math.NaN()},       // 5
		{[]float64{}, []float64{}, 0.1},                      // 6: nothing
		{[]float64{1, 2, 3}, []float64{0, 0, math.NaN()}, 0}, // 7
	} {
		if _, err := TPRAtFPR(c.scores, c.labels, c.fpr); err == nil {
			t.Errorf("invalid %d: no error", i)
		}
	}
}

// TestEpsilonLowerBound checks the bound on constructed trials: two
// identical worlds give 0; perfectly separated worlds give the
// Clopper–Pearson cap ln((1 − δ − u)/u) with u = 1 − (1 − conf)^(1/m) for
// the m trials a world left for the bound (half of them after
// SelectEmpirical, nine tenths after SelectNormal; by hand); and the
// trials that choose the threshold never enter the bound.
func TestEpsilonLowerBound(t *testing.T) {
	const delta, conf = 1e-5, 0.95
	n := 2000
	// Uniform scores on [0, 1) (low, same) and [2, 3) (high), so that the
	// halves of each list are alike.
	rng := pcg(1, 2)
	same, low, high := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range n {
		same[i] = rng.Float64()
		low[i] = rng.Float64()
		high[i] = 2 + rng.Float64()
	}
	capAt := func(m int) float64 {
		u := 1 - math.Pow(1-conf, 1/float64(m))
		return math.Log((1 - delta - u) / u)
	}
	for i, c := range []struct {
		with, without []float64
		sel           Selection
		want          float64
	}{
		{same, same, SelectEmpirical, 0},           // 0
		{same, same, SelectNormal, 0},              // 1
		{high, low, SelectEmpirical, capAt(n / 2)}, // 2: ≈ ln(1000/3) = 5.81
		{high, low, SelectNormal, capAt(n - n/10)}, // 3: ≈ ln(1800/3) = 6.40
		{low, high, SelectEmpirical, 0},            // 4: the test calls high scores "with"
	} {
		b, err := EpsilonLowerBound(c.with, c.without, delta, conf, c.sel)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if math.Abs(b.Epsilon-c.want) > 1e-9 {
			t.Errorf("%d: ε_LB = %v, want %v (bound %+v)", i, b.Epsilon, c.want, b)
		}
	}
	// A selection half that points the wrong way: the threshold chosen on
	// it is judged on the second halves alone.
	tricky := append(append([]float64(nil), high[:n/2]...), low[n/2:]...)
	b, err := EpsilonLowerBound(tricky, low, delta, conf, SelectEmpirical)
	if err != nil {
		t.Fatal(err)
	}
	if b.Epsilon != 0 || b.Positives != n/2 || b.Negatives != n/2 {
		t.Errorf("selection leaked into the evaluation: %+v", b)
	}
	for i, c := range []struct {
		with, without []float64
		delta, conf   float64
		sel           Selection
	}{
		{low[:3], low, delta, conf, SelectEmpirical},                     // 0: too few
		{low, []float64{1, 2, 3, math.NaN()}, delta, conf, SelectNormal}, // 1: NaN
		{low, low, -1, conf, SelectEmpirical},                            // 2
		{low, low, 1, conf, SelectEmpirical},                             // 3
		{low, low, delta, 1, SelectEmpirical},                            // 4
		{low, low, delta, conf, Selection(7)},                            // 5
	} {
		if _, err := EpsilonLowerBound(c.with, c.without, c.delta, c.conf, c.sel); err == nil {
			t.Errorf("invalid %d: no error", i)
		}
	}
}
