package pipeline

import (
	"fmt"

	"github.com/ptopofl/ptopofl/method"
)

// Kinds of what a site releases (Release.Kind), in the order a round's
// phases release them.
const (
	ReleaseDescriptor   = "descriptor"      // the topological descriptor's numbers
	ReleaseLabelSummary = "label_summary"   // the label-aware summary after it
	ReleaseDiagrams     = "diagrams"        // persistence pairs (site_distance wasserstein only), 2 numbers a pair
	ReleaseModel        = "model"           // the local model θ_k
	ReleaseControl      = "control_variate" // SCAFFOLD's control-variate update
	ReleaseSiteState    = "site_state"      // what the site keeps between rounds, checkpointed to S3 (the server can read it)
	ReleaseMetrics      = "metrics"         // scores of a model on the site's test split
)

// Release is one kind of thing a site wrote where the server (and anyone
// who can read the campaign's objects or history) can read it, with how
// many numbers it holds. Row counts (n_train, n_test) are public under
// the privacy guarantee and are not listed.
type Release struct {
	Kind    string `json:"kind"`
	Numbers int    `json:"numbers"`
	// Within names the secure-aggregation group inside whose sum alone the
	// release reached the server (secure_aggregation "secagg+": the
	// site's weighted update, masked); absent for what a site releases on
	// its own.
	Within string `json:"within,omitempty"`
}

// SiteReleases is everything one site released in a round, in the order
// of the round's phases.
type SiteReleases struct {
	Site  string    `json:"site"`
	Items []Release `json:"items"`
}

// Released is part of every site activity's output: what the activity
// wrote for the server to read (pipeline.Release), for the manifest, and
// under dp record the site's lifetime privacy loss after it.
type Released struct {
	Released []Release `json:"released,omitempty"`
	// Lifetime is the site's lifetime privacy loss as its own ledger
	// holds it after the activity's releases (nil: the site keeps none,
	// or the activity released nothing private).
	Lifetime *SiteLifetime `json:"lifetime,omitempty"`
}

// SiteLifetime is a site's lifetime privacy loss, from its own ledger:
// ε at δ composed over every release it has made from its data, across
// every campaign, sweep and experiment (the largest over its data files),
// and its operator's budget (nil: none).
type SiteLifetime struct {
	Epsilon float64  `json:"epsilon"`
	Delta   float64  `json:"delta"`
	Budget  *float64 `json:"budget,omitempty"`
}

// Add records n numbers of kind.
func (r *Released) Add(kind string, n int) {
	r.Released = append(r.Released, Release{Kind: kind, Numbers: n})
}

// PrivacyEvent is a group of releases of one site as an accountant
// composes them: Count Gaussian mechanisms with noise multiplier Z (noise
// standard deviation over L2 sensitivity), each on a Poisson sample of
// rate Q of the records (1: every record).
type PrivacyEvent struct {
	Z     float64 `json:"z"`
	Q     float64 `json:"q"`
	Count int     `json:"count"`
}

// SiteLedger is everything a site has released under dp record, in the
// two splits whose records the releases read (method.Charges), charged
// when each round was dispatched.
type SiteLedger struct {
	Site  string         `json:"site"`
	Train []PrivacyEvent `json:"train,omitempty"`
	Test  []PrivacyEvent `json:"test,omitempty"`
}

// PrivacyLedger is every site's ledger, in spec order. It lives in the
// campaign's state (CampaignState.Privacy), so continue-as-new carries it
// and a new attempt continues it.
type PrivacyLedger struct {
	Sites []SiteLedger `json:"sites"`
}

// SitePrivacy is what a round's manifest records of a site's privacy: the
// ε of this round's releases alone (EpsilonRound) and of everything the
// site has released so far (Epsilon, the larger of EpsilonTrain, over its
// training records, and EpsilonTest, over its test records), all at the
// campaign's δ, and the accountant that composed them ("gdp" when every
// release reads every record, "rdp" otherwise).
type SitePrivacy struct {
	Site         string  `json:"site"`
	EpsilonRound float64 `json:"epsilon_round"`
	Epsilon      float64 `json:"epsilon"`
	EpsilonTrain float64 `json:"epsilon_train"`
	EpsilonTest  float64 `json:"epsilon_test"`
	Accountant   string  `json:"accountant"`
	// Train and Test are the campaign's releases of the site so far, as
	// the accountant composes them (the ledger ε, EpsilonTrain and
	// EpsilonTest come from): anyone may recompute them, and compose
	// them with other campaigns' (a sweep's privacy).
	Train []PrivacyEvent `json:"train,omitempty"`
	Test  []PrivacyEvent `json:"test,omitempty"`
	// Lifetime is the site's lifetime privacy loss after the round, as
	// the site's own ledger reported it with its last release of the
	// round (ε across every campaign on its data, at the site's δ, which
	// may differ from the campaign's); absent when the site reported none
	// (it keeps no ledger, or released nothing in the round).
	Lifetime *SiteLifetime `json:"lifetime,omitempty"`
}

