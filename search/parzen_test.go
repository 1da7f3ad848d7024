package search

import (
	"math"
	"testing"
)

const tol = 1e-12

func near(a, b, tol float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return a == b || math.Abs(a-b) <= tol*math.Max(1, math.Abs(b))
}

// Optuna's default_gamma(n) = min(ceil(0.1 n), 25), computed by hand.
func TestTPEGamma(t *testing.T) {
	for i, test := range []struct{ n, want int }{
		{0, 0},     // 0
		{5, 1},     // 1: ceil(0.5)
		{10, 1},    // 2: ceil(1.0)
		{11, 2},    // 3: ceil(1.1)
		{30, 3},    // 4: ceil(3.0)
		{100, 10},  // 5
		{249, 25},  // 6: ceil(24.9)
		{1000, 25}, // 7: capped
	} {
		if got := tpeGamma(test.n); got != test.want {
			t.Errorf("case %d: gamma(%d) = %d, want %d", i, test.n, got, test.want)
		}
	}
}

// Optuna's default_weights(n): ones below 25; from 25 on,
// numpy.linspace(1/n, 1, n−25) then 25 ones. The ramps are written out by
// hand from linspace's definition start + i·(stop−start)/(num−1).
func TestDefaultWeights(t *testing.T) {
	ones := func(n int) []float64 {
		w := make([]float64, n)
		for i := range w {
			w[i] = 1
		}
		return w
	}
	ramp100 := make([]float64, 75)
	for i := range ramp100 {
		ramp100[i] = 0.01 + float64(i)*0.99/74 // linspace(0.01, 1, 75)
	}
	for i, test := range []struct {
		n    int
		want []float64
	}{
		{0, []float64{}}, // 0
		{5, ones(5)},     // 1
		{10, ones(10)},   // 2
		{25, ones(25)},   // 3: an empty ramp
		{26, append([]float64{1.0 / 26}, ones(25)...)},                                                             // 4: linspace(1/26, 1, 1) = [1/26]
		{30, append([]float64{1.0 / 30, 1.0/30 + 29.0/120, 1.0/30 + 58.0/120, 1.0/30 + 87.0/120, 1}, ones(25)...)}, // 5: step (1−1/30)/4 = 29/120
		{100, append(ramp100, ones(25)...)},                                                                        // 6
	} {
		got := defaultWeights(test.n)
		if len(got) != len(test.want) {
			t.Errorf("case %d: %d weights, want %d", i, len(got), len(test.want))
			continue
		}
		for k := range got {
			if !near(got[k], test.want[k], 1e-15) {
				t.Errorf("case %d: weight %d = %v, want %v", i, k, got[k], test.want[k])
			}
		}
	}
	if w := defaultWeights(100); w[37] != 0.505 || w[74] != 1 {
		t.Errorf("n = 100: w[37] = %v, w[74] = %v; want 0.01 + 37·0.99/74 = 0.505 and 1", w[37], w[74])
	}
}

// Bandwidths by hand from compute_sigmas (parzen_estimator.py) with
// consider_endpoints = False and the magic clip.
func TestParzenBandwidths(t *testing.T) {
	for i, test := range []struct {
		mu        []float64
		low, high float64
		want      []float64
	}{
		// 0: three centres, given unsorted. Sorted with endpoints: 0, .2,
		// .5, .55, 1. Middle (.5): max(.3, .05) = .3. Ends, two centres or
		// more: .2 takes .5−.2 = .3 (not max(.2, .3) by coincidence equal),
		// .55 takes .55−.5 = .05, not .45. Magic clip: 4 kernels, min
		// sigma (1−0)/min(100, 5) = .2, so .05 → .2.
		{[]float64{0.5, 0.2, 0.55}, 0, 1, []float64{0.3, 0.3, 0.2}},
		// 1: one centre takes the larger gap to the endpoints, max(.2, .8);
		// min sigma 1/3.
		{[]float64{0.2}, 0, 1, []float64{0.8}},
		// 2: the endpoints ignored: .1 would take max(.1, .8) and .9
		// max(.8, .1) either way; min sigma 1/4.
		{[]float64{0.1, 0.9}, 0, 1, []float64{0.8, 0.8}},
		// 3: endpoints ignored where it matters: sorted 0, .1, .2, .9, 1;
		// .1 takes .1 (not max(.1, .1)), .2 max(.1, .7) = .7, .9 takes .7
		// (not max(.7, .1)); min sigma 1/5 lifts .1 to .2.
		{[]float64{0.9, 0.1, 0.2}, 0, 1, []float64{0.7, 0.2, 0.7}},
		// 4: 200 centres: the clip is (hi−lo)/100 = .01.
		{spread(200, 0.5, 1e-6), 0, 1, fill(200, 0.01)},
	} {
		got := parzenBandwidths(test.mu, test.low, test.high)
		for k := range got {
			if !near(got[k], test.want[k], tol) {
				t.Errorf("case %d: sigma %d = %v, want %v", i, k, got[k], test.want[k])
			}
		}
	}
}

