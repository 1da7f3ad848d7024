package report

import (
	"bytes"
	"flag"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/eval"
)

// Golden images live in testdata/NAME_golden.png. Regenerate them, after
// checking a change to a figure by eye, with
//
//	go test ./report -regen
//
// The comparison decodes both PNGs and compares their pixels, as
// gonum.org/v1/plot/cmpimg.Equal does for gonum/plot's CheckPlot tests;
// cmpimg itself is not imported because it pulls rsc.io/pdf into go.mod
// for PDF comparison we do not need. A figure that differs is written to
// testdata/NAME_got.png (ignored by git) for comparison.
var regen = flag.Bool("regen", false, "regenerate the golden images in testdata/ from the current output")

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden := filepath.Join("testdata", name+"_golden.png")
	if *regen {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatalf("write golden %s: %v", golden, err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("read golden %s: %v (regenerate with -regen)", golden, err)
	}
	ok, err := samePixels(got, want)
	if err != nil {
		t.Fatalf("compare %s: %v", name, err)
	}
	if !ok {
		gotPath := filepath.Join("testdata", name+"_got.png")
		_ = os.WriteFile(gotPath, got, 0o644)
		t.Errorf("figure %s differs from %s; see %s", name, golden, gotPath)
	}
}

// table1Fixture has three seeds on healthcare, to be tested, and one seed
// on benchmark, too few to test.
func table1Fixture() Table1Input {
	return Table1Input{Provenance: []MethodNote{{Method: "fedavg", Note: "true FedAvg, not the paper's local-only row"}}, Scenarios: []Table1Scenario{
		{Name: "healthcare", Methods: []MethodRuns{
			{Method: "ptopofl", Runs: []Run{
				{Seed: 1, AUC: []float64{0.80, 0.83, 0.84}, FinalAUC: 0.84, FinalAccuracy: 0.78, ConvergenceRound: 1},
				{Seed: 2, AUC: []float64{0.81, 0.84, 0.85}, FinalAUC: 0.85, FinalAccuracy: 0.79, ConvergenceRound: 1},
				{Seed: 3, AUC: []float64{0.79, 0.82, 0.83}, FinalAUC: 0.83, FinalAccuracy: 0.77, ConvergenceRound: 2},
			}},
			{Method: "fedavg", Runs: []Run{
				{Seed: 1, AUC: []float64{0.70, 0.76, 0.79}, FinalAUC: 0.79, FinalAccuracy: 0.79, ConvergenceRound: 2},
				{Seed: 2, AUC: []float64{0.72, 0.77, 0.80}, FinalAUC: 0.80, FinalAccuracy: 0.80, ConvergenceRound: 2},
				{Seed: 3, AUC: []float64{0.71, 0.78, 0.80}, FinalAUC: 0.80, FinalAccuracy: 0.81, ConvergenceRound: 3},
			}},
		}},
		{Name: "benchmark", Methods: []MethodRuns{
			{Method: "fedavg", Runs: []Run{{Seed: 1, AUC: []float64{0.85, 0.89, 0.90}, FinalAUC: 0.90, FinalAccuracy: 0.86, ConvergenceRound: 1}}},
			{Method: "ptopofl", Runs: []Run{{Seed: 1, AUC: []float64{0.88, 0.90, math.NaN()}, FinalAUC: 0.91, FinalAccuracy: 0.79, ConvergenceRound: 1}}},
		}},
	}}
}

