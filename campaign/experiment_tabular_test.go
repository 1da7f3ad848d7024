package campaign

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/experiments"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/report"
	"github.com/ptopofl/ptopofl/store"
)

// collectedFromSpec stands in for a finished sweep of plan: one done row
// per campaign of its spec, with the campaign's hyper-parameters, final
// AUC auc(campaign), a three-round curve ending at it, and pTopoFL's flags
// (flagged(campaign)).
func collectedFromSpec(t *testing.T, plan experiments.Plan, preset string, auc func(pipeline.SweepCampaign) float64, flagged func(pipeline.SweepCampaign) string) Collected {
	t.Helper()
	spec, err := ExperimentSweepSpec(plan, preset, "bucket", false)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := spec.Campaigns()
	if err != nil {
		t.Fatal(err)
	}
	c := Collected{Plan: plan, Spec: spec, Curves: map[string][]store.SweepCurveRow{}, Federations: map[string]experiments.Federation{}}
	for _, f := range plan.Federations {
		c.Federations[f.Name] = f
	}
	for _, sc := range cs {
		name := sc.Spec.Campaign
		v := auc(sc)
		c.Rows = append(c.Rows, store.SweepResultRow{Campaign: name, Federation: sc.Federation, Method: string(sc.Method),
			Setting: sc.Setting, Seed: sc.Seed, Preset: preset, State: pipeline.StateDone, Hyperparameters: sc.Spec.Hyperparameters,
			FinalAUC: v, NumClusters: 2, Flagged: flagged(sc)})
		for r, y := range []float64{v - 0.02, v - 0.01, v} {
			c.Curves[name] = append(c.Curves[name], store.SweepCurveRow{Campaign: name, Round: r + 1, Outcome: pipeline.OutcomeCommitted, AUC: y})
		}
	}
	return c
}

