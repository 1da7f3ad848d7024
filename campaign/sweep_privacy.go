package campaign

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/privacy"
	"github.com/ptopofl/ptopofl/search"
	"github.com/ptopofl/ptopofl/store"
)

// SweepFilePrivacy is a sweep file's privacy: {epsilon: E, delta: D}, the
// budget every site keeps over the whole sweep (every release of every
// campaign and the selection) under dp record. δ defaults to the
// campaigns' dp_delta.
type SweepFilePrivacy struct {
	Epsilon float64 `yaml:"epsilon"` // ε of each site over the whole sweep
	Delta   float64 `yaml:"delta"`   // δ (default the campaigns' dp_delta, 1e-5)
}

// sweepBudgetSlack is how far above the budget the bisection of a grid's
// campaign budget may leave a site's composed ε: the roots of the plan are
// exact up to their last bits.
const sweepBudgetSlack = 1e-9

// PlanSweepPrivacyBudget plans the noise of a sweep's campaigns under dp
// record as PlanSweepPrivacy does, and with a budget b (the sweep file's
// privacy:) sizes them so that no site's releases over the whole sweep
// pass (b.Epsilon, b.Delta). The accounting is plain composition, exact
// for Gaussian releases (the sweep's selection is post-processing of
// released validation metrics, and costs nothing):
//
//   - a grid: every campaign is known, and runs its rounds; each gets the
//     same dp_epsilon ε_c, the largest for which the composition of every
//     campaign a site takes part in (each campaign's planned releases, by
//     the accountant that applies: Gaussian DP, or RDP for DP-SGD) stays
//     within b at every site, found by bisection;
//   - a search: the trials are not known, but a site takes part in at most
//     B campaign-rounds (the budget's campaign-rounds, or its trials cap
//     times the seeds times the rounds); every campaign-round is given at
//     most μ(b)²/B of Gaussian DP's μ² on each split, by planning the
//     noise of a one-round campaign at ε = GaussianEpsilon(μ(b)/√B, δ) for
//     the trial configuration the search space allows that releases most
//     (its largest number of local steps, say); every trial runs with that
//     noise, and its rounds release no more than the planned round. Since
//     μ² adds exactly over Gaussian releases (Dong, Roth & Su 2019), B of
//     them stay within μ(b). This needs every release to read every record
//     (tabular models); a deep model's DP-SGD is refused here. Rounds a
//     strategy never trains are never released, so an adaptive sweep that
//     prunes spends less than b.
//
// Papernot & Steinke's random stopping (a random number of trials, only
// the best released) does not apply: the server sees every trial's
// releases, not the best's alone. The plan is recorded in the spec
// (PrivacyBudget); the site's own budget (worker --privacy-budget) holds
// besides.
func PlanSweepPrivacyBudget(s pipeline.SweepSpec, fedDirs map[string]string, b *SweepFilePrivacy) (pipeline.SweepSpec, error) {
	count := func(fedName, site string, h method.Hyperparameters) (int, int, error) {
		dir, ok := fedDirs[fedName]
		if !ok {
			return 0, 0, fmt.Errorf("its directory is unknown")
		}
		fed, err := DiscoverFederation(dir)
		if err != nil {
			return 0, 0, err
		}
		return countRecords(fed, site, h)
	}
	return planSweepBudget(s, count, b)
}

