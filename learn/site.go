package learn

import (
	"fmt"
)

// Method names a federated method. The same names select the server-side
// strategy in package aggregation.
type Method string

// The methods of the paper's comparison (§4) and the robust baselines.
const (
	PTopoFL     Method = "ptopofl"
	FedAvg      Method = "fedavg"
	FedProx     Method = "fedprox"
	SCAFFOLD    Method = "scaffold"
	PFedMe      Method = "pfedme"
	LocalOnly   Method = "local"
	Median      Method = "median"
	TrimmedMean Method = "trimmed-mean"
	Krum        Method = "krum"
	// FoolsGold (Fung et al. 2020) and NormClip, norm-clipped FedAvg (Sun
	// et al. 2019), are robust baselines whose site update is FedAvg's.
	FoolsGold Method = "foolsgold"
	NormClip  Method = "norm-clip"
)

// Methods lists every Method in a fixed order.
var Methods = []Method{PTopoFL, FedAvg, FedProx, SCAFFOLD, PFedMe, LocalOnly, Median, TrimmedMean, Krum, FoolsGold, NormClip}

// ParseMethod returns the Method called name, or an error listing the
// valid names.
func ParseMethod(name string) (Method, error) {
	for _, m := range Methods {
		if string(m) == name {
			return m, nil
		}
	}
	return "", fmt.Errorf("learn: unknown method %q; want one of %v", name, Methods)
}

// FedProxConfig holds FedProx's local hyper-parameters (Li et al. 2020).
type FedProxConfig struct {
	Mu    float64 // proximal coefficient μ (paper §4.1: 0.1)
	LR    float64 // gradient-descent learning rate (reference: 0.05)
	Steps int     // full-batch steps per round (reference: 30)
}

// SCAFFOLDConfig holds SCAFFOLD's local hyper-parameters (Karimireddy et
// al. 2020).
type SCAFFOLDConfig struct {
	LR    float64 // local learning rate η_l (reference: 0.05)
	Steps int     // local steps K (reference: 30)
	// ReferenceBug makes the site send its full control variate c_i instead
	// of its change Δc_i. The server always adds the mean of what sites send
	// to its variate, so with this flag the server variate accumulates
	// Σ_rounds mean_k c_i, which is what the authors' code does (golden
	// docs/explanation/paper.md, "SCAFFOLD bug"). Only for reproducing their numbers.
	ReferenceBug bool
}

// PFedMeConfig holds pFedMe's local hyper-parameters (T. Dinh et al. 2020).
type PFedMeConfig struct {
	Lambda     float64 // Moreau-envelope coefficient λ (paper §4.1: 15)
	LRPersonal float64 // step size of the inner personalised problem (reference: 0.01)
	LROuter    float64 // step size of the local-model update (reference: 0.01)
	Steps      int     // inner steps per round (reference: 20)
}

// Local solvers of the L-BFGS methods (SiteConfig.LocalSolver).
const (
	// SolverLBFGS solves the site's problem to LBFGS.GradTol every round
	// (the paper's code). The warm start then has no effect: FedAvg
	// becomes one-shot averaging of local optima and every round repeats
	// the first.
	SolverLBFGS = "lbfgs"
	// SolverGD runs LocalGD.Steps full-batch gradient steps at LocalGD.LR
	// from the model the site was sent: bounded local work that does not
	// reach the local optimum, the regime of McMahan et al.'s FedAvg (E
	// local epochs at a fixed step size), with the same budget as FedProx
	// and SCAFFOLD so that the methods differ only in what they add.
	SolverGD = "gd"
)

// GDConfig is a local gradient-descent budget: Steps full-batch steps of
// size LR.
type GDConfig struct {
	LR    float64
	Steps int
}

// SiteConfig holds every site-side hyper-parameter.
type SiteConfig struct {
	// C is logistic regression's inverse L2 strength (paper Table 3: 1.0).
	C float64
	// LocalSolver selects how LocalOnly, FedAvg, pTopoFL and the robust
	// baselines train: SolverLBFGS ("" means it too) with LBFGS, or
	// SolverGD with LocalGD.
	LocalSolver string
	LBFGS       LBFGSSettings
	LocalGD     GDConfig
	// InitScale scales the seeded normal round-1 coefficients of the
	// gradient-descent baselines (reference: 0.01).
	InitScale       float64
	FedProx         FedProxConfig
	SCAFFOLD        SCAFFOLDConfig
	PFedMe          PFedMeConfig
	TopologyWeights TopologyWeightConfig
	// NoSampleWeights makes pTopoFL's site update an unweighted fit (the
	// method's topo_features "augment": the topology enters through
	// feature columns instead of TopologySampleWeights).
	NoSampleWeights bool
	// DP, when set, makes every local step differentially private
	// (DPGradientDescent): the gradient-descent methods and local solver
	// "gd" run DP-GD, L-BFGS is refused (ErrLBFGSUnderDP), and pTopoFL's
	// topology sample weights, which every row's neighbours shape, are
	// not used (every row weighs 1).
	DP *DPConfig
}

