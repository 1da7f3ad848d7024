package method

import (
	"fmt"

	"github.com/ptopofl/ptopofl/aggregation"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/nn"
)

// Presets. A preset is a set of defaults (Param.DefaultFor) plus the few
// fixed settings of the core that no campaign tunes (Resolve).
const (
	// Default is the paper's intent: exact Vietoris–Rips H1, the
	// label-aware detector with sites flagged by z > τ, drift
	// re-clustering, and bounded local work (local_solver gd: every L-BFGS
	// method takes `steps` gradient steps of size `lr` per round, the
	// budget FedProx and SCAFFOLD have). The FL literature's regime is local
	// work that does not reach the local optimum (McMahan et al.'s E local
	// epochs at a fixed step size): a site that solves its problem to the
	// optimum every round makes the warm start irrelevant, so FedAvg
	// becomes one-shot averaging of local optima and every round repeats
	// the first.
	Default = "default"
	// Paper reproduces the authors' code: triangle H1, `flagged` as
	// trust < 0.5 (their τ is unused), clusters fitted once.
	Paper = "paper"
	// DeepC is the paper's Scenario C with a deep model: ResNet-18 (package
	// nn's ResNet at width 64 and depth 2, GroupNorm for BatchNorm, 11.2 M
	// parameters for CIFAR-10), 5 local epochs, 100 rounds, M = 3, β = 0.3,
	// n_sub = 200, L = 20 (for 10 clients of CIFAR-10 or Fashion-MNIST).
	// Otherwise as Default.
	DeepC = "deep-c"
	// DeepD is Scenario D: ConvNet-2 on FEMNIST's 62 classes, 3 local
	// epochs, 200 rounds (for 50 clients), pTopoFL as in DeepC.
	DeepD = "deep-d"
	// DeepSmall is Scenario C at a size a 2-core machine runs in minutes:
	// the Fashion-MNIST anchor's CNN (conv 5×5×16 → pool → conv 5×5×32 →
	// pool → dense 10, 28,938 parameters, about 230 times fewer than
	// ConvNet-2), 1 local epoch of minibatches of 32, SGD at 0.05 with
	// momentum 0.9, 20 rounds; pTopoFL with M = 3, β = 0.3, n_sub = 200.
	// It is the protocol of the PyTorch anchor in issue 13 (FedAvg mean
	// site top-1 0.818 at α = 0.5 with 600 training images per site).
	DeepSmall = "deep-small"
	// DeepDSmall is Scenario D's local work (3 epochs) with DeepSmall's
	// network and rounds, for many small writer-like sites.
	DeepDSmall = "deep-d-small"
)

// Presets lists the preset names.
var Presets = []string{Default, Paper, DeepC, DeepD, DeepSmall, DeepDSmall}

// DeepPresets lists the presets whose default model is an image network.
var DeepPresets = []string{DeepC, DeepD, DeepSmall, DeepDSmall}

// Rounds returns the number of rounds R a campaign under preset runs when
// none is given: the paper's 15 for Scenarios A/B (Table 3), 100 for C,
// 200 for D, 20 for the small variants (the anchor's protocol).
func Rounds(preset string) int {
	switch preset {
	case DeepC:
		return 100
	case DeepD:
		return 200
	case DeepSmall, DeepDSmall:
		return 20
	}
	return 15
}

