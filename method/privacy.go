package method

import (
	"fmt"
	"math"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/privacy"
)

// Values of site_distance and dp, and the defaults of the Quiet privacy
// parameters.
const (
	SiteEuclidean   = "euclidean"
	SiteWasserstein = "wasserstein"

	DPOff    = "off"
	DPRecord = "record"

	// DefaultDPClip is C under dp record. Healthcare rows (20 features of
	// unit scale) have per-record logistic gradients of norm up to about
	// 6, so C clips many of them; C = 1.5 was chosen on the healthcare
	// federations of seeds 100–109 (simulate, FedAvg, 15 rounds of 30
	// steps at lr 0.05): mean final AUC lost to DP at ε = 8, 3, 1 was
	// 0.008, 0.011, 0.033, against 0.013, 0.016, 0.029 with C = 1 and
	// 0.007, 0.011, 0.039 with C = 2.
	DefaultDPClip = 1.5
	// DefaultDPDescriptorShare is the share of the training records' μ²
	// budget that descriptor and label-summary releases get.
	DefaultDPDescriptorShare = 0.2
	// DefaultDPValidationShare is the share of the training records' μ²
	// budget that validation metrics releases get (validation_fraction
	// under dp record): a sweep ranks its trials on them.
	DefaultDPValidationShare = 0.2
)

// DPSettings is the resolved privacy configuration (the dp_* parameters).
type DPSettings struct {
	// On is dp = "record".
	On bool
	// Epsilon is the per-site budget (0: none), Delta the δ.
	Epsilon, Delta float64
	// Noise is the noise multiplier z of each local gradient step, Clip
	// the clipping norm C.
	Noise, Clip float64
	// DescriptorNoise and MetricsNoise are the noise multipliers of each
	// descriptor (and label-summary) release and of each metrics release.
	DescriptorNoise, MetricsNoise float64
	// DescriptorShare is the share of the training budget the descriptor
	// releases get when the noise is computed from Epsilon.
	DescriptorShare float64
	// ValidationNoise is the noise multiplier of each validation metrics
	// release (validation_fraction), ValidationShare the share of the
	// training budget those releases get when the noise is computed from
	// Epsilon.
	ValidationNoise, ValidationShare float64
}

// IsDP reports whether h asks for record-level differential privacy.
func (h Hyperparameters) IsDP() bool { return h.DP == DPRecord }

// SiteRecords is what the privacy plan needs to know of a site: its name
// and the sizes of its training and test splits, which are public under
// the guarantee (a record is zeroed out, not removed).
type SiteRecords struct {
	Site        string
	Train, Test int
}

// Charges are the releases of one site in one round, as an accountant
// composes them: Train are those computed from its training records
// (models, descriptors, label summary), Test those computed from its test
// records (metrics). A record is in one split only, and the split is fixed
// by the site's files, so a record's privacy loss is that of its split's
// releases alone (parallel composition), and the site's ε is the larger of
// the two.
type Charges struct {
	Train, Test []privacy.Event
}

// MetricsReleases returns how many metrics releases a site makes per round:
// one for a tabular model (its test scores' counts, from which AUC and
// accuracy are computed), two for a deep model (the aggregated model's
// top-1 count and that of the site's own update before the aggregation).
func (c Config) MetricsReleases() int {
	if c.IsDeep() {
		return 2
	}
	return 1
}

// DescriptorReleases returns how many descriptor-sized releases a site
// makes when it computes its descriptor: the descriptor, and the label
// summary when the detector reads one.
func (c Config) DescriptorReleases() int {
	if c.LabelAware() {
		return 2
	}
	return 1
}

// RoundCharges returns what one round costs a site with rec's records
// under c (dp record), descriptor saying whether the site computes its
// descriptor in the round: the releases the site's activities charge to
// its own ledger (TrainRelease, DescriptorRelease, ValidationRelease,
// MetricsRelease), here grouped by split:
//
//   - training: learn.DPReleases gradient steps, each a Gaussian mechanism
//     with noise multiplier dp_noise on every record (q = 1), for a
//     tabular model; nn.DPUse's Poisson-subsampled steps (q = batch/n) for
//     a deep one, n the records it trains on (TrainedRecords);
//   - the descriptor and the label summary: one Gaussian release each with
//     dp_descriptor_noise;
//   - under validation_fraction, the validation metrics: one Gaussian
//     release with dp_validation_noise, charged to the training records
//     the held-out rows are;
//   - metrics: MetricsReleases Gaussian releases with dp_metrics_noise.
func (c Config) RoundCharges(rec SiteRecords, descriptor bool) Charges {
	var ch Charges
	if r, ok := c.TrainRelease(c.TrainedRecords(rec.Train)); ok {
		ch.Train = append(ch.Train, r.Event)
	}
	if descriptor {
		for _, r := range c.DescriptorRelease() {
			ch.Train = append(ch.Train, r.Event)
		}
	}
	if c.ValidationFraction > 0 {
		ch.Train = append(ch.Train, c.ValidationRelease().Event)
	}
	ch.Test = append(ch.Test, privacy.Event{Z: c.DP.MetricsNoise, Q: 1, Count: c.MetricsReleases()})
	return ch
}

