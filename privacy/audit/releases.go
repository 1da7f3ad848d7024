package audit

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/privacy"
	"github.com/ptopofl/ptopofl/privacy/noise"
	"github.com/ptopofl/ptopofl/tda"
)

// Release names a release of a site that AuditRelease audits.
type Release string

// The releases AuditRelease audits, each through the function the site's
// activity calls (package method).
const (
	// DescriptorRelease is the DP descriptor (method.ReleaseDPDescriptor).
	DescriptorRelease Release = "descriptor"
	// LabelSummaryRelease is the DP label summary
	// (method.ReleaseDPLabelSummary).
	LabelSummaryRelease Release = "label-summary"
	// MetricsRelease is a tabular site's metrics, the noisy score counts
	// (method.ReleaseDPScores).
	MetricsRelease Release = "metrics"
	// Top1Release is a deep site's metrics, the noisy count of images
	// classified right (method.ReleaseDPTop1).
	Top1Release Release = "top1"
)

// Releases lists every Release.
var Releases = []Release{DescriptorRelease, LabelSummaryRelease, MetricsRelease, Top1Release}

// ReleaseAuditConfig configures AuditRelease. Zero fields take the
// defaults named on them.
type ReleaseAuditConfig struct {
	Release Release
	// X and Y are D, the site's records without the canary (raw
	// features and labels 0/1): training rows for the descriptor and the
	// label summary, test rows for the metrics. Top1Release reads only
	// len(X), the site's test images (at least 1).
	X [][]float64
	Y []float64
	// Candidates and CandidateY are records not in D; the canary is the
	// one of them that moves the noiseless release the most (the auditor
	// picks its worst case). Nil: the records of D themselves, each
	// against D without it.
	Candidates [][]float64
	CandidateY []float64
	// Params is the logistic model the metrics score (len(X[0]) + 1
	// numbers; default: a fixed one of weight 1 on every feature).
	Params []float64
	// Epsilon is the ε of one release at Delta: z = 1/GaussianMu(ε, δ).
	// Ignored when NoiseMultiplier is set.
	Epsilon float64
	// NoiseMultiplier is the z accounted (0: from Epsilon),
	// RunNoiseMultiplier the z run (0: NoiseMultiplier; a negative
	// number: none, a release that lost its noise).
	NoiseMultiplier, RunNoiseMultiplier float64
	// Delta is δ (default 1e-5), Confidence the one-sided confidence of
	// the bounds (default 0.95).
	Delta, Confidence float64
	// Trials is the number of releases in each world (default 20,000; at
	// least 20).
	Trials int
	// Seed keys the noise (with Secret; the zero Secret is a fixed one
	// derived from Seed).
	Seed    uint64
	Secret  noise.Secret
	Workers int
}

// ReleaseAuditResult is what AuditRelease measured.
type ReleaseAuditResult struct {
	Release Release
	// Epsilon is the accountant's ε of one release at Delta (Gaussian
	// DP, exact: μ = 1/z).
	Epsilon, Delta float64
	// EpsilonLowerBound is the audit's ε_LB; above Epsilon it shows a bug.
	EpsilonLowerBound float64
	Bound             DistinguishingBound
	NoiseMultiplier   float64
	// RunNoiseMultiplier is the z run (0: none).
	RunNoiseMultiplier float64
	Trials             int
	// Shift is how far the canary moves the noiseless release, over the
	// release's sensitivity: 1 when the canary attains the proven bound.
	// The audit can at best show the ε of μ = Shift/z.
	Shift float64
}