// Config is a method's complete configuration as the core packages read
// it: what the site update (Site), the server (Server) and the descriptor
// (Descriptor, NSub) use. Resolve builds it from a campaign's method,
// preset and hyper-parameters; the durable pipeline and the in-memory run
// both run exactly this.
type Config struct {
	Method learn.Method
	Preset string
	// Descriptor names the tda descriptor variant the sites compute.
	Descriptor string
	// NSub is the number of rows subsampled per site for the descriptor.
	NSub int
	// LabelNSub is the number of rows subsampled per site for the
	// label-aware summary that the labelled and combined detectors read.
	LabelNSub int
	Site      learn.SiteConfig
	Server    aggregation.Config
	// Model is the site's model (ModelLogistic or an image network). For
	// an image network, Network is its architecture (without the input
	// shape, which the site's images give) and DeepSite its local
	// training; both are zero for logistic regression.
	Model    string
	Network  nn.Config
	DeepSite nn.SiteConfig
	// Trainer and TrainerParams are the sites' own program and what it is
	// passed, for model "external" (IsExternal); empty otherwise.
	Trainer       string
	TrainerParams TrainerParams
	// ValidationFraction is the share of each site's training rows held
	// out for validation (ValidationRows); 0 holds out none.
	ValidationFraction float64
	// DriftLRFactor multiplies a pTopoFL site's local learning rate in
	// the round drift re-clusters it (DriftLR); 0 leaves it.
	DriftLRFactor float64
	// DescriptorModel is descriptor_model: DescriptorInitial or
	// DescriptorGlobal (a deep pTopoFL site's descriptor every round under
	// the model it was sent).
	DescriptorModel string
	// TopoFeatures is topo_features: TopoWeights, TopoAugment or TopoBoth
	// (a tabular pTopoFL site's columns, AugmentTopology).
	TopoFeatures string
	// DP is the privacy configuration. Under dp record Resolve also sets
	// Site.DP and DeepSite.Train.DP (clip and noise multiplier); their
	// Random, the site's secret stream, is the caller's to set.
	DP DPSettings
	// SecAgg is the secure-aggregation configuration (secure_aggregation
	// and the secagg_* parameters); zero when off.
	SecAgg SecAggSettings
}

// Resolve returns the core configuration of method m under preset with
// the hyper-parameters h (zero fields whose zero is not a setting take the
// preset's defaults). It validates everything and names the first bad
// field.
func Resolve(m learn.Method, preset string, h Hyperparameters) (Config, error) {
	if _, err := learn.ParseMethod(string(m)); err != nil {
		return Config{}, fmt.Errorf("method %q: unknown; want one of %v", m, learn.Methods)
	}
	if err := CheckPreset(preset); err != nil {
		return Config{}, err
	}
	h = h.WithDefaults(preset).ForMethod(m)
	if err := h.Validate(m); err != nil {
		return Config{}, err
	}
	c := Config{
		Method: m, Preset: preset,
		Site:     learn.DefaultSiteConfig(),
		Server:   aggregation.DefaultConfig(),
		DeepSite: nn.DefaultSiteConfig(),
	}
	if preset == Paper {
		c.Server.FlagTrustBelow = 0.5
	}
	for _, p := range Params {
		if p.core != nil {
			p.core(p.get(&h), &c)
		}
	}
	if !c.DP.On {
		c.DP = DPSettings{} // off: no privacy setting applies
	}
	if !c.SecAgg.On {
		c.SecAgg = SecAggSettings{}
	}
	if h.IsExternal() {
		// The program decides the model; what the sites need of the
		// configuration is the method, the server's and the
		// descriptor's settings, and Trainer.
		c.Model, c.Network, c.DeepSite = ModelExternal, nn.Config{}, nn.SiteConfig{}
		return c, nil
	}
	if !h.IsDeep() {
		c.Model, c.Network, c.DeepSite = ModelLogistic, nn.Config{}, nn.SiteConfig{}
		if c.DP.On {
			c.Site.DP = &learn.DPConfig{Clip: c.DP.Clip, NoiseMultiplier: c.DP.Noise}
		}
		return c, nil
	}
	switch c.Model {
	case ModelMLP, ModelTopoNN:
		// One hidden layer of width, and a second of hidden when set.
		c.Network.Arch, c.Network.Hidden = nn.MLP, []int{h.Width}
		if h.Hidden > 0 {
			c.Network.Hidden = append(c.Network.Hidden, h.Hidden)
		}
		if c.Model == ModelTopoNN {
			c.Network.Arch = nn.TopoNN
			if c.DP.On {
				return Config{}, fmt.Errorf("hyperparameters.model = %q: toponn cannot train under dp record (each image's input holds its batch's descriptor, so per-example clipping does not bound one record's influence); use mlp or cnn", ModelTopoNN)
			}
		}
	case ModelCNN:
		c.Network.Arch = nn.CNN
	case ModelConvNet2:
		c.Network = nn.Config{Arch: nn.ConvNet2, Classes: c.Network.Classes}
	case ModelResNet:
		c.Network.Arch, c.Network.Hidden = nn.ResNet, nil
	}
	if c.Network.Arch != nn.ResNet {
		c.Network.Depth = 0
	}
	if c.Network.Arch != nn.CNN && c.Network.Arch != nn.ResNet {
		c.Network.Width = 0
	}
	if c.DeepSite.Train.Optimizer == nn.Adam {
		c.DeepSite.Train.Momentum = 0
	}
	if c.LabelAware() {
		return Config{}, fmt.Errorf("hyperparameters.detector = %q: the label-aware summary is defined on tabular rows; a deep model's pTopoFL uses \"descriptor\" (the deep presets' default)", c.Server.Detector)
	}
	if err := c.DeepSite.Train.Validate(); err != nil {
		return Config{}, fmt.Errorf("hyperparameters: %w", err)
	}
	if c.DP.On {
		c.DeepSite.Train.DP = &nn.DPConfig{Clip: c.DP.Clip, NoiseMultiplier: c.DP.Noise}
	}
	return c, nil
}