// TestAdversarialTau: in the adversarial sweep only pTopoFL's campaigns
// carry τ = 1.8 (and, beside them, τ = 2), every other method's spec is
// its preset's; the report input names pTopoFL at τ = 2 apart, takes the
// detector's counts from τ = 1.8 only, has the curves of Fig. 4(B)'s
// levels, and says the τ, detector and flag rule each preset resolves to.
func TestAdversarialTau(t *testing.T) {
	plan, err := experiments.Build(experiments.Adversarial, experiments.Options{Seeds: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		preset     string
		detector   string
		trustBelow float64
	}{
		{method.Default, "labelled", 0},   // 0
		{method.Paper, "descriptor", 0.5}, // 1: the authors' flags, trust < 0.5
	} {
		// pTopoFL at τ = 1.8 flags every site; at τ = 2 none, so that the
		// counts say which setting they came from. AUC: 0.8 at τ = 1.8,
		// 0.7 at τ = 2, 0.6 for every other method.
		col := collectedFromSpec(t, plan, c.preset, func(sc pipeline.SweepCampaign) float64 {
			switch sc.Setting {
			case experiments.AdversarialTauSetting:
				return 0.8
			case experiments.AdversarialComparisonSetting:
				return 0.7
			}
			return 0.6
		}, func(sc pipeline.SweepCampaign) string {
			if sc.Setting != experiments.AdversarialTauSetting {
				return ""
			}
			var names []string
			for _, s := range siteNames(plan, sc.Federation) {
				names = append(names, s)
			}
			return strings.Join(names, ",")
		})
		def := method.Defaults(c.preset)
		for _, r := range col.Rows {
			want := def.AnomalyThreshold
			switch r.Setting {
			case experiments.AdversarialTauSetting:
				want = experiments.AdversarialTau
			case experiments.AdversarialComparisonSetting:
				want = experiments.ComparisonTau
			}
			if r.AnomalyThreshold != want || (r.Method == string(learn.PTopoFL)) == (r.Setting == experiments.AdversarialBaseSetting) {
				t.Errorf("case %d: %s under %s has τ = %v, want %v", i, r.Method, r.Setting, r.AnomalyThreshold, want)
			}
		}
		in := AdversarialInput(col)
		if in.Tau != experiments.AdversarialTau || in.Detector != c.detector || in.FlagTrustBelow != c.trustBelow {
			t.Errorf("case %d: τ %v, detector %q, flags below trust %v; want %v, %q, %v", i, in.Tau, in.Detector, in.FlagTrustBelow, experiments.AdversarialTau, c.detector, c.trustBelow)
		}
		if in.CurveFraction != experiments.Fig4BFraction || !slices.Equal(in.CurveFlipRates, experiments.Fig4BFlipRates) {
			t.Errorf("case %d: Fig. 4(B) at %v, %v", i, in.CurveFraction, in.CurveFlipRates)
		}
		// 1 clean level + 4 levels × 3 flip rates.
		if len(in.Levels) != 13 {
			t.Fatalf("case %d: %d levels, want 13", i, len(in.Levels))
		}
		for _, l := range in.Levels {
			var names []string
			for _, m := range l.Methods {
				names = append(names, m.Method)
				want := map[string]float64{"ptopofl": 0.8, "ptopofl (τ = 2)": 0.7}[m.Method]
				if want == 0 {
					want = 0.6
				}
				if len(m.Runs) != 1 || m.Runs[0].FinalAUC != want || len(m.Runs[0].AUC) != 3 || math.Abs(m.Runs[0].AUC[0]-(want-0.02)) > 1e-12 {
					t.Errorf("case %d: level %v/%v: %s runs %+v, want one at %v with its curve", i, l.Fraction, l.FlipRate, m.Method, m.Runs, want)
				}
			}
			if want := []string{"ptopofl", "ptopofl (τ = 2)", "fedavg", "median", "trimmed-mean", "krum", "foolsgold", "norm-clip"}; !slices.Equal(names, want) {
				t.Errorf("case %d: series %v, want %v", i, names, want)
			}
			if l.Sites != 8 {
				t.Errorf("case %d: %d sites, want 8", i, l.Sites)
			}
			// Every site flagged at τ = 1.8: TP = adversarial sites,
			// FP = the others; no count from τ = 2's empty flags.
			d := l.Detectors[0]
			adv := int(math.Round(8 * l.Fraction))
			if d.Name != "pTopoFL detector" || len(d.Counts) != 1 || d.Counts[0].TruePositives != adv || d.Counts[0].FalsePositives != 8-adv {
				t.Errorf("case %d: level %v/%v: %s counts %+v, want %d true and %d false positives", i, l.Fraction, l.FlipRate, d.Name, d.Counts, adv, 8-adv)
			}
		}
		rep, err := report.Adversarial(in)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		// Fig. 4(B): 0.25 × 8 = 2 sites flip at the rates 30 % and 50 %.
		if rep.Assets["fig4b_adversarial_curves.png"] == nil || !strings.Contains(string(rep.Markdown), "2 of 8 sites flip 30 % and 50 % of their labels") {
			t.Errorf("case %d: no Fig. 4(B) of 2 of 8 sites in the report", i)
		}
	}
}

// siteNames lists the site names of the plan's federation fed.
func siteNames(plan experiments.Plan, fed string) []string {
	for _, f := range plan.Federations {
		if f.Name == fed {
			return f.SiteNames()
		}
	}
	panic(fmt.Sprintf("no federation %s", fed))
}

// TestAblationInput: the ablation's variants per scenario in the order of
// the plan's settings, each with its seeds, and the β grid's variants
// (β = 0, 0.1, 0.3 as full, 0.5, 0.7, 1) with the β they ran with.
func TestAblationInput(t *testing.T) {
	plan, err := experiments.Build(experiments.Ablation, experiments.Options{Seeds: 2, Tiny: false})
	if err != nil {
		t.Fatal(err)
	}
	// Final AUC: 0.5 + β/10 + seed/100 (+0.1 on benchmark).
	col := collectedFromSpec(t, plan, method.Default, func(sc pipeline.SweepCampaign) float64 {
		v := 0.5 + sc.Spec.Hyperparameters.Beta/10 + float64(sc.Seed)/100
		if strings.HasPrefix(sc.Federation, "bm-") {
			v += 0.1
		}
		return v
	}, func(pipeline.SweepCampaign) string { return "" })
	in := AblationInput(col)
	if in.Reference != "full" {
		t.Errorf("reference %q, want full", in.Reference)
	}
	for i, c := range []struct {
		scenario string
		name     string
		grid     bool
		beta     float64
	}{
		{"healthcare", "full", true, 0.3},         // 0
		{"healthcare", "M=1", false, 0.3},         // 1
		{"healthcare", "β=0", true, 0},            // 2
		{"healthcare", "automatic M", false, 0.3}, // 3
		{"healthcare", "β=0.1", true, 0.1},        // 4
		{"healthcare", "β=0.5", true, 0.5},        // 5
		{"healthcare", "β=0.7", true, 0.7},        // 6
		{"healthcare", "β=1", true, 1},            // 7
		{"benchmark", "full", true, 0.3},          // 8
		{"benchmark", "M=1", false, 0.3},          // 9
		{"benchmark", "β=0", true, 0},             // 10
		{"benchmark", "automatic M", false, 0.3},  // 11
		{"benchmark", "β=0.1", true, 0.1},         // 12
		{"benchmark", "β=0.5", true, 0.5},         // 13
		{"benchmark", "β=0.7", true, 0.7},         // 14
		{"benchmark", "β=1", true, 1},             // 15
	} {
		if i >= len(in.Variants) {
			t.Fatalf("%d variants, want 16", len(in.Variants))
		}
		v := in.Variants[i]
		if v.Scenario != c.scenario || v.Name != c.name || v.OnBetaGrid != c.grid || v.Beta != c.beta {
			t.Errorf("case %d: %s/%s grid %v β %v; want %s/%s grid %v β %v", i, v.Scenario, v.Name, v.OnBetaGrid, v.Beta, c.scenario, c.name, c.grid, c.beta)
		}
		if !slices.Equal(v.Seeds, []int64{1, 2}) || len(v.FinalAUC) != 2 {
			t.Errorf("case %d: seeds %v, %d final AUCs; want [1 2], 2", i, v.Seeds, len(v.FinalAUC))
			continue
		}
		want := 0.5 + c.beta/10 + 0.01
		if c.scenario == "benchmark" {
			want += 0.1
		}
		if math.Abs(v.FinalAUC[0]-want) > 1e-12 {
			t.Errorf("case %d: seed 1's final AUC %v, want %v", i, v.FinalAUC[0], want)
		}
	}
	if len(in.Variants) != 16 {
		t.Errorf("%d variants, want 16", len(in.Variants))
	}
	rep, err := report.Ablation(in)
	if err != nil {
		t.Fatal(err)
	}
	// β = 1 is best in both scenarios by construction (+0.07 over β = 0.3
	// on every seed).
	for _, sc := range []string{"Scenario healthcare", "Scenario benchmark"} {
		if !strings.Contains(string(rep.Markdown), sc) {
			t.Errorf("report lacks %q", sc)
		}
	}
	if rep.Assets["fig7_beta.png"] == nil || strings.Count(string(rep.Markdown), "β = 1 has the highest mean final AUC") != 2 {
		t.Errorf("report lacks the β figure or says β = 1 is best in fewer than 2 scenarios")
	}
}
