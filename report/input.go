package report

import "github.com/ptopofl/ptopofl/eval"

// Report is a rendered experiment report.
type Report struct {
	// Title is the report's heading.
	Title string
	// Markdown is the report as Markdown; it refers to figures by their
	// asset names (e.g. "fig2_auc_curves.png"), to be written beside it.
	Markdown []byte
	// HTML is one self-contained page: inline CSS and figures embedded as
	// data: URIs, with no external references.
	HTML []byte
	// Assets maps a file name to its bytes: every figure as ".png" and
	// ".svg".
	Assets map[string][]byte
}

// Run is the outcome of one campaign (one method, one seed).
type Run struct {
	// Seed identifies the run; runs of different methods with the same
	// seed are paired in significance tests.
	Seed int64
	// AUC and Accuracy are the per-round global metrics; index i is
	// round i+1. Either may be nil when the curve is not available.
	AUC      []float64
	Accuracy []float64
	// FinalAUC and FinalAccuracy are the metrics after the last round.
	FinalAUC      float64
	FinalAccuracy float64
	// ConvergenceRound is the first round from which the AUC stays within
	// eval.SettlingTolerance of its final value (eval.SettlingRound; the
	// paper's "95 % of the final AUC" is met in round 1 by every method on
	// its scenarios and says nothing); 0 means unknown.
	ConvergenceRound int
}

// MethodRuns holds the runs of one method over seeds.
type MethodRuns struct {
	// Method is the method's name as shown, e.g. "ptopofl" or "fedavg".
	Method string
	Runs   []Run
}

// Table1Scenario holds every method's runs on one scenario.
type Table1Scenario struct {
	// Name is the scenario's name, e.g. "healthcare" or "benchmark".
	Name    string
	Methods []MethodRuns
}

// Table1Input is the input of Table1: the paper's comparison against the
// baselines (§4.2, Table 1, Figs. 2 and 3).
type Table1Input struct {
	// Title overrides the report title when not empty.
	Title string
	// Reference is the method every other method is compared to; empty
	// means "ptopofl".
	Reference string
	Scenarios []Table1Scenario
	// Provenance says, per method, which row of the paper's Table 1 it is
	// and what produces it (experiments.Table1Provenance); the report
	// prints it once, before the scenarios.
	Provenance []MethodNote
}

// MethodNote is a sentence about one method of a report.
type MethodNote struct {
	Method, Note string
}

// DetectionCounts is the confusion count of one detector in one run:
// sites flagged or not against sites adversarial or not.
type DetectionCounts struct {
	Seed int64
	// TruePositives are adversarial sites flagged, FalseNegatives
	// adversarial sites not flagged, FalsePositives honest sites flagged
	// and TrueNegatives honest sites not flagged.
	TruePositives, FalseNegatives, FalsePositives, TrueNegatives int
}

// DetectorRuns holds one detector's counts at one attack level, one entry
// per seed; they are pooled over seeds for the detection and
// false-positive rates. Name says whose selection it is: pTopoFL's
// anomaly flags, Krum's unselected sites, FoolsGold's zero-weight sites.
type DetectorRuns struct {
	Name   string
	Counts []DetectionCounts
}

// AttackLevel holds the results at one fraction of adversarial sites and
// one flip rate.
type AttackLevel struct {
	// Fraction is the fraction of sites that are adversarial, in [0, 1]
	// (the paper sweeps 0–0.5); FlipRate the fraction of their labels
	// flipped (0 when Fraction is 0).
	Fraction float64
	FlipRate float64
	// Sites is the number of sites of the level's federations (0:
	// unknown), so that the report can say how many flip.
	Sites int
	// Methods holds each method's runs (final AUC per seed, paired by seed
	// with the reference method; the AUC per round for Fig. 4(B)).
	Methods []MethodRuns
	// Detectors holds each detector's counts.
	Detectors []DetectorRuns
}

// AdversarialInput is the input of Adversarial: robustness under
// label-flip attacks (§4.4, Fig. 4).
type AdversarialInput struct {
	Title string
	// Reference is the method every other is compared to by paired tests;
	// empty means "ptopofl".
	Reference string
	Levels    []AttackLevel
	// CurveFraction and CurveFlipRates choose the panels of Fig. 4(B),
	// AUC per round: the clean level (Fraction 0) and each level at
	// CurveFraction whose flip rate is one of CurveFlipRates, in that
	// order. No flip rate: no Fig. 4(B).
	CurveFraction  float64
	CurveFlipRates []float64
	// CurveFocus names methods that Fig. 4(B) also draws in a first row of
	// their own, on a y range fitted to them (the paper's figure compares
	// pTopoFL with FedAvg); empty: one row of every method.
	CurveFocus []string
	// Tau, Detector and FlagTrustBelow describe pTopoFL's anomaly
	// detection for the report's text: τ (anomaly_threshold), the detector
	// ("labelled", "descriptor" or "combined") and, when positive, the
	// trust weight below which a site is flagged instead of z > τ (the
	// paper preset's 0.5, as in the authors' code). Tau 0 says nothing.
	Tau            float64
	Detector       string
	FlagTrustBelow float64
}

