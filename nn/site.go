package nn

import (
	"fmt"

	"github.com/ptopofl/ptopofl/learn"
)

// SiteConfig holds a deep site's hyper-parameters for every method.
type SiteConfig struct {
	// Train is the local optimiser of every method (pFedMe's personal
	// problem included).
	Train TrainConfig
	// ProxMu is FedProx's proximal coefficient μ (Li et al. 2020).
	ProxMu float64
	// PFedMeLambda is pFedMe's Moreau-envelope coefficient λ and
	// PFedMeLR its local-model step size η (T. Dinh et al. 2020).
	PFedMeLambda, PFedMeLR float64
	// PFedMeSteps is pFedMe's K, the gradient steps on the personal
	// problem per minibatch, at PFedMePersonalLR (plain SGD).
	PFedMeSteps      int
	PFedMePersonalLR float64
}

// DefaultSiteConfig returns DefaultTrainConfig with FedProx's μ = 0.01 and
// pFedMe's λ = 15, η = 0.01, K = 5 personal steps at 0.05 (the paper's λ
// and K; μ as Li et al.'s image runs).
func DefaultSiteConfig() SiteConfig {
	return SiteConfig{Train: DefaultTrainConfig(), ProxMu: 0.01, PFedMeLambda: 15, PFedMeLR: 0.01, PFedMeSteps: 5, PFedMePersonalLR: 0.05}
}

// SiteState is what a deep site keeps between rounds; every field is nil
// until its method sets it.
type SiteState struct {
	// Control is SCAFFOLD's client control variate c_i.
	Control []float32
	// Personal is pFedMe's personalised model θ_i.
	Personal []float32
	// Local is LocalOnly's own model.
	Local []float32
}

// SiteInput is everything a deep site update reads.
type SiteInput struct {
	Method learn.Method
	// Round is the 1-based round number (for error messages).
	Round int
	// InitSeed seeds the round-1 parameters (Network.Init) when neither
	// Pushed nor Init is set.
	InitSeed uint64
	// Init, if non-nil, replaces the seeded round-1 parameters.
	Init []float32
	// Train is the site's training data. For pTopoFL, Train.Weights holds
	// the topology sample weights (package learn computes them); they
	// multiply each sample's loss whatever the method.
	Train Data
	// Pushed is the model the server sent after the previous round (nil
	// in round 1).
	Pushed []float32
	// ServerControl is SCAFFOLD's server control variate c (nil means 0).
	ServerControl []float32
	State         SiteState
	Config        SiteConfig
}

// SiteOutput is what a deep site update returns. Its slices are fresh
// copies, not views of the network.
type SiteOutput struct {
	// Params is the local model the site sends to the server.
	Params []float32
	// Control is SCAFFOLD's change of the site's control variate, Δc_i.
	Control []float32
	// N is the number of training samples.
	N int
	// Steps is the number of local optimiser steps (SCAFFOLD's K).
	Steps int
	// MeanLoss is the last local epoch's mean minibatch loss.
	MeanLoss float64
	State    SiteState
}

