package audit

import (
	"fmt"
	"math"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/nn"
	"github.com/ptopofl/ptopofl/privacy"
	"github.com/ptopofl/ptopofl/privacy/noise"
)

// The canary of AuditDPSGD: feature 0 of the canary is sgdCanaryScale
// (every other record's is 0), and the starting model puts its logit
// margin sgdCanaryMargin the wrong way, so its gradient, of norm about
// scale·√2, is clipped to C at every step and lies almost wholly (a
// fraction scale/√(scale² + 1) = 0.9988) on the weights of feature 0.
const (
	sgdCanaryScale  = 20.0
	sgdCanaryMargin = 20.0
)

// DPSGDAuditConfig configures AuditDPSGD. Zero fields take the defaults
// named on them.
type DPSGDAuditConfig struct {
	// Epsilon is the ε a round of DP-SGD is accounted to spend at Delta
	// (RDP of the subsampled Gaussian); it sets the noise multiplier
	// z = privacy.NoiseMultiplier(ε, δ, q, steps, RDP). Ignored when
	// NoiseMultiplier is set.
	Epsilon float64
	// NoiseMultiplier is the z the accountant is told (0: from Epsilon);
	// RunNoiseMultiplier the z the mechanism runs with (0:
	// NoiseMultiplier; below it simulates a broken mechanism; a negative
	// number runs it without noise).
	NoiseMultiplier, RunNoiseMultiplier float64
	// Delta is δ (default 1e-5).
	Delta float64
	// Records is the site's number of training records n, the canary's
	// slot included (default 600), and BatchSize the expected Poisson
	// sample (default 32): q = BatchSize/Records, deep-small's 32/600 on a
	// site of 600 images. A round is one epoch, ⌈n/BatchSize⌉ steps.
	Records, BatchSize int
	// Features is the records' number of features (default 4; feature 0
	// is the canary's).
	Features int
	// Clip is C (default 1.5) and LR the SGD step (default 0.05, plain
	// SGD: momentum and weight decay are post-processing the auditor would
	// have to undo).
	Clip, LR float64
	// Trials is the number of rounds trained in each world (default
	// 20,000; at least 20).
	Trials int
	// Confidence is the one-sided confidence of the bounds (default 0.95).
	Confidence float64
	// Seed draws the records (and the secret when Secret is the zero
	// Secret).
	Seed   uint64
	Secret noise.Secret
	// Workers is the number of goroutines (0: GOMAXPROCS); the result
	// does not depend on it.
	Workers int
}

// DPSGDAuditResult is what AuditDPSGD measured.
type DPSGDAuditResult struct {
	// Epsilon is the accountant's ε of the round at Delta (RDP).
	Epsilon, Delta float64
	// EpsilonLowerBound is the audit's ε_LB; above Epsilon it shows a bug.
	EpsilonLowerBound float64
	Bound             DistinguishingBound
	// Q, Steps and Trials describe the rounds audited.
	Q             float64
	Steps, Trials int
	// NoiseMultiplier is the z accounted, RunNoiseMultiplier the z run.
	NoiseMultiplier, RunNoiseMultiplier float64
}

