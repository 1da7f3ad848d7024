package method

import (
	"fmt"
	"math"
	"strconv"

	"github.com/ptopofl/ptopofl/aggregation"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/nn"
	"github.com/ptopofl/ptopofl/tda"
)

// Hyperparameters holds every tunable number of every method, flat, as the
// campaign spec's `hyperparameters` object; a method reads the fields it
// needs and ignores the rest. It is a plain struct, not a map, so that a
// typo in a campaign file is an error rather than a silently ignored key.
// Each field is declared together with its Param entry below: the JSON
// name, meaning, defaults, validation, sweep column and the setting of the
// core it reaches are all in this file. The JSON field order is the order
// of the spec's canonical encoding (and so of spec hashes): add new fields
// at the end.
type Hyperparameters struct {
	Clusters         int     `json:"clusters"`
	Beta             float64 `json:"beta"`
	AnomalyThreshold float64 `json:"anomaly_threshold"`
	DriftThreshold   float64 `json:"drift_threshold"`
	DriftCheckEvery  int     `json:"drift_check_every"`
	NSub             int     `json:"n_sub"`
	BettiResolution  int     `json:"betti_resolution"`
	Descriptor       string  `json:"descriptor"`
	C                float64 `json:"c"`
	MaxIter          int     `json:"max_iter"`
	Tol              float64 `json:"tol"`
	LR               float64 `json:"lr"`
	Steps            int     `json:"steps"`
	Mu               float64 `json:"mu"`
	Lambda           float64 `json:"lambda"`
	LRPersonal       float64 `json:"lr_personal"`
	LROuter          float64 `json:"lr_outer"`
	PersonalSteps    int     `json:"personal_steps"`
	TrimFraction     float64 `json:"trim_fraction"`
	Byzantine        int     `json:"byzantine"`
	MaxClusters      int     `json:"max_clusters"`
	Detector         string  `json:"detector"`
	LabelGap         float64 `json:"label_gap"`
	LabelNSub        int     `json:"label_n_sub"`
	FoolsGoldKappa   float64 `json:"foolsgold_kappa"`
	ClipNorm         float64 `json:"clip_norm"`
	LocalSolver      string  `json:"local_solver"`
	Model            string  `json:"model"`
	Classes          int     `json:"classes"`
	Width            int     `json:"width"`
	Hidden           int     `json:"hidden"`
	Depth            int     `json:"depth"`
	Optimizer        string  `json:"optimizer"`
	LocalEpochs      int     `json:"local_epochs"`
	BatchSize        int     `json:"batch_size"`
	Momentum         float64 `json:"momentum"`
	// The parameters below are Quiet (Param.Quiet): a field at its default
	// holds its zero value and is left out of the spec's JSON, so that a
	// spec written before they existed encodes, and hashes, as it did.
	SiteDistance      string  `json:"site_distance,omitempty"`
	DP                string  `json:"dp,omitempty"`
	DPEpsilon         float64 `json:"dp_epsilon,omitempty"`
	DPDelta           float64 `json:"dp_delta,omitempty"`
	DPNoise           float64 `json:"dp_noise,omitempty"`
	DPClip            float64 `json:"dp_clip,omitempty"`
	DPDescriptorNoise float64 `json:"dp_descriptor_noise,omitempty"`
	DPMetricsNoise    float64 `json:"dp_metrics_noise,omitempty"`
	DPDescriptorShare float64 `json:"dp_descriptor_share,omitempty"`
	DPValidationNoise float64 `json:"dp_validation_noise,omitempty"`
	DPValidationShare float64 `json:"dp_validation_share,omitempty"`
	// ValidationFraction is the share of each site's training rows held
	// out for validation (validation.go).
	ValidationFraction float64 `json:"validation_fraction,omitempty"`
	// DriftLRFactor multiplies a re-clustered site's local learning rate
	// (§3.5).
	DriftLRFactor float64 `json:"drift_lr_factor,omitempty"`
	// TopoAggregation, SoftmaxLambda and Barycentre select pTopoFL's
	// global softmax aggregation of Eq. (12) (aggregation.SoftmaxWeights).
	TopoAggregation string  `json:"topo_aggregation,omitempty"`
	SoftmaxLambda   float64 `json:"softmax_lambda,omitempty"`
	Barycentre      string  `json:"barycentre,omitempty"`
	// Trainer and TrainerParams select a site's own training program
	// (model "external", see external.go).
	Trainer       string        `json:"trainer,omitempty"`
	TrainerParams TrainerParams `json:"trainer_params,omitempty"`
	// ScaffoldVariant selects the authors' SCAFFOLD server update under the
	// paper preset (learn.SCAFFOLDConfig.ReferenceBug).
	ScaffoldVariant string `json:"scaffold_variant,omitempty"`
	// DescriptorModel selects the model a deep site's descriptor is
	// computed under (DescriptorRound).
	DescriptorModel string `json:"descriptor_model,omitempty"`
	// TopoFeatures selects how a tabular pTopoFL site uses its
	// descriptor in local training (AugmentTopology).
	TopoFeatures string `json:"topo_features,omitempty"`
	// SecureAggregation, SecAggThreshold, SecAggMinGroup, SecAggClip and
	// SecAggQuantBits select secure aggregation (secagg.go), and
	// DPNoiseSplit how the sites share the noise under it.
	SecureAggregation string  `json:"secure_aggregation,omitempty"`
	SecAggThreshold   float64 `json:"secagg_threshold,omitempty"`
	SecAggMinGroup    int     `json:"secagg_min_group,omitempty"`
	SecAggClip        float64 `json:"secagg_clip,omitempty"`
	SecAggQuantBits   int     `json:"secagg_quant_bits,omitempty"`
	DPNoiseSplit      string  `json:"dp_noise_split,omitempty"`
}

// Kind is the type of a hyper-parameter's value.
type Kind int

// The kinds of hyper-parameters.
const (
	Int Kind = iota
	Float
	Text
)

// String names the kind as messages and the reference print it: "int",
// "float" or "text".
func (k Kind) String() string {
	switch k {
	case Int:
		return "int"
	case Float:
		return "float"
	}
	return "text"
}

// Value is a hyper-parameter's value: Num for Int and Float, Text for Text.
type Value struct {
	Num  float64
	Text string
}

// String formats v as a campaign file would write it.
func (v Value) String() string {
	if v.Text != "" {
		return v.Text
	}
	return strconv.FormatFloat(v.Num, 'g', -1, 64)
}

// Param declares one hyper-parameter: everything the spec, the validation,
// the sweep grid, the results table and the core resolution need to know
// about it. Params lists them all; nothing else names a hyper-parameter.
type Param struct {
	// Name is the JSON name in campaign files, `--set NAME=VALUE`, sweep
	// grids and the column of sweeps/<sweep>/results.parquet.
	Name string
	// Doc says what it means, with the paper's symbol where it has one.
	Doc  string
	Kind Kind
	// Methods lists the methods that read it; nil means every method.
	// Validation checks a value only for the methods that read it.
	Methods []learn.Method
	// ZeroIsSetting reports that zero is a meaningful value (clusters 0 =
	// chosen by silhouette, beta 0 = no blending, ...). For the others a
	// zero in a spec means "the preset's default".
	ZeroIsSetting bool
	// Default is the value under the default preset; PaperDefault, when
	// set, the value under the paper preset; PresetDefaults, the value
	// under the other presets it names (the deep presets, which otherwise
	// take Default).
	Default        Value
	PaperDefault   *Value
	PresetDefaults map[string]Value
	// Deep reports that only deep models (model other than "logistic")
	// read it; Validate checks it only for them.
	Deep bool
	// Absent, when set, is what a spec without this parameter means: the
	// behaviour before the parameter existed. A campaign started by an
	// older version carries no such field and must keep running as it
	// started (a default-preset pTopoFL campaign whose round-1 descriptors
	// have 48 numbers cannot switch to the label-aware detector in round
	// 2). New specs get the preset's default explicitly from Defaults.
	Absent *Value
	// Check returns what is wrong with a value ("must be > 0"), or "".
	Check func(v Value) string
	// Quiet reports that the field stores its Default as the zero value
	// (Set writes zero for the Default, Get reads zero as the Default)
	// and is omitted from the spec's JSON when zero: parameters added
	// after campaigns were stored keep those specs' encoding and hashes,
	// which every manifest names. A Quiet parameter's zero is its Default
	// under every preset; a PaperDefault of its own is stored explicitly.
	Quiet bool
	// OwnMethodsOnly keeps the field only in the hyper-parameters of the
	// methods that read it (ForMethod clears it elsewhere), so that a
	// preset's default for one method does not enter every other
	// method's spec and hash. Only a Quiet parameter may set it.
	OwnMethodsOnly bool

	field func(h *Hyperparameters) any // *int, *float64 or *string
	// core writes the value into the resolved configuration.
	core func(v Value, c *Config)
}

