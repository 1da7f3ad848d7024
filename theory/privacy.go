package theory

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/privacy"
	"github.com/ptopofl/ptopofl/privacy/audit"
	"github.com/ptopofl/ptopofl/tda"
)

// PrivacySite is the site Thm 3.7 is measured on: its raw training rows
// and labels, its test rows (the population the typical canary comes
// from) and the seed its descriptor subsample is drawn with.
type PrivacySite struct {
	Name          string
	X             [][]float64
	Y             []float64
	XTest         [][]float64
	YTest         []float64
	SubsampleSeed uint64
}

// PrivacyOptions configure CheckThm37: the campaign's configuration (the
// site's descriptor and local update), the attack's trials and seed, and
// the dp record budget whose per-release costs it reports, planned over
// Rounds rounds for a federation of the given record counts (method.
// PlanPrivacy, as a campaign under dp record plans it).
type PrivacyOptions struct {
	Config  method.Config
	Preset  string
	Trials  int
	Seed    uint64
	Epsilon float64
	Rounds  int
	Records []method.SiteRecords
	// CVector is the descriptor's measured sensitivity to the data
	// (Cor34Federation.CVector), shown as the premise c.
	CVector float64
}

// MatchedAttack is one distinguishing test of Thm 3.7's check: an attacker
// who knows the site's other records and the canary sees one release and
// says whether the canary was among the records.
type MatchedAttack struct {
	Release string  `json:"release"`
	Canary  string  `json:"canary"`
	AUC     float64 `json:"auc"`
	// TPRAt0001 is the true-positive rate at a 0.1 % false-positive rate.
	TPRAt0001 float64 `json:"tpr_at_0001"`
	// EpsilonLB is the empirical lower bound on the release's privacy
	// loss ε from the trials (audit.EpsilonLowerBound, 95 % confidence):
	// what the attack proves leaks.
	EpsilonLB float64 `json:"epsilon_lb"`
	// Epsilon is the accountant's ε of the release under dp record (0
	// without DP).
	Epsilon float64 `json:"epsilon,omitempty"`
}

// ReleaseCost is what one release costs a site under dp record, by the
// accountant (privacy.Epsilon at the campaign's δ).
type ReleaseCost struct {
	Release string  `json:"release"`
	Noise   float64 `json:"noise"`
	Epsilon float64 `json:"epsilon"`
}

// Thm37Result is Thm 3.7 measured: its premises, the matched attacks, and
// the per-release costs under dp record.
type Thm37Result struct {
	Site    string `json:"site"`
	Records int    `json:"records"`
	// Trials is the number of releases per world of each attack.
	Trials int `json:"trials"`
	// M is the number of descriptor numbers a site releases, P the
	// model's parameters: the theorem's factor m/p.
	M int `json:"m"`
	P int `json:"p"`
	// LipschitzX is the loss's Lipschitz constant in x at the site's
	// round-1 model, ‖w‖ of its coefficients (|σ(z) − y| ≤ 1): finite, so
	// premise 1 holds. CVector is the descriptor's measured sensitivity
	// ‖φ(X') − φ(X)‖/d_H(X, X') (premise 2, c-stability, as the released
	// vector).
	LipschitzX float64         `json:"lipschitz_x"`
	CVector    float64         `json:"c_vector"`
	Attacks    []MatchedAttack `json:"attacks"`
	// DPEpsilon is the campaign budget the costs are planned for, Delta
	// its δ, Costs the per-release ε and DPAttacks the DP descriptor's
	// attack at its per-release ε.
	DPEpsilon float64         `json:"dp_epsilon"`
	Delta     float64         `json:"delta"`
	Costs     []ReleaseCost   `json:"costs"`
	Campaign  float64         `json:"campaign_epsilon"`
	DPAttacks []MatchedAttack `json:"dp_attacks"`
}

// Names of the releases CheckThm37 attacks.
const (
	ReleaseSecretDescriptor = "descriptor, secret subsample"
	ReleaseSystemDescriptor = "descriptor, the site's subsample"
	ReleaseModel            = "model after round 1"
	ReleaseGradient         = "gradient at round 1's start"
)

