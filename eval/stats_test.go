package eval

import (
	"math"
	"testing"
)

// statsTol is the tolerance for statistics computed in floating point.
const statsTol = 1e-12

func sameFloat(a, b, tol float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return a == b
	}
	return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b))
}

func TestMeanStd(t *testing.T) {
	// Values computed by hand.
	for i, test := range []struct {
		x         []float64
		mean, std float64
	}{
		{ // 0: empty
			x: nil, mean: math.NaN(), std: math.NaN(),
		},
		{ // 1: one value: no spread
			x: []float64{0.8}, mean: 0.8, std: math.NaN(),
		},
		{ // 2: var = (1+1)/1 = 2
			x: []float64{1, 3}, mean: 2, std: math.Sqrt2,
		},
		{ // 3: deviations −1.5 −0.5 0.5 1.5, ss = 5, var = 5/3
			x: []float64{1, 2, 3, 4}, mean: 2.5, std: math.Sqrt(5.0 / 3),
		},
	} {
		m, s := MeanStd(test.x)
		if !sameFloat(m, test.mean, statsTol) || !sameFloat(s, test.std, statsTol) {
			t.Errorf("case %d: MeanStd(%v) = %v, %v, want %v, %v", i, test.x, m, s, test.mean, test.std)
		}
	}
}

func TestPairedTTest(t *testing.T) {
	// Expected p-values from the closed-form Student t CDF for small
	// degrees of freedom, computed with Python's math module:
	// ν=1: p = 1 − (2/π)·atan|t|; ν=2: p = 1 − |t|/√(2+t²);
	// ν=4: p = 1 − (3/4)·u·(1 − u²/12), u = |t|/√(1+t²/4).
	for i, test := range []struct {
		a, b             []float64
		mean, std, tstat float64
		df               int
		p                float64
		tol              float64
	}{
		{ // 0: d = 2 1 3, t = 2√3, ν = 2, p = 1 − √(6/7)
			a: []float64{3, 5, 7}, b: []float64{1, 4, 4},
			mean: 2, std: 1, tstat: 2 * math.Sqrt(3), df: 2, p: 1 - math.Sqrt(6.0/7), tol: 1e-9,
		},
		{ // 1: d = 1 0 2 1 2, ν = 4
			a: []float64{1, 2, 3, 4, 5}, b: []float64{0, 2, 1, 3, 3},
			mean: 1.2, std: 0.8366600265340756, tstat: 3.2071349029490928, df: 4, p: 0.03267792333680297, tol: 1e-9,
		},
		{ // 2: d = 0.25 0.5, t = 3, ν = 1 (Cauchy)
			a: []float64{0.5, 0.9}, b: []float64{0.25, 0.4},
			mean: 0.375, std: 0.1767766952966369, tstat: 3, df: 1, p: 0.20483276469913336, tol: 1e-9,
		},
		{ // 3: negative differences: symmetric p
			a: []float64{1, 4, 4}, b: []float64{3, 5, 7},
			mean: -2, std: 1, tstat: -2 * math.Sqrt(3), df: 2, p: 1 - math.Sqrt(6.0/7), tol: 1e-9,
		},
		{ // 4: equal non-zero differences: zero variance, infinite t
			a: []float64{2, 3, 4}, b: []float64{1, 2, 3},
			mean: 1, std: 0, tstat: math.Inf(1), df: 2, p: 0, tol: statsTol,
		},
		{ // 5: identical samples: nothing to test (scipy gives nan, nan)
			a: []float64{2, 3, 4}, b: []float64{2, 3, 4},
			mean: 0, std: 0, tstat: math.NaN(), df: 2, p: math.NaN(), tol: statsTol,
		},
	} {
		got, err := PairedTTest(test.a, test.b)
		if err != nil {
			t.Errorf("case %d: unexpected error: %v", i, err)
			continue
		}
		if got.N != len(test.a) || got.DF != test.df ||
			!sameFloat(got.MeanDiff, test.mean, statsTol) || !sameFloat(got.StdDiff, test.std, statsTol) ||
			!sameFloat(got.T, test.tstat, 1e-12) || !sameFloat(got.P, test.p, test.tol) {
			t.Errorf("case %d: got %+v, want mean %v std %v t %v df %d p %v", i, got, test.mean, test.std, test.tstat, test.df, test.p)
		}
	}
}