// lbfgsMethods are the methods whose site update is an L-BFGS fit.
var lbfgsMethods = []learn.Method{learn.PTopoFL, learn.FedAvg, learn.LocalOnly, learn.Median, learn.TrimmedMean, learn.Krum, learn.FoolsGold, learn.NormClip}

// gdMethods are the methods that take local gradient steps: FedProx,
// SCAFFOLD, and the L-BFGS methods under local_solver gd.
var gdMethods = append([]learn.Method{learn.FedProx, learn.SCAFFOLD}, lbfgsMethods...)

func num(x float64) Value { return Value{Num: x} }

func text(s string) Value { return Value{Text: s} }

// deepAll gives v under every deep preset.
func deepAll(v Value) map[string]Value {
	m := make(map[string]Value, len(DeepPresets))
	for _, p := range DeepPresets {
		m[p] = v
	}
	return m
}

// bySize gives full under the paper-size deep presets (deep-c, deep-d) and
// small under their small variants.
func bySize(full, small Value) map[string]Value {
	return map[string]Value{DeepC: full, DeepD: full, DeepSmall: small, DeepDSmall: small}
}

// Model names a site's model: ModelLogistic is package learn's logistic
// regression on tabular rows; the others are package nn's image networks.
const (
	ModelLogistic = "logistic"
	ModelMLP      = "mlp"
	ModelCNN      = "cnn"
	ModelConvNet2 = "convnet2"
	ModelResNet   = "resnet"
	// ModelTopoNN is the paper's Appendix D network (nn.TopoNN): an MLP
	// whose input is each image followed by its batch's descriptor.
	ModelTopoNN = "toponn"
	// ModelExternal is a site's own training program, run under the
	// trainer protocol (the hyper-parameter trainer names it).
	ModelExternal = "external"
)

// Models lists the model names.
var Models = []string{ModelLogistic, ModelMLP, ModelCNN, ModelConvNet2, ModelResNet, ModelTopoNN, ModelExternal}

func positive(v Value) string {
	if !(v.Num > 0) || math.IsInf(v.Num, 1) {
		return "must be > 0"
	}
	return ""
}

func atLeast(lo float64) func(Value) string {
	return func(v Value) string {
		if !(v.Num >= lo) || math.IsInf(v.Num, 1) {
			return "must be >= " + strconv.FormatFloat(lo, 'g', -1, 64)
		}
		return ""
	}
}