func planSweepBudget(s pipeline.SweepSpec, count recordCounter, b *SweepFilePrivacy) (pipeline.SweepSpec, error) {
	if b == nil {
		return planSweepPrivacy(s, count)
	}
	s = s.WithDefaults()
	if !(b.Epsilon > 0) || math.IsInf(b.Epsilon, 1) {
		return s, inputErrorf("sweep file: privacy.epsilon = %v: must be a positive finite number", b.Epsilon)
	}
	delta := b.Delta
	for i := range s.Methods {
		m := &s.Methods[i]
		h := m.Hyperparameters
		if !h.IsDP() {
			return s, inputErrorf("sweep file: privacy: needs hyperparameters dp: record (method %s would release exact values, which no ε bounds)", m.Method)
		}
		for _, f := range []struct {
			name string
			set  bool
		}{{"dp_epsilon", h.DPEpsilon != 0}, {"dp_noise", h.DPNoise != 0}, {"dp_metrics_noise", h.DPMetricsNoise != 0},
			{"dp_descriptor_noise", h.DPDescriptorNoise != 0}, {"dp_validation_noise", h.DPValidationNoise != 0}} {
			if f.set {
				return s, inputErrorf("sweep file: hyperparameters.%s: privacy: sizes every campaign's noise from the sweep's budget; leave it out", f.name)
			}
		}
		d := h.DPDelta
		if d == 0 {
			d = 1e-5 // dp_delta's default (a Quiet parameter stores its default as 0)
		}
		switch {
		case delta == 0:
			delta = d
		case h.DPDelta != 0 && h.DPDelta != delta:
			return s, inputErrorf("sweep file: privacy.delta = %v and hyperparameters.dp_delta = %v differ; give one", delta, h.DPDelta)
		}
	}
	if !(delta > 0 && delta < 1) {
		return s, inputErrorf("sweep file: privacy.delta = %v: must be in (0, 1)", delta)
	}
	for i := range s.Methods {
		h := s.Methods[i].Hyperparameters
		p, _ := method.Lookup("dp_delta")
		if err := p.Set(&h, method.Value{Num: delta}); err != nil {
			return s, inputErrorf("sweep file: privacy.delta: %v", err)
		}
		s.Methods[i].Hyperparameters = h
	}
	for _, set := range s.Settings {
		for _, pv := range set.Set {
			if isNoiseParam(pv.Name) {
				return s, inputErrorf("sweep file: setting %s sets %s: privacy: sizes every campaign's noise from the sweep's budget", set.Label, pv.Name)
			}
		}
	}
	if s.Search != nil {
		return planSearchBudget(s, count, b.Epsilon, delta)
	}
	return planGridBudget(s, count, b.Epsilon, delta)
}

// isNoiseParam reports the parameters the sweep's budget plans.
func isNoiseParam(name string) bool {
	switch name {
	case "dp", "dp_epsilon", "dp_delta", "dp_noise", "dp_metrics_noise", "dp_descriptor_noise", "dp_validation_noise":
		return true
	}
	return false
}

// withCampaignBudget returns s with every method's dp_epsilon set to eps.
func withCampaignBudget(s pipeline.SweepSpec, eps float64) pipeline.SweepSpec {
	s.Methods = slices.Clone(s.Methods)
	for i := range s.Methods {
		s.Methods[i].Hyperparameters.DPEpsilon = eps
	}
	return s
}

// siteSpend composes, per site name, the planned releases of campaigns
// (their full schedules) at delta, and returns the largest ε of any site
// and split and each site's campaign-rounds.
func siteSpend(campaigns []pipeline.SweepCampaign, delta float64) (float64, map[string]int, error) {
	type ledger struct{ train, test []privacy.Event }
	bySite := map[string]*ledger{}
	rounds := map[string]int{}
	var order []string
	for _, c := range campaigns {
		for _, site := range c.Spec.Sites {
			rec := method.SiteRecords{Site: site.Name, Train: site.NTrain, Test: site.NTest}
			ch := method.CampaignCharges(c.Method, c.Spec.Preset, c.Spec.Hyperparameters, c.Spec.Rounds, rec)
			l, ok := bySite[site.Name]
			if !ok {
				l = &ledger{}
				bySite[site.Name] = l
				order = append(order, site.Name)
			}
			l.train = method.MergeEvents(append(l.train, ch.Train...))
			l.test = method.MergeEvents(append(l.test, ch.Test...))
			rounds[site.Name] += c.Spec.Rounds
		}
	}
	worst := 0.0
	for _, site := range order {
		sp, err := method.Spend(method.Charges{Train: bySite[site].train, Test: bySite[site].test}, delta)
		if err != nil {
			return 0, nil, fmt.Errorf("site %s: %w", site, err)
		}
		worst = max(worst, sp.Epsilon.Epsilon)
	}
	return worst, rounds, nil
}