// AuditRelease audits one of a site's releases against the accountant
// with a canary, through the release's own code (the method.Release*
// function the site's activity calls; for the descriptor and the label
// summary its private part, method.NoiseDPDescriptor and
// NoiseDPLabelSummary, on the noiseless vector computed once a world), as AuditDPGD audits training
// (Jagielski, Ullman, Oprea 2020; Nasr et al. 2023): Trials releases with
// the canary and Trials with the canary's slot a null record (the
// zero-out neighbour: the descriptor and the label summary keep m = |D| + 1
// public slots; the counts of the metrics are those of D), each with noise
// from its own stream of a site secret, as the site draws it. The auditor
// knows D and the canary, so it computes the two noiseless releases v₁ and
// v₀ (the same function without noise) and scores a noisy release y by
// its projection on v₁ − v₀, the Neyman–Pearson test of two Gaussians:
// N(‖v₁ − v₀‖, σ²) against N(0, σ²). EpsilonLowerBound (SelectNormal)
// turns the two worlds' scores into ε_LB, which must not exceed the
// accountant's ε of one Gaussian release at z; at the metrics, whose
// canary moves one count by exactly the sensitivity 1, it comes close to
// it (as the DP-GD audit does), while the descriptor's bound is not
// attained by any record (Shift, at most 0.44 in brute-force searches),
// so its ε_LB stays lower.
//
// A release whose noise is lost (RunNoiseMultiplier < 0) gives scores of
// exactly ‖v₁ − v₀‖ and 0: ε_LB far above any ε it claims.
func AuditRelease(cfg ReleaseAuditConfig) (ReleaseAuditResult, error) {
	cfg.Delta = orDefault(cfg.Delta, DefaultDelta)
	cfg.Confidence = orDefault(cfg.Confidence, DefaultConfidence)
	cfg.Trials = orDefault(cfg.Trials, 20_000)
	if err := cfg.validate(); err != nil {
		return ReleaseAuditResult{}, err
	}
	z := cfg.NoiseMultiplier
	if z == 0 {
		mu, err := privacy.GaussianMu(cfg.Epsilon, cfg.Delta)
		if err != nil || !(mu > 0) {
			return ReleaseAuditResult{}, fmt.Errorf("audit: ReleaseAuditConfig.Epsilon = %v: no Gaussian noise is that private (%v)", cfg.Epsilon, err)
		}
		z = 1 / mu
	}
	zRun := cfg.RunNoiseMultiplier
	switch {
	case zRun == 0:
		zRun = z
	case zRun < 0:
		zRun = 0
	}
	spent, err := privacy.Epsilon([]privacy.Event{{Z: z, Q: 1, Count: 1}}, cfg.Delta, privacy.GDP)
	if err != nil {
		return ReleaseAuditResult{}, err
	}
	rel, sens, err := cfg.releaser()
	if err != nil {
		return ReleaseAuditResult{}, err
	}
	// The canary: the candidate that moves the noiseless release most.
	best, bestShift := -1, -1.0
	var clean [2][]float64
	for c := range rel.candidates {
		v1, err := rel.release(c, true, 0, quiet{})
		if err != nil {
			return ReleaseAuditResult{}, err
		}
		v0, err := rel.release(c, false, 0, quiet{})
		if err != nil {
			return ReleaseAuditResult{}, err
		}
		if d := distance(v1, v0); d > bestShift {
			best, bestShift, clean = c, d, [2][]float64{v0, v1}
		}
	}
	if !(bestShift > 0) {
		return ReleaseAuditResult{}, fmt.Errorf("audit: %s: no candidate canary moves the release", cfg.Release)
	}
	secret := siteSecret(cfg.Secret, cfg.Seed)
	var byWorld [2][]float64
	for world := range 2 {
		name := "without"
		if world == 1 {
			name = "with"
		}
		byWorld[world] = make([]float64, cfg.Trials)
		err := parallel(cfg.Trials, cfg.Workers, func(trial int) error {
			st := secret.Stream(noise.Key{Campaign: "audit/" + string(cfg.Release), Round: trial, Site: name, Purpose: string(cfg.Release), Input: keyInput(cfg.Seed)})
			y, err := rel.release(best, world == 1, zRun, st)
			if err != nil {
				return err
			}
			var s float64
			for j := range y {
				s += (y[j] - clean[0][j]) * (clean[1][j] - clean[0][j])
			}
			byWorld[world][trial] = s / bestShift
			return nil
		})
		if err != nil {
			return ReleaseAuditResult{}, err
		}
	}
	b, err := EpsilonLowerBound(byWorld[1], byWorld[0], cfg.Delta, cfg.Confidence, SelectNormal)
	if err != nil {
		return ReleaseAuditResult{}, err
	}
	return ReleaseAuditResult{
		Release: cfg.Release, Epsilon: spent.Epsilon, Delta: cfg.Delta, EpsilonLowerBound: b.Epsilon, Bound: b,
		NoiseMultiplier: z, RunNoiseMultiplier: zRun, Trials: cfg.Trials, Shift: bestShift / sens,
	}, nil
}

