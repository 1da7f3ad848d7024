package audit

import (
	"fmt"
	"math"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/privacy"
	"github.com/ptopofl/ptopofl/privacy/noise"
)

// The canary of AuditDPGD: the record canaryScale·e_0 with label 1, and a
// starting model that puts its logit at −canaryLogit, so that its residual
// σ(logit) − 1 stays near −1 and its gradient, of norm about
// √(canaryScale² + 1) ≈ 4.1, is clipped to C (any C below 2, the norm at
// logit 0) at every step: the logit would have to climb by about 20 for
// it not to be, and each step moves it by about canaryScale·LR·(C +
// z·C·N(0, 1))/n, a few hundredths at the defaults.
const (
	canaryScale = 4.0
	canaryLogit = 20.0
)

// AuditConfig configures AuditDPGD. Zero fields take the defaults named on
// them.
type AuditConfig struct {
	// Epsilon is the ε that the Steps steps are accounted to spend at
	// Delta; it sets the noise multiplier z = privacy.NoiseMultiplier(ε,
	// δ, q = 1, Steps, GDP) = √Steps/μ. It is ignored when NoiseMultiplier
	// is set.
	Epsilon float64
	// NoiseMultiplier is the z the accountant is told (0: from Epsilon).
	NoiseMultiplier float64
	// RunNoiseMultiplier is the z the mechanism actually runs with (0:
	// NoiseMultiplier). Setting it below NoiseMultiplier simulates a
	// broken mechanism that adds less noise than it claims.
	RunNoiseMultiplier float64
	// Delta is δ (default 1e-5).
	Delta float64
	// Steps is T, the number of DP-GD steps of a trial (default 1).
	Steps int
	// Trials is the number of training runs in each world (default
	// 200,000; at least 20).
	Trials int
	// Records is the number of records of D besides the canary's slot
	// (default 4) and Features their number of features (default 4, at
	// least 2: feature 0 is the canary's and is 0 in D).
	Records, Features int
	// Clip is DP-GD's clipping norm C (default 1.5; at most 2, so that the
	// canary is clipped).
	Clip float64
	// LR is the step size (default 0.01) and C the logistic model's
	// inverse penalty strength (default 1).
	LR, C float64
	// Confidence is the one-sided confidence of each Clopper–Pearson bound
	// (default 0.95).
	Confidence float64
	// Seed draws D (and the site secret when Secret is the zero Secret).
	Seed uint64
	// Secret is the site's secret the noise comes from; the zero Secret
	// means a fixed one derived from Seed.
	Secret noise.Secret
	// Workers is the number of goroutines running trials (0: GOMAXPROCS).
	// The result does not depend on it.
	Workers int
}

// AuditResult is what AuditDPGD measured.
type AuditResult struct {
	// Epsilon is the accountant's ε of the Steps steps at Delta:
	// privacy.Epsilon([]privacy.Event{{Z: NoiseMultiplier, Q: 1, Count:
	// Steps}}, Delta, privacy.GDP).
	Epsilon, Delta float64
	// EpsilonLowerBound is the audit's ε_LB (EpsilonLowerBound on the
	// trials' statistics, SelectNormal). Above Epsilon it shows a bug in
	// the mechanism or the accountant.
	EpsilonLowerBound float64
	// Bound is the test behind EpsilonLowerBound and its error counts on
	// the trials it was computed on (nine tenths of each world's).
	Bound DistinguishingBound
	// Trials is the number of runs in each world and Steps the number of
	// steps of each.
	Trials, Steps int
	// NoiseMultiplier is the z accounted, RunNoiseMultiplier the z run.
	NoiseMultiplier, RunNoiseMultiplier float64
	// Sigma is the mechanism's actual noise standard deviation,
	// noise.Sigma(C, RunNoiseMultiplier) = z·C·(1 + noise.GridSlack).
	Sigma float64
	// MuEstimate is the separation of the two worlds' statistics in
	// standard deviations, (mean_with − mean_without)/pooled sd, the μ of
	// Gaussian DP the trials show (√Steps·C/Sigma in theory), and
	// EpsilonEstimate = privacy.GaussianEpsilon(MuEstimate, Delta): point
	// estimates, not bounds (Nasr et al. 2023 read ε off μ this way).
	MuEstimate, EpsilonEstimate float64
	// UnclippedSteps counts the steps, over all trials, at which the
	// canary's gradient had norm below C, so that it was not clipped to C
	// (0 at the defaults).
	UnclippedSteps int
}

