package eval

import (
	"math"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func TestHealthcareDefaults(t *testing.T) {
	for _, seed := range []uint64{1, 42, 2024} {
		opt := DefaultHealthcareOptions(seed)
		fed, err := Healthcare(opt)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if len(fed.Sites) != 8 || fed.Features != 20 || fed.Generator != "healthcare" {
			t.Fatalf("seed %d: %d sites, %d features, generator %q; want 8, 20, healthcare", seed, len(fed.Sites), fed.Features, fed.Generator)
		}
		rates := make([]float64, 8)
		for k, s := range fed.Sites {
			nTr, nTe := len(s.YTrain), len(s.YTest)
			n := nTr + nTe
			// Sizes: uniform in [60, 250); test split max(30, ⌊0.2n⌋), the
			// authors' rule (golden client 3: n = 74 → 30 test rows).
			if n < 60 || n >= 250 {
				t.Errorf("seed %d site %d: %d rows, want [60, 250)", seed, k, n)
			}
			if want := max(30, n/5); nTe != want {
				t.Errorf("seed %d site %d: %d test rows of %d, want %d", seed, k, nTe, n, want)
			}
			if len(s.XTrain) != nTr || len(s.XTest) != nTe || len(s.XTrain[0]) != 20 || len(s.XTest[0]) != 20 {
				t.Errorf("seed %d site %d: matrix shapes do not match labels", seed, k)
			}
			if want := k == 1 || k == 5; s.IsAdversarial != want {
				t.Errorf("seed %d site %d: adversarial %v, want %v", seed, k, s.IsAdversarial, want)
			}
			rates[k] = s.PositiveRate

			clean := append(append([]int(nil), s.YTrain...), s.YTest...)
			if s.IsAdversarial {
				clean = append(append([]int(nil), s.CleanYTrain...), s.CleanYTest...)
				// Exactly ⌊0.3n⌋ flips, spread over both splits before the
				// split: the test split's flip rate is within 0.2 of 0.3
				// (hypergeometric, ≥ 30 rows, ~2.4 standard errors).
				all := append(append([]int(nil), s.YTrain...), s.YTest...)
				if got, want := countDiffering(all, clean), int(0.3*float64(n)); got != want {
					t.Errorf("seed %d site %d: %d flipped labels, want %d", seed, k, got, want)
				}
				if r := float64(countDiffering(s.YTest, s.CleanYTest)) / float64(nTe); math.Abs(r-0.3) > 0.2 {
					t.Errorf("seed %d site %d: test flip rate %v, want ≈ 0.3", seed, k, r)
				}
			} else if s.CleanYTrain != nil || s.CleanYTest != nil {
				t.Errorf("seed %d site %d: honest site has clean labels recorded", seed, k)
			}
			// Before flips a site has exactly ⌊n·rate⌋ positives.
			pos := 0
			for _, v := range clean {
				pos += v
			}
			if want := int(float64(n) * s.PositiveRate); pos != want {
				t.Errorf("seed %d site %d: %d positives of %d at rate %v, want %d", seed, k, pos, n, s.PositiveRate, want)
			}
		}
		// The rates are a permutation of linspace(0.10, 0.45, 8).
		slices.Sort(rates)
		for k, r := range rates {
			if want := 0.10 + float64(k)*0.05; math.Abs(r-want) > 1e-12 {
				t.Errorf("seed %d: sorted rate %d = %v, want %v", seed, k, r, want)
			}
		}
	}
}

// TestHealthcareSmallSites checks that the recipe produces sites under the
// descriptor's 80-row subsample (golden: clients 3 and 7) across seeds.
func TestHealthcareSmallSites(t *testing.T) {
	small := 0
	for seed := uint64(0); seed < 10; seed++ {
		fed, err := Healthcare(DefaultHealthcareOptions(seed))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range fed.Sites {
			if len(s.YTrain) < 80 {
				small++
			}
		}
	}
	// A site has n_train < 80 when n < 110 (n − 30 < 80), probability
	// 50/190 ≈ 0.26, so about 21 of 80 sites; 5 is a loose lower bound.
	if small < 5 {
		t.Errorf("%d of 80 sites with n_train < 80, want several", small)
	}
}

func TestBenchmarkDefaults(t *testing.T) {
	for _, seed := range []uint64{1, 42, 2024} {
		fed, err := Benchmark(DefaultBenchmarkOptions(seed))
		if err != nil {
			t.Fatal(err)
		}
		if len(fed.Sites) != 10 || fed.Generator != "benchmark" {
			t.Fatalf("seed %d: %d sites, generator %q", seed, len(fed.Sites), fed.Generator)
		}
		lo, hi := 1.0, 0.0
		for k, s := range fed.Sites {
			// 5000/10 = 500 rows, ⌊0.8·500⌋ = 400 train (golden: 400/100).
			if len(s.YTrain) != 400 || len(s.YTest) != 100 {
				t.Errorf("seed %d site %d: %d/%d rows, want 400/100", seed, k, len(s.YTrain), len(s.YTest))
			}
			if s.IsAdversarial {
				t.Errorf("seed %d site %d: adversarial", seed, k)
			}
			pos := 0
			for _, v := range append(append([]int(nil), s.YTrain...), s.YTest...) {
				pos += v
			}
			frac := float64(pos) / 500
			if want := float64(int(500*s.PositiveRate)) / 500; frac != want {
				t.Errorf("seed %d site %d: positive fraction %v, want %v", seed, k, frac, want)
			}
			if frac < 0.1 || frac > 0.9 {
				t.Errorf("seed %d site %d: positive fraction %v outside [0.1, 0.9]", seed, k, frac)
			}
			lo, hi = math.Min(lo, frac), math.Max(hi, frac)
		}
		// Label skew: the range of 10 draws from U(0.1, 0.9) is below 0.3
		// with probability ≈ 0.001 (range of 10 uniforms < 0.375).
		if hi-lo < 0.3 {
			t.Errorf("seed %d: positive fractions span [%v, %v], want pathological skew", seed, lo, hi)
		}
	}
}

func TestScenarioValidation(t *testing.T) {
	hc := func(edit func(*HealthcareOptions)) error {
		o := DefaultHealthcareOptions(1)
		edit(&o)
		_, err := Healthcare(o)
		return err
	}
	bm := func(edit func(*BenchmarkOptions)) error {
		o := DefaultBenchmarkOptions(1)
		edit(&o)
		_, err := Benchmark(o)
		return err
	}
	for i, test := range []struct {
		err  error
		want string
	}{
		{hc(func(o *HealthcareOptions) { o.Sites = 0 }), "Sites = 0"},                                   // 0
		{hc(func(o *HealthcareOptions) { o.Adversarial = []int{8} }), "Adversarial contains site 8"},    // 1
		{hc(func(o *HealthcareOptions) { o.Adversarial = []int{1, 1} }), "lists site 1 twice"},          // 2
		{hc(func(o *HealthcareOptions) { o.FlipFraction = -0.1 }), "FlipFraction = -0.1"},               // 3
		{hc(func(o *HealthcareOptions) { o.MinSize, o.MaxSize = 20, 30 }), "too few for a 30-row test"}, // 4
		{hc(func(o *HealthcareOptions) { o.Informative = 17 }), "Informative = 17"},                     // 5
		{hc(func(o *HealthcareOptions) { o.Shift = &ContinualShift{Sites: []int{9}} }), "Shift.Sites"},  // 6
		{bm(func(o *BenchmarkOptions) { o.Sites = 0 }), "Sites = 0"},                                    // 7
		{bm(func(o *BenchmarkOptions) { o.Samples = 20 }), "want at least 5"},                           // 8
		{bm(func(o *BenchmarkOptions) { o.MaxPositiveRate = 1.5 }), "positive rates"},                   // 9
		{bm(func(o *BenchmarkOptions) { o.NoiseStd = math.NaN() }), "NoiseStd = NaN"},                   // 10
	} {
		if test.err == nil || !strings.Contains(test.err.Error(), test.want) {
			t.Errorf("case %d: error %v, want one containing %q", i, test.err, test.want)
		}
	}
}

func TestContinualShift(t *testing.T) {
	opt := DefaultHealthcareOptions(9)
	opt.Shift = &ContinualShift{Sites: []int{2, 6}, AfterRound: 5, Magnitude: 3}
	fed, err := Healthcare(opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(fed.Shifted) != 2 {
		t.Fatalf("%d shifted sites, want 2", len(fed.Shifted))
	}
	for i, s := range fed.Shifted {
		base := fed.Sites[opt.Shift.Sites[i]]
		if s.Name != base.Name || s.AfterRound != 5 || len(s.XTrain) != len(base.XTrain) || len(s.XTest) != len(base.XTest) {
			t.Fatalf("shifted %d: %+v does not match site %s", i, s.Name, base.Name)
		}
		// The shifted rows lie close to a
		// two-dimensional affine subspace: removing their mean, their
		// projection on the top two principal directions keeps almost all of
		// the variance.
		before, after := topTwoVarianceShare(base.XTrain), topTwoVarianceShare(s.XTrain)
		t.Logf("site %s: top-two variance share %.3f before, %.3f after", base.Name, before, after)
		if after < 0.9 || after-before < 0.1 {
			t.Fatalf("site %s: top-two variance share %.3f before, %.3f after; want >= 0.9 after and a rise of >= 0.1", base.Name, before, after)
		}
	}
}

// topTwoVarianceShare is the share of the total variance of rows carried by
// their two leading principal components (gonum SVD of the centred rows).
func topTwoVarianceShare(rows [][]float64) float64 {
	n, d := len(rows), len(rows[0])
	m := mat.NewDense(n, d, nil)
	for j := 0; j < d; j++ {
		mean := 0.0
		for i := range rows {
			mean += rows[i][j]
		}
		mean /= float64(n)
		for i := range rows {
			m.Set(i, j, rows[i][j]-mean)
		}
	}
	var svd mat.SVD
	svd.Factorize(m, mat.SVDNone)
	sv := svd.Values(nil)
	total := 0.0
	for _, v := range sv {
		total += v * v
	}
	return (sv[0]*sv[0] + sv[1]*sv[1]) / total
}

func TestLinspace(t *testing.T) {
	for i, test := range []struct {
		a, b float64
		n    int
		want []float64
	}{
		{0.1, 0.45, 1, []float64{0.1}},                                        // 0: numpy.linspace(0.1, 0.45, 1)
		{0, 1, 3, []float64{0, 0.5, 1}},                                       // 1
		{0.1, 0.45, 8, []float64{0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45}}, // 2: step 0.05
	} {
		got := linspace(test.a, test.b, test.n)
		if len(got) != len(test.want) {
			t.Fatalf("case %d: %v, want %v", i, got, test.want)
		}
		for j := range got {
			if math.Abs(got[j]-test.want[j]) > 1e-15 {
				t.Errorf("case %d: %v, want %v", i, got, test.want)
			}
		}
	}
}