// planGridBudget gives every campaign of a grid the largest common
// dp_epsilon ε_c for which every site's composition of all its campaigns
// stays within eps at delta (bisection to 1e-6 of eps; the plan of each
// campaign within ε_c is method.PlanPrivacy's).
func planGridBudget(s pipeline.SweepSpec, count recordCounter, eps, delta float64) (pipeline.SweepSpec, error) {
	try := func(ec float64) (pipeline.SweepSpec, float64, map[string]int, error) {
		planned, err := planSweepPrivacy(withCampaignBudget(s, ec), count)
		if err != nil {
			return planned, 0, nil, err
		}
		cs, err := planned.Campaigns()
		if err != nil {
			return planned, 0, nil, inputErrorf("%v", err)
		}
		worst, rounds, err := siteSpend(cs, delta)
		return planned, worst, rounds, err
	}
	var best pipeline.SweepSpec
	var bestRounds map[string]int
	found := false
	lo, hi := 0.0, eps
	for i := 0; i < 60 && hi-lo > 1e-6*eps; i++ {
		mid := lo + (hi-lo)/2
		if i == 0 {
			mid = eps // a sweep of one campaign a site takes the whole budget
		}
		planned, worst, rounds, err := try(mid)
		switch {
		case err != nil || worst > eps*(1+sweepBudgetSlack):
			hi = mid
		default:
			best, bestRounds, found = planned, rounds, true
			lo = mid
		}
		if i == 0 && found {
			break
		}
	}
	if !found {
		_, worst, _, err := try(lo + (hi-lo)/2)
		if err != nil {
			return s, inputErrorf("sweep file: privacy.epsilon = %v: no plan fits the sweep's campaigns within it: %v", eps, err)
		}
		return s, inputErrorf("sweep file: privacy.epsilon = %v: the sweep's campaigns spend ε %.4g at a site even with the least noise found; run fewer", eps, worst)
	}
	most := 0
	for _, r := range bestRounds {
		most = max(most, r)
	}
	best.PrivacyBudget = &pipeline.SweepPrivacyBudget{Epsilon: eps, Delta: delta, CampaignRounds: most}
	return best, nil
}

// planSearchBudget sizes the noise of every trial of a search sweep: each
// campaign-round within μ(eps, delta)²/B of Gaussian DP's μ² on each split
// (see PlanSweepPrivacyBudget), planned for the configuration of the space
// that releases most.
func planSearchBudget(s pipeline.SweepSpec, count recordCounter, eps, delta float64) (pipeline.SweepSpec, error) {
	q := s.Search
	b := searchCampaignRounds(s)
	if b <= 0 {
		return s, inputErrorf("sweep file: privacy: a search needs a limit to size its trials' noise by: budget.campaign_rounds or budget.trials")
	}
	mu, err := privacy.GaussianMu(eps, delta)
	if err != nil {
		return s, inputErrorf("sweep file: privacy: %v", err)
	}
	perRound, err := privacy.GaussianEpsilon(mu/math.Sqrt(float64(b)), delta)
	if err != nil {
		return s, inputErrorf("sweep file: privacy: %v", err)
	}
	space, err := search.NewSpace(q.Dims)
	if err != nil {
		return s, inputErrorf("sweep file: search: %v", err)
	}
	for _, d := range q.Dims {
		if isNoiseParam(d.Name) {
			return s, inputErrorf("sweep file: search.%s: privacy: sizes every trial's noise from the sweep's budget; it cannot be searched", d.Name)
		}
	}
	m := s.Methods[0]
	// Every site's record counts (the plan's δ check reads the smallest).
	feds := slices.Clone(s.Federations)
	var recs []method.SiteRecords
	for i := range feds {
		f := &feds[i]
		sites := make([]pipeline.Site, len(f.Sites))
		for j, site := range f.Sites {
			n, t, err := count(f.Name, site.Name, m.Hyperparameters)
			if err != nil {
				return s, inputErrorf("federation %s site %s: dp record needs its record counts: %v", f.Name, site.Name, err)
			}
			sites[j] = pipeline.Site{Name: site.Name, NTrain: n, NTest: t}
			recs = append(recs, method.SiteRecords{Site: site.Name, Train: n, Test: t})
		}
		f.Sites = sites
	}
	if m.Hyperparameters.IsDeep() || m.Hyperparameters.IsExternal() {
		return s, inputErrorf("sweep file: privacy: a search sweep's accounting needs releases that read every record (Gaussian DP adds exactly); model %q is not one (DP-SGD samples): run it without privacy:, under each site's own budget", m.Hyperparameters.Model)
	}
	worst, err := heaviestConfig(m.Method, s.Preset, m.Hyperparameters, space, recs)
	if err != nil {
		return s, err
	}
	worst.DPEpsilon = perRound
	planned, _, err := method.PlanPrivacy(m.Method, s.Preset, worst, 1, recs)
	if err != nil {
		return s, inputErrorf("sweep file: privacy.epsilon = %v over %d campaign-rounds (ε %.4g a round): %v", eps, b, perRound, err)
	}
	h := m.Hyperparameters
	h.DPNoise, h.DPMetricsNoise = planned.DPNoise, planned.DPMetricsNoise
	h.DPDescriptorNoise, h.DPValidationNoise = planned.DPDescriptorNoise, planned.DPValidationNoise
	s.Methods = []pipeline.SweepMethod{{Method: m.Method, Hyperparameters: h}}
	s.Federations = feds
	s.Privacy = nil
	s.PrivacyBudget = &pipeline.SweepPrivacyBudget{Epsilon: eps, Delta: delta, CampaignRounds: b}
	return s, nil
}