// adversarialFixture has 10 sites a federation; every run's AUC curve is
// final − 0.04, final − 0.02, final over three rounds. Fig. 4(B) takes the
// clean level and 30 % of the sites at flip rates 30 % and 50 %, not the 50
// % level.
func adversarialFixture() AdversarialInput {
	runs := func(aucs ...float64) []Run {
		out := make([]Run, len(aucs))
		for i, v := range aucs {
			out[i] = Run{Seed: int64(i + 1), FinalAUC: v, AUC: []float64{v - 0.04, v - 0.02, v}}
		}
		return out
	}
	level := func(fraction, flip float64, pt, fa []float64, det []DetectionCounts, krum []DetectionCounts) AttackLevel {
		return AttackLevel{Fraction: fraction, FlipRate: flip, Sites: 10,
			Methods:   []MethodRuns{{Method: "ptopofl", Runs: runs(pt...)}, {Method: "fedavg", Runs: runs(fa...)}},
			Detectors: []DetectorRuns{{Name: "ptopofl", Counts: det}, {Name: "krum", Counts: krum}}}
	}
	return AdversarialInput{CurveFraction: 0.3, CurveFlipRates: []float64{0.3, 0.5}, CurveFocus: []string{"ptopofl"}, Tau: 1.8, Detector: "labelled",
		Levels: []AttackLevel{
			level(0, 0, []float64{0.85, 0.87}, []float64{0.84, 0.86},
				[]DetectionCounts{{Seed: 1, TrueNegatives: 10}, {Seed: 2, FalsePositives: 1, TrueNegatives: 9}},
				[]DetectionCounts{{Seed: 1, FalsePositives: 9, TrueNegatives: 1}}),
			level(0.3, 0.3, []float64{0.82, 0.80}, []float64{0.75, 0.77},
				[]DetectionCounts{{Seed: 1, TruePositives: 3, TrueNegatives: 7}, {Seed: 2, TruePositives: 2, FalseNegatives: 1, TrueNegatives: 7}}, nil),
			level(0.5, 0.3, []float64{0.77, 0.77}, []float64{0.70, 0.74},
				[]DetectionCounts{{Seed: 1, TruePositives: 4, FalseNegatives: 1, FalsePositives: 1, TrueNegatives: 4}}, nil),
			level(0.3, 0.5, []float64{0.80, 0.78}, []float64{0.70, 0.72},
				[]DetectionCounts{{Seed: 1, TruePositives: 3, TrueNegatives: 7}}, nil),
		}}
}

// adversarialPaperFixture is adversarialFixture as the paper preset runs
// it: the descriptor detector, flags by trust below 0.5.
func adversarialPaperFixture() AdversarialInput {
	in := adversarialFixture()
	in.Detector, in.FlagTrustBelow = "descriptor", 0.5
	return in
}

func stabilityFixture() StabilityInput {
	return StabilityInput{Rounds: []int{1, 2, 3, 4}, DriftThreshold: 0.5, Sites: []SiteTrace{
		{Site: "site0", H0Entropy: []float64{2.10, 2.11, 2.09, 2.10}, H1Entropy: []float64{1.00, 1.02, 1.01, 1.00}, Drift: []float64{0, 0.05, 0.06, 0.05}},
		{Site: "site1", Shifted: true, ShiftRound: 3, H0Entropy: []float64{1.80, 1.81, 2.40, 2.45}, H1Entropy: []float64{0.70, 0.71, 1.20, math.NaN()},
			Drift: []float64{0, 0.04, 0.60, 0.75}, Reclustered: []int{3}, Reassigned: []int{3}},
		{Site: "site2", H0Entropy: []float64{2.50, 2.52, 2.51, 2.53}, H1Entropy: []float64{1.30, 1.29, 1.31, 1.30}, Drift: []float64{0, 0.02, 0.03, 0.03}},
	}}
}

