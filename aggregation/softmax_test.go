package aggregation

import (
	"math"
	"testing"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/tda"
)

// TestSoftmaxAggregation: Eq. (12) on cases worked by hand.
func TestSoftmaxAggregation(t *testing.T) {
	r2 := math.Sqrt2
	cases := []struct {
		cfg       Config
		sites     []SiteResult
		wantDist  []float64
		wantAlpha []float64
	}{
		// 0: mean barycentre. Normalised descriptors (1,0), (1,0), (0,1)
		// (the first given as (3,0); NormalizeDescriptors divides by
		// ‖φ‖ + 1e-8, hence the 1e-7 tolerance); their mean (2/3, 1/3) lies
		// √2/3 from the first two and 2√2/3 from the third; λ = 1.
		0: {Config{Aggregation: SoftmaxAggregation, SoftmaxLambda: 1, Barycentre: MeanBarycentre},
			[]SiteResult{{Descriptor: []float64{3, 0}}, {Descriptor: []float64{1, 0}}, {Descriptor: []float64{0, 1}}},
			[]float64{r2 / 3, r2 / 3, 2 * r2 / 3},
			func() []float64 {
				e := math.Exp(-r2 / 3)
				return []float64{1 / (2 + e), 1 / (2 + e), e / (2 + e)}
			}()},
		// 1: λ = 0 weighs every site alike.
		1: {Config{Aggregation: SoftmaxAggregation, SoftmaxLambda: 0},
			[]SiteResult{{Descriptor: []float64{3, 0}}, {Descriptor: []float64{1, 0}}, {Descriptor: []float64{0, 1}}},
			[]float64{r2 / 3, r2 / 3, 2 * r2 / 3}, []float64{1.0 / 3, 1.0 / 3, 1.0 / 3}},
		// 2: Fréchet barycentre of H0 diagrams {(0,2)} and {(0,4)} (and
		// empty H1): the mean is {(0,3)}, one away from each; equal weights.
		2: {Config{Aggregation: SoftmaxAggregation, SoftmaxLambda: 2, Barycentre: FrechetBarycentre},
			[]SiteResult{{H0: []tda.Pair{{Birth: 0, Death: 2}}}, {H0: []tda.Pair{{Birth: 0, Death: 4}}}},
			[]float64{1, 1}, []float64{0.5, 0.5}},
		// 3: Fréchet: H0 {(0,4)} and {} average to {(1,3)} (tda's
		// hand-computed case): squared W2 2 from the first (matched) and 2
		// from the empty one (the diagonal distance of (1,3)). H1 {} and
		// {(1,2)}: both have F = 0.5, the lower index starts, and the mean
		// of the empty diagram stays empty: squared W2 0 and 2·(1/2)² =
		// 0.5. So d = (√2, √2.5) and α ∝ (1, e^{−(√2.5−√2)}).
		3: {Config{Aggregation: SoftmaxAggregation, SoftmaxLambda: 1, Barycentre: FrechetBarycentre},
			[]SiteResult{{H0: []tda.Pair{{Birth: 0, Death: 4}}}, {H1: []tda.Pair{{Birth: 1, Death: 2}}}},
			[]float64{r2, math.Sqrt(2.5)},
			func() []float64 {
				e := math.Exp(-(math.Sqrt(2.5) - r2))
				return []float64{1 / (1 + e), e / (1 + e)}
			}()},
	}
	for i, c := range cases {
		alpha, dist, err := SoftmaxWeights(c.sites, c.cfg)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		for j := range alpha {
			if math.Abs(dist[j]-c.wantDist[j]) > 1e-7 || math.Abs(alpha[j]-c.wantAlpha[j]) > 1e-7 {
				t.Errorf("case %d: d %v α %v; want d %v α %v", i, dist, alpha, c.wantDist, c.wantAlpha)
				break
			}
		}
	}

	// The round: every site gets Σ α_k θ_k; α is reported as the sites'
	// weights, one cluster.
	cfg := DefaultConfig()
	cfg.Aggregation, cfg.SoftmaxLambda = SoftmaxAggregation, 1
	sites := []SiteResult{
		{Params: []float64{1, 0}, N: 10, Descriptor: []float64{3, 0}},
		{Params: []float64{0, 1}, N: 20, Descriptor: []float64{1, 0}},
		{Params: []float64{2, 2}, N: 30, Descriptor: []float64{0, 1}},
	}
	out, err := AggregateRound(RoundInput{Method: learn.PTopoFL, Round: 1, Sites: sites, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	e := math.Exp(-r2 / 3)
	want := []float64{(1 + 2*e) / (2 + e), (1 + 2*e) / (2 + e)}
	for i, m := range out.Models {
		if math.Abs(m[0]-want[0]) > 1e-7 || math.Abs(m[1]-want[1]) > 1e-7 || out.Labels[i] != 0 {
			t.Errorf("site %d: model %v, cluster %d; want %v in cluster 0", i, m, out.Labels[i], want)
		}
	}
	if len(out.SiteWeights) != 3 || math.Abs(out.SiteWeights[2]-e/(2+e)) > 1e-7 {
		t.Errorf("site weights %v", out.SiteWeights)
	}
	cfg.Barycentre = "median"
	if _, err := AggregateRound(RoundInput{Method: learn.PTopoFL, Round: 1, Sites: sites, Config: cfg}); err == nil {
		t.Error("an unknown barycentre: no error")
	}
}
