package nn

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// Optimizer names a local optimiser.
type Optimizer string

// The optimisers Train runs.
const (
	// SGD is minibatch stochastic gradient descent with heavy-ball
	// momentum in PyTorch's form: v ← μv + g, θ ← θ − η v.
	SGD Optimizer = "sgd"
	// Adam is Kingma and Ba (2015), Algorithm 1, with bias correction.
	Adam Optimizer = "adam"
)

// TrainConfig holds the local optimiser's hyper-parameters.
type TrainConfig struct {
	Optimizer Optimizer
	// LR is the learning rate η.
	LR float64
	// Momentum is SGD's momentum μ (0 for plain SGD).
	Momentum float64
	// Beta1, Beta2 and Epsilon are Adam's; zero values select 0.9, 0.999
	// and 1e-8.
	Beta1, Beta2, Epsilon float64
	// WeightDecay adds WeightDecay·θ to the gradient (L2 regularisation,
	// PyTorch's weight_decay for both optimisers).
	WeightDecay float64
	// Epochs is the number of passes over the data.
	Epochs int
	// BatchSize is the minibatch size; the last minibatch of an epoch holds
	// the remainder.
	BatchSize int
	// Seed seeds the minibatch order (a PCG generator, reshuffled every
	// epoch). Derive it from the campaign seed, round and site. DP-SGD
	// does not use it: its batches are Poisson samples drawn from
	// DP.Random.
	Seed uint64
	// DP, if not nil, trains by DP-SGD (Abadi et al. 2016) with Poisson
	// sampling, per-example clipping and Gaussian noise (see DPConfig);
	// nil is the plain minibatch trainer. It holds the site's live secret
	// random stream, so it is never serialised: a site builds it.
	DP *DPConfig `json:"-"`
}

// DefaultTrainConfig returns SGD with momentum 0.9, learning rate 0.01,
// one epoch of minibatches of 64 and no weight decay.
func DefaultTrainConfig() TrainConfig {
	return TrainConfig{Optimizer: SGD, LR: 0.01, Momentum: 0.9, Epochs: 1, BatchSize: 64}
}

func (c TrainConfig) withDefaults() TrainConfig {
	if c.Beta1 == 0 {
		c.Beta1 = 0.9
	}
	if c.Beta2 == 0 {
		c.Beta2 = 0.999
	}
	if c.Epsilon == 0 {
		c.Epsilon = 1e-8
	}
	return c
}

// Validate returns an error naming the first invalid field.
func (c TrainConfig) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Optimizer != SGD && c.Optimizer != Adam:
		return fmt.Errorf("nn: unknown optimizer %q; want %q or %q", c.Optimizer, SGD, Adam)
	case !(c.LR > 0) || math.IsInf(c.LR, 0):
		return fmt.Errorf("nn: learning rate %v: want a finite positive number", c.LR)
	case !(c.Momentum >= 0 && c.Momentum < 1):
		return fmt.Errorf("nn: momentum %v: want a number in [0, 1)", c.Momentum)
	case !(c.Beta1 >= 0 && c.Beta1 < 1) || !(c.Beta2 >= 0 && c.Beta2 < 1):
		return fmt.Errorf("nn: Adam betas %v, %v: want numbers in [0, 1)", c.Beta1, c.Beta2)
	case !(c.Epsilon > 0):
		return fmt.Errorf("nn: Adam epsilon %v: want a positive number", c.Epsilon)
	case !(c.WeightDecay >= 0) || math.IsInf(c.WeightDecay, 0):
		return fmt.Errorf("nn: weight decay %v: want a finite non-negative number", c.WeightDecay)
	case c.Epochs < 1:
		return fmt.Errorf("nn: %d epochs: want at least 1", c.Epochs)
	case c.BatchSize < 1:
		return fmt.Errorf("nn: batch size %d: want at least 1", c.BatchSize)
	}
	if c.DP != nil {
		return c.DP.Validate()
	}
	return nil
}

// Terms are the federated methods' additions to the local gradient,
//
//	g ← ∇L(θ) + WeightDecay·θ + ProxMu·(θ − ProxCenter) + Correction,
//
// which is FedProx's proximal term (μ(θ − θ_global)), pFedMe's Moreau
// envelope (λ(θ − w)) and SCAFFOLD's control-variate correction (c − c_i).
// Nil slices add nothing.
type Terms struct {
	ProxMu     float64
	ProxCenter []float32
	Correction []float32
}