// TrainedRecords is how many of a site's n training records it trains on:
// all of them, or those left after validation_fraction holds some out
// (ValidationRows' count).
func (c Config) TrainedRecords(n int) int {
	if c.ValidationFraction <= 0 || n < 1 {
		return n
	}
	return n - ValidationCount(n, c.ValidationFraction)
}

// DescriptorRound reports whether round r is one in which every site
// computes its descriptor under h: method m reads descriptors, and r is
// the first round or one drift_check_every asks for. (A round also
// computes the descriptor of a site that has none yet; the workflow
// charges those too, outside this schedule.) Under dp record it is the
// whole schedule: a drift check never asks for an extra round of
// descriptors, which the plan could not have paid for.
func DescriptorRound(m learn.Method, h Hyperparameters, r int) bool {
	if !NeedsDescriptors(m) {
		return false
	}
	if h.DescriptorModel == DescriptorGlobal {
		return true // every round, under the model sent that round
	}
	return r == 1 || (h.DriftCheckEvery > 0 && (r-1)%h.DriftCheckEvery == 0)
}

// SiteBudget is what a plan spends at one site over the whole campaign.
type SiteBudget struct {
	Site string
	// Train and Test are the ε of the site's training and test records;
	// Epsilon is the larger.
	Train, Test, Epsilon privacy.Spent
}

// PlanPrivacy returns h with every noise multiplier of a dp record
// campaign set: those already set are kept and checked against dp_epsilon,
// the others (zero) are computed so that, over rounds rounds and every
// planned release (RoundCharges, descriptors in DescriptorRound rounds),
// each site's ε stays within dp_epsilon at δ = dp_delta:
//
//   - metrics: the test records' releases are Gaussian on every record, so
//     their composition is exact (μ = √k / z in Gaussian DP; Dong, Roth &
//     Su 2019) and z = √k / μ(ε, δ) for k releases;
//   - descriptors: their k releases get the share s of the training
//     records' μ², z = √k / (√s·μ(ε, δ));
//   - training: the smallest dp_noise (to four significant digits, rounded
//     up) with which every site's training releases and descriptors stay
//     within ε (privacy.SolveNoise; Gaussian DP when every release is on
//     every record, RDP of the subsampled Gaussian otherwise).
//
// Without dp_epsilon, each noise multiplier left at zero takes dp_noise. It
// also returns what the plan spends at each site. sites must give every
// site's record counts; δ must be at most 1/n for the smallest site's n
// training records. h is returned unchanged when dp is off.
func PlanPrivacy(m learn.Method, preset string, h Hyperparameters, rounds int, sites []SiteRecords) (Hyperparameters, []SiteBudget, error) {
	if !h.IsDP() {
		return h, nil, nil
	}
	cfg, err := Resolve(m, preset, h)
	if err != nil {
		return h, nil, err
	}
	if len(sites) == 0 {
		return h, nil, fmt.Errorf("dp record: no sites to plan for")
	}
	fewest := sites[0]
	for i, s := range sites {
		if s.Train < 1 || s.Test < 1 {
			return h, nil, fmt.Errorf("sites[%d] %s: %d training and %d test records; the privacy plan needs both counts", i, s.Site, s.Train, s.Test)
		}
		if s.Train < fewest.Train {
			fewest = s
		}
	}
	dp := cfg.DP
	if dp.Delta > 1/float64(fewest.Train) {
		return h, nil, fmt.Errorf("hyperparameters.dp_delta = %v: above 1/n = %.3g for site %s's %d training records (a δ that large lets a mechanism publish a record outright); lower it", dp.Delta, 1/float64(fewest.Train), fewest.Site, fewest.Train)
	}
	descRounds := 0
	for r := 1; r <= rounds; r++ {
		if DescriptorRound(m, h, r) {
			descRounds++
		}
	}
	nDesc := descRounds * cfg.DescriptorReleases()
	nMetrics := rounds * cfg.MetricsReleases()
	nVal := 0
	if cfg.ValidationFraction > 0 {
		nVal = rounds
		if nDesc > 0 && dp.DescriptorShare+dp.ValidationShare >= 1 {
			return h, nil, fmt.Errorf("hyperparameters.dp_descriptor_share = %v and dp_validation_share = %v: together they leave nothing of the training records' budget for training; lower them", dp.DescriptorShare, dp.ValidationShare)
		}
	}
	if dp.Epsilon == 0 {
		if h.DPMetricsNoise == 0 {
			h.DPMetricsNoise = h.DPNoise
		}
		if nDesc > 0 && h.DPDescriptorNoise == 0 {
			h.DPDescriptorNoise = h.DPNoise
		}
		if nVal > 0 && h.DPValidationNoise == 0 {
			h.DPValidationNoise = h.DPNoise
		}
	} else {
		mu, err := privacy.GaussianMu(dp.Epsilon, dp.Delta)
		if err != nil {
			return h, nil, fmt.Errorf("hyperparameters.dp_epsilon = %v: %w", dp.Epsilon, err)
		}
		if h.DPMetricsNoise == 0 {
			h.DPMetricsNoise = roundUp(math.Sqrt(float64(nMetrics)) / mu)
		}
		if nDesc > 0 && h.DPDescriptorNoise == 0 {
			h.DPDescriptorNoise = roundUp(math.Sqrt(float64(nDesc)) / (math.Sqrt(dp.DescriptorShare) * mu))
		}
		if nVal > 0 && h.DPValidationNoise == 0 {
			h.DPValidationNoise = roundUp(math.Sqrt(float64(nVal)) / (math.Sqrt(dp.ValidationShare) * mu))
		}
		if h.DPNoise == 0 {
			z := 0.0
			for _, s := range sites {
				zs, err := privacy.SolveNoise(dp.Epsilon, dp.Delta, func(z float64) []privacy.Event {
					hz := h
					hz.DPNoise = z
					return campaignCharges(m, preset, hz, rounds, s).Train
				}, privacy.Auto)
				if err != nil {
					return h, nil, fmt.Errorf("hyperparameters.dp_epsilon = %v: no noise keeps site %s's training releases within it: %w", dp.Epsilon, s.Site, err)
				}
				z = math.Max(z, zs)
			}
			h.DPNoise = roundUp(z)
		}
	}
	budgets, err := SpendPlan(m, preset, h, rounds, sites)
	if err != nil {
		return h, nil, err
	}
	if dp.Epsilon > 0 {
		for _, b := range budgets {
			if b.Epsilon.Epsilon > dp.Epsilon {
				return h, nil, fmt.Errorf("hyperparameters.dp_epsilon = %v: the noise set (dp_noise %v, dp_descriptor_noise %v, dp_metrics_noise %v, dp_validation_noise %v) spends ε = %.4g at site %s over %d rounds; raise the noise, or leave it 0 to have it computed",
					dp.Epsilon, h.DPNoise, h.DPDescriptorNoise, h.DPMetricsNoise, h.DPValidationNoise, b.Epsilon.Epsilon, b.Site, rounds)
			}
		}
	}
	return h, budgets, nil
}

