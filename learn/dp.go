package learn

import (
	"errors"
	"fmt"
	"math"
)

// DPRandom is the randomness of differentially private training: the
// Gaussian mechanism applied in place to a sum of clipped gradients
// (package privacy/noise's Stream implements it from the site's secret).
type DPRandom interface {
	// Gaussian adds N(0, (z·sensitivity)²) noise to every coordinate of v
	// (with whatever rounding the implementation needs to keep its
	// floating-point output from leaking v).
	Gaussian(v []float64, sensitivity, z float64)
}

// DPConfig makes a site's local training differentially private at the
// record level: full-batch DP gradient descent (DP-GD; Abadi et al. 2016
// with sampling rate q = 1, Song, Chaudhuri & Sarwate 2013).
type DPConfig struct {
	// Clip is C: each row's gradient of its own loss is clipped to L2
	// norm ≤ C before the gradients are summed.
	Clip float64
	// NoiseMultiplier is z: each step adds N(0, (z·C)²) to every
	// coordinate of the sum of clipped gradients.
	NoiseMultiplier float64
	// Random draws the noise.
	Random DPRandom
}

// Validate names the first bad field.
func (c *DPConfig) Validate() error {
	switch {
	case !(c.Clip > 0) || math.IsInf(c.Clip, 1):
		return fmt.Errorf("dp: clip %v: must be > 0", c.Clip)
	case !(c.NoiseMultiplier > 0) || math.IsInf(c.NoiseMultiplier, 1):
		return fmt.Errorf("dp: noise multiplier %v: must be > 0", c.NoiseMultiplier)
	case c.Random == nil:
		return errors.New("dp: no source of noise")
	}
	return nil
}

// ErrLBFGSUnderDP is returned when an L-BFGS local fit is asked for under
// differential privacy: L-BFGS solves the site's problem to its optimum
// from exact gradients and has no per-step noise to account, so it is
// refused rather than silently replaced (local_solver "gd" runs DP-GD).
var ErrLBFGSUnderDP = errors.New(`local solver "lbfgs" is not differentially private; use "gd" (DP gradient descent)`)

// PerExample is a model that can sum its rows' clipped gradients, which
// differentially private training needs.
type PerExample interface {
	Model
	// ClippedLossGradientSum writes into sum Σ_i clip_C(∇ℓ_i), the sum
	// over the rows of d of each row's gradient of its own weighted data
	// loss (no regularisation), each scaled to L2 norm at most clip.
	ClippedLossGradientSum(params []float64, d Data, clip float64, sum []float64)
	// RegularizerGradient writes the gradient of the data-independent
	// part of the objective (the penalty) divided by n rows into grad.
	RegularizerGradient(params []float64, n int, grad []float64)
}

// ClippedLossGradientSum sums, over the rows, the gradient of row i's
// weighted log-loss with respect to (w, b), r_i·(x_i, 1) with
// r_i = w_i(σ(x_i·w + b) − y_i) (σ the clipped Sigmoid, as MeanGradient),
// each first scaled by min(1, clip/‖r_i·(x_i, 1)‖₂). The sum's L2
// sensitivity to one row is therefore at most clip.
func (m Logistic) ClippedLossGradientSum(params []float64, d Data, clip float64, sum []float64) {
	nf := m.Features
	for j := range sum {
		sum[j] = 0
	}
	for i, x := range d.X {
		r := Sigmoid(m.logit(params, x)) - d.Y[i]
		if d.Weights != nil {
			r *= d.Weights[i]
		}
		sq := 1.0
		for _, v := range x {
			sq += v * v
		}
		norm := math.Abs(r) * math.Sqrt(sq)
		if norm > clip {
			r *= clip / norm
		}
		for j, v := range x {
			sum[j] += r * v
		}
		sum[nf] += r
	}
}

// RegularizerGradient writes w/(C·n) for the coefficients and 0 for the
// intercept: MeanGradient's penalty term, which depends on no row.
func (m Logistic) RegularizerGradient(params []float64, n int, grad []float64) {
	nf := m.Features
	for j := 0; j < nf; j++ {
		grad[j] = params[j] / (m.C * float64(n))
	}
	grad[nf] = 0
}

// DPGradientDescent is GradientDescent under differential privacy: each of
// the steps takes
//
//	g = (Σ_i clip_C(∇ℓ_i) + N(0, (zC)²I))/n + ∇penalty/n + extra(θ),
//	θ ← θ − lr·g,
//
// with n the number of rows (public) and the noise drawn by dp.Random.
// Each step is a Gaussian mechanism of L2 sensitivity C on the clipped
// sum (adding or removing — zeroing — one row moves it by at most C), so
// steps steps compose to μ = √steps / z in Gaussian DP (Dong, Roth & Su
// 2019); the penalty and extra (FedProx's pull, SCAFFOLD's correction,
// pFedMe's Moreau term) read no row and are post-processing.
func DPGradientDescent(m Model, d Data, init []float64, lr float64, steps int, extra GDStep, dp *DPConfig) ([]float64, error) {
	if err := dp.Validate(); err != nil {
		return nil, err
	}
	pe, ok := m.(PerExample)
	if !ok {
		return nil, fmt.Errorf("dp: model %T cannot clip per-row gradients", m)
	}
	theta := append([]float64(nil), init...)
	sum := make([]float64, len(theta))
	reg := make([]float64, len(theta))
	n := float64(len(d.X))
	for s := 0; s < steps; s++ {
		pe.ClippedLossGradientSum(theta, d, dp.Clip, sum)
		dp.Random.Gaussian(sum, dp.Clip, dp.NoiseMultiplier)
		pe.RegularizerGradient(theta, len(d.X), reg)
		for j := range sum {
			sum[j] = sum[j]/n + reg[j]
		}
		if extra != nil {
			extra(theta, sum)
		}
		for j := range theta {
			theta[j] -= lr * sum[j]
		}
	}
	return theta, nil
}

// descend runs steps gradient steps of the site's local problem: plain
// GradientDescent, or DPGradientDescent when the configuration asks for
// differential privacy.
func (c SiteConfig) descend(m Model, d Data, init []float64, lr float64, steps int, extra GDStep) ([]float64, error) {
	if c.DP != nil {
		return DPGradientDescent(m, d, init, lr, steps, extra, c.DP)
	}
	return GradientDescent(m, d, init, lr, steps, extra), nil
}

// DPReleases returns how many noisy gradient sums one round of method m's
// site update releases into its trajectory under c: the local steps of
// FedProx, SCAFFOLD and of the L-BFGS methods under local_solver "gd";
// pFedMe's personal steps (its local-model step reads no row). Each is one
// Gaussian mechanism with sensitivity c.DP.Clip and noise multiplier
// c.DP.NoiseMultiplier.
func DPReleases(m Method, c SiteConfig) int {
	switch m {
	case FedProx:
		return c.FedProx.Steps
	case SCAFFOLD:
		return c.SCAFFOLD.Steps
	case PFedMe:
		return c.PFedMe.Steps
	}
	return c.LocalGD.Steps
}