// RoundPrivacy is the manifest's privacy record of a round under dp
// record. The round's releases are charged to every site of the
// federation before the round is dispatched, whether or not a site then
// takes part (a dropped site may have released before it dropped).
type RoundPrivacy struct {
	Delta float64 `json:"delta"`
	// Budget is dp_epsilon (0: none).
	Budget float64       `json:"budget,omitempty"`
	Sites  []SitePrivacy `json:"sites"`
}

// Epsilon returns the largest cumulative ε of any site (0 for none).
func (p *RoundPrivacy) Epsilon() float64 {
	e := 0.0
	if p == nil {
		return e
	}
	for _, s := range p.Sites {
		e = max(e, s.Epsilon)
	}
	return e
}

// ChargePrivacyInput asks the server to charge round Round's planned
// releases of every site to Ledger (ActivityChargePrivacy, a local
// activity of CampaignWorkflow run before the round is dispatched).
type ChargePrivacyInput struct {
	ServerCall
	// Records are the sites' record counts, in spec order.
	Records []Site `json:"records"`
	// DescriptorSites are the sites that compute a descriptor in the
	// round (the schedule's, and those that have none yet), in spec order.
	DescriptorSites []string `json:"descriptor_sites,omitempty"`
	// Ledger is the ledger before the round (nil at first).
	Ledger *PrivacyLedger `json:"ledger,omitempty"`
}

// ChargePrivacyOutput is the ledger after the round's charges and the
// manifest's record of them; when the charges would take a site beyond
// the budget, Exceeded says so in one sentence and Ledger and Round are
// nil: the round must not be dispatched.
type ChargePrivacyOutput struct {
	Ledger   *PrivacyLedger `json:"ledger,omitempty"`
	Round    *RoundPrivacy  `json:"round,omitempty"`
	Exceeded string         `json:"exceeded,omitempty"`
}

// ActivityChargePrivacy is the server activity that charges a round's
// releases (ChargePrivacyInput → ChargePrivacyOutput).
const ActivityChargePrivacy = "ChargePrivacy"

// validatePrivacy checks a dp record spec: every site's record counts
// are known, the noise is planned (method.PlanPrivacy), and nothing the
// server chooses decides which records a site uses.
func (s CampaignSpec) validatePrivacy() error {
	h := s.Hyperparameters
	if !h.IsDP() {
		return nil
	}
	for i, site := range s.Sites {
		if site.NTrain < 1 || site.NTest < 1 {
			return fmt.Errorf("sites[%d] %q: n_train = %d, n_test = %d: under dp %q every site's record counts are needed (the privacy plan depends on them); give --federation, or n_train and n_test for each site in the campaign file", i, site.Name, site.NTrain, site.NTest, "record")
		}
	}
	if h.DPNoise == 0 {
		return fmt.Errorf("hyperparameters.dp_noise = 0: under dp %q the noise must be planned before the campaign starts (starter run computes it from dp_epsilon)", "record")
	}
	if h.DPMetricsNoise == 0 {
		return fmt.Errorf("hyperparameters.dp_metrics_noise = 0: under dp %q the noise must be planned before the campaign starts", "record")
	}
	if h.ValidationFraction > 0 && h.DPValidationNoise == 0 {
		return fmt.Errorf("hyperparameters.dp_validation_noise = 0: under dp %q with validation_fraction the noise of the validation metrics must be planned before the campaign starts", "record")
	}
	if method.NeedsDescriptors(s.Method) && h.DPDescriptorNoise == 0 {
		return fmt.Errorf("hyperparameters.dp_descriptor_noise = 0: under dp %q the noise must be planned before the campaign starts", "record")
	}
	if len(s.DescriptorRows) > 0 {
		return fmt.Errorf("descriptor_rows: under dp %q a site draws its descriptor's rows with its own secret; rows the campaign chooses would void the guarantee", "record")
	}
	return nil
}