// AuditDPSGD audits a deep site's DP-SGD with Poisson sampling through its
// own code path: every trial is one round of nn.UpdateSite (the deep
// site's training activity calls it), FedAvg's local update of one epoch
// at the sampling rate q of a deep preset, with the Poisson samples and
// the noise drawn from a privacy/noise stream of a site secret, as a
// site's are. The network is a dense softmax regression (an MLP without
// hidden layers) on Features features, so that the auditor can follow the
// canary: the per-example clipping of convolutions is checked against
// brute force in package nn; what this audit covers is the sampling, the
// clipping of the whole per-example gradient, the noise and the
// accountant's RDP of the subsampled Gaussian.
//
// The worlds: the site's Records − 1 records, whose feature 0 is 0, and in
// the canary's slot either the canary (feature 0 = 20, the other features
// 0) or a null record (sample weight 0: it contributes nothing, and n, so
// q, stays the same; the zero-out neighbour). The starting model puts the
// canary's logit margin 20 the wrong way, so its gradient is clipped to C
// whenever it is sampled. The auditor sees only the round's model, as the
// server does: it knows the start θ₀, the learning rate and the expected
// sample B, so it recovers Σ_t g̃_t = (θ₀ − θ_T)·B/LR, the round's noisy
// clipped sums, and projects them on the canary's clipped gradient
// restricted to the weights of feature 0, where no other record has a
// gradient. The statistic is K·C′ + N(0, T·σ²) with the canary (K ~
// Binomial(T, q) the steps that sampled it, C′ ≈ C) and N(0, T·σ²) without:
// a mixture the threshold test of EpsilonLowerBound (SelectEmpirical) turns
// into ε_LB. A final-model audit of subsampled DP-SGD is far from tight
// (the accountant bounds an adversary who sees every step and every
// sample's effect), so ε_LB lands well below ε; it must never pass it,
// and a mechanism without its noise is caught at once (K ≥ 1 with
// probability 1 − (1 − q)^T, and no noise to hide it).
//
// Cost: about 0.1 ms a round at the defaults (19 steps of 32 samples of 4
// features, 600 uniform draws a step) on one core.
func AuditDPSGD(cfg DPSGDAuditConfig) (DPSGDAuditResult, error) {
	cfg.Delta = orDefault(cfg.Delta, DefaultDelta)
	cfg.Records = orDefault(cfg.Records, 600)
	cfg.BatchSize = orDefault(cfg.BatchSize, 32)
	cfg.Features = orDefault(cfg.Features, 4)
	cfg.Clip = orDefault(cfg.Clip, DefaultClip)
	cfg.LR = orDefault(cfg.LR, 0.05)
	cfg.Trials = orDefault(cfg.Trials, 20_000)
	cfg.Confidence = orDefault(cfg.Confidence, DefaultConfidence)
	switch {
	case cfg.NoiseMultiplier == 0 && (!(cfg.Epsilon > 0) || math.IsInf(cfg.Epsilon, 1)):
		return DPSGDAuditResult{}, fmt.Errorf("audit: DPSGDAuditConfig.Epsilon = %v: want a positive finite ε, or set NoiseMultiplier", cfg.Epsilon)
	case !(cfg.NoiseMultiplier >= 0) || math.IsInf(cfg.NoiseMultiplier, 1) || math.IsNaN(cfg.RunNoiseMultiplier) || math.IsInf(cfg.RunNoiseMultiplier, 0):
		return DPSGDAuditResult{}, fmt.Errorf("audit: DPSGDAuditConfig noise multipliers %v, %v: want finite numbers, the first ≥ 0", cfg.NoiseMultiplier, cfg.RunNoiseMultiplier)
	case cfg.Records < 2 || cfg.BatchSize < 1 || cfg.BatchSize > cfg.Records:
		return DPSGDAuditResult{}, fmt.Errorf("audit: DPSGDAuditConfig: %d records, batch %d: want at least 2 records and a batch in [1, records]", cfg.Records, cfg.BatchSize)
	case cfg.Features < 2:
		return DPSGDAuditResult{}, fmt.Errorf("audit: DPSGDAuditConfig.Features = %d: want at least 2 (feature 0 is the canary's)", cfg.Features)
	case cfg.Trials < 20:
		return DPSGDAuditResult{}, fmt.Errorf("audit: DPSGDAuditConfig.Trials = %d: want at least 20 a world", cfg.Trials)
	case !(cfg.Confidence > 0.5 && cfg.Confidence < 1):
		return DPSGDAuditResult{}, fmt.Errorf("audit: DPSGDAuditConfig.Confidence = %v: want a number in (0.5, 1)", cfg.Confidence)
	}
	if err := checkDP("DPSGDAuditConfig", max(cfg.Epsilon, 0), cfg.Delta, cfg.Clip); err != nil {
		return DPSGDAuditResult{}, err
	}
	q := float64(cfg.BatchSize) / float64(cfg.Records)
	steps := (cfg.Records + cfg.BatchSize - 1) / cfg.BatchSize
	z := cfg.NoiseMultiplier
	if z == 0 {
		var err error
		if z, err = privacy.NoiseMultiplier(cfg.Epsilon, cfg.Delta, q, steps, privacy.RDP); err != nil {
			return DPSGDAuditResult{}, fmt.Errorf("audit: DPSGDAuditConfig: %w", err)
		}
	}
	zRun := cfg.RunNoiseMultiplier
	switch {
	case zRun == 0:
		zRun = z
	case zRun < 0:
		zRun = 0
	}
	spent, err := privacy.Epsilon([]privacy.Event{{Z: z, Q: q, Count: steps}}, cfg.Delta, privacy.RDP)
	if err != nil {
		return DPSGDAuditResult{}, fmt.Errorf("audit: DPSGDAuditConfig: %w", err)
	}
	a, err := newSGDAuditor(cfg, zRun)
	if err != nil {
		return DPSGDAuditResult{}, err
	}
	var stats [2][]float64
	for world := range 2 {
		stats[world] = make([]float64, cfg.Trials)
		err := parallel(cfg.Trials, cfg.Workers, func(trial int) error {
			s, err := a.trial(world == 1, trial)
			stats[world][trial] = s
			return err
		})
		if err != nil {
			return DPSGDAuditResult{}, err
		}
	}
	b, err := EpsilonLowerBound(stats[1], stats[0], cfg.Delta, cfg.Confidence, SelectEmpirical)
	if err != nil {
		return DPSGDAuditResult{}, err
	}
	return DPSGDAuditResult{
		Epsilon: spent.Epsilon, Delta: cfg.Delta, EpsilonLowerBound: b.Epsilon, Bound: b,
		Q: q, Steps: steps, Trials: cfg.Trials, NoiseMultiplier: z, RunNoiseMultiplier: zRun,
	}, nil
}