// DefaultSiteConfig returns the paper's and the reference's site-side
// hyper-parameters (paper Table 3 and §4.1; expected.json
// `hyperparameters`), with SCAFFOLD correct.
func DefaultSiteConfig() SiteConfig {
	return SiteConfig{
		C:               1,
		LBFGS:           DefaultLBFGS,
		InitScale:       0.01,
		FedProx:         FedProxConfig{Mu: 0.1, LR: 0.05, Steps: 30},
		SCAFFOLD:        SCAFFOLDConfig{LR: 0.05, Steps: 30},
		PFedMe:          PFedMeConfig{Lambda: 15, LRPersonal: 0.01, LROuter: 0.01, Steps: 20},
		TopologyWeights: DefaultTopologyWeights,
	}
}

// Model returns the model the configuration trains on nFeatures features.
func (c SiteConfig) Model(nFeatures int) Model {
	return Logistic{Features: nFeatures, C: c.C}
}

// SiteState is what a site keeps between rounds. It never leaves the site
// except to be checkpointed; every field is nil until the method sets it.
type SiteState struct {
	// Control is SCAFFOLD's client control variate c_i.
	Control []float64
	// Personal is pFedMe's personalised model θ_i.
	Personal []float64
	// Local is LocalOnly's own fit of last round, its warm start and the
	// model it is evaluated with. Other methods leave it nil: their local
	// model goes to the server and is not needed again at the site.
	Local []float64
}

// SiteInput is everything a site update reads.
type SiteInput struct {
	Method Method
	// Round is the 1-based round number.
	Round int
	// Seed seeds the round-1 parameters of the gradient-descent baselines
	// (reference: method seed + site index). Ignored if Init is set.
	Seed uint32
	// Init, if non-nil, replaces the seeded round-1 parameters.
	Init []float64
	// Train holds the site's standardised training rows (no weights).
	Train Data
	// TopologyX holds the rows pTopoFL's sample weights are computed from:
	// the site's raw training rows, which TopologySampleWeights
	// standardises itself as the reference does. Nil uses Train.X, whose
	// re-standardisation differs from the reference's weights by ~1e-9.
	TopologyX [][]float64
	// Descriptor is the site's 48-number topological descriptor (pTopoFL).
	Descriptor []float64
	// Pushed is the model the server sent after the previous round (nil in
	// round 1).
	Pushed []float64
	// ServerControl is SCAFFOLD's server control variate c (nil means 0).
	ServerControl []float64
	// State is the site's state after the previous round.
	State  SiteState
	Config SiteConfig
}

// SiteOutput is what a site update returns.
type SiteOutput struct {
	// Params is the local model θ_k the site sends to the server.
	Params []float64
	// Control is what a SCAFFOLD site sends about its control variate: the
	// change Δc_i, or the full c_i under SCAFFOLDConfig.ReferenceBug.
	Control []float64
	// N is the number of training rows, n_k in the weighted averages.
	N int
	// SampleWeights are pTopoFL's topology sample weights (kept for audit).
	SampleWeights []float64
	// State is the site's new state.
	State SiteState
}

// UpdateSite runs one round of in.Method's local training. It returns an
// error for invalid data, a vector of the wrong length or an unknown method;
// it never panics on such input.
func UpdateSite(in SiteInput) (SiteOutput, error) {
	if err := in.Train.Validate(); err != nil {
		return SiteOutput{}, fmt.Errorf("site update round %d: %w", in.Round, err)
	}
	m := in.Config.Model(in.Train.NumFeatures())
	np := m.NumParams()
	vectors := []struct {
		name string
		v    []float64
	}{
		{"pushed model", in.Pushed}, {"server control variate", in.ServerControl}, {"init", in.Init},
		{"control variate", in.State.Control}, {"personal model", in.State.Personal}, {"local model", in.State.Local},
	}
	for _, x := range vectors {
		if x.v != nil && len(x.v) != np {
			return SiteOutput{}, fmt.Errorf("site update round %d: %s has %d parameters, model has %d", in.Round, x.name, len(x.v), np)
		}
	}
	var (
		out SiteOutput
		err error
	)
	switch in.Method {
	case LocalOnly:
		out, err = updateLocalOnly(m, in)
	case FedAvg, Median, TrimmedMean, Krum, FoolsGold, NormClip:
		out, err = updateFedAvg(m, in)
	case FedProx:
		out, err = updateFedProx(m, in)
	case SCAFFOLD:
		out, err = updateSCAFFOLD(m, in)
	case PFedMe:
		out, err = updatePFedMe(m, in)
	case PTopoFL:
		out, err = updatePTopoFL(m, in)
	default:
		_, err = ParseMethod(string(in.Method))
	}
	if err != nil {
		return SiteOutput{}, fmt.Errorf("site update round %d (%s): %w", in.Round, in.Method, err)
	}
	out.N = len(in.Train.X)
	return out, nil
}

