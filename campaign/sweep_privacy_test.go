package campaign

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/privacy"
	"github.com/ptopofl/ptopofl/search"
)

// fixedCounts gives every site 150 training and 40 test records.
func fixedCounts(fed, site string, h method.Hyperparameters) (int, int, error) { return 150, 40, nil }

func dpSweep(t *testing.T, h func(*method.Hyperparameters)) pipeline.SweepSpec {
	t.Helper()
	base := method.Defaults(method.Default)
	base.DP = method.DPRecord
	if h != nil {
		h(&base)
	}
	return pipeline.SweepSpec{
		Sweep: "sw", Preset: method.Default, Rounds: 15, Seeds: []uint64{1, 2}, Bucket: "b",
		Methods:     []pipeline.SweepMethod{{Method: learn.FedAvg, Hyperparameters: base.ForMethod(learn.FedAvg)}},
		Federations: []pipeline.SweepFederation{{Name: "f", Sites: []pipeline.Site{{Name: "a"}, {Name: "b"}, {Name: "c"}}}},
	}.WithDefaults()
}

// TestGridSweepBudget: a grid of two settings over two seeds puts four
// 15-round FedAvg campaigns on every site. Under privacy: {epsilon: 8}
// each gets the same dp_epsilon ε_c, and their releases compose at every
// site to just within 8: in Gaussian DP four equal campaigns make μ =
// 2·μ_c, so ε_c is GaussianEpsilon(μ(8)/2) = 3.2636 up to the plan's
// rounding of the noise (up, four significant digits).
func TestGridSweepBudget(t *testing.T) {
	s := dpSweep(t, nil)
	s.Settings = []pipeline.SweepSetting{
		{Label: "lr0.05", Set: []method.ParamValue{{Name: "lr", Value: 0.05}}},
		{Label: "lr0.1", Set: []method.ParamValue{{Name: "lr", Value: 0.1}}},
	}
	got, err := planSweepBudget(s, fixedCounts, &SweepFilePrivacy{Epsilon: 8})
	if err != nil {
		t.Fatal(err)
	}
	mu8, _ := privacy.GaussianMu(8, 1e-5)
	want, _ := privacy.GaussianEpsilon(mu8/2, 1e-5)
	if ec := got.Methods[0].Hyperparameters.DPEpsilon; math.Abs(ec-want) > 0.01 || ec > want*1.001 {
		t.Errorf("campaign budget ε_c = %v, want about GaussianEpsilon(μ(8)/2) = %v", ec, want)
	}
	cs, err := got.Campaigns()
	if err != nil {
		t.Fatal(err)
	}
	worst, rounds, err := siteSpend(cs, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if worst > 8 || worst < 7.99 || rounds["a"] != 60 {
		t.Errorf("every campaign composed at a site: ε %v over %d campaign-rounds, want just within 8 over 60", worst, rounds["a"])
	}
	if b := got.PrivacyBudget; b == nil || b.Epsilon != 8 || b.Delta != 1e-5 || b.CampaignRounds != 60 {
		t.Errorf("recorded budget %+v", b)
	}
	for _, c := range cs {
		if err := c.Spec.Validate(); err != nil {
			t.Errorf("%s: %v", c.Spec.Campaign, err)
		}
	}
}

// TestSearchSweepBudget: a tpe+asha search over lr (floats) and
// steps (10 to 40) with a budget of 60 campaign-rounds: every site
// takes part in at most 60 (the budget is below 8 trials × 2 seeds × 15
// rounds), so each campaign-round gets μ(8)²/60 of μ² on each split,
// sized for 40 local steps and one validation release a round: one round
// of the heaviest trial composes to GaussianEpsilon(μ(8)/√60), and 60 of
// them to 8. A trial of fewer steps releases less.
func TestSearchSweepBudget(t *testing.T) {
	s := dpSweep(t, func(h *method.Hyperparameters) { h.ValidationFraction = 0.2 })
	s.Search = &pipeline.SweepSearch{
		Dims:     []search.Dimension{{Name: "lr", LogUniform: []float64{0.01, 0.3}}, {Name: "steps", Int: []float64{10, 40}}},
		Strategy: search.StrategyTPEASHA, Budget: 60, Trials: 8, Objective: pipeline.ObjectiveValAUC,
	}
	got, err := planSweepBudget(s, fixedCounts, &SweepFilePrivacy{Epsilon: 8})
	if err != nil {
		t.Fatal(err)
	}
	h := got.Methods[0].Hyperparameters
	if h.DPNoise == 0 || h.DPMetricsNoise == 0 || h.DPValidationNoise == 0 || h.DPEpsilon != 0 {
		t.Fatalf("planned %+v", h)
	}
	mu8, _ := privacy.GaussianMu(8, 1e-5)
	allowance := mu8 * mu8 / 60
	train := 40/(h.DPNoise*h.DPNoise) + 1/(h.DPValidationNoise*h.DPValidationNoise)
	test := 1 / (h.DPMetricsNoise * h.DPMetricsNoise)
	for _, c := range []struct {
		split string
		mu2   float64
	}{{"training", train}, {"test", test}} {
		if c.mu2 > allowance || c.mu2 < 0.995*allowance {
			t.Errorf("%s records: a round of the heaviest trial is μ² %v, want just within %v", c.split, c.mu2, allowance)
		}
	}
	eps, _ := privacy.GaussianEpsilon(math.Sqrt(60*max(train, test)), 1e-5)
	if eps > 8 {
		t.Errorf("60 campaign-rounds compose to ε %v > 8", eps)
	}
	if b := got.PrivacyBudget; b == nil || b.CampaignRounds != 60 {
		t.Errorf("recorded budget %+v", b)
	}
	// The trials cap limits it when it is the smaller.
	s.Search.Budget, s.Search.Trials = 0, 2
	if got, err = planSweepBudget(s, fixedCounts, &SweepFilePrivacy{Epsilon: 8}); err != nil || got.PrivacyBudget.CampaignRounds != 2*2*15 {
		t.Errorf("trials cap 2: %+v, %v; want 60 campaign-rounds (2 trials × 2 seeds × 15)", got.PrivacyBudget, err)
	}
}

// TestSweepBudgetRefuses: privacy: without dp record, with noise or a
// budget of the campaigns' own, with a noise parameter searched or set by a
// setting, for a deep model's search, or a float dimension that changes
// what a round releases, is refused naming the field.
func TestSweepBudgetRefuses(t *testing.T) {
	search1 := func(s *pipeline.SweepSpec, d search.Dimension) {
		s.Search = &pipeline.SweepSearch{Dims: []search.Dimension{d}, Strategy: search.StrategyRandom, Trials: 4, Objective: pipeline.ObjectiveValAUC}
	}
	val := func(h *method.Hyperparameters) { h.ValidationFraction = 0.2 }
	for i, c := range []struct {
		spec func() pipeline.SweepSpec
		b    SweepFilePrivacy
		want string
	}{
		{func() pipeline.SweepSpec { s := dpSweep(t, func(h *method.Hyperparameters) { h.DP = "" }); return s }, SweepFilePrivacy{Epsilon: 8}, "needs hyperparameters dp: record"}, // 0
		{func() pipeline.SweepSpec { return dpSweep(t, func(h *method.Hyperparameters) { h.DPNoise = 2 }) }, SweepFilePrivacy{Epsilon: 8}, "hyperparameters.dp_noise"},             // 1
		{func() pipeline.SweepSpec { return dpSweep(t, func(h *method.Hyperparameters) { h.DPEpsilon = 2 }) }, SweepFilePrivacy{Epsilon: 8}, "hyperparameters.dp_epsilon"},         // 2
		{func() pipeline.SweepSpec { return dpSweep(t, nil) }, SweepFilePrivacy{Epsilon: -1}, "privacy.epsilon = -1"},                                                              // 3
		{func() pipeline.SweepSpec { return dpSweep(t, func(h *method.Hyperparameters) { h.DPDelta = 1e-6 }) }, SweepFilePrivacy{Epsilon: 8, Delta: 1e-5}, "privacy.delta"},        // 4
		{func() pipeline.SweepSpec {
			s := dpSweep(t, val)
			search1(&s, search.Dimension{Name: "dp_clip", Uniform: []float64{1, 2}})
			return s
		}, SweepFilePrivacy{Epsilon: 8}, ""}, // 5: clip is not noise
		{func() pipeline.SweepSpec {
			s := dpSweep(t, val)
			search1(&s, search.Dimension{Name: "dp_noise", Uniform: []float64{1, 2}})
			return s
		}, SweepFilePrivacy{Epsilon: 8}, "search.dp_noise"}, // 6
		{func() pipeline.SweepSpec {
			s := dpSweep(t, nil)
			s.Settings = []pipeline.SweepSetting{{Label: "e3", Set: []method.ParamValue{{Name: "dp_epsilon", Value: 3}}}}
			return s
		}, SweepFilePrivacy{Epsilon: 8}, "setting e3 sets dp_epsilon"}, // 7
		{func() pipeline.SweepSpec {
			s := dpSweep(t, func(h *method.Hyperparameters) {
				*h = method.Defaults(method.DeepSmall)
				h.DP, h.ValidationFraction = method.DPRecord, 0.2
			})
			s.Preset = method.DeepSmall
			search1(&s, search.Dimension{Name: "lr", Uniform: []float64{0.01, 0.1}})
			return s
		}, SweepFilePrivacy{Epsilon: 8}, "DP-SGD samples"}, // 8
	} {
		_, err := planSweepBudget(c.spec(), fixedCounts, &c.b)
		if c.want == "" {
			if err != nil {
				t.Errorf("%d: %v", i, err)
			}
			continue
		}
		if err == nil || !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d: error %v, want an input error containing %q", i, err, c.want)
		}
	}
}