func privacyFixture(t *testing.T) PrivacyInput {
	r, err := eval.Privacy([]string{"a", "b"}, []int{100, 400}, eval.DefaultPrivacySettings(20))
	if err != nil {
		t.Fatal(err)
	}
	return PrivacyInput{
		Federations: []PrivacyFederation{{Name: "healthcare", Report: r}},
		Releases: []ReleaseRow{
			{Method: "ptopofl", Round: 1, Kinds: []string{"descriptor", "label_summary", "model", "metrics"}, Numbers: []int{48, 11, 21, 2}},
			{Method: "fedavg", Round: 1, Kinds: []string{"model", "metrics"}, Numbers: []int{21, 2}},
		},
		Reconstruction: []ReconstructionRow{{Epsilon: 0, MedianError: 1e-15, MaxError: 2e-15, Records: 10}, {Epsilon: 8, MedianError: 0.9, MaxError: 4, Records: 10}},
		Membership: []MembershipRow{
			{Target: "model", Scenario: "healthcare", Epsilon: 0, AUC: 0.61, TPRAt0001: 0.002, TPRAt001: 0.03},
			{Target: "model", Scenario: "healthcare", Epsilon: 8, AUC: 0.52, TPRAt0001: 0.001, TPRAt001: 0.011},
			{Target: "descriptor", Canary: "outlier", Condition: "paper", Epsilon: 0, AUC: 1, TPRAt0001: 1, TPRAt001: 1},
		},
		Audit:   []AuditRow{{Epsilon: 8, LowerBound: 5.1, Steps: 450, NoiseMultiplier: 12.74, Trials: 20000}},
		Utility: []UtilityRow{{Method: "fedavg", Scenario: "healthcare", Metric: "final_auc", Epsilon: 0, Values: []float64{0.80, 0.84}, Released: []float64{0.80, 0.84}}, {Method: "fedavg", Scenario: "healthcare", Metric: "final_auc", Epsilon: 8, Values: []float64{0.78, 0.80}, Released: []float64{0.70, 0.74}}},
	}
}

// ablationFixture has two scenarios of three seeds; healthcare's variants
// name no scenario (the input's), benchmark's list their seeds out of
// order. Each has a β grid with full (β = 0.3) on it.
func ablationFixture() AblationInput {
	return AblationInput{Scenario: "healthcare", Variants: []AblationVariant{
		{Name: "full", Description: "pTopoFL", FinalAUC: []float64{0.84, 0.85, 0.83}, OnBetaGrid: true, Beta: 0.3},
		{Name: "M=1", Description: "one cluster", FinalAUC: []float64{0.79, 0.81, 0.80}},
		{Name: "β=0", Description: "no inter-cluster blending", FinalAUC: []float64{0.83, 0.83, 0.80}, OnBetaGrid: true},
		{Name: "automatic M", Description: "M chosen by silhouette", FinalAUC: []float64{0.84, 0.84, 0.84}, Clusters: []int{3, 2, 3}},
		{Name: "β=1", Description: "global consensus", FinalAUC: []float64{0.80, 0.82, 0.81}, OnBetaGrid: true, Beta: 1},
		{Name: "full", Scenario: "benchmark", Description: "pTopoFL", FinalAUC: []float64{0.86, 0.88, 0.90}, OnBetaGrid: true, Beta: 0.3},
		{Name: "β=0", Scenario: "benchmark", Description: "no inter-cluster blending", FinalAUC: []float64{0.85, 0.86, 0.88}, OnBetaGrid: true},
		{Name: "β=1", Scenario: "benchmark", Description: "global consensus", Seeds: []int64{3, 1, 2}, FinalAUC: []float64{0.91, 0.87, 0.90}, OnBetaGrid: true, Beta: 1},
	}}
}

func deepFixture() DeepInput {
	return DeepInput{Notes: []string{"scaffold: run with momentum = 0 (setting sgd), its preset otherwise."}, Scenarios: []DeepScenario{
		{Name: "C, α = 0.1", Data: "Fashion-MNIST", Sites: 10, Preset: "deep-small", Rounds: 3, Methods: []DeepMethodRuns{
			{Method: "fedavg", Runs: []DeepRun{
				{Seed: 1, Update: []float64{0.60, 0.80, 0.90}, Aggregate: []float64{0.30, 0.50, 0.60}},
				{Seed: 2, Update: []float64{0.62, 0.82, 0.92}, Aggregate: []float64{0.32, 0.52, 0.64}},
			}},
			{Method: "ptopofl", Runs: []DeepRun{
				{Seed: 1, Update: []float64{0.61, 0.79, 0.89}, Aggregate: []float64{0.40, 0.70, 0.80}},
				{Seed: 2, Update: []float64{0.63, 0.81, math.NaN()}, Aggregate: []float64{0.42, 0.72, 0.78}},
			}},
		}},
		{Name: "D", Data: "Fashion-MNIST, writer-like", Sites: 50, Preset: "deep-d-small", Rounds: 2, Methods: []DeepMethodRuns{
			{Method: "ptopofl", Runs: []DeepRun{{Seed: 1, Update: []float64{0.5, 0.7}, Aggregate: []float64{0.4, 0.75}}}},
			{Method: "local", Runs: []DeepRun{{Seed: 1, Update: []float64{0.5, 0.6}, Aggregate: []float64{0.5, 0.6}}}},
			{Method: "scaffold", Runs: []DeepRun{{Seed: 1, Update: []float64{0.3}, Aggregate: []float64{0.2},
				Failed: "failed after 1 of 2 rounds: the scaffold model diverged"}}},
		}},
	}}
}