// AuditDPGD audits DP full-batch gradient descent (learn.DPGradientDescent,
// q = 1) in the white-box federated threat model, with a gradient canary
// (Jagielski, Ullman, Oprea, "Auditing differentially private machine
// learning: how private is private SGD?", NeurIPS 2020; Nasr, Hayes,
// Steinke, Balle, Tramèr, Jagielski, Carlini, Terzis, "Tight auditing of
// differentially private machine learning", USENIX Security 2023: when the
// auditor sees every update, a gradient canary audits tightly).
//
// Each trial trains a logistic model for T steps on D, a few random
// records whose feature 0 is 0, plus the canary's slot: in the world with
// the canary the record 4·e_0 with label 1, in the world without a null
// record (weight 0: it contributes nothing, and n stays the same, the
// zero-out neighbour the accountant is about). The starting model puts the
// canary's logit at −20, so its gradient, of norm about 4.1, is clipped to
// exactly C at every step (UnclippedSteps counts any step where it is
// not). Every step is one call of the real mechanism,
// learn.DPGradientDescent with steps = 1, its noise from its own
// privacy/noise stream keyed by world, trial and step, as a site's release
// would be: the audit covers learn's clipping and privacy/noise's grid
// snapping.
//
// The auditor sees every θ_t. At step t it knows θ_{t−1} and D, so it
// recovers the noisy sum g_t = n·((θ_{t−1} − θ_t)/LR − ∇penalty(θ_{t−1})),
// subtracts the other records' clipped gradient sum at θ_{t−1}, projects
// the residual on the unit vector of the canary's clipped gradient at
// θ_{t−1} and sums over the T steps: the sum is N(T·C, T·σ²) with the
// canary and N(0, T·σ²) without, σ = z·C·(1 + noise.GridSlack), so the
// two worlds are √T/z-Gaussian-DP apart, which is what the accountant
// charges. EpsilonLowerBound turns the two worlds' sums into ε_LB by
// Clopper–Pearson, with SelectNormal: the threshold is chosen on a tenth
// of the trials (the sums are normal by construction), and the bound is
// computed on the other nine tenths alone, so it is honest.
//
// ε_LB ≤ ε must always hold (up to the 10 % the bounds' confidence
// allows); a larger ε_LB is a bug in the mechanism or the accountant.
// Clopper–Pearson makes ε_LB fall short of ε at δ = 1e-5: a threshold
// test reaches the tail that (ε, δ) is about only with many trials. With
// 200,000 trials a world (the default; 180,000 left for the bound) the
// exact normal error rates give 0.67·ε, 0.71·ε and 0.63·ε for ε = 1, 3
// and 8; measured over seeds 1–3 (T = 1, 2, 3): 0.69–0.70, 0.68–0.90 and
// 0.63–0.65.
//
// Cost: about 3.5 µs a step on one core (a keyed stream, the step and the
// auditor's arithmetic), so the default 200,000 trials of each world take
// about 1 s on 2 cores at T = 1 and 10 s at T = 10.
// It returns an error, naming the field, for settings out of range.
func AuditDPGD(cfg AuditConfig) (AuditResult, error) {
	cfg.Delta = orDefault(cfg.Delta, DefaultDelta)
	cfg.Steps = orDefault(cfg.Steps, 1)
	cfg.Trials = orDefault(cfg.Trials, 200_000)
	cfg.Records = orDefault(cfg.Records, 4)
	cfg.Features = orDefault(cfg.Features, 4)
	cfg.Clip = orDefault(cfg.Clip, DefaultClip)
	cfg.LR = orDefault(cfg.LR, 0.01)
	cfg.C = orDefault(cfg.C, 1)
	cfg.Confidence = orDefault(cfg.Confidence, DefaultConfidence)
	if err := cfg.validate(); err != nil {
		return AuditResult{}, err
	}
	z := cfg.NoiseMultiplier
	if z == 0 {
		var err error
		if z, err = privacy.NoiseMultiplier(cfg.Epsilon, cfg.Delta, 1, cfg.Steps, privacy.GDP); err != nil {
			return AuditResult{}, fmt.Errorf("audit: AuditConfig: %w", err)
		}
	}
	zRun := orDefault(cfg.RunNoiseMultiplier, z)
	spent, err := privacy.Epsilon([]privacy.Event{{Z: z, Q: 1, Count: cfg.Steps}}, cfg.Delta, privacy.GDP)
	if err != nil {
		return AuditResult{}, fmt.Errorf("audit: AuditConfig: %w", err)
	}
	res := AuditResult{
		Epsilon: spent.Epsilon, Delta: cfg.Delta, Trials: cfg.Trials, Steps: cfg.Steps,
		NoiseMultiplier: z, RunNoiseMultiplier: zRun, Sigma: noise.Sigma(cfg.Clip, zRun),
	}

	a := newDPGDAuditor(cfg, zRun)
	var stats [2][]float64 // stats[1]: with the canary
	unclipped := make([][2]int, cfg.Trials)
	for world := range 2 {
		stats[world] = make([]float64, cfg.Trials)
		err := parallel(cfg.Trials, cfg.Workers, func(trial int) error {
			s, u, err := a.trial(world == 1, trial)
			stats[world][trial], unclipped[trial][world] = s, u
			return err
		})
		if err != nil {
			return AuditResult{}, err
		}
	}
	for _, u := range unclipped {
		res.UnclippedSteps += u[0] + u[1]
	}
	if res.Bound, err = EpsilonLowerBound(stats[1], stats[0], cfg.Delta, cfg.Confidence, SelectNormal); err != nil {
		return AuditResult{}, err
	}
	res.EpsilonLowerBound = res.Bound.Epsilon
	res.MuEstimate = separation(stats[1], stats[0])
	if res.MuEstimate > 0 {
		if res.EpsilonEstimate, err = privacy.GaussianEpsilon(res.MuEstimate, cfg.Delta); err != nil {
			return AuditResult{}, fmt.Errorf("audit: %w", err)
		}
	}
	return res, nil
}

