package experiments

import (
	"slices"
	"testing"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/pipeline"
)

// settingFor returns the settings of s that apply to m.
func settingFor(s []pipeline.SweepSetting, m learn.Method) []pipeline.SweepSetting {
	var out []pipeline.SweepSetting
	for _, set := range s {
		if len(set.Methods) == 0 || slices.Contains(set.Methods, m) {
			out = append(out, set)
		}
	}
	return out
}

// TestBuildAdversarial: one federation per seed at 0 % and one per seed at
// every other level and flip rate; Fig. 4(B)'s levels (2 of 8 sites at
// each of its flip rates) among them; τ set for pTopoFL alone, at 1.8 and,
// outside tiny plans, at 2 beside it; every other method under one setting
// without overrides.
func TestBuildAdversarial(t *testing.T) {
	for i, c := range []struct {
		tiny        bool
		seeds       int
		federations int
		ptopofl     []string // pTopoFL's settings
		fig4b       bool     // the plan has Fig. 4(B)'s levels
	}{
		// 1 clean + 4 levels × 3 flip rates = 13 federations a seed.
		{false, 2, 26, []string{AdversarialTauSetting, AdversarialComparisonSetting}, true}, // 0
		// Tiny: 0 % and 50 % at a 30 % flip rate.
		{true, 2, 4, []string{AdversarialTauSetting}, false}, // 1
	} {
		p, err := Build(Adversarial, Options{Seeds: c.seeds, Tiny: c.tiny})
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if len(p.Federations) != c.federations {
			t.Errorf("case %d: %d federations, want %d", i, len(p.Federations), c.federations)
		}
		if p.Federations[0].Seed != AdversarialFirstSeed {
			t.Errorf("case %d: first seed %d, want %d", i, p.Federations[0].Seed, AdversarialFirstSeed)
		}
		found := map[float64]int{}
		for _, f := range p.Federations {
			if f.AttackFraction != Fig4BFraction {
				continue
			}
			adversarial := 0
			for _, s := range f.Data.Sites {
				if s.IsAdversarial {
					adversarial++
				}
			}
			if adversarial != 2 || len(f.Data.Sites) != 8 {
				t.Errorf("case %d: %s has %d of %d sites adversarial, want 2 of 8", i, f.Name, adversarial, len(f.Data.Sites))
			}
			found[f.FlipRate]++
		}
		for _, flip := range Fig4BFlipRates {
			if got := found[flip] == c.seeds; got != c.fig4b {
				t.Errorf("case %d: Fig. 4(B)'s level at flip rate %v present for every seed: %v, want %v", i, flip, got, c.fig4b)
			}
		}
		for _, m := range p.Methods {
			sets := settingFor(p.Settings, m)
			var labels []string
			for _, s := range sets {
				labels = append(labels, s.Label)
				if err := artifact.ValidateName(s.Label); err != nil {
					t.Errorf("case %d: %v", i, err)
				}
			}
			if m == learn.PTopoFL {
				if !slices.Equal(labels, c.ptopofl) {
					t.Errorf("case %d: pTopoFL runs under %v, want %v", i, labels, c.ptopofl)
				}
				for j, s := range sets {
					want := []float64{AdversarialTau, ComparisonTau}[j]
					if len(s.Set) != 1 || s.Set[0].Name != "anomaly_threshold" || s.Set[0].Value != want {
						t.Errorf("case %d: setting %s sets %v, want anomaly_threshold = %v", i, s.Label, s.Set, want)
					}
				}
				continue
			}
			if len(sets) != 1 || sets[0].Label != AdversarialBaseSetting || len(sets[0].Set) != 0 {
				t.Errorf("case %d: %s runs under %v, want one setting %q without overrides", i, m, sets, AdversarialBaseSetting)
			}
		}
	}
}