func (c ReleaseAuditConfig) validate() error {
	switch {
	case !slices.Contains(Releases, c.Release):
		return fmt.Errorf("audit: ReleaseAuditConfig.Release = %q: want one of %v", c.Release, Releases)
	case len(c.X) < 2:
		return fmt.Errorf("audit: ReleaseAuditConfig.X has %d rows: want at least 2", len(c.X))
	case c.Release != Top1Release && len(c.Y) != len(c.X):
		return fmt.Errorf("audit: ReleaseAuditConfig: %d rows and %d labels", len(c.X), len(c.Y))
	case len(c.Candidates) != len(c.CandidateY):
		return fmt.Errorf("audit: ReleaseAuditConfig: %d candidates and %d labels", len(c.Candidates), len(c.CandidateY))
	case c.NoiseMultiplier == 0 && (!(c.Epsilon > 0) || math.IsInf(c.Epsilon, 1)):
		return fmt.Errorf("audit: ReleaseAuditConfig.Epsilon = %v: want a positive finite ε, or set NoiseMultiplier", c.Epsilon)
	case !(c.NoiseMultiplier >= 0) || math.IsInf(c.NoiseMultiplier, 1) || math.IsNaN(c.RunNoiseMultiplier) || math.IsInf(c.RunNoiseMultiplier, 0):
		return fmt.Errorf("audit: ReleaseAuditConfig noise multipliers %v, %v: want finite numbers, the first ≥ 0", c.NoiseMultiplier, c.RunNoiseMultiplier)
	case !(c.Delta > 0 && c.Delta < 1):
		return fmt.Errorf("audit: ReleaseAuditConfig.Delta = %v: want δ in (0, 1)", c.Delta)
	case c.Trials < 20:
		return fmt.Errorf("audit: ReleaseAuditConfig.Trials = %d: want at least 20 a world", c.Trials)
	case !(c.Confidence > 0.5 && c.Confidence < 1):
		return fmt.Errorf("audit: ReleaseAuditConfig.Confidence = %v: want a number in (0.5, 1)", c.Confidence)
	}
	nf := len(c.X[0])
	for i, row := range append(slices.Clone(c.X), c.Candidates...) {
		if len(row) != nf || nf == 0 {
			return fmt.Errorf("audit: ReleaseAuditConfig: row %d has %d features, row 0 %d", i, len(row), nf)
		}
	}
	if c.Params != nil && len(c.Params) != nf+1 {
		return fmt.Errorf("audit: ReleaseAuditConfig.Params: %d numbers, want %d (a weight a feature and the bias)", len(c.Params), nf+1)
	}
	return nil
}

// quiet is the Gaussian mechanism without noise: only the grid rounding
// (privacy/noise's Gaussian at z = 0 is the same).
type quiet struct{}

func (quiet) Gaussian(v []float64, sensitivity, z float64) {
	g := noise.Grid(sensitivity, len(v))
	for i, x := range v {
		v[i] = g * math.RoundToEven(x/g)
	}
}

// releaser makes one release of a world: the canary candidate c in its
// slot or a null record there, at noise multiplier z drawn from st.
type releaser struct {
	candidates int
	release    func(c int, with bool, z float64, st method.Gaussian) ([]float64, error)
}

