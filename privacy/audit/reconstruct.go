package audit

import (
	"fmt"
	"math"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/privacy"
	"github.com/ptopofl/ptopofl/privacy/noise"
)

// ReconstructionConfig configures Reconstruct. Zero fields take the
// defaults named on them.
type ReconstructionConfig struct {
	// X and Y are the records to reconstruct: raw feature rows (all of the
	// same length) and 0/1 labels. Each is the whole data of its own
	// one-record site.
	X [][]float64
	Y []float64
	// LR is the site's step size (default 0.05, the repository's lr).
	LR float64
	// C is the logistic model's inverse penalty strength (default 1;
	// +Inf for no penalty). The attacker knows it.
	C float64
	// InitScale scales θ0's normal coefficients (default 0.01, the
	// repository's init scale); θ0's intercept is 0.
	InitScale float64
	// Epsilon is the ε of the release under DP; 0 releases without DP.
	Epsilon float64
	// Delta is δ (default 1e-5).
	Delta float64
	// Clip is DP-GD's clipping norm C (default 1.5, dp_clip's default).
	Clip float64
	// Seed draws θ0 (and the site secret when Secret is the zero Secret).
	Seed uint64
	// Secret is the site's secret the DP noise is drawn from; the zero
	// Secret means a fixed one derived from Seed.
	Secret noise.Secret
}

// ReconstructionResult is what Reconstruct recovered.
type ReconstructionResult struct {
	// Reconstructed holds x̂ for every record, in order.
	Reconstructed [][]float64
	// Errors holds ‖x̂ − x‖/‖x‖ for every record (‖x̂ − x‖ for x = 0; +Inf
	// when g_b is 0 or the quotient is not finite).
	Errors []float64
	// MedianError and MaxError summarise Errors.
	MedianError, MaxError float64
	// LabelAccuracy is the fraction of labels recovered from the sign of
	// g_b (iDLG: g_b = σ(w·x + b) − y is negative exactly when y = 1).
	LabelAccuracy float64
	// NoiseMultiplier is z = 1/μ with μ = privacy.GaussianMu(ε, δ) (0
	// without DP), and Epsilon the accountant's ε of the one release
	// (privacy.Epsilon with the GDP accountant).
	NoiseMultiplier, Epsilon float64
}

// Reconstruct runs the gradient-inversion attack of Zhu, Liu and Han
// ("Deep leakage from gradients", NeurIPS 2019) in the closed form Zhao,
// Mopuri and Bilen ("iDLG: improved deep leakage from gradients", 2020)
// give for a model with an intercept, against the smallest site: one
// record, one local step. The site starts from θ0 (drawn from cfg.Seed and
// known to the attacker, as the server knows the model it sent), takes one
// full-batch gradient step of size LR on its record (learn.GradientDescent;
// under DP learn.DPGradientDescent with clip C and noise multiplier z from
// a privacy/noise stream keyed by the record's index) and releases θ1.
//
// The attacker, the server, knows θ0, LR, the penalty and n = 1. It
// computes g = (θ0 − θ1)/LR, removes the penalty's gradient (w0/C, read off
// θ0, Logistic.RegularizerGradient) and, since one record's loss gradient
// is r·(x, 1) with r = σ(w·x + b) − y, returns x̂ = g_w/g_b and ŷ = 1 when
// g_b < 0. Without DP this is exact up to rounding (clipping scales g_w and
// g_b alike, so it would not help either).
//
// Under DP the release is ONE Gaussian mechanism of sensitivity C, so its
// noise multiplier is z = 1/μ for μ = privacy.GaussianMu(ε, δ): exactly
// (ε, δ)-DP for the record (Balle & Wang 2018). The noise, of standard
// deviation zC on every coordinate of a gradient of norm at most C, swamps
// g_b, and x̂ is a ratio of noises.
//
// It costs one gradient step per record (microseconds). It returns an
// error, naming the field, for no records, rows of different lengths or
// non-finite values, labels other than 0 and 1, and settings out of range.
func Reconstruct(cfg ReconstructionConfig) (ReconstructionResult, error) {
	t := localTraining{X: cfg.X, Y: cfg.Y, LR: cfg.LR, C: cfg.C, InitScale: cfg.InitScale, Epsilon: cfg.Epsilon, Delta: cfg.Delta, Clip: cfg.Clip}
	d, err := t.resolve("ReconstructionConfig")
	if err != nil {
		return ReconstructionResult{}, err
	}
	cfg.LR, cfg.C, cfg.InitScale, cfg.Delta, cfg.Clip = t.LR, t.C, t.InitScale, t.Delta, t.Clip
	nf := d.NumFeatures()
	m := learn.Logistic{Features: nf, C: cfg.C}
	theta0 := initialModel(nf, cfg.Seed, cfg.InitScale)

	var res ReconstructionResult
	var dp *learn.DPConfig
	if cfg.Epsilon > 0 {
		mu, err := privacy.GaussianMu(cfg.Epsilon, cfg.Delta)
		if err != nil {
			return ReconstructionResult{}, fmt.Errorf("audit: ReconstructionConfig: %w", err)
		}
		if !(mu > 0) {
			return ReconstructionResult{}, fmt.Errorf("audit: ReconstructionConfig.Epsilon = %v at δ = %v: no Gaussian noise is that private", cfg.Epsilon, cfg.Delta)
		}
		res.NoiseMultiplier = 1 / mu
		spent, err := privacy.Epsilon([]privacy.Event{{Z: res.NoiseMultiplier, Q: 1, Count: 1}}, cfg.Delta, privacy.GDP)
		if err != nil {
			return ReconstructionResult{}, fmt.Errorf("audit: ReconstructionConfig: %w", err)
		}
		res.Epsilon = spent.Epsilon
		dp = &learn.DPConfig{Clip: cfg.Clip, NoiseMultiplier: res.NoiseMultiplier}
	}
	secret := siteSecret(cfg.Secret, cfg.Seed)
	reg := make([]float64, nf+1)
	right := 0
	for i, x := range cfg.X {
		one := learn.Data{X: [][]float64{x}, Y: []float64{cfg.Y[i]}}
		var theta1 []float64
		if dp != nil {
			dp.Random = secret.Stream(noise.Key{Campaign: "audit/reconstruct", Round: i, Site: "site", Purpose: "train", Input: keyInput(cfg.Seed)})
			var err error
			if theta1, err = learn.DPGradientDescent(m, one, theta0, cfg.LR, 1, nil, dp); err != nil {
				return ReconstructionResult{}, fmt.Errorf("audit: record %d: %w", i, err)
			}
		} else {
			theta1 = learn.GradientDescent(m, one, theta0, cfg.LR, 1, nil)
		}
		// The attacker's side: θ0, θ1, LR, C and n = 1 only.
		m.RegularizerGradient(theta0, 1, reg)
		g := make([]float64, nf+1)
		for j := range g {
			g[j] = (theta0[j]-theta1[j])/cfg.LR - reg[j]
		}
		xhat := make([]float64, nf)
		for j := range xhat {
			xhat[j] = g[j] / g[nf]
		}
		if (g[nf] < 0) == (cfg.Y[i] == 1) {
			right++
		}
		res.Reconstructed = append(res.Reconstructed, xhat)
		res.Errors = append(res.Errors, relativeError(xhat, x))
	}
	res.MedianError = median(res.Errors)
	for _, e := range res.Errors {
		res.MaxError = math.Max(res.MaxError, e)
	}
	res.LabelAccuracy = float64(right) / float64(len(cfg.X))
	return res, nil
}