// CheckThm37 measures what Thm 3.7 is about, the descriptor against the
// gradient, at matched settings: one attacker (it knows the site's other
// records D and a canary, sees one release and tells D from D ∪ {canary};
// audit.DescriptorMembership's test, with its outlier and typical
// canaries), four releases of the same rows:
//   - the paper's descriptor on a subsample drawn from a secret stream in
//     every trial (the privacy experiment's attack);
//   - the descriptor as the site computes it (tda.ComputeDescriptor with
//     the campaign's variant, n_sub and the site's subsample seed, which
//     is derived from the campaign seed in the spec, so the attacker can
//     draw it too);
//   - the model the site sends after round 1 (method.PrepareSite, then
//     learn.UpdateSite with the campaign's site configuration);
//   - the gradient G = ∇F_k(w⁰) of the site's objective at the model it
//     starts round 1 from (the theorem's G).
//
// The outlier canary is labelled 1; a typical canary keeps its test
// label. It also reports the premises and, for a dp record campaign at
// opt.Epsilon, what each release costs and the DP descriptor's attack at
// the descriptor release's ε.
func CheckThm37(site PrivacySite, opt PrivacyOptions) (Thm37Result, error) {
	cfg := opt.Config
	res := Thm37Result{Site: site.Name, Records: len(site.X), Trials: opt.Trials, M: tda.DescriptorLen, P: len(site.X[0]) + 1, CVector: opt.CVector}
	if cfg.LabelAware() {
		res.M = tda.ExtendedDescriptorLen
	}
	label := func(row []float64, i, n int) float64 {
		if i < n {
			return site.Y[i]
		}
		if j := slices.IndexFunc(site.XTest, func(x []float64) bool { return slices.Equal(x, row) }); j >= 0 {
			return site.YTest[j]
		}
		return 1
	}
	// The model and the gradient are deterministic: each world's is
	// computed once per canary (the last row identifies it).
	type key struct {
		what  string
		world int
		last  *float64
	}
	var mu sync.Mutex
	cache := map[key][]float64{}
	cached := func(what string, rows [][]float64, world int, f func() ([]float64, error)) ([]float64, error) {
		k := key{what, world, &rows[len(rows)-1][0]}
		mu.Lock()
		v, ok := cache[k]
		mu.Unlock()
		if ok {
			return v, nil
		}
		v, err := f()
		if err != nil {
			return nil, err
		}
		mu.Lock()
		cache[k] = v
		mu.Unlock()
		return v, nil
	}
	descOpt := tda.DescriptorOptions{Variant: cfg.Descriptor, NSub: cfg.NSub, Seed: site.SubsampleSeed}
	update := func(rows [][]float64) (learn.SiteOutput, learn.Data, error) {
		y := make([]float64, len(rows))
		for i, r := range rows {
			y[i] = label(r, i, len(site.X))
		}
		p, err := method.PrepareSite(site.Name, rows, y, site.XTest, site.YTest)
		if err != nil {
			return learn.SiteOutput{}, learn.Data{}, err
		}
		d, err := tda.ComputeDescriptor(rows, descOpt)
		if err != nil {
			return learn.SiteOutput{}, learn.Data{}, err
		}
		train, _ := p.Splits(false)
		out, err := learn.UpdateSite(learn.SiteInput{Method: cfg.Method, Round: 1, Seed: uint32(opt.Seed),
			Train: train, TopologyX: rows, Descriptor: d.Vector, Config: cfg.Site})
		return out, train, err
	}
	releases := []audit.MatchedRelease{
		{Name: ReleaseSystemDescriptor, Compute: func(rows [][]float64, world, _ int) ([]float64, error) {
			return cached("descriptor", rows, world, func() ([]float64, error) {
				d, err := tda.ComputeDescriptor(rows, descOpt)
				return d.Vector, err
			})
		}},
		{Name: ReleaseModel, Compute: func(rows [][]float64, world, _ int) ([]float64, error) {
			return cached("model", rows, world, func() ([]float64, error) {
				out, _, err := update(rows)
				return out.Params, err
			})
		}},
		{Name: ReleaseGradient, Compute: func(rows [][]float64, world, _ int) ([]float64, error) {
			return cached("gradient", rows, world, func() ([]float64, error) {
				_, train, err := update(rows)
				if err != nil {
					return nil, err
				}
				m := cfg.Site.Model(train.NumFeatures())
				w0 := learn.InitialParams(m.NumParams()-1, uint32(opt.Seed), cfg.Site.InitScale)
				g := make([]float64, m.NumParams())
				m.MeanGradient(w0, train, g)
				return g, nil
			})
		}},
	}
	rs, err := audit.DescriptorMembership(audit.DescriptorConfig{X: site.X, Population: site.XTest, Trials: opt.Trials,
		NSub: cfg.NSub, Seed: opt.Seed, Conditions: []audit.DescriptorCondition{audit.PaperDescriptor}, Releases: releases})
	if err != nil {
		return res, fmt.Errorf("theory: Thm 3.7 attacks: %w", err)
	}
	for _, r := range rs {
		res.Attacks = append(res.Attacks, matched(r))
	}
	out, _, err := update(site.X)
	if err != nil {
		return res, fmt.Errorf("theory: Thm 3.7: site %s: %w", site.Name, err)
	}
	res.LipschitzX = norm(out.Params[:len(out.Params)-1])

	if opt.Epsilon > 0 {
		if err := res.dpCosts(site, opt); err != nil {
			return res, err
		}
	}
	return res, nil
}