func spread(n int, at, gap float64) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = at + float64(i)*gap
	}
	return x
}

func fill(n int, v float64) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = v
	}
	return x
}

// Integer and log dimensions: _calculate_numerical_distributions widens
// an integer range by step/2 and takes logs before the bandwidths.
func TestNumericalKernels(t *testing.T) {
	s, err := NewSpace([]Dimension{
		{Name: "clusters", Int: []float64{1, 5}},
		{Name: "lr", LogUniform: []float64{1, 100}},
	})
	if err != nil {
		t.Fatal(err)
	}
	// int [1, 5] → [.5, 5.5]; centres 1, 2, 5: 1 takes 2−1 = 1, 2
	// max(1, 3) = 3, 5 takes 5−2 = 3; min sigma 5/5 = 1. Prior: centre 3,
	// sigma 5.
	k := numericalKernels(s.Dims[0], []float64{1, 2, 5})
	wantMu, wantSigma := []float64{1, 2, 5, 3}, []float64{1, 3, 3, 5}
	for i := range wantMu {
		if !near(k.mu[i], wantMu[i], tol) || !near(k.sigma[i], wantSigma[i], tol) {
			t.Errorf("int kernel %d: (%v, %v), want (%v, %v)", i, k.mu[i], k.sigma[i], wantMu[i], wantSigma[i])
		}
	}
	if k.low != 0.5 || k.high != 5.5 {
		t.Errorf("int bounds [%v, %v], want [0.5, 5.5]", k.low, k.high)
	}
	// log_uniform [1, 100], one observation 10: in log space [0, ln 100],
	// centre ln 10 takes max(ln 10, ln 10) = ln 10 (above the clip ln100/3).
	k = numericalKernels(s.Dims[1], []float64{10})
	if ln10 := math.Log(10); !near(k.mu[0], ln10, tol) || !near(k.sigma[0], ln10, 1e-12) || !near(k.mu[1], ln10, tol) || !near(k.sigma[1], 2*ln10, tol) {
		t.Errorf("log kernels mu %v sigma %v, want [ln10 ln10] [ln10 2ln10]", k.mu, k.sigma)
	}
}

// Categorical weights by hand from _calculate_categorical_distributions:
// three choices, observations 0 and 2, prior weight 1, so 3 kernels each
// starting at 1/3 per choice.
func TestCategoricalKernels(t *testing.T) {
	s, err := NewSpace([]Dimension{{Name: "beta", Choice: []any{0.1, 0.2, 0.3}}})
	if err != nil {
		t.Fatal(err)
	}
	p := newParzen(s.Dims, [][]float64{{0}, {2}})
	want := [][]float64{
		{2.0 / 3, 1.0 / 6, 1.0 / 6}, // (1/3 + 1, 1/3, 1/3) / 2
		{1.0 / 6, 1.0 / 6, 2.0 / 3},
		{1.0 / 3, 1.0 / 3, 1.0 / 3}, // the prior row
	}
	for k := range want {
		for c := range want[k] {
			if !near(p.dims[0].probs[k][c], want[k][c], tol) {
				t.Errorf("row %d choice %d: %v, want %v", k, c, p.dims[0].probs[k][c], want[k][c])
			}
		}
	}
	for k, w := range p.weights {
		if !near(w, 1.0/3, tol) {
			t.Errorf("mixture weight %d = %v, want 1/3", k, w)
		}
	}
	// The mixture's mass on each choice: (2/3 + 1/6 + 1/3)/3 = 7/18,
	// (1/6 + 1/6 + 1/3)/3 = 4/18, 7/18.
	got := p.logPDF([][]float64{{0}, {1}, {2}})
	for c, w := range []float64{7.0 / 18, 4.0 / 18, 7.0 / 18} {
		if !near(got[c], math.Log(w), tol) {
			t.Errorf("log mass of choice %d = %v, want log %v", c, got[c], w)
		}
	}
	// With no observations, one uniform row (and weight 1).
	p = newParzen(s.Dims, nil)
	if len(p.weights) != 1 || !near(p.dims[0].probs[0][1], 1.0/3, tol) {
		t.Errorf("empty estimator: weights %v rows %v", p.weights, p.dims[0].probs)
	}
}