func (terms Terms) check(np int) error {
	for _, v := range []struct {
		name string
		x    []float32
	}{{"proximal center", terms.ProxCenter}, {"correction", terms.Correction}} {
		if v.x != nil && len(v.x) != np {
			return fmt.Errorf("nn: %s has %d values, network has %d parameters", v.name, len(v.x), np)
		}
	}
	if terms.ProxMu != 0 && terms.ProxCenter == nil {
		return errors.New("nn: proximal coefficient without a proximal center")
	}
	return nil
}

// TrainResult reports a training run.
type TrainResult struct {
	// Steps is the number of optimiser steps taken (K in SCAFFOLD).
	Steps int
	// MeanLoss is the mean of the minibatch losses of the last epoch
	// (without the Terms).
	MeanLoss float64
}

// Train runs cfg.Epochs epochs of minibatch training of net's parameters
// on d, in place, with the gradient additions of terms. The optimiser's
// state (momentum, Adam moments) starts at zero. The result depends only
// on net's parameters, d, cfg and terms, never on the number of threads.
// It returns an error for invalid data or configuration.
func Train(net *Network, d Data, cfg TrainConfig, terms Terms) (TrainResult, error) {
	if err := privateArch(net, cfg); err != nil {
		return TrainResult{}, err
	}
	if err := cfg.Validate(); err != nil {
		return TrainResult{}, err
	}
	if err := terms.check(net.NumParams()); err != nil {
		return TrainResult{}, err
	}
	t := newTrainer(net, cfg.withDefaults(), terms)
	t.expectBatch(cfg.BatchSize, d.N)
	return eachBatch(net, d, cfg, t.step)
}

// privateArch refuses DP-SGD for TopoNN: its input carries the batch's
// descriptor, a function of every sample of the batch, so one sample moves
// the others' gradients and clipping each sample's gradient does not bound
// its influence.
func privateArch(net *Network, cfg TrainConfig) error {
	if cfg.DP != nil && net.cfg.Arch == TopoNN {
		return errors.New("nn: toponn cannot train under DP: each sample's input holds the batch's descriptor, so per-example clipping does not bound one sample's influence")
	}
	return nil
}

// eachBatch calls step on every minibatch of cfg.Epochs epochs of d, the
// samples shuffled each epoch by a PCG generator seeded with cfg.Seed, and
// returns the number of minibatches and the mean step result (a loss) of
// the last epoch. Train takes one optimiser step per minibatch; pFedMe
// takes several, then moves its local model.
func eachBatch(net *Network, d Data, cfg TrainConfig, step func(x []float32, labels []int, weights []float32) float64) (TrainResult, error) {
	if err := cfg.Validate(); err != nil {
		return TrainResult{}, err
	}
	cfg = cfg.withDefaults()
	if err := d.Validate(net.cfg.Input, net.cfg.Classes); err != nil {
		return TrainResult{}, err
	}
	if d.Labels == nil {
		return TrainResult{}, errors.New("nn: training data has no labels")
	}
	if cfg.DP != nil {
		return eachPoissonBatch(net, d, cfg, step)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6e6e2d73687566)) // "nn-shuf"
	order := make([]int, d.N)
	for i := range order {
		order[i] = i
	}
	size := net.InputSize()
	bs := min(cfg.BatchSize, d.N)
	xb := make([]float32, bs*size)
	yb := make([]int, bs)
	var wb []float32
	if d.Weights != nil {
		wb = make([]float32, bs)
	}
	var res TrainResult
	for range cfg.Epochs {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		var sum float64
		batches := 0
		for lo := 0; lo < d.N; lo += bs {
			b := min(bs, d.N-lo)
			for i, s := range order[lo : lo+b] {
				copy(xb[i*size:(i+1)*size], d.X[s*size:(s+1)*size])
				yb[i] = d.Labels[s]
				if wb != nil {
					wb[i] = d.Weights[s]
				}
			}
			var w []float32
			if wb != nil {
				w = wb[:b]
			}
			sum += step(xb[:b*size], yb[:b], w)
			batches++
			res.Steps++
		}
		res.MeanLoss = sum / float64(batches)
	}
	return res, nil
}

// Trainer takes optimiser steps on one network, keeping the optimiser's
// state (momentum, Adam's moments) between steps. Train uses one per call;
// a benchmark or a caller with its own batching can use one directly.
type Trainer struct {
	t *trainer
}

// NewTrainer returns a Trainer of net with zero optimiser state. It returns
// an error for an invalid configuration or terms of the wrong length.
func NewTrainer(net *Network, cfg TrainConfig, terms Terms) (*Trainer, error) {
	if err := privateArch(net, cfg); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := terms.check(net.NumParams()); err != nil {
		return nil, err
	}
	return &Trainer{newTrainer(net, cfg.withDefaults(), terms)}, nil
}