func TestPairedTTestErrors(t *testing.T) {
	for i, test := range []struct{ a, b []float64 }{
		{ // 0: no pairs
		},
		{ // 1: one pair
			a: []float64{1}, b: []float64{0},
		},
		{ // 2: NaN
			a: []float64{1, math.NaN()}, b: []float64{0, 0},
		},
	} {
		if _, err := PairedTTest(test.a, test.b); err == nil {
			t.Errorf("case %d: expected an error", i)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("expected a panic for mismatched lengths")
		}
	}()
	PairedTTest([]float64{1, 2}, []float64{1})
}

func TestWilcoxonSignedRank(t *testing.T) {
	for i, test := range []struct {
		d             []float64 // a = d, b = 0
		n, zeros      int
		wPlus, wMinus float64
		p             float64
		exact         bool
		tol           float64
	}{
		{ // 0: Darwin's Zea mays differences, scipy.stats.wilcoxon docs
			// example: statistic 24.0, pvalue 0.041259765625 (exact).
			d: []float64{6, 8, 14, 16, 23, 24, 28, 29, 41, -48, 49, 56, 60, -67, 75},
			n: 15, wPlus: 96, wMinus: 24, p: 0.041259765625, exact: true, tol: statsTol,
		},
		{ // 1: all positive, n = 5: p = 2/2^5, by hand
			d: []float64{1, 2, 3, 4, 5}, n: 5, wPlus: 15, wMinus: 0, p: 0.0625, exact: true, tol: statsTol,
		},
		{ // 2: one zero dropped, |2| tied (ranks 2, 3 → 2.5); W− = 2.5;
			// p = 2·4/32 by enumerating the 32 sign assignments in Python.
			d: []float64{1, 2, -2, 3, 0, 4}, n: 5, zeros: 1, wPlus: 12.5, wMinus: 2.5, p: 0.25, exact: true, tol: statsTol,
		},
		{ // 3: three-way tie at 2 (ranks 3, 4, 5 → 4); W− = 1 + 4 = 5;
			// p = 0.3125 by enumerating the 64 sign assignments in Python.
			d: []float64{1.5, -0.5, 2, 2, -2, 3}, n: 6, wPlus: 16, wMinus: 5, p: 0.3125, exact: true, tol: statsTol,
		},
		{ // 4: n = 30 > 25, normal approximation: d = 1…30 with 1…5
			// negated, W− = 15, mean 232.5, var 2363.75,
			// z = −217.5/√2363.75 = −4.473569..., p = erfc(|z|/√2), by hand
			// with Python's math.erfc.
			d: func() []float64 {
				d := make([]float64, 30)
				for i := range d {
					d[i] = float64(i + 1)
					if i < 5 {
						d[i] = -d[i]
					}
				}
				return d
			}(),
			n: 30, wPlus: 450, wMinus: 15, p: math.Erfc(217.5 / math.Sqrt(2363.75) / math.Sqrt2), exact: false, tol: 1e-9,
		},
	} {
		b := make([]float64, len(test.d))
		got, err := WilcoxonSignedRank(test.d, b)
		if err != nil {
			t.Errorf("case %d: unexpected error: %v", i, err)
			continue
		}
		if got.N != test.n || got.Zeros != test.zeros || got.WPlus != test.wPlus || got.WMinus != test.wMinus ||
			got.Statistic != math.Min(test.wPlus, test.wMinus) || got.Exact != test.exact || !sameFloat(got.P, test.p, test.tol) {
			t.Errorf("case %d: got %+v, want n %d zeros %d W+ %v W− %v p %v exact %v",
				i, got, test.n, test.zeros, test.wPlus, test.wMinus, test.p, test.exact)
		}
	}
	if _, err := WilcoxonSignedRank([]float64{1, 2}, []float64{1, 2}); err == nil {
		t.Error("expected an error when every difference is zero")
	}
}