// The truncated normal against closed forms: Φ from math.Erfc.
func TestTruncNorm(t *testing.T) {
	phi := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	for i, test := range []struct{ a, b float64 }{
		{-1, 1}, {-0.5, 2}, {0, 3}, {-3, 0}, {-100, 0.01}, {-0.01, 100},
	} {
		mass := phi(test.b) - phi(test.a)
		if got := math.Exp(logGaussMass(test.a, test.b)); !near(got, mass, 1e-12) {
			t.Errorf("case %d: mass on [%v, %v] = %v, want %v", i, test.a, test.b, got, mass)
		}
		for _, q := range []float64{0.001, 0.1, 0.5, 0.9, 0.999} {
			c := truncNormPPF(q, test.a, test.b)
			if got := (phi(c) - phi(test.a)) / mass; !near(got, q, 1e-7) {
				t.Errorf("case %d: cdf(ppf(%v)) = %v", i, q, got)
			}
		}
	}
	// Far in the left tail, where ndtr underflows to nothing useful in a
	// difference, the log mass still matches log(Φ(−29) − Φ(−30)).
	want := math.Log(phi(-29) - phi(-30))
	if got := logGaussMass(-30, -29); !near(got, want, 1e-9) {
		t.Errorf("log mass on [−30, −29] = %v, want %v", got, want)
	}
	// Right tail, by symmetry, and the asymptotic series below −20.
	if got := logGaussMass(29, 30); !near(got, want, 1e-9) {
		t.Errorf("log mass on [29, 30] = %v, want %v", got, want)
	}
	if got, w := logNdtr(-40), math.Log(phi(-40)); !near(got, w, 1e-12) {
		t.Errorf("logNdtr(−40) = %v, want %v", got, w)
	}
	if got := truncNormPPF(0.5, -1, 1); math.Abs(got) > 1e-12 {
		t.Errorf("median of N(0,1) on [−1, 1] = %v, want 0", got)
	}
}

// Each numerical kernel is a density on its dimension: a fitted mixture
// integrates to 1 over a float range (trapezoid rule on 20 000 steps) and
// its masses sum to 1 over an integer range.
func TestParzenNormalised(t *testing.T) {
	s, err := NewSpace([]Dimension{
		{Name: "beta", Uniform: []float64{0, 1}},
		{Name: "clusters", Int: []float64{1, 12}},
		{Name: "n_sub", Int: []float64{20, 320}, Log: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	obs := [][]float64{{0.05, 1, 20}, {0.3, 4, 50}, {0.31, 4, 300}, {0.9, 12, 100}}
	for j, d := range s.Dims {
		p := newParzen([]Dim{d}, column(obs, j))
		var total float64
		if d.Kind == Uniform {
			const steps = 20000
			var xs [][]float64
			for k := 0; k <= steps; k++ {
				xs = append(xs, []float64{float64(k) / steps})
			}
			lp := p.logPDF(xs)
			for k := range lp {
				w := 1.0
				if k == 0 || k == steps {
					w = 0.5
				}
				total += w * math.Exp(lp[k]) / steps
			}
		} else {
			var xs [][]float64
			for x := d.Lo; x <= d.Hi; x++ {
				xs = append(xs, []float64{x})
			}
			for _, l := range p.logPDF(xs) {
				total += math.Exp(l)
			}
		}
		if !near(total, 1, 1e-6) {
			t.Errorf("%s: total mass %v, want 1", d.Name, total)
		}
	}
}

// Samples from a mixture stay in their dimension, and integers are
// integers.
func TestParzenSampleInRange(t *testing.T) {
	s := mixedSpace(t)
	obs := [][]float64{{0.01, 0.002, 1, 20, 0}, {0.99, 0.09, 4, 320, 1}, {0.5, 0.01, 2, 80, 1}}
	p := newParzen(s.Dims, obs)
	for i, x := range p.sample(newRNG(3, 0), 500) {
		if c := configOf(s, x); !s.Contains(c) {
			t.Fatalf("sample %d: %s outside the space", i, c)
		}
	}
}