// IsDeep reports whether the sites train an image network (package nn)
// rather than logistic regression.
func (c Config) IsDeep() bool {
	return c.Model != "" && c.Model != ModelLogistic && c.Model != ModelExternal
}

// IsExternal reports whether the sites train with their own program under
// the trainer protocol (Trainer names it).
func (c Config) IsExternal() bool { return c.Model == ModelExternal }

// Preset returns the configuration of method m under the named preset with
// every hyper-parameter at its default.
func Preset(preset string, m learn.Method) (Config, error) {
	return Resolve(m, preset, Defaults(preset))
}

// CheckPreset returns an error unless name is a preset.
func CheckPreset(name string) error {
	for _, p := range Presets {
		if p == name {
			return nil
		}
	}
	return fmt.Errorf("preset %q: want one of %v", name, Presets)
}

// LabelAware reports whether the sites' descriptors carry the label-aware
// summary (tda.LabelledSummary after the 48 numbers): the detectors that
// read it need it from every site.
func (c Config) LabelAware() bool {
	return c.Method == learn.PTopoFL && (c.Server.Detector == aggregation.LabelledDetector || c.Server.Detector == aggregation.CombinedDetector)
}

// NeedsDescriptors reports whether m clusters or weighs sites by their
// topological descriptors. Only then does a round compute descriptors;
// the other methods never pay for persistent homology.
func NeedsDescriptors(m learn.Method) bool { return m == learn.PTopoFL }

// SitesReadServerState reports whether m's sites read a part of the
// server's state when they train: SCAFFOLD's server control variate c
// (Karimireddy et al. 2020, Algorithm 1). The server writes that part
// where every site may read it (artifact.RoundKeys.SharedState); the rest
// of its state (FoolsGold's per-site histories, the global model norm
// clipping measures updates from) only the server reads.
func SitesReadServerState(m learn.Method) bool { return m == learn.SCAFFOLD }

// EvaluatesOwnUpdate reports whether m scores each site with a model the
// site's own update produced, not with what the aggregation sends back
// (learn.EvaluationParams): LocalOnly's own fit, pFedMe's personal model.
// Such a site can score it in its training step.
func EvaluatesOwnUpdate(m learn.Method) bool { return m == learn.LocalOnly || m == learn.PFedMe }

// TrainSeed is the seed of a site's round-1 parameters: under the paper
// preset the campaign seed plus the site's position, as the authors' code
// seeds site k; otherwise derived, the seed derived for the site, round
// and purpose.
func TrainSeed(preset string, campaignSeed uint64, siteIndex int, derived uint64) uint32 {
	if preset == Paper {
		return uint32(campaignSeed) + uint32(siteIndex)
	}
	return uint32(derived)
}

// AugmentsFeatures reports whether c's sites append the topological
// columns of §3.2 to their rows (pTopoFL under topo_features "augment" or
// "both"; AugmentTopology).
func (c Config) AugmentsFeatures() bool { return augments(c.Method, c.TopoFeatures) }

// DriftLR returns c with the local learning rate of a pTopoFL site that
// drift re-clustered this round (reclustered) multiplied by
// DriftLRFactor (paper §3.5: "its local learning rate can be increased to
// accelerate adaptation to the new distribution"): the tabular gradient
// descent's and a deep model's. Any other site, method or factor 1 gets c
// unchanged.
func (c Config) DriftLR(reclustered bool) Config {
	if c.Method != learn.PTopoFL || !reclustered || c.DriftLRFactor == 1 || c.DriftLRFactor == 0 {
		return c
	}
	c.Site.LocalGD.LR *= c.DriftLRFactor
	c.DeepSite.Train.LR *= c.DriftLRFactor
	return c
}
