package audit

import (
	"math"
	"reflect"
	"testing"

	"github.com/ptopofl/ptopofl/tda"
)

// TestDescriptorMembershipPaper runs the distinguishing test against the
// paper's descriptor on a healthcare site of 200 training rows, 120
// releases a world. The outlier canary, when the secret subsample of 80
// draws it (probability 80/201 = 0.40), moves the standardisation and the
// diagrams so much that the attacker sees it at almost no false positive:
// TPR near 0.40 at 1 % FPR (measured 0.45 on 400 releases, 0.43 here;
// AUC 0.74 and 0.72), and the typical canary is near chance (measured AUC
// 0.51 and 0.50).
func TestDescriptorMembershipPaper(t *testing.T) {
	x, _, test := healthcareSite(t, 11)
	rs, err := DescriptorMembership(DescriptorConfig{X: x, Population: test, Trials: 300, Seed: 3, Secret: testSecret(t)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Attack != "descriptor/paper/outlier" || rs[1].Attack != "descriptor/paper/typical" {
		t.Fatalf("results %+v", rs)
	}
	for _, r := range rs {
		t.Logf("%s: AUC %.4f, TPR %.4f at 0.1 %% FPR, %.4f at 1 %%, ε_LB %.3f (%d and %d releases)", r.Attack, r.AUC, r.TPRAt01Percent, r.TPRAt1Percent, r.EpsilonLowerBound, r.Positives, r.Negatives)
	}
	if r := rs[0]; r.AUC < 0.62 || r.TPRAt1Percent < 0.25 || r.Positives != 150 || r.Negatives != 150 {
		t.Errorf("outlier: AUC %v, TPR at 1 %% %v on %d + %d; want AUC ≥ 0.62, TPR ≥ 0.25 on 150 + 150", r.AUC, r.TPRAt1Percent, r.Positives, r.Negatives)
	}
	if r := rs[1]; math.Abs(r.AUC-0.5) > 0.12 {
		t.Errorf("typical: AUC %v, want 0.5 ± 0.12", r.AUC)
	}
}

// TestDescriptorMembershipDP runs the test against the DP descriptor at
// ε = 1 and 8 (one release; z = 3.73 and 0.60), 2,000 releases a world.
// DP caps the attack's AUC at Φ(μ/√2) (0.575 and 0.880, by hand from μ =
// 0.268 and 1.666) and its ε_LB at ε; the attacker does far worse than the
// caps allow because the canary moves the descriptor by much less than its
// sensitivity bound √48/m. Measured (see the log): AUCs 0.48–0.54, ε_LB 0.
func TestDescriptorMembershipDP(t *testing.T) {
	x, _, test := healthcareSite(t, 11)
	for i, c := range []struct{ eps, z, maxAUC float64 }{
		{1, 3.7306, 0.575}, // 0
		{8, 0.6002, 0.880}, // 1
	} {
		rs, err := DescriptorMembership(DescriptorConfig{
			X: x, Population: test, Trials: 2000, Epsilon: c.eps, Seed: 3, Secret: testSecret(t),
			Conditions: []DescriptorCondition{DPDescriptorCondition},
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			t.Logf("ε = %v: %s: AUC %.4f, TPR %.4f at 0.1 %% FPR, %.4f at 1 %%, ε_LB %.3f", c.eps, r.Attack, r.AUC, r.TPRAt01Percent, r.TPRAt1Percent, r.EpsilonLowerBound)
			if math.Abs(r.NoiseMultiplier-c.z) > 1e-4 || math.Abs(r.Epsilon-c.eps) > 1e-9 {
				t.Errorf("%d: %s: z %v, ε %v, want %v, %v", i, r.Attack, r.NoiseMultiplier, r.Epsilon, c.z, c.eps)
			}
			if r.AUC > c.maxAUC || r.EpsilonLowerBound > r.Epsilon {
				t.Errorf("%d: %s: AUC %v (cap %v), ε_LB %v (ε %v): more than DP allows", i, r.Attack, r.AUC, c.maxAUC, r.EpsilonLowerBound, r.Epsilon)
			}
		}
	}
}

// TestDescriptorMembershipDeterministic checks that the results are a
// function of the configuration alone, whatever the number of workers.
func TestDescriptorMembershipDeterministic(t *testing.T) {
	x, _, test := healthcareSite(t, 11)
	cfg := DescriptorConfig{X: x[:100], Population: test, Trials: 16, Epsilon: 3, Seed: 5, Secret: testSecret(t), Workers: 1}
	a, err := DescriptorMembership(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Workers = 3
	b, err := DescriptorMembership(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) || len(a) != 4 {
		t.Errorf("1 worker: %+v\n3 workers: %+v", a, b)
	}
}

func TestDescriptorMembershipErrors(t *testing.T) {
	x, _, test := healthcareSite(t, 11)
	for i, cfg := range []DescriptorConfig{
		{},                                   // 0: no rows
		{X: x[:1]},                           // 1: one row
		{X: [][]float64{{1, 2}, {1}}},        // 2: ragged
		{X: [][]float64{{1}, {math.Inf(1)}}}, // 3
		{X: x, Population: [][]float64{{1}}}, // 4: population of another width
		{X: x, Canaries: []Canary{TypicalCanary}},                        // 5: no population
		{X: x, Canaries: []Canary{"loud"}},                               // 6
		{X: x, Conditions: []DescriptorCondition{DPDescriptorCondition}}, // 7: no ε
		{X: x, Conditions: []DescriptorCondition{"other"}},               // 8
		{X: x, Trials: 4},     // 9
		{X: x, NSub: 1},       // 10
		{X: x, Epsilon: -1},   // 11
		{X: x, Delta: 2},      // 12
		{X: x, Confidence: 1}, // 13
		{X: x, Population: x[:3], Canaries: []Canary{TypicalCanary}}, // 14: every candidate is in D
		{X: x, Population: test, Epsilon: 1, DP: tdaBadOptions},      // 15
	} {
		if _, err := DescriptorMembership(cfg); err == nil {
			t.Errorf("invalid %d: no error", i)
		}
	}
}

// tdaBadOptions are DP descriptor options tda refuses (a grid of 1).
var tdaBadOptions = tda.DPDescriptorOptions{Grid: 1}

// TestDescriptorMembershipReleases attacks two made-up releases with the
// descriptors' canaries and test: a constant, which says nothing of the
// canary (chance: AUC 0.5), and the row count, which says everything (D
// has 200 rows, D ∪ {canary} 201: told apart every time, AUC 1).
func TestDescriptorMembershipReleases(t *testing.T) {
	x, _, test := healthcareSite(t, 11)
	rs, err := DescriptorMembership(DescriptorConfig{X: x, Population: test, Trials: 40, Seed: 3, Secret: testSecret(t),
		Conditions: []DescriptorCondition{}, Releases: []MatchedRelease{
			{Name: "constant", Compute: func([][]float64, int, int) ([]float64, error) { return []float64{1}, nil }},
			{Name: "count", Compute: func(rows [][]float64, _, _ int) ([]float64, error) { return []float64{float64(len(rows))}, nil }},
		}})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		attack string
		auc    float64
	}{{"release/constant/outlier", 0.5}, {"release/count/outlier", 1}, {"release/constant/typical", 0.5}, {"release/count/typical", 1}}
	if len(rs) != len(want) {
		t.Fatalf("%d results: %+v", len(rs), rs)
	}
	for i, w := range want {
		if rs[i].Attack != w.attack || rs[i].AUC != w.auc {
			t.Errorf("%d: %s AUC %v; want %s AUC %v", i, rs[i].Attack, rs[i].AUC, w.attack, w.auc)
		}
	}
}