// Params declares every hyper-parameter, in the order of Hyperparameters'
// fields. Defaults are the paper's (Table 3 for Scenarios A/B and the
// baselines' settings in golden/paper/expected.json) unless a Doc says
// otherwise; the L-BFGS stop is our tight one (gradient 1e-10), not
// scikit-learn's tol = 1e-4, so that the optimum does not depend on the
// warm start.
var Params = []Param{
	{Name: "clusters", Doc: "M, number of pTopoFL clusters; 0 chooses M by silhouette", Kind: Int,
		Methods: []learn.Method{learn.PTopoFL}, ZeroIsSetting: true, Default: num(2), PresetDefaults: deepAll(num(3)), Check: atLeast(0),
		field: func(h *Hyperparameters) any { return &h.Clusters },
		core:  func(v Value, c *Config) { c.Server.M = int(v.Num) }},
	{Name: "beta", Doc: "β, inter-cluster blending coefficient of Eq. 7, in [0, 1]", Kind: Float,
		Methods: []learn.Method{learn.PTopoFL}, ZeroIsSetting: true, Default: num(0.3),
		Check: func(v Value) string {
			if !(v.Num >= 0 && v.Num <= 1) {
				return "must be in [0, 1]"
			}
			return ""
		},
		field: func(h *Hyperparameters) any { return &h.Beta },
		core:  func(v Value, c *Config) { c.Server.Beta = v.Num }},
	{Name: "anomaly_threshold", Doc: "τ, the trust z-score above which a site is flagged", Kind: Float,
		Methods: []learn.Method{learn.PTopoFL}, Default: num(2), Check: positive,
		field: func(h *Hyperparameters) any { return &h.AnomalyThreshold },
		core:  func(v Value, c *Config) { c.Server.Tau = v.Num }},
	{Name: "drift_threshold", Doc: "drift Δ (Eq. 9) above which a site is re-clustered; 0 never (the paper preset: the authors fit their clusters once)", Kind: Float,
		Methods: []learn.Method{learn.PTopoFL}, ZeroIsSetting: true, Default: num(0.1), PaperDefault: &Value{}, Check: atLeast(0),
		field: func(h *Hyperparameters) any { return &h.DriftThreshold },
		core:  func(v Value, c *Config) { c.Server.DriftThreshold = v.Num }},
	// The default measures drift every round, as the paper's drift monitor does ("Topological Signature Tracking": it tracks "each client's
	// topological signature φ_k^(r) at every round r"); with the former default 0, descriptors were computed in round 1
	// only and drift_threshold never fired. A descriptor is cheap beside a round's training (n_sub = 80 points; its rows
	// are drawn with a fixed seed, so unchanged data give the same descriptor and the same clustering). The paper preset
	// keeps 0: its drift_threshold is 0 (the authors fit their clusters once), so measuring would change nothing but cost.
	// Stored specs always carry the field (0 is a setting), so campaigns started before keep measuring as they did.
	// The deep presets keep 0 too: a deep site's descriptor is taken from its penultimate activations under the model it
	// holds, which changes every round by training alone, so Eq. 9 would measure the model's progress, not the data's
	// drift, and re-cluster on it (simulate.RunDeep, the parity reference, computes them once for that reason).
	{Name: "drift_check_every", Doc: "recompute descriptors, and so measure drift (Eq. 9), every k rounds (0: only round 1 and after a re-clustering)", Kind: Int,
		Methods: []learn.Method{learn.PTopoFL}, ZeroIsSetting: true, Default: num(1), PaperDefault: &Value{}, PresetDefaults: deepAll(Value{}), Check: atLeast(0),
		field: func(h *Hyperparameters) any { return &h.DriftCheckEvery }},
	{Name: "n_sub", Doc: "points subsampled per site for the descriptor", Kind: Int,
		Methods: []learn.Method{learn.PTopoFL}, Default: num(80), PresetDefaults: deepAll(num(200)), Check: atLeast(3),
		field: func(h *Hyperparameters) any { return &h.NSub },
		core:  func(v Value, c *Config) { c.NSub = int(v.Num) }},
	{Name: "betti_resolution", Doc: "L, Betti-curve thresholds (fixed at 20: the descriptor's 48-number layout)", Kind: Int,
		Methods: []learn.Method{learn.PTopoFL}, Default: num(tda.BettiSteps),
		Check: func(v Value) string {
			if v.Num != tda.BettiSteps {
				return "must be 20 (the descriptor's 48-number layout has 20-step Betti curves)"
			}
			return ""
		},
		field: func(h *Hyperparameters) any { return &h.BettiResolution }},
	{Name: "descriptor", Doc: `H1 of the descriptor: "exact" (true Vietoris–Rips) or "triangle" (the authors' approximation)`, Kind: Text,
		Methods: []learn.Method{learn.PTopoFL}, Default: Value{Text: tda.VariantExact}, PaperDefault: &Value{Text: tda.VariantTriangle},
		Check: func(v Value) string {
			if v.Text != tda.VariantExact && v.Text != tda.VariantTriangle {
				return `must be "exact" or "triangle"`
			}
			return ""
		},
		field: func(h *Hyperparameters) any { return &h.Descriptor },
		core:  func(v Value, c *Config) { c.Descriptor = v.Text }},
	{Name: "c", Doc: "inverse L2 strength of the logistic model (scikit-learn's C)", Kind: Float,
		Default: num(1), Check: positive,
		field: func(h *Hyperparameters) any { return &h.C },
		core:  func(v Value, c *Config) { c.Site.C = v.Num }},
	{Name: "max_iter", Doc: "L-BFGS iterations of a local fit", Kind: Int,
		Methods: lbfgsMethods, Default: num(1000), Check: atLeast(1),
		field: func(h *Hyperparameters) any { return &h.MaxIter },
		core:  func(v Value, c *Config) { c.Site.LBFGS.MaxIter = int(v.Num) }},
	{Name: "tol", Doc: "L-BFGS stop: infinity norm of the gradient", Kind: Float,
		Methods: lbfgsMethods, Default: num(1e-10), Check: positive,
		field: func(h *Hyperparameters) any { return &h.Tol },
		core:  func(v Value, c *Config) { c.Site.LBFGS.GradTol = v.Num }},
	{Name: "lr", Doc: "local step size η of FedProx, SCAFFOLD and, with local_solver gd, of the L-BFGS methods; with a deep model, the learning rate of every method's local optimiser", Kind: Float,
		Methods: gdMethods, Default: num(0.05), PresetDefaults: bySize(num(0.01), num(0.05)), Check: positive,
		field: func(h *Hyperparameters) any { return &h.LR },
		core: func(v Value, c *Config) {
			c.Site.FedProx.LR, c.Site.SCAFFOLD.LR, c.Site.LocalGD.LR = v.Num, v.Num, v.Num
			c.DeepSite.Train.LR = v.Num
		}},
	{Name: "steps", Doc: "local full-batch steps K per round of FedProx, SCAFFOLD and, with local_solver gd, of the L-BFGS methods", Kind: Int,
		Methods: gdMethods, Default: num(30), Check: atLeast(1),
		field: func(h *Hyperparameters) any { return &h.Steps },
		core: func(v Value, c *Config) {
			c.Site.FedProx.Steps, c.Site.SCAFFOLD.Steps, c.Site.LocalGD.Steps = int(v.Num), int(v.Num), int(v.Num)
		}},
	{Name: "mu", Doc: "μ, FedProx's proximal weight", Kind: Float,
		Methods: []learn.Method{learn.FedProx}, ZeroIsSetting: true, Default: num(0.1), Check: atLeast(0),
		field: func(h *Hyperparameters) any { return &h.Mu },
		core:  func(v Value, c *Config) { c.Site.FedProx.Mu, c.DeepSite.ProxMu = v.Num, v.Num }},
	{Name: "lambda", Doc: "λ, pFedMe's Moreau-envelope weight", Kind: Float,
		Methods: []learn.Method{learn.PFedMe}, Default: num(15), Check: positive,
		field: func(h *Hyperparameters) any { return &h.Lambda },
		core:  func(v Value, c *Config) { c.Site.PFedMe.Lambda, c.DeepSite.PFedMeLambda = v.Num, v.Num }},
	{Name: "lr_personal", Doc: "pFedMe's inner (personal-model) step size", Kind: Float,
		Methods: []learn.Method{learn.PFedMe}, Default: num(0.01), PresetDefaults: deepAll(num(0.05)), Check: positive,
		field: func(h *Hyperparameters) any { return &h.LRPersonal },
		core:  func(v Value, c *Config) { c.Site.PFedMe.LRPersonal, c.DeepSite.PFedMePersonalLR = v.Num, v.Num }},
	{Name: "lr_outer", Doc: "pFedMe's outer (local-model) step size", Kind: Float,
		Methods: []learn.Method{learn.PFedMe}, Default: num(0.01), Check: positive,
		field: func(h *Hyperparameters) any { return &h.LROuter },
		core:  func(v Value, c *Config) { c.Site.PFedMe.LROuter, c.DeepSite.PFedMeLR = v.Num, v.Num }},
	{Name: "personal_steps", Doc: "pFedMe's K, gradient steps on the personal problem: per round on the whole training set (tabular), per minibatch (deep; pFedMe's paper: K = 5)", Kind: Int,
		Methods: []learn.Method{learn.PFedMe}, Default: num(20), PresetDefaults: deepAll(num(5)), Check: atLeast(1),
		field: func(h *Hyperparameters) any { return &h.PersonalSteps },
		core:  func(v Value, c *Config) { c.Site.PFedMe.Steps, c.DeepSite.PFedMeSteps = int(v.Num), int(v.Num) }},
	// The default 0.2 trims one model at each end of 5 to 9 models and two of 10 to 14; the former 0.1 trimmed
	// nothing below 10 models, so on the adversarial experiment's 8 sites "trimmed mean" was the unweighted mean.
	{Name: "trim_fraction", Doc: "trimmed mean: fraction cut at each end, in [0, 0.5); ⌊trim_fraction·n⌋ of n models are cut, so a fraction that cuts nothing for the campaign's min_sites (e.g. 0.1 with 9 or fewer models) is rejected; 0 is the plain mean", Kind: Float,
		Methods: []learn.Method{learn.TrimmedMean}, ZeroIsSetting: true, Default: num(0.2),
		Check: func(v Value) string {
			if !(v.Num >= 0 && v.Num < 0.5) {
				return "must be in [0, 0.5)"
			}
			return ""
		},
		field: func(h *Hyperparameters) any { return &h.TrimFraction },
		core:  func(v Value, c *Config) { c.Server.TrimFraction = v.Num }},
	{Name: "byzantine", Doc: "f, the number of Byzantine sites Krum tolerates; Krum needs more than 2f + 2 models, so min_sites must be at least 2f + 3", Kind: Int,
		Methods: []learn.Method{learn.Krum}, ZeroIsSetting: true, Default: num(1), Check: atLeast(0),
		field: func(h *Hyperparameters) any { return &h.Byzantine },
		core:  func(v Value, c *Config) { c.Server.KrumF = int(v.Num) }},
	{Name: "max_clusters", Doc: "largest M tried by the silhouette choice when clusters is 0", Kind: Int,
		Methods: []learn.Method{learn.PTopoFL}, Default: num(10), Check: atLeast(2),
		field: func(h *Hyperparameters) any { return &h.MaxClusters },
		core:  func(v Value, c *Config) { c.Server.MaxAutoClusters = int(v.Num) }},
	{Name: "detector", Doc: `pTopoFL's anomaly detector: "labelled" (the label-aware summary of tda.LabelledSummary, which sees label flips), "descriptor" (the paper's z-score of the 48-number descriptor distance) or "combined" (flagged by either)`, Kind: Text,
		Methods: []learn.Method{learn.PTopoFL}, Default: Value{Text: string(aggregation.LabelledDetector)}, PaperDefault: &Value{Text: string(aggregation.DescriptorDetector)},
		PresetDefaults: deepAll(text(string(aggregation.DescriptorDetector))),
		Absent:         &Value{Text: string(aggregation.DescriptorDetector)},
		Check: func(v Value) string {
			switch aggregation.Detector(v.Text) {
			case aggregation.DescriptorDetector, aggregation.LabelledDetector, aggregation.CombinedDetector:
				return ""
			}
			return `must be "labelled", "descriptor" or "combined"`
		},
		field: func(h *Hyperparameters) any { return &h.Detector },
		core:  func(v Value, c *Config) { c.Server.Detector = aggregation.Detector(v.Text) }},
	{Name: "label_gap", Doc: "γ of the labelled detector: a site is flagged when it has lost more than this fraction of the federation's typical label structure", Kind: Float,
		Methods: []learn.Method{learn.PTopoFL}, Default: num(0.5),
		Check: func(v Value) string {
			if !(v.Num > 0 && v.Num <= 1) {
				return "must be in (0, 1]"
			}
			return ""
		},
		field: func(h *Hyperparameters) any { return &h.LabelGap },
		core:  func(v Value, c *Config) { c.Server.LabelGap = v.Num }},
	{Name: "label_n_sub", Doc: "rows subsampled per site for the label-aware summary (tda.LabelledSummary)", Kind: Int,
		Methods: []learn.Method{learn.PTopoFL}, Default: num(tda.DefaultLabelledNSub), Check: atLeast(4),
		field: func(h *Hyperparameters) any { return &h.LabelNSub },
		core:  func(v Value, c *Config) { c.LabelNSub = int(v.Num) }},
	{Name: "foolsgold_kappa", Doc: "κ, FoolsGold's confidence of the logit re-weighting (Fung et al. 2020)", Kind: Float,
		Methods: []learn.Method{learn.FoolsGold}, Default: num(1), Check: positive,
		field: func(h *Hyperparameters) any { return &h.FoolsGoldKappa },
		core:  func(v Value, c *Config) { c.Server.FoolsGoldKappa = v.Num }},
	{Name: "clip_norm", Doc: "norm-clipped FedAvg's bound M on each site's update norm; 0 uses each round's median update norm (Sun et al. 2019)", Kind: Float,
		Methods: []learn.Method{learn.NormClip}, ZeroIsSetting: true, Check: atLeast(0),
		field: func(h *Hyperparameters) any { return &h.ClipNorm },
		core:  func(v Value, c *Config) { c.Server.ClipNorm = v.Num }},
	{Name: "local_solver", Doc: `how the L-BFGS methods (FedAvg, pTopoFL, local, the robust baselines) train each round: "gd", steps full-batch gradient steps at lr from the model they were sent (bounded local work, the FL regime; the same budget as FedProx and SCAFFOLD), or "lbfgs", solve the local problem to tol (the paper's code: FedAvg becomes one-shot averaging of local optima and every round repeats the first)`, Kind: Text,
		Methods: lbfgsMethods, Default: Value{Text: learn.SolverGD}, PaperDefault: &Value{Text: learn.SolverLBFGS},
		Absent: &Value{Text: learn.SolverLBFGS},
		Check: func(v Value) string {
			if v.Text != learn.SolverGD && v.Text != learn.SolverLBFGS {
				return `must be "gd" or "lbfgs"`
			}
			return ""
		},
		field: func(h *Hyperparameters) any { return &h.LocalSolver },
		core:  func(v Value, c *Config) { c.Site.LocalSolver = v.Text }},
	// The deep parameters. Their defaults under the default and paper
	// presets are those of deep-small (the Fashion-MNIST anchor), so that
	// `--set model=cnn` alone gives a sensible network; a tabular campaign
	// (model logistic) reads none of them.
	{Name: "model", Doc: `the site's model: "logistic" (logistic regression on tabular rows), or an image network of package nn: "mlp" (dense layers), "cnn" (conv 5×5×width → pool → conv 5×5×2·width → pool → dense hidden → dense classes), "convnet2" (LEAF's ConvNet-2, 6.6 M parameters for 62 classes), "resnet" (ResNet-18's layout with GroupNorm, scaled by width and depth), "toponn" (the paper's Appendix D TopoNN: mlp's dense layers on each image followed by its batch's 48-number descriptor; not under dp record); or "external", the sites' own training program under the trainer protocol ptopofl.trainer/v1 (hyper-parameter trainer names it)`, Kind: Text,
		Default: text(ModelLogistic), PresetDefaults: map[string]Value{DeepC: text(ModelResNet), DeepD: text(ModelConvNet2), DeepSmall: text(ModelCNN), DeepDSmall: text(ModelCNN)},
		Absent: &Value{Text: ModelLogistic},
		Check: func(v Value) string {
			for _, m := range Models {
				if v.Text == m {
					return ""
				}
			}
			return `must be "logistic", "mlp", "cnn", "convnet2", "resnet", "toponn" or "external"`
		},
		field: func(h *Hyperparameters) any { return &h.Model },
		core:  func(v Value, c *Config) { c.Model = v.Text }},
	{Name: "classes", Doc: "number of image classes of a deep model's output layer (10 for Fashion-MNIST and CIFAR-10, 62 for FEMNIST); every label must be below it", Kind: Int,
		Deep: true, Default: num(10), PresetDefaults: map[string]Value{DeepD: num(62)}, Check: atLeast(2),
		field: func(h *Hyperparameters) any { return &h.Classes },
		core:  func(v Value, c *Config) { c.Network.Classes = int(v.Num) }},
	{Name: "width", Doc: "channels of the first convolution of cnn and resnet (cnn's second has twice as many; convnet2 is fixed at 32) or the first hidden width of mlp and toponn", Kind: Int,
		Deep: true, Default: num(16), PresetDefaults: map[string]Value{DeepC: num(64)}, Check: atLeast(1),
		field: func(h *Hyperparameters) any { return &h.Width },
		core:  func(v Value, c *Config) { c.Network.Width = int(v.Num) }},
	{Name: "hidden", Doc: "width of cnn's dense hidden layer after the convolutions, or of a second hidden layer of mlp and toponn after the first (width); 0 for none (convnet2 has 2048)", Kind: Int,
		Deep: true, ZeroIsSetting: true, Check: atLeast(0),
		field: func(h *Hyperparameters) any { return &h.Hidden },
		core: func(v Value, c *Config) {
			c.Network.Hidden = []int{}
			if v.Num > 0 {
				c.Network.Hidden = []int{int(v.Num)}
			}
		}},
	{Name: "depth", Doc: "basic blocks per stage of resnet (2 is ResNet-18)", Kind: Int,
		Deep: true, Default: num(2), Check: atLeast(1),
		field: func(h *Hyperparameters) any { return &h.Depth },
		core:  func(v Value, c *Config) { c.Network.Depth = int(v.Num) }},
	{Name: "optimizer", Doc: `a deep model's local optimiser: "sgd" (with momentum) or "adam"`, Kind: Text,
		Deep: true, Default: text(string(nn.SGD)),
		Check: func(v Value) string {
			if v.Text != string(nn.SGD) && v.Text != string(nn.Adam) {
				return `must be "sgd" or "adam"`
			}
			return ""
		},
		field: func(h *Hyperparameters) any { return &h.Optimizer },
		core:  func(v Value, c *Config) { c.DeepSite.Train.Optimizer = nn.Optimizer(v.Text) }},
	{Name: "local_epochs", Doc: "E, passes over a site's training images per round (paper: 5 in Scenario C, 3 in D)", Kind: Int,
		Deep: true, Default: num(1), PresetDefaults: map[string]Value{DeepC: num(5), DeepD: num(3), DeepDSmall: num(3)}, Check: atLeast(1),
		field: func(h *Hyperparameters) any { return &h.LocalEpochs },
		core:  func(v Value, c *Config) { c.DeepSite.Train.Epochs = int(v.Num) }},
	{Name: "batch_size", Doc: "B, a deep model's minibatch size", Kind: Int,
		Deep: true, Default: num(32), Check: atLeast(1),
		field: func(h *Hyperparameters) any { return &h.BatchSize },
		core:  func(v Value, c *Config) { c.DeepSite.Train.BatchSize = int(v.Num) }},
	{Name: "momentum", Doc: "SGD's heavy-ball momentum in [0, 1) (PyTorch's form); 0 is plain SGD", Kind: Float,
		Deep: true, ZeroIsSetting: true, Default: num(0.9),
		Check: func(v Value) string {
			if !(v.Num >= 0 && v.Num < 1) {
				return "must be in [0, 1)"
			}
			return ""
		},
		field: func(h *Hyperparameters) any { return &h.Momentum },
		core:  func(v Value, c *Config) { c.DeepSite.Train.Momentum = v.Num }},
	// Data minimisation and differential privacy. Every one is Quiet: a
	// campaign that uses none of them has the spec (and spec hash) it had
	// before they existed.
	{Name: "site_distance", Doc: `how pTopoFL compares sites: "euclidean", the distance of the l2-normalised descriptors (§3.3, Step 1), or "wasserstein", the 2-Wasserstein distance of the sites' H0 and H1 persistence diagrams (Eq. 3), which clusters by diagrams and makes every site release its diagrams; under "euclidean" no site releases a persistence pair`, Kind: Text,
		Methods: []learn.Method{learn.PTopoFL}, Quiet: true, Default: text(SiteEuclidean),
		Check: func(v Value) string {
			if v.Text != SiteEuclidean && v.Text != SiteWasserstein {
				return `must be "euclidean" or "wasserstein"`
			}
			return ""
		},
		field: func(h *Hyperparameters) any { return &h.SiteDistance },
		core: func(v Value, c *Config) {
			c.Server.Distance = aggregation.DescriptorDistance
			if v.Text == SiteWasserstein {
				c.Server.Distance = aggregation.WassersteinDistance
			}
		}},
	{Name: "dp", Doc: `record-level differential privacy at every site: "off", or "record": every release of a site (model, control variate, descriptor, label summary, metrics) is (ε, δ)-DP for any one of its records, against the server, the other sites and anyone who later reads them (DP-GD or DP-SGD training, noised descriptors and metrics; see dp_epsilon)`, Kind: Text,
		Quiet: true, Default: text(DPOff),
		Check: func(v Value) string {
			if v.Text != DPOff && v.Text != DPRecord {
				return `must be "off" or "record"`
			}
			return ""
		},
		field: func(h *Hyperparameters) any { return &h.DP },
		core:  func(v Value, c *Config) { c.DP.On = v.Text == DPRecord }},
	{Name: "dp_epsilon", Doc: "ε, each site's privacy budget for the whole campaign under dp record; before the campaign starts, the noise that keeps every planned release within it is computed and recorded (dp_noise, dp_descriptor_noise, dp_metrics_noise); 0: no budget (set dp_noise)", Kind: Float,
		Quiet: true, ZeroIsSetting: true, Check: atLeast(0),
		field: func(h *Hyperparameters) any { return &h.DPEpsilon },
		core:  func(v Value, c *Config) { c.DP.Epsilon = v.Num }},
	{Name: "dp_delta", Doc: "δ of the (ε, δ) guarantee under dp record; at most 1/n for the smallest site's n training records", Kind: Float,
		Quiet: true, Default: num(1e-5),
		Check: func(v Value) string {
			if !(v.Num > 0 && v.Num < 1) {
				return "must be in (0, 1)"
			}
			return ""
		},
		field: func(h *Hyperparameters) any { return &h.DPDelta },
		core:  func(v Value, c *Config) { c.DP.Delta = v.Num }},
	{Name: "dp_noise", Doc: "z, the noise multiplier of every local gradient step under dp record: each step adds N(0, (z·dp_clip)²) to the sum of the records' clipped gradients; 0: computed from dp_epsilon before the campaign starts", Kind: Float,
		Quiet: true, ZeroIsSetting: true, Check: atLeast(0),
		field: func(h *Hyperparameters) any { return &h.DPNoise },
		core:  func(v Value, c *Config) { c.DP.Noise = v.Num }},
	{Name: "dp_clip", Doc: "C, the L2 norm each record's gradient is clipped to under dp record (the sensitivity of every gradient sum)", Kind: Float,
		Quiet: true, Default: num(DefaultDPClip), Check: positive,
		field: func(h *Hyperparameters) any { return &h.DPClip },
		core:  func(v Value, c *Config) { c.DP.Clip = v.Num }},
	{Name: "dp_descriptor_noise", Doc: "the noise multiplier of each descriptor and label-summary release under dp record (σ = z·Δ, Δ the release's proven L2 sensitivity); 0: computed before the campaign starts, from dp_epsilon and dp_descriptor_share, or dp_noise without a budget", Kind: Float,
		Methods: []learn.Method{learn.PTopoFL}, Quiet: true, ZeroIsSetting: true, Check: atLeast(0),
		field: func(h *Hyperparameters) any { return &h.DPDescriptorNoise },
		core:  func(v Value, c *Config) { c.DP.DescriptorNoise = v.Num }},
	{Name: "dp_metrics_noise", Doc: "the noise multiplier of each metrics release (the score counts of a site's test split, sensitivity 1) under dp record; 0: computed before the campaign starts from dp_epsilon, or dp_noise without a budget", Kind: Float,
		Quiet: true, ZeroIsSetting: true, Check: atLeast(0),
		field: func(h *Hyperparameters) any { return &h.DPMetricsNoise },
		core:  func(v Value, c *Config) { c.DP.MetricsNoise = v.Num }},
	{Name: "dp_descriptor_share", Doc: "the share of the training records' budget (of μ² in Gaussian DP) that descriptor and label-summary releases get when dp_epsilon sets the noise, in (0, 1)", Kind: Float,
		Methods: []learn.Method{learn.PTopoFL}, Quiet: true, Default: num(DefaultDPDescriptorShare),
		Check: func(v Value) string {
			if !(v.Num > 0 && v.Num < 1) {
				return "must be in (0, 1)"
			}
			return ""
		},
		field: func(h *Hyperparameters) any { return &h.DPDescriptorShare },
		core:  func(v Value, c *Config) { c.DP.DescriptorShare = v.Num }},
	{Name: "dp_validation_noise", Doc: "the noise multiplier of each validation metrics release (the score counts of the training rows a site holds out under validation_fraction, sensitivity 1, charged to the training records) under dp record; 0: computed before the campaign starts, from dp_epsilon and dp_validation_share, or dp_noise without a budget", Kind: Float,
		Quiet: true, ZeroIsSetting: true, Check: atLeast(0),
		field: func(h *Hyperparameters) any { return &h.DPValidationNoise },
		core:  func(v Value, c *Config) { c.DP.ValidationNoise = v.Num }},
	{Name: "dp_validation_share", Doc: "the share of the training records' budget (of μ² in Gaussian DP) that validation metrics releases get when dp_epsilon sets the noise under validation_fraction, in (0, 1); with dp_descriptor_share it must leave some for training", Kind: Float,
		Quiet: true, Default: num(DefaultDPValidationShare),
		Check: func(v Value) string {
			if !(v.Num > 0 && v.Num < 1) {
				return "must be in (0, 1)"
			}
			return ""
		},
		field: func(h *Hyperparameters) any { return &h.DPValidationShare },
		core:  func(v Value, c *Config) { c.DP.ValidationShare = v.Num }},
	{Name: "validation_fraction", Doc: "the share of each site's training rows held out, by a seeded draw, as its validation split: the site trains on the rest and reports its validation AUC and accuracy every round beside the test ones, so that a sweep can select on validation and report test; under dp record the validation metrics are released through the same noisy counts as the test metrics (dp_validation_noise) and charged to the training records; 0 holds out nothing (not for model external)", Kind: Float,
		Quiet: true, ZeroIsSetting: true,
		Check: func(v Value) string {
			if !(v.Num >= 0 && v.Num <= 0.5) {
				return "must be in [0, 0.5]"
			}
			return ""
		},
		field: func(h *Hyperparameters) any { return &h.ValidationFraction },
		core:  func(v Value, c *Config) { c.ValidationFraction = v.Num }},
	{Name: "drift_lr_factor", Doc: "pTopoFL's drift-triggered learning-rate increase (§3.5: a site whose drift Δ passes drift_threshold is re-clustered \"and its local learning rate can be increased to accelerate adaptation\"): the factor on its local lr in the round it is re-clustered; 1 leaves it (the paper gives no factor; gradient-descent training only: local_solver gd or a deep model)", Kind: Float,
		Methods: []learn.Method{learn.PTopoFL}, Quiet: true, Default: num(1),
		Check: func(v Value) string {
			if !(v.Num >= 1 && v.Num <= 100) {
				return "must be in [1, 100]"
			}
			return ""
		},
		field: func(h *Hyperparameters) any { return &h.DriftLRFactor },
		core: func(v Value, c *Config) {
			if v.Num != 1 {
				c.DriftLRFactor = v.Num // 0 in Config: off
			}
		}},
	{Name: "topo_aggregation", Doc: `pTopoFL's server rule: "clusters", the paper's algorithm (§3.3: clusters, trust-weighted sums in them by Eq. 6, blended with the consensus by β, Eq. 7), or "softmax", the global rule of §1 and Eq. 12 that the convergence theorem is about: one model Σ α_k θ_k for every site, α_k ∝ exp(−λ d_k), d_k the site's distance to the federation's barycentre (see barycentre, softmax_lambda); trust, flags and drift are still measured and reported`, Kind: Text,
		Methods: []learn.Method{learn.PTopoFL}, Quiet: true, Default: text(string(aggregation.ClusterAggregation)),
		Check: func(v Value) string {
			if v.Text != string(aggregation.ClusterAggregation) && v.Text != string(aggregation.SoftmaxAggregation) {
				return `must be "clusters" or "softmax"`
			}
			return ""
		},
		field: func(h *Hyperparameters) any { return &h.TopoAggregation },
		core:  func(v Value, c *Config) { c.Server.Aggregation = aggregation.Aggregation(v.Text) }},
	{Name: "softmax_lambda", Doc: "λ of Eq. 12 (topo_aggregation softmax): α_k ∝ exp(−λ d_k); 0 weighs every site alike", Kind: Float,
		Methods: []learn.Method{learn.PTopoFL}, Quiet: true, Default: num(1),
		Check: func(v Value) string {
			if !(v.Num >= 0 && v.Num <= 1000) {
				return "must be in [0, 1000]"
			}
			return ""
		},
		field: func(h *Hyperparameters) any { return &h.SoftmaxLambda },
		core:  func(v Value, c *Config) { c.Server.SoftmaxLambda = v.Num }},
	{Name: "barycentre", Doc: `the barycentre topo_aggregation softmax measures d_k from: "mean", the mean of the l2-normalised descriptors in R^m (the paper's "in practice", after Thm 1), d_k = ‖φ̂_k − φ̄‖; or "frechet", a Fréchet mean of the sites' H0 and H1 diagrams (Turner et al. 2014), d_k their 2-Wasserstein distance to it (needs site_distance "wasserstein", which makes the sites release their diagrams)`, Kind: Text,
		Methods: []learn.Method{learn.PTopoFL}, Quiet: true, Default: text(string(aggregation.MeanBarycentre)),
		Check: func(v Value) string {
			if v.Text != string(aggregation.MeanBarycentre) && v.Text != string(aggregation.FrechetBarycentre) {
				return `must be "mean" or "frechet"`
			}
			return ""
		},
		field: func(h *Hyperparameters) any { return &h.Barycentre },
		core:  func(v Value, c *Config) { c.Server.Barycentre = aggregation.Barycentre(v.Text) }},
	// The sites' own training program (model "external"). Both are
	// Quiet: a campaign of ours carries neither.
	{Name: "trainer", Doc: `the name under which every site runs its own training program for model "external" (a site worker maps it to a command with --trainer NAME=COMMAND; the server never names a command)`, Kind: Text,
		Quiet: true, Check: checkTrainerName,
		field: func(h *Hyperparameters) any { return &h.Trainer },
		core:  func(v Value, c *Config) { c.Trainer = v.Text }},
	{Name: "trainer_params", Doc: `a JSON object passed unchanged to the training program of model "external", in task.json's hyperparameters beside the campaign's own`, Kind: Text,
		Quiet: true, Check: checkTrainerParams,
		field: func(h *Hyperparameters) any { return (*string)(&h.TrainerParams) },
		core:  func(v Value, c *Config) { c.TrainerParams = TrainerParams(v.Text) }},
	// Quiet with a paper default of its own: a paper-preset SCAFFOLD spec
	// stores "authors" explicitly, and a spec without the field (every
	// campaign stored before it existed, which ran the correct update)
	// reads as "standard".
	{Name: "scaffold_variant", Doc: `SCAFFOLD's control-variate exchange: "standard", Karimireddy et al. (2020) Algorithm 1 with option II (a site sends its change Δc_i, the server adds their mean to c); or "authors", the pTopoFL authors' code, which the paper's SCAFFOLD row comes from: a site sends its full c_i and the server adds their mean to c every round, so c accumulates (testdata/paper/README.md, "SCAFFOLD bug"); only the paper preset selects it, for logistic models without dp`, Kind: Text,
		Methods: []learn.Method{learn.SCAFFOLD}, Quiet: true, OwnMethodsOnly: true, Default: text(ScaffoldStandard), PaperDefault: &Value{Text: ScaffoldAuthors},
		Check: func(v Value) string {
			if v.Text != ScaffoldStandard && v.Text != ScaffoldAuthors {
				return `must be "standard" or "authors"`
			}
			return ""
		},
		field: func(h *Hyperparameters) any { return &h.ScaffoldVariant },
		core:  func(v Value, c *Config) { c.Site.SCAFFOLD.ReferenceBug = v.Text == ScaffoldAuthors }},
	{Name: "descriptor_model", Doc: `the model a deep pTopoFL site computes its descriptor under (its penultimate activations of n_sub training images): "initial", the campaign's initial model, in round 1 (and when drift_check_every or a drift recheck asks, under the model the site then holds); or "global", in every round under the model the server sent the site for that round (round 1: the initial model), as Algorithm 1 recomputes φ_k every round, with the clusters fitted afresh each round from those descriptors (a clustering fitted once would see the initial model only), so drift (Eq. 9) is not measured; deep and external models only (a tabular descriptor depends on the data alone)`, Kind: Text,
		Methods: []learn.Method{learn.PTopoFL}, Quiet: true, Default: text(DescriptorInitial),
		Check: func(v Value) string {
			if v.Text != DescriptorInitial && v.Text != DescriptorGlobal {
				return `must be "initial" or "global"`
			}
			return ""
		},
		field: func(h *Hyperparameters) any { return &h.DescriptorModel },
		core: func(v Value, c *Config) {
			c.DescriptorModel = v.Text
			c.Server.RefitClusters = v.Text == DescriptorGlobal
		}},
	{Name: "topo_features", Doc: `how a tabular pTopoFL site's own descriptor enters its local training (§3.2 and Algorithm 1, "augment local features with φ_k statistics"): "weights", the per-sample weights exp(−‖x_i − c‖/max(A0, 0.1)) of the authors' pTopoFL code (the paper's numbers); "augment", four columns appended to every standardised row, as the authors' TopoFL client computes them: the row's distance to the training centroid, the H0 and H1 persistence entropies and β0 at the median Betti threshold (method.AugmentTopology), with an unweighted fit; or "both"; logistic models without dp only. The columns are unscaled, as the authors' are (β0 up to n_sub − 1): use them with local_solver "lbfgs", whose fit absorbs that; under fixed-step "gd" (the default preset) they destabilise training (docs/explanation/method.md)`, Kind: Text,
		Methods: []learn.Method{learn.PTopoFL}, Quiet: true, Default: text(TopoWeights),
		Check: func(v Value) string {
			if v.Text != TopoWeights && v.Text != TopoAugment && v.Text != TopoBoth {
				return `must be "weights", "augment" or "both"`
			}
			return ""
		},
		field: func(h *Hyperparameters) any { return &h.TopoFeatures },
		core: func(v Value, c *Config) {
			c.TopoFeatures = v.Text
			c.Site.NoSampleWeights = v.Text == TopoAugment
		}},
	// Secure aggregation (secagg.go). Every one is Quiet: a campaign
	// without it has the spec (and spec hash) it had before.
	{Name: "secure_aggregation", Doc: `how the server learns the sites' models: "off", each site's model in the clear, or "secagg+", SecAgg+ (Bell et al., CCS 2020) per aggregation group, so the server learns each group's weighted sum and no site's model: one group a round for fedavg, fedprox, pfedme and scaffold (whose control variates are summed alike), one per pTopoFL cluster of at least secagg_min_group sites plus one for the smaller clusters' sites (who then get the consensus model); weights are decided from descriptors and counts before any model exists and applied by each site to its update θ − θ_start before masking; median, trimmed_mean, krum, foolsgold, normclip and local read single models and are refused (docs/explanation/secure-aggregation.md)`, Kind: Text,
		Quiet: true, Default: text(SecAggOff),
		Check: func(v Value) string {
			if v.Text != SecAggOff && v.Text != SecAggPlus {
				return `must be "off" or "secagg+"`
			}
			return ""
		},
		field: func(h *Hyperparameters) any { return &h.SecureAggregation },
		core:  func(v Value, c *Config) { c.SecAgg.On = v.Text == SecAggPlus }},
	{Name: "secagg_threshold", Doc: "t, the shares of a site's secrets that reconstruct them under secagg+: a fraction in (0, 1) of its k = 2⌈log₂ n⌉ + 1 share holders (rounded up), or a whole number of them (a group whose k is smaller uses k); a site's secrets survive while t of its holders answer, and fewer than t colluding sites learn nothing of them; 0: ⌈2k/3⌉, the ratio of Flower's SecAgg+ example (2 of 3)", Kind: Float,
		Quiet: true, ZeroIsSetting: true,
		Check: func(v Value) string {
			if !(v.Num >= 0) || math.IsInf(v.Num, 1) || (v.Num >= 1 && v.Num != math.Trunc(v.Num)) || v.Num == 1 {
				return "must be 0, a fraction in (0, 1) or a whole number ≥ 2"
			}
			return ""
		},
		field: func(h *Hyperparameters) any { return &h.SecAggThreshold },
		core:  func(v Value, c *Config) { c.SecAgg.Threshold = v.Num }},
	{Name: "secagg_min_group", Doc: "the fewest sites a secure-aggregation group is formed of under secagg+: a pTopoFL cluster with fewer sites is folded into the global group (its sites get the consensus model), and a campaign's min_sites must be at least this; at least 3 (in a group of two, each member's input is the sum less the other's)", Kind: Int,
		Quiet: true, Default: num(DefaultSecAggMinGroup), Check: atLeast(3),
		field: func(h *Hyperparameters) any { return &h.SecAggMinGroup },
		core:  func(v Value, c *Config) { c.SecAgg.MinGroup = int(v.Num) }},
	{Name: "secagg_clip", Doc: "c, the clipping range of secagg+'s quantisation: every coordinate of a site's weighted update w_k·(θ_k − θ_start) is clipped to [−c, c] before it is quantised (Flower's clipping_range, 8)", Kind: Float,
		Quiet: true, Default: num(DefaultSecAggClip), Check: positive,
		field: func(h *Hyperparameters) any { return &h.SecAggClip },
		core:  func(v Value, c *Config) { c.SecAgg.Clip = v.Num }},
	{Name: "secagg_quant_bits", Doc: "b, secagg+'s quantisation: a clipped coordinate becomes an integer in [0, 2^b − 1] by unbiased stochastic rounding, summed modulo 2³² (Flower's quantization_range 2²² and modulus_range 2³²); a group of n sites needs n·(2^b − 1) < 2³²; one site's rounding moves a coordinate of the sum by at most 2c/(2^b − 1) ≈ 3.8·10⁻⁶ at the defaults", Kind: Int,
		Quiet: true, Default: num(DefaultSecAggQuantBits),
		Check: func(v Value) string {
			if !(v.Num >= 8 && v.Num <= 31) {
				return "must be between 8 and 31"
			}
			return ""
		},
		field: func(h *Hyperparameters) any { return &h.SecAggQuantBits },
		core:  func(v Value, c *Config) { c.SecAgg.QuantBits = int(v.Num) }},
	{Name: "dp_noise_split", Doc: `under secagg+, who adds each round's training noise under dp record: "site", every site its whole noise to its own update, as without secure aggregation (the only value implemented); "sum", each site a share of the noise that only a group's sum carries whole (distributed discrete Gaussian, Kairouz, Liu and Steinke 2021), is refused as not implemented (docs/explanation/privacy.md, "Secure aggregation")`, Kind: Text,
		Quiet: true, Default: text(DPSplitSite),
		Check: func(v Value) string {
			switch v.Text {
			case DPSplitSite:
				return ""
			case DPSplitSum:
				return `"sum" (each site adding a share of the noise over the secure sum) is not implemented; use "site"`
			}
			return `must be "site"`
		},
		field: func(h *Hyperparameters) any { return &h.DPNoiseSplit },
		core:  func(v Value, c *Config) {}},
}