func TestReports(t *testing.T) {
	for _, test := range []struct {
		name    string
		build   func() (*Report, error)
		figures []string
		// want are strings the Markdown and the HTML must contain; the
		// numbers are computed by hand from the fixtures.
		want []string
	}{
		{
			name:    "table1",
			build:   func() (*Report, error) { return Table1(table1Fixture()) },
			figures: []string{"fig2_auc_curves", "fig3_final_auc"},
			want: []string{
				// ptopofl healthcare: 0.84 0.85 0.83, mean 0.84, std √(2e-4/2) = 0.01.
				"0.840 ± 0.010",
				// fedavg healthcare: 0.79 0.80 0.80: mean 0.7967, std √(6.667e-5/2) = 0.00577.
				"0.797 ± 0.006",
				// Convergence rounds 1 1 2: mean 1.333, std √(0.6667/2) = 0.577,
				// rounds with one decimal.
				"1.3 ± 0.6",
				// benchmark: one seed, its convergence round an integer.
				"1 (1 seed)",
				// Differences 0.05 0.05 0.03: mean 0.0433, std 0.01155; t = 6.5,
				// ν = 2, p = 1 − 6.5/√44.25 = 0.02286; W = 0, exact p = 2/8.
				"0.043 ± 0.012", "6.500 (2)", "0.0229", "0.2500",
				"cannot reach p < 0.05 (its smallest possible p is 0.2500)",
				// benchmark: one seed each.
				"0.910 (1 seed)",
				// Said once for every method it concerns, naming them.
				"fedavg: 1 paired seed(s) with ptopofl; the paired t-test needs at least 2",
				// The rows' provenance, once.
				"Which row of the paper's Table 1 it is", "true FedAvg, not the paper's local-only row",
			},
		},
		{
			name:    "adversarial",
			build:   func() (*Report, error) { return Adversarial(adversarialFixture()) },
			figures: []string{"fig4_adversarial", "fig4b_adversarial_curves"},
			want: []string{
				// 0 %: ptopofl 0.85 0.87: mean 0.86, std √(2·0.01²/1) = 0.0141.
				"0.860 ± 0.014",
				// 0 %: no adversarial site, so no detection rate; FPR 1/20.
				"n/a", "5.0 % (1/20)",
				// 30 %: TP 5, FN 1: 83.3 %; FP 0 of 14.
				"83.3 % (5/6)", "0.0 % (0/14)",
				// 50 %: ptopofl 0.77 0.77: std 0; FPR 1/5.
				"0.770 ± 0.000", "20.0 % (1/5)",
				// τ and the labelled detector.
				"pTopoFL ran with τ = 1.8", "τ changes the weights, not the flags",
				// Fig. 4(B): 0.3 × 10 sites = 3 flip at 30 % and 50 %.
				"Fig. 4(B): AUC per round under attack", "3 of 10 sites flip 30 % and 50 % of their labels",
				// 0 %, ptopofl: rounds 1 (0.81, 0.83) and 3 (0.85, 0.87),
				// means 0.82 and 0.86; fedavg (0.80, 0.82) → (0.84, 0.86).
				"0.820 → 0.860", "0.810 → 0.850",
				// Flip 50 % at 30 % of the sites: ptopofl (0.76, 0.74) → (0.80,
				// 0.78), fedavg (0.66, 0.68) → (0.70, 0.72).
				"0.750 → 0.790", "0.670 → 0.710",
				// pTopoFL drawn apart first, then both methods.
				"Top row: ptopofl, the y range fitted to the row; bottom row: every method.",
			},
		},
		{
			name:    "adversarial, paper preset",
			build:   func() (*Report, error) { return Adversarial(adversarialPaperFixture()) },
			figures: []string{"fig4_adversarial", "fig4b_adversarial_curves"},
			want: []string{
				"pTopoFL ran with τ = 1.8",
				"a site is flagged when its trust weight is below 0.5, not when its z-score exceeds τ",
				"τ changes nothing",
			},
		},
		{
			name:    "stability",
			build:   func() (*Report, error) { return Stability(stabilityFixture()) },
			figures: []string{"fig5_entropy", "fig5_drift"},
			want: []string{
				"1.800 → 2.450", "0.700 → n/a", "yes (round 3)", "0.750",
				// site1 shifted and was re-clustered into another cluster in
				// round 3; site0 and site2 stayed.
				"Drift re-clustering fired for 1 of 1 shifted sites and 0 of 2 unshifted sites, and moved 1 and 0 of them to another cluster.",
				"3 (moved)",
				"Re-clustering threshold on Δ: 0.500.",
			},
		},
		{
			name:    "privacy",
			build:   func() (*Report, error) { return Privacy(privacyFixture(t)) },
			figures: []string{"fig6_privacy", "fig_privacy_utility"},
			want: []string{
				// d = 20, p = 21, m = 48, α_c = 0.1: ρ_grad = 21/(n·20),
				// ρ_topo = 48/(n·20)·0.1 for n = 100 and 400.
				"0.0105", "0.002625", "0.0024", "0.0006",
				// Ratio of means 0.0015/0.0065625 = 0.2286, 4.375-fold.
				"0.229 (a 4.4-fold reduction)",
				// log2(22) = 4.459, log2(5.8) = 2.536.
				"4.46 bits for gradients, 2.54 bits for descriptors",
				// The measured side: 82 numbers a pTopoFL site, 23 a FedAvg site.
				"a pTopoFL site sends 82 numbers in round 1", "more than a FedAvg site (23)",
				// The audit: ε 8, bound 5.1, ratio 0.64 (5.1/8 = 0.6375).
				"5.100", "0.64", "12.74", "20000",
				// fedavg at ε 8: exact 0.78 0.80, mean 0.79, std 0.0141; released mean 0.72.
				"0.7900 ± 0.0141", "0.7200",
			},
		},
		{
			name:    "deep",
			build:   func() (*Report, error) { return Deep(deepFixture()) },
			figures: []string{"fig_deep_accuracy"},
			want: []string{
				// C: fedavg after the update 0.90 0.92: mean 0.91, std √(2·0.01²) = 0.0141.
				"0.910 ± 0.014",
				// C: fedavg after the aggregation 0.60 0.64: mean 0.62, std 0.0283.
				"0.620 ± 0.028",
				// C: ptopofl after the aggregation 0.80 0.78: mean 0.79, std 0.0141;
				// after the update, seed 2 has no last score: seed 1's 0.89 alone.
				"0.790 ± 0.014", "0.890 (1 seed)",
				// Paired ptopofl − fedavg after the aggregation: 0.20 0.14: mean
				// 0.17, std 0.0424; t = 0.17/(0.0424/√2) = 5.667, ν = 1.
				"0.170 ± 0.042", "5.667 (1)",
				// D: one seed each.
				"0.750 (1 seed)", "0.600 (1 seed)",
				"Fashion-MNIST, writer-like", "deep-d-small",
				// A failed run counts in no mean and is listed.
				"n/a (1 failed)", "D, scaffold, seed 1: failed after 1 of 2 rounds: the scaffold model diverged",
				"scaffold: run with momentum = 0 (setting sgd), its preset otherwise.",
			},
		},
		{
			name:    "ablation",
			build:   func() (*Report, error) { return Ablation(ablationFixture()) },
			figures: []string{"fig7_ablation", "fig7_beta"},
			want: []string{
				"Scenario healthcare", "Scenario benchmark",
				// healthcare, M=1: 0.79 0.81 0.80: mean 0.80, std 0.01.
				"0.800 ± 0.010",
				// healthcare, β=0: 0.83 0.83 0.80: mean 0.82, std √(3e-4) = 0.0173.
				"0.820 ± 0.017",
				// automatic M: 0.84 three times and clusters 3, 2, 3.
				"0.840 ± 0.000", "3, 2, 3",
				// full − M=1: 0.05 0.04 0.03: mean 0.04, std 0.01; t =
				// 0.04/(0.01/√3) = 6.928, ν = 2, p = 1 − 6.928/√50 = 0.0202;
				// W = 0, exact p = 2/8.
				"full − M=1", "0.0400 ± 0.0100", "6.928 (2)", "0.0202",
				// healthcare's β grid: full best (0.84); next β = 0 (0.82, not
				// β = 1's 0.81). β=0 − full: −0.01 −0.02 −0.03: mean −0.02, std
				// 0.01, t = −3.464, p = 1 − 3.464/√14 = 0.0742; W = 0, p = 2/8.
				// Means in the sentence with four decimals.
				"β grid (0, 0.3, 1): β = 0.3 (full) has the highest mean final AUC, 0.8400 ± 0.0100; the next, β = 0 at 0.8200 ± 0.0173, is 0.0200 lower; paired over 3 seeds, paired t-test p = 0.0742, Wilcoxon p = 0.2500: not significant at the 5 % level.",
				// benchmark's β grid: β = 1 (seeds 1, 2, 3: 0.87 0.90 0.91, mean
				// 0.8933, std √(4.333e-4) = 0.0208) beats full (0.86 0.88 0.90,
				// 0.88 ± 0.02) by
				// 0.0133; paired by seed 0.01 0.02 0.01: mean 0.01333, std
				// 0.005774, t = 4, p = 1 − 4/√18 = 0.0572; W = 0, p = 2/8.
				"β grid (0, 0.3, 1): β = 1 has the highest mean final AUC, 0.8933 ± 0.0208, 0.0133 above β = 0.3 (full) at 0.8800 ± 0.0200; paired over 3 seeds, paired t-test p = 0.0572, Wilcoxon p = 0.2500: not significant at the 5 % level.",
				// Three seeds: no Wilcoxon p below 2/2³ = 0.25 (TestBetaSignificance).
				"No β of the grid differs from β = 0.3 (full) at the 5 % level by both tests.",
			},
		},
	} {
		t.Run(test.name, func(t *testing.T) {
			r, err := test.build()
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range test.want {
				if !bytes.Contains(r.Markdown, []byte(mdEscaper.Replace(w))) {
					t.Errorf("Markdown lacks %q", w)
				}
				if !strings.Contains(htmlUnescape(r.HTML), w) {
					t.Errorf("HTML lacks %q", w)
				}
			}
			figs := len(r.Assets)
			if r.Assets["results.json"] != nil {
				figs-- // the privacy report's results (TestPrivacyResults)
			}
			if figs != 2*len(test.figures) {
				t.Errorf("got %d figure assets, want %d", figs, 2*len(test.figures))
			}
			for _, f := range test.figures {
				png, svg := r.Assets[f+".png"], r.Assets[f+".svg"]
				if png == nil || svg == nil {
					t.Errorf("assets lack %s.png or %s.svg", f, f)
					continue
				}
				if !bytes.Contains(r.Markdown, []byte("("+f+".png)")) {
					t.Errorf("Markdown does not refer to %s.png", f)
				}
				if !bytes.HasPrefix(svg, []byte("<?xml")) && !bytes.Contains(svg[:min(200, len(svg))], []byte("<svg")) {
					t.Errorf("%s.svg does not look like SVG", f)
				}
				checkGolden(t, f, png)
			}
			checkSelfContained(t, r.HTML)

			again, err := test.build()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(r.Markdown, again.Markdown) || !bytes.Equal(r.HTML, again.HTML) {
				t.Error("Markdown or HTML differ between two builds of the same input")
			}
			for k, v := range r.Assets {
				if !bytes.Equal(v, again.Assets[k]) {
					t.Errorf("asset %s differs between two builds of the same input", k)
				}
			}
		})
	}
}