// searchCampaignRounds is the most campaign-rounds one site of a search
// sweep can take part in: the budget's campaign-rounds, or the trials cap
// times the site's campaigns a trial (its federations' seeds) times the
// rounds, whichever is smaller (0 when neither limits it).
func searchCampaignRounds(s pipeline.SweepSpec) int {
	q := s.Search
	perSite := map[string]int{}
	for _, f := range s.Federations {
		seeds := len(f.Seeds)
		if seeds == 0 {
			seeds = len(s.Seeds)
		}
		for _, site := range f.Sites {
			perSite[site.Name] += seeds
		}
	}
	most := 0
	for _, n := range perSite {
		b := 0
		if q.Trials > 0 {
			b = q.Trials * n * s.Rounds
		}
		if q.Budget > 0 && (b == 0 || q.Budget < b) {
			b = q.Budget
		}
		most = max(most, b)
	}
	return most
}

// heaviestConfig returns base with each dimension of space at the value
// whose round releases most on the training records (largest μ² of a
// round at unit noise: most local steps, a label summary beside the
// descriptor, ...). A dimension of floats must not change what a round
// releases (checked at its ends and middle).
func heaviestConfig(m learn.Method, preset string, base method.Hyperparameters, space search.Space, recs []method.SiteRecords) (method.Hyperparameters, error) {
	weight := func(h method.Hyperparameters) (float64, error) {
		h.DPNoise, h.DPMetricsNoise, h.DPDescriptorNoise, h.DPValidationNoise = 1, 1, 1, 1
		cfg, err := method.Resolve(m, preset, h)
		if err != nil {
			return 0, err
		}
		ch := cfg.RoundCharges(recs[0], method.NeedsDescriptors(m))
		var w float64
		for _, e := range append(ch.Train, ch.Test...) {
			if e.Q != 1 {
				return 0, fmt.Errorf("a release samples its records (q = %v)", e.Q)
			}
			w += float64(e.Count) / (e.Z * e.Z)
		}
		return w, nil
	}
	out := base
	for _, d := range space.Dims {
		var values []method.Value
		switch d.Kind {
		case search.Choice:
			values = d.Choices
		case search.IntRange:
			for v := d.Lo; v <= d.Hi && len(values) < 100000; v++ {
				values = append(values, method.Value{Num: v})
			}
		default:
			values = []method.Value{{Num: d.Lo}, {Num: (d.Lo + d.Hi) / 2}, {Num: d.Hi}}
		}
		p, ok := method.Lookup(d.Name)
		if !ok {
			return out, inputErrorf("sweep file: search.%s: not a hyper-parameter", d.Name)
		}
		bestW, first := math.Inf(-1), math.NaN()
		var bestV method.Value
		for _, v := range values {
			h := out
			if err := p.Set(&h, v); err != nil {
				return out, inputErrorf("sweep file: search.%s: %v", d.Name, err)
			}
			w, err := weight(h)
			if err != nil {
				return out, inputErrorf("sweep file: privacy: search.%s = %v: %v", d.Name, v, err)
			}
			if math.IsNaN(first) {
				first = w
			}
			if (d.Kind == search.Uniform || d.Kind == search.LogUniform) && w != first {
				return out, inputErrorf("sweep file: privacy: search.%s changes what a round releases and takes any value in [%v, %v]; search it over choices or an int range, whose heaviest value the plan can size for", d.Name, d.Lo, d.Hi)
			}
			if w > bestW {
				bestW, bestV = w, v
			}
		}
		if err := p.Set(&out, bestV); err != nil {
			return out, inputErrorf("sweep file: search.%s: %v", d.Name, err)
		}
	}
	return out, nil
}