// sgdAuditor holds what AuditDPSGD's trials share: the network, the two
// worlds' data, θ₀ and the auditor's direction (the canary's clipped
// gradient on the weights only it moves).
type sgdAuditor struct {
	cfg           DPSGDAuditConfig
	zRun          float64
	net           nn.Config
	with, without nn.Data
	theta0        []float32
	dir           []float64 // unit vector, 0 outside the canary's weights
	secret        noise.Secret
}

func newSGDAuditor(cfg DPSGDAuditConfig, zRun float64) (*sgdAuditor, error) {
	f, n := cfg.Features, cfg.Records
	net := nn.Config{Arch: nn.MLP, Input: nn.Shape{H: 1, W: f, C: 1}, Classes: 2, Hidden: []int{}}
	rng := pcg(cfg.Seed, streamRecords)
	x := make([]float32, n*f)
	labels := make([]int, n)
	for i := range n - 1 {
		for j := 1; j < f; j++ {
			x[i*f+j] = float32(rng.NormFloat64())
		}
		labels[i] = rng.IntN(2)
	}
	x[(n-1)*f] = sgdCanaryScale
	labels[n-1] = 1
	wWith, wWithout := make([]float32, n), make([]float32, n)
	for i := range wWith {
		wWith[i], wWithout[i] = 1, 1
	}
	wWithout[n-1] = 0
	a := &sgdAuditor{
		cfg: cfg, zRun: zRun, net: net, secret: siteSecret(cfg.Secret, cfg.Seed),
		with:    nn.Data{N: n, X: x, Labels: labels, Weights: wWith},
		without: nn.Data{N: n, X: x, Labels: labels, Weights: wWithout},
	}
	// The weights of feature 0: those the canary alone moves, found by
	// one plain full step on the canary alone and one on the others
	// alone, so the audit needs nothing of nn's layout.
	probe, err := nn.New(net)
	if err != nil {
		return nil, fmt.Errorf("audit: DP-SGD network: %w", err)
	}
	probe.Init(cfg.Seed)
	init := append([]float32(nil), probe.Params()...)
	canary := nn.Data{N: 1, X: x[(n-1)*f:], Labels: labels[n-1:]}
	others := nn.Data{N: n - 1, X: x[:(n-1)*f], Labels: labels[:n-1]}
	gc, err := a.plainStep(init, canary)
	if err != nil {
		return nil, err
	}
	gOthers, err := a.plainStep(init, others)
	if err != nil {
		return nil, err
	}
	// Start with the canary's margin 20 the wrong way: move its weights
	// up its own gradient (ascent raises its loss).
	var norm float64
	mask := make([]bool, len(init))
	for j := range gc {
		if gOthers[j] == 0 && gc[j] != 0 {
			mask[j] = true
			norm += gc[j] * gc[j]
		}
	}
	if norm == 0 {
		return nil, fmt.Errorf("audit: DP-SGD: the canary moves no weight the other records leave alone")
	}
	norm = math.Sqrt(norm)
	a.theta0 = append([]float32(nil), init...)
	step := sgdCanaryMargin / (sgdCanaryScale * math.Sqrt2)
	for j := range init {
		if mask[j] {
			a.theta0[j] += float32(step * gc[j] / norm)
		}
	}
	// The auditor's direction: the canary's clipped gradient at θ₀ on
	// those weights (clipping scales, so its direction is the gradient's).
	g0, err := a.plainStep(a.theta0, canary)
	if err != nil {
		return nil, err
	}
	a.dir = make([]float64, len(g0))
	var dn float64
	for j := range g0 {
		if mask[j] {
			a.dir[j] = g0[j]
			dn += g0[j] * g0[j]
		}
	}
	dn = math.Sqrt(dn)
	for j := range a.dir {
		a.dir[j] /= dn
	}
	return a, nil
}