var srcAttr = regexp.MustCompile(`(?i)\b(src|href)\s*=\s*"([^"]*)"`)

// checkSelfContained checks that the page refers to nothing outside it.
func checkSelfContained(t *testing.T, page []byte) {
	t.Helper()
	s := string(page)
	for _, bad := range []string{"http://", "https://", "<link", "<script", "@import", "url("} {
		if strings.Contains(strings.ToLower(s), bad) {
			t.Errorf("HTML contains %q", bad)
		}
	}
	for _, m := range srcAttr.FindAllStringSubmatch(s, -1) {
		if !strings.HasPrefix(m[2], "data:") {
			t.Errorf("HTML has %s=%q, want only data: URIs", m[1], m[2][:min(40, len(m[2]))])
		}
	}
	if !strings.Contains(s, `src="data:image/png;base64,`) {
		t.Error("HTML embeds no figure")
	}
}

// htmlUnescape undoes html.EscapeString for the comparisons above.
func htmlUnescape(b []byte) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&#34;", `"`, "&#39;", "'", "&amp;", "&").Replace(string(b))
}

func TestReportErrors(t *testing.T) {
	for i, build := range []func() (*Report, error){
		func() (*Report, error) { return Table1(Table1Input{}) },                                                // 0
		func() (*Report, error) { return Table1(Table1Input{Scenarios: []Table1Scenario{{Name: "x"}}}) },        // 1
		func() (*Report, error) { return Adversarial(AdversarialInput{}) },                                      // 2
		func() (*Report, error) { return Stability(StabilityInput{}) },                                          // 3
		func() (*Report, error) { return Stability(StabilityInput{Rounds: []int{1}, Sites: []SiteTrace{{}}}) },  // 4
		func() (*Report, error) { return Privacy(PrivacyInput{}) },                                              // 5
		func() (*Report, error) { return Ablation(AblationInput{}) },                                            // 6
		func() (*Report, error) { return Ablation(AblationInput{Variants: []AblationVariant{{Name: "full"}}}) }, // 7
		func() (*Report, error) { return Deep(DeepInput{}) },                                                    // 8
		func() (*Report, error) { return Deep(DeepInput{Scenarios: []DeepScenario{{Name: "C"}}}) },              // 9
		func() (*Report, error) {
			return Deep(DeepInput{Scenarios: []DeepScenario{{Name: "C", Methods: []DeepMethodRuns{{Method: "fedavg"}}}}})
		}, // 10
		func() (*Report, error) {
			return Ablation(AblationInput{Variants: []AblationVariant{{Name: "full", FinalAUC: []float64{0.8}, Seeds: []int64{1, 2}}}})
		}, // 11
	} {
		if _, err := build(); err == nil {
			t.Errorf("case %d: expected an error", i)
		}
	}
}