// SpendPlan returns the ε each site spends over rounds rounds of the
// planned releases under h (whose noise multipliers must be set).
func SpendPlan(m learn.Method, preset string, h Hyperparameters, rounds int, sites []SiteRecords) ([]SiteBudget, error) {
	out := make([]SiteBudget, 0, len(sites))
	for _, s := range sites {
		ch := campaignCharges(m, preset, h, rounds, s)
		b, err := Spend(ch, h.dpDelta())
		if err != nil {
			return nil, fmt.Errorf("site %s: %w", s.Site, err)
		}
		b.Site = s.Site
		out = append(out, b)
	}
	return out, nil
}

// Spend returns the ε of charges at δ: each split's releases composed by
// the exact accountant that applies (privacy.Auto), and the larger of the
// two as the site's.
func Spend(ch Charges, delta float64) (SiteBudget, error) {
	var b SiteBudget
	var err error
	if b.Train, err = privacy.Epsilon(ch.Train, delta, privacy.Auto); err != nil {
		return b, fmt.Errorf("training records: %w", err)
	}
	if b.Test, err = privacy.Epsilon(ch.Test, delta, privacy.Auto); err != nil {
		return b, fmt.Errorf("test records: %w", err)
	}
	b.Epsilon = b.Train
	if b.Test.Epsilon > b.Train.Epsilon {
		b.Epsilon = b.Test
	}
	return b, nil
}

func (h Hyperparameters) dpDelta() float64 {
	p, _ := Lookup("dp_delta")
	return p.Get(h).Num
}

// CampaignCharges returns what a campaign of rounds rounds of method m
// under h (noise planned) releases at site s: RoundCharges added up over
// the schedule's rounds, events merged.
func CampaignCharges(m learn.Method, preset string, h Hyperparameters, rounds int, s SiteRecords) Charges {
	return campaignCharges(m, preset, h, rounds, s)
}