// The values of topo_features.
const (
	// TopoWeights weighs each training row by its topology sample weight.
	TopoWeights = "weights"
	// TopoAugment appends the four topological columns of §3.2.
	TopoAugment = "augment"
	// TopoBoth does both.
	TopoBoth = "both"
)

// AugmentsFeatures reports whether h makes pTopoFL sites append the
// topological columns (topo_features "augment" or "both").
func (h Hyperparameters) AugmentsFeatures(m learn.Method) bool {
	return augments(m, h.TopoFeatures)
}

// augments reports whether method m under topo_features value tf appends
// the topological columns.
func augments(m learn.Method, tf string) bool {
	return m == learn.PTopoFL && (tf == TopoAugment || tf == TopoBoth)
}

// The values of descriptor_model.
const (
	// DescriptorInitial computes a deep site's descriptor under the
	// campaign's initial model.
	DescriptorInitial = "initial"
	// DescriptorGlobal computes it every round under the model the
	// server sent the site.
	DescriptorGlobal = "global"
)

// The values of scaffold_variant.
const (
	// ScaffoldStandard is SCAFFOLD as published (Karimireddy et al. 2020).
	ScaffoldStandard = "standard"
	// ScaffoldAuthors is the pTopoFL authors' SCAFFOLD, whose server
	// variate accumulates the sites' full variates.
	ScaffoldAuthors = "authors"
)