// samePixels reports whether two PNGs decode to the same pixels.
func samePixels(a, b []byte) (bool, error) {
	ia, err := png.Decode(bytes.NewReader(a))
	if err != nil {
		return false, err
	}
	ib, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return false, err
	}
	if ia.Bounds() != ib.Bounds() {
		return false, nil
	}
	r := ia.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if !sameColor(ia, ib, x, y) {
				return false, nil
			}
		}
	}
	return true, nil
}

func sameColor(a, b image.Image, x, y int) bool {
	r1, g1, b1, a1 := a.At(x, y).RGBA()
	r2, g2, b2, a2 := b.At(x, y).RGBA()
	return r1 == r2 && g1 == g2 && b1 == b2 && a1 == a2
}

// TestNoteSet: a reason shared by several methods is one sentence naming
// them all, in the order they came; reasons keep the order they first
// came in, a method is named once per reason, and no reason is no note.
func TestNoteSet(t *testing.T) {
	var n noteSet
	n.add("fedavg", "1 paired seed(s) with ptopofl; not tested.")
	n.add("fedprox", "")
	n.add("fedprox", "1 paired seed(s) with ptopofl; not tested.")
	n.add("local", "every paired difference is zero.")
	n.add("scaffold", "1 paired seed(s) with ptopofl; not tested.")
	n.add("scaffold", "1 paired seed(s) with ptopofl; not tested.")
	got := n.sentences()
	want := []string{
		"fedavg, fedprox and scaffold: 1 paired seed(s) with ptopofl; not tested.",
		"local: every paired difference is zero.",
	}
	if len(got) != len(want) {
		t.Fatalf("%q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("sentence %d: %q, want %q", i, got[i], want[i])
		}
	}
}

