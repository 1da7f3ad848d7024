package aggregation

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/learn"
)

func TestFoolsGoldWeights(t *testing.T) {
	// Case 1 by hand: two sybils with the same direction (1, 0) and an
	// honest site (0, 1). cs_01 = 1, the rest 0; v = [1 1 0]; pardoning
	// only scales the honest site's zeros. α = 1 − max_j cs = [0 0 1];
	// rescaled [0 0 1] → 0.99 → ln 99 + 0.5 ≈ 5.1, clipped to 1; ln 0 → 0.
	//
	// Case 2 by hand: H = (1, 0), (c, s), (0, 1) with s = 3/4, c = √7/4.
	// cs_01 = c, cs_02 = 0, cs_12 = s > c. v = [c s s]. Pardoning: v_1 >
	// v_0 so cs_01 ← c·c/s = (7/16)/(3/4) = 7/12 (v_2 = v_1, no change for
	// the others). α = [1 − 7/12, 1 − 3/4, 1 − 3/4] = [5/12 1/4 1/4];
	// rescaled by 5/12: [1 0.6 0.6]; 1 → 0.99 → weight 1; 0.6 →
	// ln(0.6/0.4) + 0.5 = ln 1.5 + 0.5 ≈ 0.9055. κ = 2 doubles the logit:
	// 2·0.9055 > 1 → 1.
	//
	// Case 3: zero history (site 1) has similarity 0 with every other; site
	// 0 and 2 are orthogonal: α = [1 1 1] → all 1.
	c, s := math.Sqrt(7)/4, 0.75
	w := math.Log(1.5) + 0.5
	for i, tc := range []struct {
		h     [][]float64
		kappa float64
		want  []float64
	}{
		{[][]float64{{1, 0}, {2, 0}, {0, 1}}, 1, []float64{0, 0, 1}}, // 0
		{[][]float64{{1, 0}, {c, s}, {0, 1}}, 1, []float64{1, w, w}}, // 1
		{[][]float64{{1, 0}, {c, s}, {0, 1}}, 2, []float64{1, 1, 1}}, // 2
		{[][]float64{{1, 0}, {0, 0}, {0, 3}}, 1, []float64{1, 1, 1}}, // 3
		{[][]float64{{5, -1}}, 1, []float64{1}},                      // 4: one site
		{[][]float64{{1, 0}, {2, 0}}, 1, []float64{0, 0}},            // 5: same direction
	} {
		got, err := FoolsGoldWeights(tc.h, tc.kappa)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		for k := range tc.want {
			if math.Abs(got[k]-tc.want[k]) > tol {
				t.Errorf("%d: weights %v, want %v", i, got, tc.want)
				break
			}
		}
	}
	if f := FoolsGoldFlags([]float64{0, 0.5, 0.005, 1}, 0.01); !slices.Equal(f, []bool{true, false, true, false}) {
		t.Errorf("flags %v", f)
	}
	for i, tc := range []struct {
		h     [][]float64
		kappa float64
	}{
		{nil, 1},                             // 0
		{[][]float64{{1}, {1, 2}}, 1},        // 1
		{[][]float64{{math.NaN()}, {1}}, 1},  // 2
		{[][]float64{{1}, {2}}, 0},           // 3
		{[][]float64{{1}, {2}}, math.Inf(1)}, // 4
	} {
		if _, err := FoolsGoldWeights(tc.h, tc.kappa); err == nil {
			t.Errorf("%d: no error", i)
		}
	}
}