// SweepPrivacySpent is what a sweep's releases under dp record spent:
// each site's ε over every campaign it took part in, composed from the
// campaigns' ledgers (their last manifests' releases, as the campaign's
// accountant composes them), the largest, at Delta, and the sweep's
// budget (nil: none). `starter sweep --format json` prints it as privacy.
type SweepPrivacySpent struct {
	Epsilon float64         `json:"epsilon"`
	Delta   float64         `json:"delta"`
	Budget  *float64        `json:"budget"`
	PerSite []SiteSpentInfo `json:"per_site"`
}

// SiteSpentInfo is one site's ε over a whole sweep.
type SiteSpentInfo struct {
	Site    string  `json:"site"`
	Epsilon float64 `json:"epsilon"`
}

// sweepPrivacy composes, per site, the releases of every campaign of the
// sweep (rows) from its last manifest's ledger; nil when no campaign ran
// under dp record.
func (s *Service) sweepPrivacy(ctx context.Context, spec pipeline.SweepSpec, rows []store.SweepResultRow) (*SweepPrivacySpent, error) {
	delta := 0.0
	if b := spec.PrivacyBudget; b != nil {
		delta = b.Delta
	}
	type ledger struct{ train, test []privacy.Event }
	bySite := map[string]*ledger{}
	var order []string
	for _, r := range rows {
		if r.DP != method.DPRecord {
			continue
		}
		m, err := s.lastManifest(ctx, r.Campaign)
		if err != nil {
			return nil, err
		}
		if m == nil || m.Privacy == nil {
			continue
		}
		if delta == 0 {
			delta = m.Privacy.Delta
		}
		for _, sp := range m.Privacy.Sites {
			l, ok := bySite[sp.Site]
			if !ok {
				l = &ledger{}
				bySite[sp.Site] = l
				order = append(order, sp.Site)
			}
			for _, e := range sp.Train {
				l.train = append(l.train, privacy.Event{Z: e.Z, Q: e.Q, Count: e.Count})
			}
			for _, e := range sp.Test {
				l.test = append(l.test, privacy.Event{Z: e.Z, Q: e.Q, Count: e.Count})
			}
		}
	}
	if len(order) == 0 {
		return nil, nil
	}
	out := &SweepPrivacySpent{Delta: delta, PerSite: []SiteSpentInfo{}}
	if b := spec.PrivacyBudget; b != nil {
		e := b.Epsilon
		out.Budget = &e
	}
	slices.Sort(order)
	for _, site := range order {
		l := bySite[site]
		sp, err := method.Spend(method.Charges{Train: method.MergeEvents(l.train), Test: method.MergeEvents(l.test)}, delta)
		if err != nil {
			return nil, fmt.Errorf("privacy of site %s: %w", site, err)
		}
		out.PerSite = append(out.PerSite, SiteSpentInfo{Site: site, Epsilon: sp.Epsilon.Epsilon})
		out.Epsilon = max(out.Epsilon, sp.Epsilon.Epsilon)
	}
	return out, nil
}

// lastManifest reads campaign's latest manifest (the highest round of its
// latest attempt; a failed round's too, whose releases were charged), nil
// when it has none.
func (s *Service) lastManifest(ctx context.Context, campaign string) (*pipeline.RoundManifest, error) {
	keys, err := s.Store.List(ctx, artifact.CampaignPrefix(campaign))
	if err != nil {
		return nil, fmt.Errorf("campaign %s: list: %w", campaign, err)
	}
	best, bestRound, bestAttempt := "", 0, 0
	for _, k := range keys {
		round, attempt, ok := artifact.ParseManifestKey(campaign, k)
		if !ok {
			continue
		}
		if round > bestRound || round == bestRound && attempt > bestAttempt {
			best, bestRound, bestAttempt = k, round, attempt
		}
	}
	if best == "" {
		return nil, nil
	}
	var m pipeline.RoundManifest
	if _, err := s.Store.GetJSONKey(ctx, best, &m); err != nil {
		return nil, fmt.Errorf("campaign %s: %w", campaign, err)
	}
	return &m, nil
}