// plainStep returns the gradient of data's summed loss at theta, from one
// plain full-batch SGD step of nn.Train at learning rate 1 without
// momentum: θ − θ′ = Σ ∇ℓ / n.
func (a *sgdAuditor) plainStep(theta []float32, d nn.Data) ([]float64, error) {
	net, err := nn.New(a.net)
	if err != nil {
		return nil, err
	}
	copy(net.Params(), theta)
	tc := nn.TrainConfig{Optimizer: nn.SGD, LR: 1, Epochs: 1, BatchSize: d.N}
	if _, err := nn.Train(net, d, tc, nn.Terms{}); err != nil {
		return nil, fmt.Errorf("audit: DP-SGD probe: %w", err)
	}
	g := make([]float64, len(theta))
	for j, v := range net.Params() {
		g[j] = float64(theta[j]-v) * float64(d.N)
	}
	return g, nil
}

// trial trains one round in the world with or without the canary and
// returns the auditor's statistic ⟨(θ₀ − θ_T)·B/LR, dir⟩.
func (a *sgdAuditor) trial(withCanary bool, trial int) (float64, error) {
	d, world := a.without, "without"
	if withCanary {
		d, world = a.with, "with"
	}
	net, err := nn.New(a.net)
	if err != nil {
		return 0, err
	}
	sc := nn.SiteConfig{Train: nn.TrainConfig{
		Optimizer: nn.SGD, LR: a.cfg.LR, Epochs: 1, BatchSize: a.cfg.BatchSize,
		DP: &nn.DPConfig{Clip: a.cfg.Clip, NoiseMultiplier: a.zRun, Random: a.secret.Stream(noise.Key{
			Campaign: "audit/dp-sgd", Round: trial, Site: world, Purpose: "train", Input: keyInput(a.cfg.Seed),
		})},
	}}
	out, err := nn.UpdateSite(net, nn.SiteInput{Method: learn.FedAvg, Round: 1, Train: d, Pushed: a.theta0, Config: sc})
	if err != nil {
		return 0, fmt.Errorf("audit: DP-SGD trial %d: %w", trial, err)
	}
	scale := float64(a.cfg.BatchSize) / a.cfg.LR
	var s float64
	for j, u := range a.dir {
		if u != 0 {
			s += float64(a.theta0[j]-out.Params[j]) * scale * u
		}
	}
	return s, nil
}