// Lookup returns the Param called name.
func Lookup(name string) (Param, bool) {
	for _, p := range Params {
		if p.Name == name {
			return p, true
		}
	}
	return Param{}, false
}

// ParamNames lists the JSON names of every hyper-parameter, in order.
func ParamNames() []string {
	names := make([]string, len(Params))
	for i, p := range Params {
		names[i] = p.Name
	}
	return names
}

// Applies reports whether method m reads the parameter.
func (p Param) Applies(m learn.Method) bool {
	if p.Methods == nil {
		return true
	}
	for _, x := range p.Methods {
		if x == m {
			return true
		}
	}
	return false
}

// DefaultFor returns the parameter's default under preset.
func (p Param) DefaultFor(preset string) Value {
	if v, ok := p.PresetDefaults[preset]; ok {
		return v
	}
	if preset == Paper && p.PaperDefault != nil {
		return *p.PaperDefault
	}
	return p.Default
}

// Get returns the parameter's value in h.
func (p Param) Get(h Hyperparameters) Value { return p.get(&h) }

// get is Get of *h. A loop over Params calls it with its own h, which then
// moves to the heap once for the loop instead of once for every parameter
// (the field accessor is a function value, so escape analysis cannot keep
// a pointer given to it on the stack).
func (p Param) get(h *Hyperparameters) Value {
	var v Value
	switch f := p.field(h).(type) {
	case *int:
		v = Value{Num: float64(*f)}
	case *float64:
		v = Value{Num: *f}
	case *string:
		v = Value{Text: *f}
	default:
		panic("method: parameter " + p.Name + " has no field")
	}
	if p.Quiet && v == (Value{}) {
		return p.Default
	}
	return v
}

