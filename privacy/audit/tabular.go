package audit

import (
	"errors"
	"fmt"
	"math"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/privacy"
	"github.com/ptopofl/ptopofl/privacy/noise"
)

// TabularSiteConfig configures a TabularSite. Zero fields take the
// defaults named on them, the repository's default preset.
type TabularSiteConfig struct {
	// X and Y are the pool: raw feature rows and 0/1 labels. LiRA's record
	// i is row i.
	X [][]float64
	Y []float64
	// Rounds (default 15) and Steps (default 30) are the campaign's R
	// rounds of S local full-batch steps, at step size LR (default 0.05).
	Rounds, Steps int
	LR            float64
	// C is the logistic model's inverse penalty strength (default 1;
	// +Inf for no penalty).
	C float64
	// InitScale scales θ0's normal coefficients (default 0.01); θ0 is the
	// same for every model, as a campaign's initial model is.
	InitScale float64
	// Epsilon is the ε of the whole local training (the R·S steps) at
	// Delta; 0 trains without DP.
	Epsilon float64
	// Delta is δ (default 1e-5) and Clip DP-GD's clipping norm C (default
	// 1.5).
	Delta, Clip float64
	// Seed draws θ0 (and the site secret when Secret is the zero Secret).
	Seed uint64
	// Secret is the site's secret the noise comes from; the zero Secret
	// means a fixed one derived from Seed.
	Secret noise.Secret
}

// TabularSite is LiRA's adapter for a site's logistic model: its Train
// and Score methods are LiRA's train and score functions. It is safe for
// concurrent use.
type TabularSite struct {
	cfg    TabularSiteConfig
	model  learn.Logistic
	theta0 []float64
	z, eps float64
	secret noise.Secret
}

// NewTabularSite returns the LiRA adapter for a site that trains logistic
// regression on a pool's rows as one site training alone for a whole
// campaign: R rounds of S full-batch gradient steps at LR from θ0
// (learn.GradientDescent, which is what a FedAvg site does when no other
// site's model is averaged in: the worst case for its records). Under DP
// the steps are learn.DPGradientDescent with clip C and the noise
// multiplier that makes the R·S steps (ε, δ)-DP,
// privacy.NoiseMultiplier(ε, δ, q = 1, R·S, GDP) = √(R·S)/μ, each
// round's noise from its own privacy/noise stream keyed by model and
// round, as a site draws it. It trains on raw features, as a site under
// dp record does.
//
// A model costs R·S gradient steps over its members: about 5 ms for 100
// rows of 20 features at the defaults. It returns an error, naming the
// field, for an invalid pool or settings.
func NewTabularSite(cfg TabularSiteConfig) (*TabularSite, error) {
	cfg.Rounds = orDefault(cfg.Rounds, 15)
	cfg.Steps = orDefault(cfg.Steps, 30)
	t := localTraining{X: cfg.X, Y: cfg.Y, LR: cfg.LR, C: cfg.C, InitScale: cfg.InitScale, Epsilon: cfg.Epsilon, Delta: cfg.Delta, Clip: cfg.Clip}
	d, err := t.resolve("TabularSiteConfig")
	if err != nil {
		return nil, err
	}
	cfg.LR, cfg.C, cfg.InitScale, cfg.Delta, cfg.Clip = t.LR, t.C, t.InitScale, t.Delta, t.Clip
	if cfg.Rounds < 1 || cfg.Steps < 1 {
		return nil, fmt.Errorf("audit: TabularSiteConfig.Rounds, Steps = %d, %d: want at least 1 each", cfg.Rounds, cfg.Steps)
	}
	nf := d.NumFeatures()
	s := &TabularSite{
		cfg: cfg, model: learn.Logistic{Features: nf, C: cfg.C},
		theta0: initialModel(nf, cfg.Seed, cfg.InitScale),
		secret: siteSecret(cfg.Secret, cfg.Seed),
	}
	if cfg.Epsilon > 0 {
		steps := cfg.Rounds * cfg.Steps
		z, err := privacy.NoiseMultiplier(cfg.Epsilon, cfg.Delta, 1, steps, privacy.GDP)
		if err != nil {
			return nil, fmt.Errorf("audit: TabularSiteConfig: %w", err)
		}
		spent, err := privacy.Epsilon([]privacy.Event{{Z: z, Q: 1, Count: steps}}, cfg.Delta, privacy.GDP)
		if err != nil {
			return nil, fmt.Errorf("audit: TabularSiteConfig: %w", err)
		}
		s.z, s.eps = z, spent.Epsilon
	}
	return s, nil
}

// NoiseMultiplier returns the z of every DP-GD step (0 without DP).
func (s *TabularSite) NoiseMultiplier() float64 { return s.z }

// Epsilon returns the accountant's ε of one model's whole training at
// the configured δ (0 without DP).
func (s *TabularSite) Epsilon() float64 { return s.eps }

// Train trains model index on the pool rows members and returns its
// parameters ([]float64: the coefficients, then the intercept).
func (s *TabularSite) Train(members []int, index int) (Model, error) {
	if len(members) == 0 {
		return nil, errors.New("audit: tabular site: no members to train on")
	}
	d := learn.Data{X: make([][]float64, len(members)), Y: make([]float64, len(members))}
	for k, i := range members {
		if i < 0 || i >= len(s.cfg.X) {
			return nil, fmt.Errorf("audit: tabular site: member %d is not a row of the pool of %d", i, len(s.cfg.X))
		}
		d.X[k], d.Y[k] = s.cfg.X[i], s.cfg.Y[i]
	}
	theta := s.theta0
	if s.z == 0 {
		return learn.GradientDescent(s.model, d, theta, s.cfg.LR, s.cfg.Rounds*s.cfg.Steps, nil), nil
	}
	dp := &learn.DPConfig{Clip: s.cfg.Clip, NoiseMultiplier: s.z}
	for r := range s.cfg.Rounds {
		dp.Random = s.secret.Stream(noise.Key{
			Campaign: "audit/lira", Round: r + 1, Site: fmt.Sprintf("model%d", index), Purpose: "train",
			Input: keyInput(s.cfg.Seed),
		})
		var err error
		if theta, err = learn.DPGradientDescent(s.model, d, theta, s.cfg.LR, s.cfg.Steps, nil, dp); err != nil {
			return nil, fmt.Errorf("audit: tabular site model %d round %d: %w", index, r+1, err)
		}
	}
	return theta, nil
}

// Score returns φ = ln(p/(1 − p)) of model m (from Train) for row record's
// true label: the logit w·x + b for label 1 and its negative for label 0,
// exact and unclipped (p itself would round to 1 beyond a logit of 37).
// It returns NaN for a model Train did not make or a record outside the
// pool, which LiRA reports.
func (s *TabularSite) Score(m Model, record int) float64 {
	theta, ok := m.([]float64)
	if !ok || len(theta) != s.model.NumParams() || record < 0 || record >= len(s.cfg.X) {
		return math.NaN()
	}
	z := theta[len(theta)-1]
	for j, v := range s.cfg.X[record] {
		z += theta[j] * v
	}
	if s.cfg.Y[record] == 0 {
		return -z
	}
	return z
}