// EvaluationParams returns the model a site is evaluated with after the
// server push of a round (expected.json `semantics`): its personalised model
// for pFedMe, its own local fit for LocalOnly, and the pushed (global or
// cluster) model otherwise. state is the site's state after the round.
func EvaluationParams(method Method, pushed []float64, state SiteState) []float64 {
	switch method {
	case PFedMe:
		return state.Personal
	case LocalOnly:
		return state.Local
	}
	return pushed
}

// fitLocal is the local training of the L-BFGS methods: L-BFGS to the
// optimum from init (nil: zeros), or, under SolverGD, c.LocalGD.Steps
// gradient steps from init.
func fitLocal(m Model, d Data, init []float64, c SiteConfig) ([]float64, error) {
	switch c.LocalSolver {
	case SolverLBFGS, "":
		if c.DP != nil {
			return nil, ErrLBFGSUnderDP
		}
		return FitLBFGS(m, d, init, c.LBFGS)
	case SolverGD:
		if err := d.Validate(); err != nil {
			return nil, err
		}
		if !(c.LocalGD.LR > 0) || c.LocalGD.Steps < 1 {
			return nil, fmt.Errorf("local gradient descent: lr %v and steps %d, want lr > 0 and steps >= 1", c.LocalGD.LR, c.LocalGD.Steps)
		}
		return c.descend(m, d, init, c.LocalGD.LR, c.LocalGD.Steps, nil)
	}
	return nil, fmt.Errorf("unknown local solver %q; want %q or %q", c.LocalSolver, SolverLBFGS, SolverGD)
}

// lbfgsStart is the warm start of FedAvg-style L-BFGS methods: the pushed
// model; in round 1 zeros for L-BFGS (the reference's cold start) and the
// seeded initial model for gradient descent, as FedProx starts.
func (in SiteInput) lbfgsStart(m Model) []float64 {
	if in.Pushed == nil && in.Config.LocalSolver == SolverGD {
		return in.initial(m)
	}
	return in.Pushed
}

func (in SiteInput) start(m Model) []float64 {
	if in.Pushed != nil {
		return append([]float64(nil), in.Pushed...)
	}
	return in.initial(m)
}

func (in SiteInput) initial(m Model) []float64 {
	if in.Init != nil {
		return append([]float64(nil), in.Init...)
	}
	return InitialParams(m.NumParams()-1, in.Seed, in.Config.InitScale)
}

// updateLocalOnly fits the site's own L-BFGS model and ignores the server
// (the paper's "FedAvg" row; golden README). It warm-starts from its own
// previous fit; at the tight tolerance the optimum does not depend on it.
func updateLocalOnly(m Model, in SiteInput) (SiteOutput, error) {
	start := in.State.Local
	if start == nil && in.Config.LocalSolver == SolverGD {
		start = in.initial(m)
	}
	p, err := fitLocal(m, in.Train, start, in.Config)
	if err != nil {
		return SiteOutput{}, err
	}
	return SiteOutput{Params: p, State: SiteState{Local: p}}, nil
}

// updateFedAvg is FedAvg's local step (McMahan et al. 2017) as the
// reference's FedAvg_true runs it: L-BFGS warm-started from the global model
// (cold in round 1). The robust baselines share it.
func updateFedAvg(m Model, in SiteInput) (SiteOutput, error) {
	p, err := fitLocal(m, in.Train, in.lbfgsStart(m), in.Config)
	if err != nil {
		return SiteOutput{}, err
	}
	return SiteOutput{Params: p}, nil
}

// updateFedProx runs FedProx's local problem min F_k(θ) + μ/2‖θ − θ_g‖²
// (Li et al. 2020, Eq. 2) by Steps full-batch steps from the global model
// θ_g, adding μ(θ − θ_g) to the gradient of weights and intercept. In round
// 1 θ_g is the site's own initial model.
func updateFedProx(m Model, in SiteInput) (SiteOutput, error) {
	c := in.Config.FedProx
	anchor := in.start(m)
	p, err := in.Config.descend(m, in.Train, anchor, c.LR, c.Steps, func(theta, grad []float64) {
		for j := range grad {
			grad[j] += c.Mu * (theta[j] - anchor[j])
		}
	})
	return SiteOutput{Params: p}, err
}