// TestBuildAblation: every variant on healthcare and benchmark (healthcare
// alone in a tiny plan), the β grid complete with valid labels, and the
// paper's variants under their labels.
func TestBuildAblation(t *testing.T) {
	for i, c := range []struct {
		tiny      bool
		scenarios []string
	}{
		{false, []string{Healthcare, Healthcare, Healthcare, Benchmark, Benchmark, Benchmark}}, // 0
		{true, []string{Healthcare, Healthcare, Healthcare}},                                   // 1
	} {
		p, err := Build(Ablation, Options{Seeds: 3, Tiny: c.tiny})
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		var got []string
		for _, f := range p.Federations {
			got = append(got, f.Scenario)
		}
		if !slices.Equal(got, c.scenarios) {
			t.Errorf("case %d: scenarios %v, want %v", i, got, c.scenarios)
		}
		// The 4 variants of the paper's Fig. 7 and 4 more β values.
		if len(p.Settings) != 8 || !slices.Equal(p.Methods, []learn.Method{learn.PTopoFL}) {
			t.Errorf("case %d: %d settings, methods %v; want 8, [ptopofl]", i, len(p.Settings), p.Methods)
		}
	}
	labels := map[string]pipeline.SweepSetting{}
	for _, s := range AblationSettings() {
		if err := artifact.ValidateName(s.Label); err != nil {
			t.Error(err)
		}
		if _, ok := AblationDescriptions[s.Label]; !ok {
			t.Errorf("setting %s has no description", s.Label)
		}
		labels[s.Label] = s
	}
	for i, c := range []struct {
		beta  float64
		label string
	}{
		{0, "beta0"},     // 0: the paper's β=0 variant
		{0.1, "beta0.1"}, // 1
		{0.3, "full"},    // 2: the presets' β
		{0.5, "beta0.5"}, // 3
		{0.7, "beta0.7"}, // 4
		{1, "beta1"},     // 5
	} {
		l, ok := AblationBetaLabel(c.beta)
		if !ok || l != c.label {
			t.Errorf("case %d: AblationBetaLabel(%v) = %q, %v; want %q", i, c.beta, l, ok, c.label)
		}
		s, ok := labels[l]
		switch {
		case !ok:
			t.Errorf("case %d: no setting %s", i, l)
		case l == "full" && len(s.Set) != 0:
			t.Errorf("case %d: full sets %v, want the preset's", i, s.Set)
		case l != "full" && (len(s.Set) != 1 || s.Set[0].Name != "beta" || s.Set[0].Value != c.beta):
			t.Errorf("case %d: %s sets %v, want beta = %v", i, l, s.Set, c.beta)
		}
	}
	if l, ok := AblationBetaLabel(0.2); ok {
		t.Errorf("AblationBetaLabel(0.2) = %q, true; want off the grid", l)
	}
	for _, l := range []string{"M1", "autoM"} {
		if _, ok := labels[l]; !ok {
			t.Errorf("no setting %s", l)
		}
	}
}

// TestBuildTheory: the theory experiment runs pTopoFL alone on the
// adversarial experiment's federations (the same names, seeds and
// adversarial sites), under the labelled and the descriptor detector, both
// at the robustness τ = 1.8.
func TestBuildTheory(t *testing.T) {
	for i, c := range []struct {
		tiny        bool
		federations int
	}{{false, 13}, {true, 2}} {
		th, err := Build(Theory, Options{Seeds: 1, Tiny: c.tiny})
		if err != nil {
			t.Fatal(err)
		}
		adv, err := Build(Adversarial, Options{Seeds: 1, Tiny: c.tiny})
		if err != nil {
			t.Fatal(err)
		}
		if len(th.Federations) != c.federations || len(adv.Federations) != c.federations {
			t.Fatalf("case %d: %d and %d federations, want %d", i, len(th.Federations), len(adv.Federations), c.federations)
		}
		for j, f := range th.Federations {
			a := adv.Federations[j]
			if f.Name != a.Name || f.Seed != a.Seed || f.AttackFraction != a.AttackFraction || f.FlipRate != a.FlipRate {
				t.Errorf("case %d federation %d: %s (seed %d, %g, %g), adversarial %s (seed %d, %g, %g)", i, j, f.Name, f.Seed, f.AttackFraction, f.FlipRate, a.Name, a.Seed, a.AttackFraction, a.FlipRate)
			}
			for k, s := range f.Data.Sites {
				if s.IsAdversarial != a.Data.Sites[k].IsAdversarial || len(s.XTrain) != len(a.Data.Sites[k].XTrain) {
					t.Errorf("case %d federation %s site %d differs", i, f.Name, k)
				}
			}
		}
		if !slices.Equal(th.Methods, []learn.Method{learn.PTopoFL}) || len(th.Settings) != 2 ||
			th.Settings[0].Label != TheoryLabelledSetting || th.Settings[1].Label != TheoryDescriptorSetting {
			t.Errorf("case %d: methods %v, settings %+v", i, th.Methods, th.Settings)
		}
		for _, s := range th.Settings {
			if len(s.Set) != 2 || s.Set[0].Name != "anomaly_threshold" || s.Set[0].Value != AdversarialTau || s.Set[1].Name != "detector" || s.Set[1].Text != s.Label {
				t.Errorf("case %d setting %s: %+v", i, s.Label, s.Set)
			}
		}
	}
}