func TestFoolsGoldRound(t *testing.T) {
	// Round 1 from the zero model: updates = models; the sybils 0 and 1
	// (same direction) get 0 and the honest site 2 weight 1, so the global
	// model is site 2's.
	cfg := DefaultConfig()
	sites := []SiteResult{
		{Params: []float64{1, 0}, N: 10},
		{Params: []float64{2, 0}, N: 10},
		{Params: []float64{0, 1}, N: 5},
	}
	out, err := AggregateRound(RoundInput{Method: learn.FoolsGold, Round: 1, Sites: sites, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.Models[0], []float64{0, 1}) || !slices.Equal(out.SiteWeights, []float64{0, 0, 1}) ||
		!slices.Equal(out.Flagged, []bool{true, true, false}) {
		t.Errorf("model %v weights %v flags %v, want [0 1] [0 0 1] [true true false]", out.Models[0], out.SiteWeights, out.Flagged)
	}
	if !slices.Equal(out.State.FoolsGoldHistory[1], []float64{2, 0}) {
		t.Errorf("history %v", out.State.FoolsGoldHistory)
	}
	// Round 2 from global (0, 1): updates (0, −1), (0, −1), (1, 0) add to
	// the histories: H = (1, −1), (2, −1), (1, 1). cs_01 = 3/√10 ≈ 0.949,
	// cs_02 = 0, cs_12 = 1/√10. v = [0.949 0.949 0.316]. α = [0.051 0.051
	// 0.684] → rescaled [0.0749 0.0749 1] → logits ln(0.081) + 0.5 < 0 →
	// [0 0 1]; global = (0, 1) + (1, 0) = (1, 1).
	sites2 := []SiteResult{
		{Params: []float64{0, 0}, N: 10},
		{Params: []float64{0, 0}, N: 10},
		{Params: []float64{1, 1}, N: 5},
	}
	out2, err := AggregateRound(RoundInput{Method: learn.FoolsGold, Round: 2, Sites: sites2, State: out.State, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out2.Models[0], []float64{1, 1}) || !slices.Equal(out2.State.FoolsGoldHistory[0], []float64{1, -1}) {
		t.Errorf("round 2: model %v history %v", out2.Models[0], out2.State.FoolsGoldHistory)
	}
	// A state for a different number of sites is an error.
	_, err = AggregateRound(RoundInput{Method: learn.FoolsGold, Round: 2, Sites: sites2[:2], State: out.State, Config: cfg})
	if err == nil || !strings.Contains(err.Error(), "3 update histories for 2 sites") {
		t.Errorf("mismatched state: %v", err)
	}
}

func TestNormClippedAverage(t *testing.T) {
	// By hand, from the zero model: update norms 5, 1, 2; the median bound
	// 2 scales (3, 4) to (1.2, 1.6) (factor 0.4). Weights n/Σn = 1/4, 1/4,
	// 2/4: x = 1.2/4 = 0.3, y = (1.6 + 1 + 2·2)/4 = 1.65.
	sites := []SiteResult{
		{Params: []float64{3, 4}, N: 1},
		{Params: []float64{0, 1}, N: 1},
		{Params: []float64{0, 2}, N: 2},
	}
	got, f, err := NormClippedAverage(nil, sites, 0)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got[0]-0.3) > tol || math.Abs(got[1]-1.65) > tol || !slices.Equal(f, []float64{0.4, 1, 1}) {
		t.Errorf("model %v factors %v, want [0.3 1.65] [0.4 1 1]", got, f)
	}
	// A fixed bound 10 clips nothing: plain FedAvg, (3/4, (4 + 1 + 4)/4).
	got, f, err = NormClippedAverage(nil, sites, 10)
	if err != nil || math.Abs(got[0]-0.75) > tol || math.Abs(got[1]-2.25) > tol || !slices.Equal(f, []float64{1, 1, 1}) {
		t.Errorf("bound 10: model %v factors %v (%v)", got, f, err)
	}
	// From global (0, 1): updates (3, 3), (0, 0), (0, 1), norms 3√2, 0, 1,
	// median 1: factor 1/(3√2) makes (3, 3) into (1/√2, 1/√2).
	got, f, err = NormClippedAverage([]float64{0, 1}, sites, 0)
	if err != nil {
		t.Fatal(err)
	}
	h := 1 / math.Sqrt2
	if math.Abs(got[0]-h/4) > tol || math.Abs(got[1]-(1+h/4+0.5)) > tol || math.Abs(f[0]-1/(3*math.Sqrt2)) > tol {
		t.Errorf("from (0, 1): model %v factors %v", got, f)
	}
	// Through AggregateRound, with the state's global model.
	out, err := AggregateRound(RoundInput{Method: learn.NormClip, Round: 2, Sites: sites, State: ServerState{Global: []float64{0, 1}}, Config: DefaultConfig()})
	if err != nil || !slices.Equal(out.Models[0], got) || !slices.Equal(out.SiteWeights, f) || out.Flagged != nil {
		t.Errorf("AggregateRound: %v %v %v (%v)", out.Models, out.SiteWeights, out.Flagged, err)
	}
	for i, tc := range []struct {
		global []float64
		sites  []SiteResult
		bound  float64
	}{
		{nil, nil, 0},            // 0
		{nil, sites, -1},         // 1
		{[]float64{1}, sites, 0}, // 2
		{nil, []SiteResult{sites[0], {Params: []float64{1}, N: 1}}, 0}, // 3
		{nil, []SiteResult{{Params: []float64{1}, N: 0}}, 0},           // 4
	} {
		if _, _, err := NormClippedAverage(tc.global, tc.sites, tc.bound); err == nil {
			t.Errorf("%d: no error", i)
		}
	}
}

func TestKrumSiteWeights(t *testing.T) {
	// Five models, f = 1: each score sums the squared distances to the
	// n − f − 2 = 2 nearest others, by hand 0: 1 + 1.44 = 2.44, 1: 0.04 + 1
	// = 1.04, 2: 0.64 + 1 = 1.64, 100: 98² + 98.8², 1.2: 0.04 + 0.64 =
	// 0.68, so Krum selects site 4.
	models := [][]float64{{0}, {1}, {2}, {100}, {1.2}}
	sites := make([]SiteResult, len(models))
	for k, m := range models {
		sites[k] = SiteResult{Params: m, N: 1}
	}
	out, err := AggregateRound(RoundInput{Method: learn.Krum, Round: 1, Sites: sites, Config: DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	sel := 4
	want := []float64{0, 0, 0, 0, 1}
	if !slices.Equal(out.SiteWeights, want) || out.Models[0][0] != models[sel][0] {
		t.Errorf("selected %d, weights %v, model %v", sel, out.SiteWeights, out.Models[0])
	}
}
