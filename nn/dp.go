package nn

import (
	"fmt"
	"math"

	"github.com/ptopofl/ptopofl/learn"
)

// DPRandom is a site's secret source of randomness for DP-SGD. Both its
// Poisson sampling and its noise must be unpredictable to anyone who sees
// the released models, so it is the caller's (a cryptographically seeded
// stream), never one of this package's PCG generators.
type DPRandom interface {
	// Float64 returns a uniform number in [0, 1) from the site's secret
	// stream; it draws the Poisson samples.
	Float64() float64
	// Perturb32 applies the Gaussian mechanism to the sum v in place,
	// v ← v + N(0, (z·sensitivity)²·I), with whatever rounding or
	// snapping the implementation does to resist floating-point attacks
	// (Mironov 2012, "On significance of the least significant bits for
	// differential privacy").
	Perturb32(v []float32, sensitivity, z float64)
}

// DPConfig configures DP-SGD (Abadi et al. 2016, "Deep learning with
// differential privacy", Algorithm 1) with Poisson sampling: each step
// includes every one of the N training examples independently with
// probability q = BatchSize/N (1 when BatchSize ≥ N), clips each included
// example's gradient of its data loss to L2 norm Clip over the whole
// parameter vector, adds Gaussian noise of standard deviation
// NoiseMultiplier·Clip to their sum and divides by the expected sample
// size q·N. Data-independent gradient terms (weight decay, FedProx's and
// pFedMe's proximal terms, SCAFFOLD's correction) are added after the
// noise, and the optimiser (momentum, Adam) post-processes the noisy
// gradient, so neither changes the guarantee. DPUse gives the figures an
// accountant composes.
//
// Per-example sample weights (Data.Weights, pTopoFL's) multiply each
// example's loss before clipping; the guarantee treats them as public
// constants, so weights computed from the training data need their own
// accounting. The reported losses (TrainResult.MeanLoss, Trainer.Step's
// result) are computed from the data without noise and are not covered.
type DPConfig struct {
	// Clip is C: every example's gradient is clipped to L2 norm at most C.
	Clip float64
	// NoiseMultiplier is z: noise of standard deviation z·C is added to the
	// sum of the clipped gradients at each step.
	NoiseMultiplier float64
	// Random is the site's secret stream for the sampling and the noise.
	Random DPRandom
}

// Validate returns an error naming the first invalid field.
func (c DPConfig) Validate() error {
	switch {
	case !(c.Clip > 0) || math.IsInf(c.Clip, 1):
		return fmt.Errorf("nn: DP.Clip %v: want a finite positive clipping norm", c.Clip)
	case !(c.NoiseMultiplier >= 0) || math.IsInf(c.NoiseMultiplier, 1):
		return fmt.Errorf("nn: DP.NoiseMultiplier %v: want a finite non-negative number", c.NoiseMultiplier)
	case c.Random == nil:
		return fmt.Errorf("nn: DP.Random is nil: DP-SGD needs the site's secret random stream")
	}
	return nil
}

// DPUse returns what one round of a deep site's DP-SGD under method and
// cfg on n training examples releases, for the caller's privacy accountant
// (e.g. the Rényi accountant of the sampled Gaussian mechanism, Mironov,
// Talwar and Zhang 2019): steps releases, each a Poisson-subsampled
// Gaussian mechanism with sampling rate q and noise multiplier z relative
// to the L2 sensitivity of one example.
//
// Every method takes cfg.Train.Epochs·⌈n/min(BatchSize, n)⌉ steps at
// q = min(BatchSize, n)/n with z = NoiseMultiplier, except pFedMe: its K =
// PFedMeSteps personal steps per batch each release a noisy clipped sum
// of the same Poisson sample, and the K sums together have L2 sensitivity
// √K·C under noise z·C in each, so a batch is one subsampled Gaussian
// release with noise multiplier z/√K. The later steps of one batch are
// adaptive (each starts where the previous noisy step ended), which the
// composition of Gaussian mechanisms covers.
//
// z is 0 (no privacy) when cfg.Train.DP is nil; q and steps are 0 when n,
// BatchSize or Epochs is below 1.
func DPUse(method learn.Method, cfg SiteConfig, n int) (q float64, steps int, z float64) {
	tc := cfg.Train
	if n < 1 || tc.BatchSize < 1 || tc.Epochs < 1 {
		return 0, 0, 0
	}
	bs := min(tc.BatchSize, n)
	q = float64(bs) / float64(n)
	steps = tc.Epochs * ((n + bs - 1) / bs)
	if tc.DP != nil {
		z = tc.DP.NoiseMultiplier
	}
	if method == learn.PFedMe && cfg.PFedMeSteps > 1 {
		z /= math.Sqrt(float64(cfg.PFedMeSteps))
	}
	return q, steps, z
}