// Step runs forward and backward on one minibatch (len(labels) samples of
// x, optional loss weights) and takes one optimiser step. It returns the
// minibatch loss. Labels must lie in [0, Classes): Data.Validate checks
// them. Under DP the minibatch is taken as the step's Poisson sample (it
// may be empty) and the noisy clipped sum is divided by BatchSize, the
// expected sample size; drawing the sample is the caller's business.
func (t *Trainer) Step(x []float32, labels []int, weights []float32) float64 {
	return t.t.step(x, labels, weights)
}

// trainer applies optimiser steps to a network's slab.
type trainer struct {
	net     *Network
	cfg     TrainConfig
	terms   Terms
	m, v    []float32 // SGD velocity or Adam's first moment; Adam's second moment
	t       int       // steps taken
	dLogits []float32
	dp      *dpStep // DP-SGD's state; nil for the plain trainer
}

func newTrainer(net *Network, cfg TrainConfig, terms Terms) *trainer {
	t := &trainer{net: net, cfg: cfg, terms: terms}
	if cfg.Optimizer == Adam || cfg.Momentum != 0 {
		t.m = make([]float32, net.NumParams())
	}
	if cfg.Optimizer == Adam {
		t.v = make([]float32, net.NumParams())
	}
	if cfg.DP != nil {
		t.dp = newDPStep(*cfg.DP, cfg.BatchSize)
	}
	return t
}

// stepChunk is the number of parameters one goroutine updates at a time:
// the update is elementwise, so the split does not change the result.
const stepChunk = 1 << 16

// step computes the minibatch gradient, adds the terms and takes one
// optimiser step; it returns the minibatch loss.
func (t *trainer) step(x []float32, labels []int, weights []float32) float64 {
	if t.dp != nil {
		return t.stepDP(x, labels, weights)
	}
	b, k := len(labels), t.net.cfg.Classes
	t.dLogits = grow(t.dLogits, b*k)
	logits := t.net.Forward(x, b)
	loss := SoftmaxCrossEntropy(logits, k, labels, weights, t.dLogits)
	t.net.Backward(t.dLogits)
	t.update()
	return loss
}

// update adds the terms to the network's gradient and takes one optimiser
// step.
func (t *trainer) update() {
	t.t++
	p, g := t.net.params, t.net.grad
	lr := float32(t.cfg.LR)
	wd := float32(t.cfg.WeightDecay)
	mu := float32(t.terms.ProxMu)
	center, corr := t.terms.ProxCenter, t.terms.Correction
	chunks := (len(p) + stepChunk - 1) / stepChunk
	var bc1, bc2 float32
	if t.cfg.Optimizer == Adam {
		bc1 = float32(1 - math.Pow(t.cfg.Beta1, float64(t.t)))
		bc2 = float32(1 - math.Pow(t.cfg.Beta2, float64(t.t)))
	}
	parallelFor(t.net.workers, chunks, func(clo, chi int) {
		lo, hi := clo*stepChunk, min(chi*stepChunk, len(p))
		ps, gs := p[lo:hi], g[lo:hi]
		if wd != 0 {
			for i, x := range ps {
				gs[i] += wd * x
			}
		}
		if mu != 0 {
			for i, c := range center[lo:hi] {
				gs[i] += mu * (ps[i] - c)
			}
		}
		if corr != nil {
			for i, c := range corr[lo:hi] {
				gs[i] += c
			}
		}
		switch {
		case t.cfg.Optimizer == Adam:
			b1, b2 := float32(t.cfg.Beta1), float32(t.cfg.Beta2)
			eps := float32(t.cfg.Epsilon)
			ms, vs := t.m[lo:hi], t.v[lo:hi]
			for i, gi := range gs {
				ms[i] = b1*ms[i] + (1-b1)*gi
				vs[i] = b2*vs[i] + (1-b2)*gi*gi
				ps[i] -= lr * (ms[i] / bc1) / (float32(math.Sqrt(float64(vs[i]/bc2))) + eps)
			}
		case t.m != nil:
			mom := float32(t.cfg.Momentum)
			ms := t.m[lo:hi]
			for i, gi := range gs {
				ms[i] = mom*ms[i] + gi
				ps[i] -= lr * ms[i]
			}
		default:
			for i, gi := range gs {
				ps[i] -= lr * gi
			}
		}
	})
}