// SiteTrace is one site's topological signature over rounds.
type SiteTrace struct {
	Site string
	// Shifted reports whether the site's data really shift during the run
	// (the continual scenario), from ShiftRound on (0 when unknown).
	Shifted    bool
	ShiftRound int
	// H0Entropy, H1Entropy and Drift are aligned with
	// StabilityInput.Rounds; NaN marks a missing value. Drift is Δ_k of
	// Eq. (9) as of that round.
	H0Entropy []float64
	H1Entropy []float64
	Drift     []float64
	// Reclustered lists the rounds in which the site's drift passed the
	// threshold and it was re-clustered (the manifests' reclustered flag),
	// Reassigned those of them in which that moved it to another cluster
	// (in increasing order).
	Reclustered []int
	Reassigned  []int
}

// StabilityInput is the input of Stability: stability of topological
// signatures and the drift monitor (§4.5, Fig. 5, Eq. 9).
type StabilityInput struct {
	Title string
	// Rounds are the round numbers the traces are sampled at.
	Rounds []int
	Sites  []SiteTrace
	// DriftThreshold is the drift above which a site is flagged for
	// re-clustering; 0 means none is drawn.
	DriftThreshold float64
}

// PrivacyFederation is the privacy figures of one federation.
type PrivacyFederation struct {
	// Name labels the federation, e.g. "healthcare".
	Name   string
	Report eval.PrivacyReport
}

// PrivacyInput is the input of Privacy: the paper's arithmetic
// (reconstruction risk ρ and the mutual-information proxy, §3.6, §4.6,
// Fig. 6) beside what the attacks and the audit measure.
type PrivacyInput struct {
	Title string
	// Federations hold the paper's arithmetic, per federation.
	Federations []PrivacyFederation
	// Releases are what one site releases in one round (the manifests'
	// `released`), per method and budget.
	Releases []ReleaseRow
	// Reconstruction, Membership, Audit and Utility are the measured
	// parts; Epsilon 0 means without differential privacy in each.
	Reconstruction []ReconstructionRow
	Membership     []MembershipRow
	Audit          []AuditRow
	Utility        []UtilityRow
}

// ReleaseRow is what a site released in one round under one method and
// budget: numbers by kind (pipeline.Release kinds), in the manifest's order.
type ReleaseRow struct {
	Method  string
	Epsilon float64
	Round   int
	Kinds   []string
	Numbers []int
}

// ReconstructionRow is the gradient inversion of one-record site updates
// (x = g_w/g_b) at one budget: the median and largest relative error
// ‖x̂ − x‖/‖x‖ over Records records.
type ReconstructionRow struct {
	Epsilon               float64
	MedianError, MaxError float64
	Records               int
}

// MembershipRow is one membership-inference attack: against site models
// (Target "model", Scenario "healthcare" or "deep-small") or against
// descriptors (Target "descriptor", Canary "outlier" or "typical",
// Condition "paper" or "dp").
type MembershipRow struct {
	Target, Scenario, Canary, Condition string
	Epsilon                             float64
	AUC, TPRAt0001, TPRAt001            float64
}

// AuditRow is one DP audit: the accountant's ε and the audit's lower bound.
type AuditRow struct {
	// Mechanism is what was audited: "dp-gd" (tabular training, q = 1),
	// "dp-sgd" (deep training, Poisson-subsampled), "descriptor",
	// "label-summary", "metrics" or "top1" (the releases, one each).
	Mechanism           string
	Epsilon, LowerBound float64
	Steps               int
	// SamplingRate is q (1 for every release but DP-SGD's).
	SamplingRate    float64
	NoiseMultiplier float64
	Trials          int
}

// UtilityRow is a method's utility at one budget on one scenario: one
// value per seed, scored exactly on the sites' test splits (the metric
// names it: "final_auc" or "final_acc"), and, beside it, what the sites
// released (the manifests' noised metric under DP).
type UtilityRow struct {
	Method, Scenario, Metric string
	Epsilon                  float64
	Values, Released         []float64
}

// AblationVariant is one configuration of the ablation on one scenario.
type AblationVariant struct {
	// Name is shown in tables and plots, e.g. "M=1", "β=0", "full",
	// "automatic M".
	Name string
	// Description says what the variant removes or changes.
	Description string
	// Scenario names the scenario the variant ran on; empty means
	// AblationInput.Scenario.
	Scenario string
	// FinalAUC has one entry per seed, and Seeds, when not nil, those
	// seeds (aligned with FinalAUC); nil means seeds 1, 2, … in order.
	// Variants are paired by seed in significance tests.
	FinalAUC []float64
	Seeds    []int64
	// Clusters optionally holds the number of clusters used per seed (for
	// the automatic M); nil when not applicable.
	Clusters []int
	// OnBetaGrid reports that the variant differs from the full method in
	// its inter-cluster blending β alone (Eq. 7), and Beta is its β: the
	// points of the report's β figure.
	OnBetaGrid bool
	Beta       float64
}

// AblationInput is the input of Ablation (§4.7, Fig. 7).
type AblationInput struct {
	Title string
	// Scenario names the scenario of the variants that name none.
	Scenario string
	// Variants of every scenario; the report has one table per scenario,
	// in the order the scenarios first appear, and shows a scenario's
	// variants in the order given.
	Variants []AblationVariant
	// Reference names the variant every other variant of its scenario is
	// compared with, paired by seed; empty means "full".
	Reference string
}