// relativeError returns ‖xhat − x‖/‖x‖ (‖xhat − x‖ when x = 0), or +Inf
// when it is not a finite number.
func relativeError(xhat, x []float64) float64 {
	var diff, norm float64
	for j, v := range x {
		e := xhat[j] - v
		diff += e * e
		norm += v * v
	}
	r := math.Sqrt(diff)
	if norm > 0 {
		r /= math.Sqrt(norm)
	}
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return math.Inf(1)
	}
	return r
}

// initialModel returns θ0 for nf features: normal coefficients of
// standard deviation scale from a PCG generator seeded with seed, and a
// zero intercept (the shape of learn.InitialParams).
// localTraining is the local logistic training the audit's simulated
// sites run (Reconstruct's one step, NewTabularSite's R·S steps): their
// configurations share these settings and their defaults.
type localTraining struct {
	X                    [][]float64
	Y                    []float64
	LR, C, InitScale     float64
	Epsilon, Delta, Clip float64
}

// resolve fills the settings left zero with their defaults (LR 0.05, C 1,
// InitScale 0.01, DefaultDelta, DefaultClip) and checks them and the data,
// naming the fields of the configuration called what.
func (t *localTraining) resolve(what string) (learn.Data, error) {
	t.LR = orDefault(t.LR, 0.05)
	t.C = orDefault(t.C, 1)
	t.InitScale = orDefault(t.InitScale, 0.01)
	t.Delta = orDefault(t.Delta, DefaultDelta)
	t.Clip = orDefault(t.Clip, DefaultClip)
	d := learn.Data{X: t.X, Y: t.Y}
	if err := d.Validate(); err != nil {
		return d, fmt.Errorf("audit: %s.X, Y: %w", what, err)
	}
	switch {
	case !(t.LR > 0) || math.IsInf(t.LR, 1):
		return d, fmt.Errorf("audit: %s.LR = %v: want a positive finite step size", what, t.LR)
	case !(t.C > 0):
		return d, fmt.Errorf("audit: %s.C = %v: want a positive inverse penalty (+Inf for none)", what, t.C)
	case !(t.InitScale > 0) || math.IsInf(t.InitScale, 1):
		return d, fmt.Errorf("audit: %s.InitScale = %v: want a positive finite scale", what, t.InitScale)
	}
	return d, checkDP(what, t.Epsilon, t.Delta, t.Clip)
}

func initialModel(nf int, seed uint64, scale float64) []float64 {
	rng := pcg(seed, streamInit)
	theta := make([]float64, nf+1)
	for j := 0; j < nf; j++ {
		theta[j] = scale * rng.NormFloat64()
	}
	return theta
}