// Set writes v into h, checking that v has the parameter's kind (a text
// for Text, an integer for Int). It does not check the range: Validate
// does, for the methods that read the parameter.
func (p Param) Set(h *Hyperparameters, v Value) error {
	if p.Quiet && v == p.Default {
		v = Value{}
	}
	switch f := p.field(h).(type) {
	case *int:
		if v.Text != "" || v.Num != math.Trunc(v.Num) || math.Abs(v.Num) > 1<<31 {
			return fmt.Errorf("hyperparameter %s = %s: want an integer", p.Name, quoteText(v))
		}
		*f = int(v.Num)
	case *float64:
		if v.Text != "" || math.IsNaN(v.Num) || math.IsInf(v.Num, 0) {
			return fmt.Errorf("hyperparameter %s = %s: want a number", p.Name, quoteText(v))
		}
		*f = v.Num
	case *string:
		if v.Text == "" && !p.Quiet {
			return fmt.Errorf("hyperparameter %s = %v: want a name, e.g. %q", p.Name, v.Num, p.Default.Text)
		}
		if v.Text == "" && v.Num != 0 {
			return fmt.Errorf("hyperparameter %s = %v: want a name, e.g. %q", p.Name, v.Num, p.Default.Text)
		}
		*f = v.Text
	}
	return nil
}