// releaser returns the release function of c.Release and its L2
// sensitivity.
func (c ReleaseAuditConfig) releaser() (releaser, float64, error) {
	cands, candY := c.Candidates, c.CandidateY
	fromD := cands == nil
	if fromD {
		cands, candY = c.X, c.Y
	}
	// world returns D and the canary: with it last, or without it.
	world := func(ci int, with bool) ([][]float64, []float64) {
		x, y := c.X, c.Y
		if fromD { // D without the candidate
			x = slices.Delete(slices.Clone(x), ci, ci+1)
			if y != nil {
				y = slices.Delete(slices.Clone(y), ci, ci+1)
			}
		}
		if !with {
			return x, y
		}
		x = append(slices.Clone(x), cands[ci])
		if y != nil {
			y = append(slices.Clone(y), candY[ci])
		}
		return x, y
	}
	m := len(c.X) + 1
	if fromD {
		m = len(c.X)
	}
	slots := func(n int) []int {
		rows := make([]int, n)
		for i := range rows {
			rows[i] = i
		}
		return rows
	}
	// raws caches the noiseless computation of each world (the same in
	// every trial); the release's noise and post-processing run each
	// trial, in the site's own function.
	type rawKey struct {
		c    int
		with bool
	}
	var mu sync.Mutex
	raws := map[rawKey][]float64{}
	cached := func(ci int, with bool, compute func() ([]float64, float64, error)) ([]float64, error) {
		mu.Lock()
		defer mu.Unlock()
		k := rawKey{ci, with}
		if r, ok := raws[k]; ok {
			return r, nil
		}
		r, _, err := compute()
		if err == nil {
			raws[k] = r
		}
		return r, err
	}
	switch c.Release {
	case DescriptorRelease:
		sens := math.Sqrt(48) / float64(m)
		return releaser{len(cands), func(ci int, with bool, z float64, st method.Gaussian) ([]float64, error) {
			raw, err := cached(ci, with, func() ([]float64, float64, error) {
				x, _ := world(ci, with)
				return tda.DPDescriptor(x, slots(len(x)), tda.DPDescriptorOptions{M: m})
			})
			if err != nil {
				return nil, err
			}
			_, noisy, err := method.NoiseDPDescriptor(raw, sens, m, z, st)
			return noisy, err
		}}, sens, nil
	case LabelSummaryRelease:
		sens := float64(m-1) / float64(m*m)
		return releaser{len(cands), func(ci int, with bool, z float64, st method.Gaussian) ([]float64, error) {
			raw, err := cached(ci, with, func() ([]float64, float64, error) {
				x, y := world(ci, with)
				return tda.DPLabelRaw(x, y, slots(len(x)), tda.DPLabelOptions{M: m})
			})
			if err != nil {
				return nil, err
			}
			_, noisy, err := method.NoiseDPLabelSummary(raw, sens, m, z, st)
			return noisy, err
		}}, sens, nil
	case MetricsRelease:
		site, params, err := c.scoring()
		if err != nil {
			return releaser{}, 0, err
		}
		return releaser{min(len(cands), 1), func(ci int, with bool, z float64, st method.Gaussian) ([]float64, error) {
			x, y := world(ci, with)
			_, _, noisy, err := method.ReleaseDPScores(site, params, learn.Data{X: x, Y: y}, z, st)
			return noisy, err
		}}, 1, nil
	case Top1Release:
		n := len(c.X)
		return releaser{1, func(_ int, with bool, z float64, st method.Gaussian) ([]float64, error) {
			right := float64(n / 2)
			if with {
				right++ // the canary is classified right
			}
			_, noisy := method.ReleaseDPTop1(right, n+1, z, st)
			return []float64{noisy}, nil
		}}, 1, nil
	}
	return releaser{}, 0, errors.New("audit: unknown release") // not reached: validated
}

// scoring returns the logistic model the metrics release scores with:
// the campaigns' logistic site configuration under dp record and Params
// (default: weight 1 on every feature, bias 0).
func (c ReleaseAuditConfig) scoring() (learn.SiteConfig, []float64, error) {
	h := method.Defaults(method.Default)
	h.DP, h.DPNoise = method.DPRecord, 1
	cfg, err := method.Resolve(learn.FedAvg, method.Default, h)
	if err != nil {
		return learn.SiteConfig{}, nil, fmt.Errorf("audit: metrics: %w", err)
	}
	params := c.Params
	if params == nil {
		params = make([]float64, len(c.X[0])+1)
		for j := range len(c.X[0]) {
			params[j] = 1
		}
	}
	return cfg.Site, params, nil
}

// distance is the Euclidean distance of a and b.
func distance(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += (a[i] - b[i]) * (a[i] - b[i])
	}
	return math.Sqrt(s)
}