func (c AuditConfig) validate() error {
	switch {
	case c.NoiseMultiplier == 0 && (!(c.Epsilon > 0) || math.IsInf(c.Epsilon, 1)):
		return fmt.Errorf("audit: AuditConfig.Epsilon = %v: want a positive finite ε, or set NoiseMultiplier", c.Epsilon)
	case !(c.NoiseMultiplier >= 0) || math.IsInf(c.NoiseMultiplier, 1):
		return fmt.Errorf("audit: AuditConfig.NoiseMultiplier = %v: want a finite z ≥ 0 (0: from Epsilon)", c.NoiseMultiplier)
	case !(c.RunNoiseMultiplier >= 0) || math.IsInf(c.RunNoiseMultiplier, 1):
		return fmt.Errorf("audit: AuditConfig.RunNoiseMultiplier = %v: want a finite z ≥ 0 (0: NoiseMultiplier)", c.RunNoiseMultiplier)
	case !(c.Delta > 0 && c.Delta < 1):
		return fmt.Errorf("audit: AuditConfig.Delta = %v: want δ in (0, 1)", c.Delta)
	case c.Steps < 1:
		return fmt.Errorf("audit: AuditConfig.Steps = %d: want at least 1", c.Steps)
	case c.Trials < 20:
		return fmt.Errorf("audit: AuditConfig.Trials = %d: want at least 20 a world", c.Trials)
	case c.Records < 0:
		return fmt.Errorf("audit: AuditConfig.Records = %d: want at least 0", c.Records)
	case c.Features < 2:
		return fmt.Errorf("audit: AuditConfig.Features = %d: want at least 2 (feature 0 is the canary's)", c.Features)
	case !(c.Clip > 0 && c.Clip <= 2):
		return fmt.Errorf("audit: AuditConfig.Clip = %v: want C in (0, 2], below the canary's gradient norm", c.Clip)
	case !(c.LR > 0) || math.IsInf(c.LR, 1):
		return fmt.Errorf("audit: AuditConfig.LR = %v: want a positive finite step size", c.LR)
	case !(c.C > 0):
		return fmt.Errorf("audit: AuditConfig.C = %v: want a positive inverse penalty (+Inf for none)", c.C)
	case !(c.Confidence > 0.5 && c.Confidence < 1):
		return fmt.Errorf("audit: AuditConfig.Confidence = %v: want a number in (0.5, 1)", c.Confidence)
	}
	return nil
}