func quoteText(v Value) string {
	if v.Text != "" {
		return strconv.Quote(v.Text)
	}
	return v.String()
}

// Defaults returns every hyper-parameter's default under preset ("default"
// or "paper"; anything else gets the default preset's values and is
// rejected by Resolve).
func Defaults(preset string) Hyperparameters {
	var h Hyperparameters
	for _, p := range Params {
		if err := p.Set(&h, p.DefaultFor(preset)); err != nil && p.Kind != Text {
			panic("method: default of " + p.Name + ": " + err.Error())
		}
	}
	return h
}

// WithDefaults returns h with every zero field whose zero is not a setting
// filled in: with Param.Absent where the parameter has one (a spec stored
// by an older version that did not know it keeps its behaviour), else with
// preset's default (a spec written by hand).
func (h Hyperparameters) WithDefaults(preset string) Hyperparameters {
	for _, p := range Params {
		if p.ZeroIsSetting {
			continue
		}
		if v := p.get(&h); v.Num == 0 && v.Text == "" {
			fill := p.DefaultFor(preset)
			if p.Absent != nil {
				fill = *p.Absent
			}
			_ = p.Set(&h, fill)
		}
	}
	return h
}

// ForMethod returns h without the parameters that are kept only for the
// methods that read them (Param.OwnMethodsOnly) and that m does not read:
// their fields hold zero, the Default, which m ignores anyway. A paper-preset
// FedAvg spec so encodes, and hashes, as it did before scaffold_variant
// existed, and only a SCAFFOLD spec carries the authors' variant.
func (h Hyperparameters) ForMethod(m learn.Method) Hyperparameters {
	for _, p := range Params {
		if p.OwnMethodsOnly && !p.Applies(m) {
			_ = p.Set(&h, p.Default)
		}
	}
	return h
}