// UpdateSite runs one round of in.Method's local training on net (whose
// parameters it overwrites; its architecture must match the vectors'
// length). The methods follow package learn's site updates with minibatch
// training in place of full-batch gradient descent:
//
//   - FedAvg, pTopoFL and the robust baselines train from the pushed model.
//   - LocalOnly trains its own model from last round's and ignores the server.
//   - FedProx adds μ(θ − θ_g) to the gradient, θ_g the pushed model.
//   - SCAFFOLD adds c − c_i and then sets c_i⁺ = c_i − c + (θ_start −
//     θ)/(K·η) (Karimireddy et al. 2020, option II), K the number of local
//     steps and η = Train.LR, and sends Δc_i = c_i⁺ − c_i. Option II
//     assumes plain SGD steps; with momentum or Adam it is the usual
//     approximation.
//   - pFedMe trains the personal model θ_i on F_i(θ) + λ/2‖θ − w‖² from its
//     previous value, w the pushed model, then moves the local model
//     w ← w − ηλ(w − θ_i), sends w and keeps θ_i.
//
// In round 1 the pushed model is the seeded initial model.
//
// With Config.Train.DP set, every method trains by DP-SGD (see DPConfig):
// each optimiser step (each of pFedMe's personal steps) uses the noisy sum
// of clipped per-example gradients of a Poisson sample, and the methods'
// own terms, μ(θ − θ_g), c − c_i and λ(θ − w), are added after the noise,
// since they do not depend on the data. What the site sends is then
// post-processing of the noisy trajectory: SCAFFOLD's control variate is a
// function of the start, the end and the public c, c_i; pFedMe's local
// model moves toward the personal model, itself noisy. DPUse gives the
// round's releases for the accountant.
//
// It returns an error for invalid data, a vector of the wrong length or an
// unknown method.
func UpdateSite(net *Network, in SiteInput) (SiteOutput, error) {
	out, err := updateSite(net, in)
	if err != nil {
		return SiteOutput{}, fmt.Errorf("deep site update round %d (%s): %w", in.Round, in.Method, err)
	}
	return out, nil
}

func updateSite(net *Network, in SiteInput) (SiteOutput, error) {
	np := net.NumParams()
	for _, v := range []struct {
		name string
		x    []float32
	}{
		{"pushed model", in.Pushed}, {"server control variate", in.ServerControl}, {"init", in.Init},
		{"control variate", in.State.Control}, {"personal model", in.State.Personal}, {"local model", in.State.Local},
	} {
		if v.x != nil && len(v.x) != np {
			return SiteOutput{}, fmt.Errorf("%s has %d parameters, network has %d", v.name, len(v.x), np)
		}
	}
	cfg := in.Config
	initial := func() []float32 {
		if in.Init != nil {
			return clone(in.Init)
		}
		net.Init(in.InitSeed)
		return clone(net.params)
	}
	start := in.Pushed
	if start == nil {
		start = initial()
	}
	train := func(from []float32, terms Terms) (TrainResult, error) {
		copy(net.params, from)
		return Train(net, in.Train, cfg.Train, terms)
	}
	out := SiteOutput{N: in.Train.N}
	var (
		res TrainResult
		err error
	)
	switch in.Method {
	case learn.FedAvg, learn.PTopoFL, learn.Median, learn.TrimmedMean, learn.Krum, learn.FoolsGold, learn.NormClip:
		// The robust aggregators differ only at the server: each site trains
		// from the model it was sent, as under FedAvg.
		res, err = train(start, Terms{})
		out.Params = clone(net.params)
	case learn.LocalOnly:
		from := in.State.Local
		if from == nil {
			from = initial()
		}
		res, err = train(from, Terms{})
		out.Params = clone(net.params)
		out.State.Local = clone(net.params)
	case learn.FedProx:
		res, err = train(start, Terms{ProxMu: cfg.ProxMu, ProxCenter: start})
		out.Params = clone(net.params)
	case learn.SCAFFOLD:
		server, ci := in.ServerControl, in.State.Control
		if server == nil {
			server = make([]float32, np)
		}
		if ci == nil {
			ci = make([]float32, np)
		}
		corr := make([]float32, np)
		for j := range corr {
			corr[j] = server[j] - ci[j]
		}
		res, err = train(start, Terms{Correction: corr})
		if err != nil {
			break
		}
		out.Params = clone(net.params)
		next := make([]float32, np)
		delta := make([]float32, np)
		kEta := scaffoldStepSum(res.Steps, cfg.Train)
		for j := range next {
			next[j] = float32(float64(ci[j]) - float64(server[j]) + float64(start[j]-out.Params[j])/kEta)
			delta[j] = next[j] - ci[j]
		}
		out.Control = delta
		out.State.Control = next
	case learn.PFedMe:
		theta := in.State.Personal
		if theta == nil {
			theta = initial()
		}
		w := clone(start)
		copy(net.params, theta)
		res, err = trainPFedMe(net, in.Train, w, cfg)
		out.Params = w
		out.State.Personal = clone(net.params)
	default:
		if _, err = learn.ParseMethod(string(in.Method)); err == nil {
			err = fmt.Errorf("method %s has no deep site update", in.Method)
		}
	}
	if err != nil {
		return SiteOutput{}, err
	}
	out.Steps, out.MeanLoss = res.Steps, res.MeanLoss
	return out, nil
}