// campaignCharges adds up RoundCharges over rounds rounds of the schedule.
// A resolution error (impossible after PlanPrivacy's Resolve) gives no
// charges.
func campaignCharges(m learn.Method, preset string, h Hyperparameters, rounds int, s SiteRecords) Charges {
	cfg, err := Resolve(m, preset, h)
	if err != nil {
		return Charges{}
	}
	var all Charges
	for r := 1; r <= rounds; r++ {
		ch := cfg.RoundCharges(s, DescriptorRound(m, h, r))
		all.Train = append(all.Train, ch.Train...)
		all.Test = append(all.Test, ch.Test...)
	}
	return Charges{Train: MergeEvents(all.Train), Test: MergeEvents(all.Test)}
}

// MergeEvents adds up the counts of events with the same noise multiplier
// and sampling rate, keeping the order of first appearance: the
// composition is the same, and a ledger carried round after round stays
// a few entries long.
func MergeEvents(events []privacy.Event) []privacy.Event {
	var out []privacy.Event
next:
	for _, e := range events {
		if e.Count == 0 {
			continue
		}
		for i := range out {
			if out[i].Z == e.Z && out[i].Q == e.Q {
				out[i].Count += e.Count
				continue next
			}
		}
		out = append(out, e)
	}
	return out
}

// roundUp rounds a noise multiplier up to four significant digits: more
// noise, never less, and a number that prints and re-parses the same on
// every machine (the spec, and its hash, must not depend on the last bits
// of a bisection).
func roundUp(z float64) float64 {
	if !(z > 0) || math.IsInf(z, 0) {
		return z
	}
	scale := math.Pow(10, 3-math.Floor(math.Log10(z)))
	return math.Ceil(z*scale) / scale
}

// validatePrivacy checks the dp parameters together with the others: off,
// no dp_* parameter may be set; under dp record, a budget or a noise is
// set, no L-BFGS fit (it has no per-step noise to account) and no
// Wasserstein site distance (a persistence diagram has no bounded
// sensitivity, so it cannot be released privately).
func (h Hyperparameters) validatePrivacy(m learn.Method) error {
	if !h.IsDP() {
		for _, f := range []struct {
			name string
			set  bool
		}{
			{"dp_epsilon", h.DPEpsilon != 0}, {"dp_delta", h.DPDelta != 0}, {"dp_noise", h.DPNoise != 0},
			{"dp_clip", h.DPClip != 0}, {"dp_descriptor_noise", h.DPDescriptorNoise != 0},
			{"dp_metrics_noise", h.DPMetricsNoise != 0}, {"dp_descriptor_share", h.DPDescriptorShare != 0},
			{"dp_validation_noise", h.DPValidationNoise != 0}, {"dp_validation_share", h.DPValidationShare != 0},
		} {
			if f.set {
				p, _ := Lookup(f.name)
				return fmt.Errorf("hyperparameters.%s = %s: applies only under dp %q", f.name, quoteText(p.Get(h)), DPRecord)
			}
		}
		return nil
	}
	if h.DPEpsilon == 0 && h.DPNoise == 0 {
		return fmt.Errorf("hyperparameters.dp = %q: set dp_epsilon (a budget for the whole campaign) or dp_noise (a noise multiplier)", DPRecord)
	}
	if !h.IsDeep() && contains(lbfgsMethods, m) && h.LocalSolver == learn.SolverLBFGS {
		return fmt.Errorf(`hyperparameters.local_solver = "lbfgs": not differentially private (L-BFGS fits to the optimum from exact gradients, with no per-step noise to account); set "gd" under dp %q`, DPRecord)
	}
	if NeedsDescriptors(m) && h.SiteDistance == SiteWasserstein {
		return fmt.Errorf(`hyperparameters.site_distance = "wasserstein": a persistence diagram has no bounded sensitivity, so no site can release one under dp %q; use "euclidean"`, DPRecord)
	}
	return nil
}

func contains(ms []learn.Method, m learn.Method) bool {
	for _, x := range ms {
		if x == m {
			return true
		}
	}
	return false
}

// DPDefaults returns h with the defaults that dp record changes, for the
// parameters the user did not set (given reports whether they set a
// parameter, by name): drift_check_every becomes 0, so that a pTopoFL
// site releases its descriptor once, in round 1, instead of every round.
// Every descriptor round is paid from the budget's descriptor share
// (dp_descriptor_share): fifteen of them would each get a fifteenth of it.
// h is returned unchanged without dp record.
func DPDefaults(h Hyperparameters, given func(name string) bool) Hyperparameters {
	if !h.IsDP() {
		return h
	}
	if !given("drift_check_every") {
		h.DriftCheckEvery = 0
	}
	return h
}