// matched names a membership result by its release and canary
// ("descriptor/<condition>/<canary>" or "release/<name>/<canary>").
func matched(r audit.MembershipResult) MatchedAttack {
	a := MatchedAttack{Release: r.Attack, AUC: r.AUC, TPRAt0001: r.TPRAt01Percent, EpsilonLB: r.EpsilonLowerBound, Epsilon: r.Epsilon}
	parts := strings.Split(r.Attack, "/")
	if len(parts) != 3 {
		return a
	}
	a.Canary = parts[2]
	switch {
	case parts[0] == "descriptor" && parts[1] == string(audit.PaperDescriptor):
		a.Release = ReleaseSecretDescriptor
	case parts[0] == "descriptor":
		a.Release = "DP descriptor"
	default:
		a.Release = parts[1]
	}
	return a
}

// dpCosts plans a dp record campaign at opt.Epsilon (method.PlanPrivacy,
// with the defaults dp record brings) and prices one release of each
// kind, then attacks the DP descriptor at its per-release ε.
func (res *Thm37Result) dpCosts(site PrivacySite, opt PrivacyOptions) error {
	h := method.Defaults(opt.Preset)
	h, err := h.Apply([]method.ParamValue{{Name: "dp", Text: method.DPRecord}, {Name: "dp_epsilon", Value: opt.Epsilon},
		{Name: "detector", Text: string(opt.Config.Server.Detector)}})
	if err != nil {
		return fmt.Errorf("theory: Thm 3.7: %w", err)
	}
	h = method.DPDefaults(h, func(string) bool { return false })
	h, budgets, err := method.PlanPrivacy(opt.Config.Method, opt.Preset, h, opt.Rounds, opt.Records)
	if err != nil {
		return fmt.Errorf("theory: Thm 3.7: dp record plan: %w", err)
	}
	cfg, err := method.Resolve(opt.Config.Method, opt.Preset, h)
	if err != nil {
		return fmt.Errorf("theory: Thm 3.7: %w", err)
	}
	res.DPEpsilon, res.Delta = opt.Epsilon, cfg.DP.Delta
	for _, b := range budgets {
		res.Campaign = math.Max(res.Campaign, b.Epsilon.Epsilon)
	}
	price := func(name string, events []privacy.Event, z float64) error {
		s, err := privacy.Epsilon(events, cfg.DP.Delta, privacy.Auto)
		if err != nil {
			return fmt.Errorf("theory: Thm 3.7: %s: %w", name, err)
		}
		res.Costs = append(res.Costs, ReleaseCost{Release: name, Noise: z, Epsilon: s.Epsilon})
		return nil
	}
	if err := price("descriptor", []privacy.Event{{Z: cfg.DP.DescriptorNoise, Q: 1, Count: 1}}, cfg.DP.DescriptorNoise); err != nil {
		return err
	}
	if cfg.LabelAware() {
		if err := price("label summary", []privacy.Event{{Z: cfg.DP.DescriptorNoise, Q: 1, Count: 1}}, cfg.DP.DescriptorNoise); err != nil {
			return err
		}
	}
	rec := method.SiteRecords{Site: site.Name, Train: len(site.X), Test: len(site.XTest)}
	if err := price("model (one round of DP-GD)", cfg.RoundCharges(rec, false).Train, cfg.DP.Noise); err != nil {
		return err
	}
	if err := price("metrics (one round)", cfg.RoundCharges(rec, false).Test, cfg.DP.MetricsNoise); err != nil {
		return err
	}
	descEps := res.Costs[0].Epsilon
	rs, err := audit.DescriptorMembership(audit.DescriptorConfig{X: site.X, Population: site.XTest, Trials: 4 * opt.Trials,
		Epsilon: descEps, Delta: cfg.DP.Delta, Seed: opt.Seed, Conditions: []audit.DescriptorCondition{audit.DPDescriptorCondition}})
	if err != nil {
		return fmt.Errorf("theory: Thm 3.7: DP descriptor attack: %w", err)
	}
	for _, r := range rs {
		res.DPAttacks = append(res.DPAttacks, matched(r))
	}
	return nil
}