// updateSCAFFOLD runs SCAFFOLD's local steps θ ← θ − η_l(g(θ) − c_i + c)
// from the global model and then option II of Karimireddy et al. (2020,
// Eq. 4): c_i⁺ = c_i − c + (θ_start − θ)/(K·η_l). It sends Δc_i = c_i⁺ − c_i,
// or c_i⁺ itself under ReferenceBug.
func updateSCAFFOLD(m Model, in SiteInput) (SiteOutput, error) {
	c := in.Config.SCAFFOLD
	np := m.NumParams()
	server := in.ServerControl
	if server == nil {
		server = make([]float64, np)
	}
	ci := in.State.Control
	if ci == nil {
		ci = make([]float64, np)
	}
	start := in.start(m)
	p, err := in.Config.descend(m, in.Train, start, c.LR, c.Steps, func(_, grad []float64) {
		for j := range grad {
			grad[j] += server[j] - ci[j]
		}
	})
	if err != nil {
		return SiteOutput{}, err
	}
	next := make([]float64, np)
	delta := make([]float64, np)
	kEta := float64(c.Steps) * c.LR
	for j := range next {
		next[j] = ci[j] + (start[j]-p[j])/kEta - server[j]
		delta[j] = next[j] - ci[j]
	}
	sent := delta
	if c.ReferenceBug {
		sent = append([]float64(nil), next...)
	}
	return SiteOutput{Params: p, Control: sent, State: SiteState{Control: next}}, nil
}

// updatePFedMe runs pFedMe's local round (T. Dinh et al. 2020, Algorithm 1
// with one local round): Steps gradient steps on the personalised problem
// F_i(θ) + λ/2‖θ − w‖² from the previous personal model θ_i (round 1: the
// initial model), with w the pushed global model (round 1: the initial
// model); then the local model moves toward it, w ← w − η·λ(w − θ_i). The
// site sends w and keeps θ_i, which is what it is evaluated with.
func updatePFedMe(m Model, in SiteInput) (SiteOutput, error) {
	c := in.Config.PFedMe
	w := in.start(m)
	theta := in.State.Personal
	if theta == nil {
		theta = in.initial(m)
	}
	theta, err := in.Config.descend(m, in.Train, theta, c.LRPersonal, c.Steps, func(th, grad []float64) {
		for j := range grad {
			grad[j] += c.Lambda * (th[j] - w[j])
		}
	})
	if err != nil {
		return SiteOutput{}, err
	}
	for j := range w {
		w[j] -= c.LROuter * c.Lambda * (w[j] - theta[j])
	}
	return SiteOutput{Params: w, State: SiteState{Personal: theta}}, nil
}

// updatePTopoFL fits pTopoFL's local model (paper §3.2 and Algorithm 1,
// "LocalUpdate"): weighted L2 logistic regression with the topology sample
// weights, L-BFGS warm-started from the site's cluster model (cold in round
// 1).
func updatePTopoFL(m Model, in SiteInput) (SiteOutput, error) {
	if in.Config.DP != nil {
		// Each row's weight depends on every row (the scaler, the centroid,
		// the mean weight), so one row would move every other row's clipped
		// gradient: under DP pTopoFL's site update is FedAvg's, and the
		// method acts through the server's clustering, trust and blending.
		return updateFedAvg(m, in)
	}
	if in.Config.NoSampleWeights {
		// topo_features "augment": the topology enters through the
		// feature columns alone, and the fit is unweighted.
		p, err := fitLocal(m, in.Train, in.lbfgsStart(m), in.Config)
		if err != nil {
			return SiteOutput{}, err
		}
		return SiteOutput{Params: p}, nil
	}
	x := in.TopologyX
	if x == nil {
		x = in.Train.X
	}
	if len(x) != len(in.Train.X) {
		return SiteOutput{}, fmt.Errorf("topology rows: %d rows, training data has %d", len(x), len(in.Train.X))
	}
	w, err := TopologySampleWeights(x, in.Descriptor, in.Config.TopologyWeights)
	if err != nil {
		return SiteOutput{}, err
	}
	d := in.Train
	d.Weights = w
	p, err := fitLocal(m, d, in.lbfgsStart(m), in.Config)
	if err != nil {
		return SiteOutput{}, err
	}
	return SiteOutput{Params: p, SampleWeights: w}, nil
}