// TestTauNote: what the adversarial report says τ changes, per detector
// and flag rule (aggregation.Flags, LabelZScores, TrustScores).
func TestTauNote(t *testing.T) {
	for i, c := range []struct {
		tau        float64
		detector   string
		trustBelow float64
		want       string
	}{
		{0, "labelled", 0, ""}, // 0: no τ, nothing said
		{1.8, "labelled", 0, "τ changes the weights, not the flags."},                         // 1
		{1.8, "descriptor", 0, "τ changes the flags (the detection rates), not the weights."}, // 2
		{1.8, "combined", 0, "τ changes both the flags and the weights."},                     // 3
		{1.8, "descriptor", 0.5, "τ changes nothing"},                                         // 4: the paper preset
		{1.8, "labelled", 0.5, "so τ changes both the flags and the weights."},                // 5
	} {
		got := tauNote(AdversarialInput{Tau: c.tau, Detector: c.detector, FlagTrustBelow: c.trustBelow})
		if c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("case %d: %q, want it to contain %q", i, got, c.want)
		}
		if c.tau > 0 && !strings.HasPrefix(got, "pTopoFL ran with τ = 1.8 ") {
			t.Errorf("case %d: %q does not say τ", i, got)
		}
	}
}

// TestBetaSignificance: the β values whose paired difference from the
// reference passes both tests at 5 %, above and below it.
func TestBetaSignificance(t *testing.T) {
	ref := AblationVariant{Name: "full", OnBetaGrid: true, Beta: 0.3, FinalAUC: []float64{0.80, 0.81, 0.82, 0.83, 0.84, 0.85}}
	shift := func(name string, beta float64, d ...float64) AblationVariant {
		v := AblationVariant{Name: name, OnBetaGrid: true, Beta: beta}
		for i, x := range ref.FinalAUC {
			v.FinalAUC = append(v.FinalAUC, x+d[i])
		}
		return v
	}
	for i, c := range []struct {
		grid []AblationVariant
		ref  AblationVariant
		want string
	}{
		// Six seeds: 0.01 0.02 0.01 0.02 0.01 0.02 above: mean 0.015, std
		// √(6·0.005²/5) = 0.00548, t = 6.708 (ν = 5, p = 0.0011); W = 0,
		// exact p = 2/2⁶ = 0.031. The same below. β = 1 alternates ±0.01:
		// mean 0, p = 1.
		{[]AblationVariant{
			shift("β=0", 0, -0.01, -0.02, -0.01, -0.02, -0.01, -0.02), ref,
			shift("β=0.5", 0.5, 0.01, 0.02, 0.01, 0.02, 0.01, 0.02),
			shift("β=1", 1, 0.01, -0.01, 0.01, -0.01, 0.01, -0.01),
		}, ref, "Different from β = 0.3 (full) at the 5 % level by both tests, paired by seed: above it β = 0.5 (+0.0150); below it β = 0 (-0.0150)."}, // 0
		// The fixture's healthcare grid, three seeds: the exact signed-rank
		// test cannot go below p = 2/2³ = 0.25.
		{ablationFixture().Variants[:5], ablationFixture().Variants[0], "No β of the grid differs from β = 0.3 (full) at the 5 % level by both tests."}, // 1
	} {
		var grid []AblationVariant
		for _, v := range c.grid {
			if v.OnBetaGrid {
				grid = append(grid, v)
			}
		}
		if got := betaSignificance(grid, c.ref); got != c.want {
			t.Errorf("case %d: %q, want %q", i, got, c.want)
		}
	}
}