// IsDeep reports whether h asks for an image network rather than logistic
// regression (a model other than "logistic"; an empty model, from a spec
// stored before the parameter existed, is logistic).
func (h Hyperparameters) IsDeep() bool {
	return h.Model != "" && h.Model != ModelLogistic && h.Model != ModelExternal
}

// IsExternal reports whether h asks the sites to train with their own
// program under the trainer protocol (model "external").
func (h Hyperparameters) IsExternal() bool { return h.Model == ModelExternal }

// Validate checks the parameters that method m reads and names the first
// bad one ("hyperparameters.beta = 2: must be in [0, 1]"). The deep
// parameters are checked only for a deep model.
func (h Hyperparameters) Validate(m learn.Method) error {
	for _, p := range Params {
		if !p.Applies(m) || p.Check == nil || (p.Deep && !h.IsDeep()) {
			continue
		}
		v := p.get(&h)
		if msg := p.Check(v); msg != "" {
			return fmt.Errorf("hyperparameters.%s = %s: %s", p.Name, quoteText(v), msg)
		}
	}
	if err := h.validateExternal(m); err != nil {
		return err
	}
	if m == learn.PTopoFL && h.DriftLRFactor != 0 && h.DriftLRFactor != 1 && !h.IsDeep() && h.LocalSolver != learn.SolverGD {
		return fmt.Errorf("hyperparameters.drift_lr_factor = %v: L-BFGS (local_solver %q) has no learning rate; set local_solver \"gd\"", h.DriftLRFactor, h.LocalSolver)
	}
	if m == learn.PTopoFL && h.TopoAggregation != string(aggregation.SoftmaxAggregation) {
		switch {
		case h.SoftmaxLambda != 0 && h.SoftmaxLambda != 1:
			return fmt.Errorf("hyperparameters.softmax_lambda = %v: only with topo_aggregation \"softmax\"", h.SoftmaxLambda)
		case h.Barycentre != "" && h.Barycentre != string(aggregation.MeanBarycentre):
			return fmt.Errorf("hyperparameters.barycentre = %q: only with topo_aggregation \"softmax\"", h.Barycentre)
		}
	}
	if m == learn.PTopoFL && h.Barycentre == string(aggregation.FrechetBarycentre) && h.SiteDistance != SiteWasserstein {
		return fmt.Errorf(`hyperparameters.barycentre = "frechet": needs the sites' diagrams; set site_distance "wasserstein"`)
	}
	if m == learn.SCAFFOLD && h.ScaffoldVariant == ScaffoldAuthors {
		switch {
		case h.IsDeep() || h.IsExternal():
			return fmt.Errorf("hyperparameters.scaffold_variant = %q: the authors' variant exists for the logistic model only (model %q); set scaffold_variant \"standard\"", h.ScaffoldVariant, h.Model)
		case h.IsDP():
			return fmt.Errorf("hyperparameters.scaffold_variant = %q: not under dp %q (the privacy plan accounts for the change Δc_i a standard site sends); set scaffold_variant \"standard\"", h.ScaffoldVariant, DPRecord)
		}
	}
	if h.AugmentsFeatures(m) {
		switch {
		case h.IsDeep() || h.IsExternal():
			return fmt.Errorf("hyperparameters.topo_features = %q: the topological columns are for tabular rows (model %q)", h.TopoFeatures, h.Model)
		case h.IsDP():
			return fmt.Errorf("hyperparameters.topo_features = %q: not under dp %q (a row's columns depend on every training row and on the exact descriptor)", h.TopoFeatures, DPRecord)
		}
	}
	if m == learn.PTopoFL && h.DescriptorModel == DescriptorGlobal && !h.IsDeep() && !h.IsExternal() {
		return fmt.Errorf(`hyperparameters.descriptor_model = "global": a tabular site's descriptor depends on its data alone, not on a model (model %q)`, h.Model)
	}
	if h.ValidationFraction > 0 && h.IsExternal() {
		return fmt.Errorf("hyperparameters.validation_fraction = %v: a site's own program reads its whole training file, so no rows can be held out from it (model %q)", h.ValidationFraction, ModelExternal)
	}
	if err := h.validateSecAgg(m); err != nil {
		return err
	}
	return h.validatePrivacy(m)
}

// ValidateFederation reports a hyper-parameter of method m that cannot work
// when a round aggregates as few as fewest models (a campaign's min_sites):
// secure aggregation needs secagg_min_group sites, Krum's byzantine f
// needs more than 2f + 2 models, and a non-zero trim_fraction that cuts no
// model is the plain mean under another name.
// The error names the field, the count and what to change.
func (h Hyperparameters) ValidateFederation(m learn.Method, fewest int) error {
	if err := h.ValidateSecAggFederation(fewest); err != nil {
		return err
	}
	switch m {
	case learn.Krum:
		need := aggregation.KrumMinModels(h.Byzantine)
		if fewest >= need {
			return nil
		}
		fix := fmt.Sprintf("raise min_sites to %d or more", need)
		if fewest >= aggregation.KrumMinModels(0) {
			fix = fmt.Sprintf("lower byzantine to at most %d or ", (fewest-3)/2) + fix
		}
		return fmt.Errorf("hyperparameters.byzantine = %d: Krum needs more than 2f + 2 = %d models, and a round may aggregate only %d; %s",
			h.Byzantine, need-1, fewest, fix)
	case learn.TrimmedMean:
		if h.TrimFraction == 0 || aggregation.TrimCount(h.TrimFraction, fewest) > 0 {
			return nil
		}
		// The smallest fraction that cuts one model, rounded up to three
		// decimals so that the suggested value itself cuts one.
		fix := "raise min_sites to 3 or more"
		if least := math.Ceil(1000/float64(fewest)) / 1000; least < 0.5 {
			fix = fmt.Sprintf("raise it to %v or more, or raise min_sites", least)
		}
		return fmt.Errorf("hyperparameters.trim_fraction = %v: cuts ⌊%v·%d⌋ = 0 models at each end when a round aggregates %d models, which is the plain mean; %s, or set 0 to ask for the plain mean",
			h.TrimFraction, h.TrimFraction, fewest, fewest, fix)
	}
	return nil
}

// ParamValue sets one hyper-parameter by its JSON name: Value for numbers,
// Text for names ("descriptor").
type ParamValue struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Text  string  `json:"text,omitempty"`
}

// Apply returns h with every override applied. An unknown name or a value
// of the wrong kind is an error naming it. It reads no map and no
// reflection, so workflows may call it.
func (h Hyperparameters) Apply(set []ParamValue) (Hyperparameters, error) {
	for _, pv := range set {
		p, ok := Lookup(pv.Name)
		if !ok {
			return h, fmt.Errorf("hyperparameter %q: unknown; want one of %v", pv.Name, ParamNames())
		}
		if err := p.Set(&h, Value{Num: pv.Value, Text: pv.Text}); err != nil {
			return h, err
		}
	}
	return h, nil
}

// Changes returns the overrides that turn from into to: one ParamValue per
// hyper-parameter whose value differs, in Params order, so that
// from.Apply(Changes(from, to)) == to. A sweep runs one federation under
// another preset this way (pipeline.SweepFederation.Set).
func Changes(from, to Hyperparameters) []ParamValue {
	var out []ParamValue
	for _, p := range Params {
		if a, b := p.get(&from), p.get(&to); a != b {
			out = append(out, ParamValue{Name: p.Name, Value: b.Num, Text: b.Text})
		}
	}
	return out
}

// ParseValue reads a hyper-parameter's value from text as a user typed it
// (`--set beta=0.5`, a sweep file's list entry): a number for Int and Float
// parameters, a name for Text ones. A quoted or otherwise non-numeric text
// for a numeric parameter is an error, never a silent zero.
func ParseValue(name, text string) (ParamValue, error) {
	p, ok := Lookup(name)
	if !ok {
		return ParamValue{}, fmt.Errorf("hyperparameter %q: unknown; want one of %v", name, ParamNames())
	}
	if p.Kind == Text {
		if text == "" {
			return ParamValue{}, fmt.Errorf("hyperparameter %s: empty value", name)
		}
		return ParamValue{Name: name, Text: text}, nil
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return ParamValue{}, fmt.Errorf("hyperparameter %s = %q: want a number", name, text)
	}
	pv := ParamValue{Name: name, Value: f}
	var h Hyperparameters
	if err := p.Set(&h, Value{Num: f}); err != nil {
		return ParamValue{}, err
	}
	return pv, nil
}