// dpStep is a trainer's DP-SGD state.
type dpStep struct {
	cfg DPConfig
	// expected is the expected sample size q·N by which the noisy sum is
	// divided: Abadi et al. (2016, §3.1) form each lot by sampling every
	// example with probability q = L/N and normalise by L, not by the
	// realised size, which would depend on the data set's size through
	// the sample and is not itself noised.
	expected float64
	clip     dpClip
}

func newDPStep(cfg DPConfig, batchSize int) *dpStep {
	return &dpStep{cfg: cfg, expected: float64(batchSize), clip: dpClip{storeBytes: convStoreBytes}}
}

// expectBatch sets the expected Poisson sample size of a DP trainer to
// q·N = min(batchSize, n) for training on n examples; it does nothing for
// the plain trainer.
func (t *trainer) expectBatch(batchSize, n int) {
	if t.dp != nil {
		t.dp.expected = float64(max(1, min(batchSize, n)))
	}
}

// stepDP takes one DP-SGD step on the Poisson sample (x, labels, weights),
// which may be empty: the clipped sum of the per-example gradients of the
// data loss, the noise, the division by the expected sample size, then
// the terms and the optimiser step (update). It returns the sample's mean
// data loss (0 for an empty sample).
func (t *trainer) stepDP(x []float32, labels []int, weights []float32) float64 {
	net, dp := t.net, t.dp
	var loss float64
	if b := len(labels); b > 0 {
		t.dLogits = grow(t.dLogits, b*net.cfg.Classes)
		loss = dp.clip.clippedSum(net, x, labels, weights, t.dLogits, dp.cfg.Clip) / float64(b)
	} else {
		clear(net.grad)
	}
	dp.cfg.Random.Perturb32(net.grad, dp.cfg.Clip, dp.cfg.NoiseMultiplier)
	g := net.grad
	div := float32(dp.expected)
	parallelFor(net.workers, (len(g)+stepChunk-1)/stepChunk, func(clo, chi int) {
		for j := clo * stepChunk; j < min(chi*stepChunk, len(g)); j++ {
			g[j] /= div
		}
	})
	t.update()
	return loss
}

// eachPoissonBatch is eachBatch for DP-SGD: each epoch takes as many steps
// as the plain trainer has minibatches, ⌈N/min(BatchSize, N)⌉, and each
// step's sample includes every example independently with probability
// q = min(BatchSize, N)/N, one cfg.DP.Random.Float64 draw per example in
// example order (so the samples depend on the stream alone). MeanLoss is
// the mean data loss over the examples sampled in the last epoch (0 if
// none was).
func eachPoissonBatch(net *Network, d Data, cfg TrainConfig, step func(x []float32, labels []int, weights []float32) float64) (TrainResult, error) {
	rnd := cfg.DP.Random
	size := net.InputSize()
	bs := min(cfg.BatchSize, d.N)
	q := float64(bs) / float64(d.N)
	perEpoch := (d.N + bs - 1) / bs
	var (
		sample []int
		xb     []float32
		yb     []int
		wb     []float32
		res    TrainResult
	)
	for range cfg.Epochs {
		var sum float64
		count := 0
		for range perEpoch {
			sample = sample[:0]
			for i := range d.N {
				if rnd.Float64() < q {
					sample = append(sample, i)
				}
			}
			b := len(sample)
			xb = grow(xb, b*size)
			yb = yb[:0]
			wb = wb[:0]
			for i, s := range sample {
				copy(xb[i*size:(i+1)*size], d.X[s*size:(s+1)*size])
				yb = append(yb, d.Labels[s])
				if d.Weights != nil {
					wb = append(wb, d.Weights[s])
				}
			}
			var w []float32
			if d.Weights != nil {
				w = wb
			}
			loss := step(xb, yb, w)
			sum += loss * float64(b)
			count += b
			res.Steps++
		}
		res.MeanLoss = 0
		if count > 0 {
			res.MeanLoss = sum / float64(count)
		}
	}
	return res, nil
}