// trainPFedMe runs pFedMe's local round (T. Dinh et al. 2020, Algorithm 1)
// on net, which holds the personal model θ_i: for every minibatch of
// cfg.Train's epochs (the local iterations R), K = PFedMeSteps plain SGD
// steps at PFedMePersonalLR on the personal problem f_i(θ; batch) +
// λ/2‖θ − w‖², then the local model moves toward θ, w ← w − ηλ(w − θ). w
// is updated in place; net ends holding θ_i. Steps counts the minibatches.
// Under DP-SGD the minibatches are Poisson samples and each of the K steps
// takes the noisy clipped sum of the same sample (K releases of one
// sample: L2 sensitivity √K·C together, so one subsampled Gaussian
// mechanism of noise multiplier z/√K per batch, as DPUse reports).
func trainPFedMe(net *Network, d Data, w []float32, cfg SiteConfig) (TrainResult, error) {
	if cfg.PFedMeSteps < 1 || !(cfg.PFedMePersonalLR > 0) {
		return TrainResult{}, fmt.Errorf("nn: pFedMe needs K ≥ 1 personal steps at a positive rate, got %d at %v", cfg.PFedMeSteps, cfg.PFedMePersonalLR)
	}
	inner := TrainConfig{Optimizer: SGD, LR: cfg.PFedMePersonalLR, Epochs: 1, BatchSize: cfg.Train.BatchSize, DP: cfg.Train.DP}
	tr, err := NewTrainer(net, inner, Terms{ProxMu: cfg.PFedMeLambda, ProxCenter: w})
	if err != nil {
		return TrainResult{}, err
	}
	tr.t.expectBatch(cfg.Train.BatchSize, d.N)
	step := float32(cfg.PFedMeLR * cfg.PFedMeLambda)
	return eachBatch(net, d, cfg.Train, func(x []float32, labels []int, weights []float32) float64 {
		var loss float64
		for range cfg.PFedMeSteps {
			loss = tr.Step(x, labels, weights)
		}
		for j, th := range net.params {
			w[j] -= step * (w[j] - th)
		}
		return loss
	})
}

// scaffoldStepSum is the K·η by which SCAFFOLD's option II divides a
// site's displacement θ_start − θ to estimate its mean gradient
// (Karimireddy et al. 2020, Eq. 4, derived for plain SGD). Under a
// constant gradient g, K steps of heavy-ball SGD (PyTorch's form, the
// buffer starting at zero each round) move η·g·Σ_{t=1..K} (1−μ^t)/(1−μ),
// so that sum replaces K; with μ = 0.9 and 19 steps it is 5.9 times K,
// and dividing by K·η alone inflates the control variates until the
// models diverge (seen on Fashion-MNIST at α = 0.1 under deep-small).
// Adam's step is about η per step whatever the gradient, so K·η is kept.
func scaffoldStepSum(steps int, c TrainConfig) float64 {
	if c.Optimizer == Adam || c.Momentum == 0 {
		return float64(steps) * c.LR
	}
	sum, pow := 0.0, 1.0
	for range steps {
		pow *= c.Momentum
		sum += (1 - pow) / (1 - c.Momentum)
	}
	return sum * c.LR
}

// EvaluationParams returns the model a deep site is evaluated with, as
// learn.EvaluationParams: the personal model for pFedMe, the own model for
// LocalOnly, the pushed model otherwise.
func EvaluationParams(method learn.Method, pushed []float32, state SiteState) []float32 {
	switch method {
	case learn.PFedMe:
		return state.Personal
	case learn.LocalOnly:
		return state.Local
	}
	return pushed
}

func clone(x []float32) []float32 { return append([]float32(nil), x...) }