// dpgdAuditor holds what every trial of AuditDPGD shares: the model, the
// two worlds' data (which differ only in the canary's weight), θ0 and the
// mechanism's settings.
type dpgdAuditor struct {
	cfg           AuditConfig
	zRun          float64
	model         learn.Logistic
	with, without learn.Data
	canary        learn.Data // the canary alone
	theta0        []float64
	secret        noise.Secret
}

func newDPGDAuditor(cfg AuditConfig, zRun float64) *dpgdAuditor {
	rng := pcg(cfg.Seed, streamRecords)
	n := cfg.Records + 1
	x := make([][]float64, n)
	y := make([]float64, n)
	for i := range cfg.Records {
		x[i] = make([]float64, cfg.Features)
		for j := 1; j < cfg.Features; j++ {
			x[i][j] = rng.NormFloat64()
		}
		y[i] = float64(rng.IntN(2))
	}
	x[n-1] = make([]float64, cfg.Features)
	x[n-1][0] = canaryScale
	y[n-1] = 1
	wWith, wWithout := make([]float64, n), make([]float64, n)
	for i := range wWith {
		wWith[i], wWithout[i] = 1, 1
	}
	wWithout[n-1] = 0
	theta0 := make([]float64, cfg.Features+1)
	theta0[0] = -canaryLogit / canaryScale
	return &dpgdAuditor{
		cfg: cfg, zRun: zRun,
		model:   learn.Logistic{Features: cfg.Features, C: cfg.C},
		with:    learn.Data{X: x, Y: y, Weights: wWith},
		without: learn.Data{X: x, Y: y, Weights: wWithout},
		canary:  learn.Data{X: x[n-1:], Y: y[n-1:]},
		theta0:  theta0,
		secret:  siteSecret(cfg.Secret, cfg.Seed),
	}
}

// trial runs one training of T steps in the world with or without the
// canary and returns the auditor's statistic and the number of steps at
// which the canary's gradient was not clipped to C.
func (a *dpgdAuditor) trial(withCanary bool, trial int) (stat float64, unclipped int, err error) {
	d, world := a.without, "without"
	if withCanary {
		d, world = a.with, "with"
	}
	np := a.model.NumParams()
	n := float64(len(d.X))
	theta := a.theta0
	known := make([]float64, np)
	cg := make([]float64, np)
	reg := make([]float64, np)
	dp := &learn.DPConfig{Clip: a.cfg.Clip, NoiseMultiplier: a.zRun}
	for t := range a.cfg.Steps {
		dp.Random = a.secret.Stream(noise.Key{
			Campaign: "audit/dpgd", Round: t + 1, Site: world, Purpose: "train",
			Input: keyInput(a.cfg.Seed, uint64(trial)),
		})
		next, err := learn.DPGradientDescent(a.model, d, theta, a.cfg.LR, 1, nil, dp)
		if err != nil {
			return 0, 0, fmt.Errorf("audit: trial %d step %d: %w", trial, t+1, err)
		}
		// The auditor: θ_{t−1}, θ_t, D (without the canary), LR, C, n.
		a.model.ClippedLossGradientSum(theta, a.without, a.cfg.Clip, known)
		a.model.ClippedLossGradientSum(theta, a.canary, a.cfg.Clip, cg)
		a.model.RegularizerGradient(theta, len(d.X), reg)
		var norm, proj float64
		for j := range cg {
			norm += cg[j] * cg[j]
		}
		norm = math.Sqrt(norm)
		if norm < a.cfg.Clip*(1-1e-9) {
			unclipped++
		}
		for j := range cg {
			noisy := n * ((theta[j]-next[j])/a.cfg.LR - reg[j])
			proj += (noisy - known[j]) * cg[j] / norm
		}
		stat += proj
		theta = next
	}
	return stat, unclipped, nil
}

// separation returns (mean(a) − mean(b))/s with s the pooled standard
// deviation of a and b (0 when s is 0).
func separation(a, b []float64) float64 {
	ma, va := meanVar(a)
	mb, vb := meanVar(b)
	s := math.Sqrt((va*float64(len(a)-1) + vb*float64(len(b)-1)) / float64(len(a)+len(b)-2))
	if !(s > 0) {
		return 0
	}
	return (ma - mb) / s
}

// meanVar returns the mean and the sample variance of v (len ≥ 2).
func meanVar(v []float64) (mean, variance float64) {
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	for _, x := range v {
		variance += (x - mean) * (x - mean)
	}
	return mean, variance / float64(len(v)-1)
}
