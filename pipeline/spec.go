package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"time"
)

// Method names. The pTopoFL variants and the baselines of the paper, plus
// robust aggregation baselines; "local" is local-only training (the paper's
// "FedAvg" row, see golden/paper/README.md).
const (
	MethodPTopoFL     = "ptopofl"
	MethodFedAvg      = "fedavg"
	MethodFedProx     = "fedprox"
	MethodSCAFFOLD    = "scaffold"
	MethodPFedMe      = "pfedme"
	MethodLocal       = "local"
	MethodTrimmedMean = "trimmed-mean"
	MethodMedian      = "median"
	MethodKrum        = "krum"
)

// Methods lists every method name a CampaignSpec accepts, in a fixed order.
var Methods = []string{
	MethodPTopoFL, MethodFedAvg, MethodFedProx, MethodSCAFFOLD, MethodPFedMe,
	MethodLocal, MethodTrimmedMean, MethodMedian, MethodKrum,
}

// NeedsDescriptors reports whether a method clusters or weighs sites by
// their topological descriptors. Only then does a round fan out the
// descriptor activity and call ClusterSites; the other methods never pay
// for persistent homology.
func NeedsDescriptors(method string) bool { return method == MethodPTopoFL }

// EvaluatesOwnUpdate reports whether method scores each site with a model
// the site's own update produced, not with what the aggregation sends back
// (learn.EvaluationParams): LocalOnly's own fit, pFedMe's personal model.
// Such a site can score it in the training activity.
func EvaluatesOwnUpdate(method string) bool { return method == MethodLocal || method == MethodPFedMe }

// Presets.
const (
	PresetDefault = "default" // the paper's intent: exact Vietoris–Rips H1
	PresetPaper   = "paper"   // reproduce the authors' code (triangle H1, their seeds)
)

// Descriptor variants (Hyperparameters.Descriptor).
const (
	DescriptorExact    = "exact"
	DescriptorTriangle = "triangle"
)

// Site is one member of the federation. Its name appears in task-queue
// names and object keys, so it is restricted to [A-Za-z0-9._-], 1–64
// characters. Where a site's data lives is the site worker's business, not
// the campaign's.
type Site struct {
	Name string `json:"name"`
}

var safeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Validate reports what is wrong with the site, naming the field.
func (s Site) Validate() error {
	if !safeName.MatchString(s.Name) {
		return fmt.Errorf("name %q: must be 1-64 characters of A-Z a-z 0-9 . _ - starting with a letter or digit", s.Name)
	}
	return nil
}

// Hyperparameters holds every tunable number of every method; a method
// reads the fields it needs and ignores the rest. Field names follow the
// paper's Table 4 and golden/paper/expected.json. It is a plain struct, not a
// map, so that a typo in a campaign file is an error rather than a silently
// ignored key, and so that activities read typed fields.
type Hyperparameters struct {
	// pTopoFL (paper Table 4).
	Clusters         int     `json:"clusters"`          // M, number of clusters; 0 chooses M by silhouette
	Beta             float64 `json:"beta"`              // β, inter-cluster blending coefficient in [0,1]
	AnomalyThreshold float64 `json:"anomaly_threshold"` // τ, trust z-score threshold
	DriftThreshold   float64 `json:"drift_threshold"`   // drift Δ (Eq. 9) above which a site is re-clustered; 0 never
	DriftCheckEvery  int     `json:"drift_check_every"` // recompute descriptors every k rounds (0: only round 1 and on request)
	NSub             int     `json:"n_sub"`             // points subsampled per site for the descriptor
	BettiResolution  int     `json:"betti_resolution"`  // L, Betti-curve thresholds (fixed at 20: the 48-number layout)
	Descriptor       string  `json:"descriptor"`        // "exact" (true VR H1) or "triangle" (authors' approximation)

	// Local model: L2 logistic regression, solved by L-BFGS.
	C       float64 `json:"c"`        // inverse regularisation strength
	MaxIter int     `json:"max_iter"` // L-BFGS iterations
	Tol     float64 `json:"tol"`      // L-BFGS stop: infinity norm of the gradient

	// Gradient-descent baselines.
	LR            float64 `json:"lr"`             // step size (FedProx, SCAFFOLD)
	Steps         int     `json:"steps"`          // local steps per round (FedProx, SCAFFOLD)
	Mu            float64 `json:"mu"`             // FedProx proximal weight μ
	Lambda        float64 `json:"lambda"`         // pFedMe Moreau-envelope weight λ
	LRPersonal    float64 `json:"lr_personal"`    // pFedMe inner step size
	LROuter       float64 `json:"lr_outer"`       // pFedMe outer step size
	PersonalSteps int     `json:"personal_steps"` // pFedMe inner steps per round

	// Robust aggregation baselines.
	TrimFraction float64 `json:"trim_fraction"` // trimmed mean: fraction cut at each end, in [0,0.5)
	Byzantine    int     `json:"byzantine"`     // Krum: assumed number of Byzantine sites f
}

// DefaultHyperparameters returns the paper's values (Table 4 for Scenarios
// A/B, and the baselines' settings in golden/paper/expected.json), with the
// exact descriptor: exactly what simulate.Preset("default", method) holds
// for every method (activities' TestDefaultHyperparametersArePreset keeps
// the two equal). The L-BFGS stop is our tight one (gradient 1e-10), not
// scikit-learn's tol = 1e-4, so that the optimum does not depend on the
// warm start.
func DefaultHyperparameters() Hyperparameters {
	return Hyperparameters{
		Clusters: 2, Beta: 0.3, AnomalyThreshold: 2.0, DriftThreshold: 0.1,
		NSub: 80, BettiResolution: 20, Descriptor: DescriptorExact,
		C: 1.0, MaxIter: 1000, Tol: 1e-10,
		LR: 0.05, Steps: 30, Mu: 0.1, Lambda: 15, LRPersonal: 0.01, LROuter: 0.01, PersonalSteps: 20,
		TrimFraction: 0.1, Byzantine: 1,
	}
}

// withDefaults fills every zero field from d. Zero is never a meaningful
// setting for the fields filled here; Clusters (0 = automatic), Beta,
// DriftThreshold, DriftCheckEvery, Mu, TrimFraction and Byzantine are
// meaningful at zero and are therefore left as given: a spec built in code
// should start from DefaultHyperparameters.
func (h Hyperparameters) withDefaults(d Hyperparameters) Hyperparameters {
	setI := func(v *int, dv int) {
		if *v == 0 {
			*v = dv
		}
	}
	setF := func(v *float64, dv float64) {
		if *v == 0 {
			*v = dv
		}
	}
	setF(&h.AnomalyThreshold, d.AnomalyThreshold)
	setI(&h.NSub, d.NSub)
	setI(&h.BettiResolution, d.BettiResolution)
	if h.Descriptor == "" {
		h.Descriptor = d.Descriptor
	}
	setF(&h.C, d.C)
	setI(&h.MaxIter, d.MaxIter)
	setF(&h.Tol, d.Tol)
	setF(&h.LR, d.LR)
	setI(&h.Steps, d.Steps)
	setF(&h.Lambda, d.Lambda)
	setF(&h.LRPersonal, d.LRPersonal)
	setF(&h.LROuter, d.LROuter)
	setI(&h.PersonalSteps, d.PersonalSteps)
	return h
}

// Validate checks the fields that method reads and names the first bad one.
func (h Hyperparameters) Validate(method string) error {
	bad := func(field string, v any, want string) error {
		return fmt.Errorf("hyperparameters.%s = %v: %s", field, v, want)
	}
	if h.C <= 0 {
		return bad("c", h.C, "must be > 0")
	}
	switch method {
	case MethodPTopoFL:
		switch {
		case h.Clusters < 0:
			return bad("clusters", h.Clusters, "must be >= 0 (0 chooses the number of clusters by silhouette)")
		case h.Beta < 0 || h.Beta > 1:
			return bad("beta", h.Beta, "must be in [0, 1]")
		case h.AnomalyThreshold <= 0:
			return bad("anomaly_threshold", h.AnomalyThreshold, "must be > 0")
		case h.DriftThreshold < 0:
			return bad("drift_threshold", h.DriftThreshold, "must be >= 0")
		case h.DriftCheckEvery < 0:
			return bad("drift_check_every", h.DriftCheckEvery, "must be >= 0")
		case h.NSub < 3:
			return bad("n_sub", h.NSub, "must be >= 3")
		case h.BettiResolution != 20:
			return bad("betti_resolution", h.BettiResolution, "must be 20 (the descriptor's 48-number layout has 20-step Betti curves)")
		case h.Descriptor != DescriptorExact && h.Descriptor != DescriptorTriangle:
			return bad("descriptor", fmt.Sprintf("%q", h.Descriptor), `must be "exact" or "triangle"`)
		}
	case MethodFedProx, MethodSCAFFOLD:
		switch {
		case h.LR <= 0:
			return bad("lr", h.LR, "must be > 0")
		case h.Steps < 1:
			return bad("steps", h.Steps, "must be >= 1")
		case method == MethodFedProx && h.Mu < 0:
			return bad("mu", h.Mu, "must be >= 0")
		}
	case MethodPFedMe:
		switch {
		case h.Lambda <= 0:
			return bad("lambda", h.Lambda, "must be > 0")
		case h.LRPersonal <= 0:
			return bad("lr_personal", h.LRPersonal, "must be > 0")
		case h.LROuter <= 0:
			return bad("lr_outer", h.LROuter, "must be > 0")
		case h.PersonalSteps < 1:
			return bad("personal_steps", h.PersonalSteps, "must be >= 1")
		}
	case MethodTrimmedMean:
		if h.TrimFraction < 0 || h.TrimFraction >= 0.5 {
			return bad("trim_fraction", h.TrimFraction, "must be in [0, 0.5)")
		}
	case MethodKrum:
		if h.Byzantine < 0 {
			return bad("byzantine", h.Byzantine, "must be >= 0")
		}
	}
	if method == MethodPTopoFL || method == MethodFedAvg || method == MethodLocal {
		switch {
		case h.MaxIter < 1:
			return bad("max_iter", h.MaxIter, "must be >= 1")
		case h.Tol <= 0:
			return bad("tol", h.Tol, "must be > 0")
		}
	}
	return nil
}

// CampaignSpec is a whole federated campaign: what to run, on which sites,
// for how many rounds, with which guarantees. It is the input of
// CampaignWorkflow and is stored as campaigns/<campaign>/spec.json.
type CampaignSpec struct {
	// Campaign names the campaign. It is the CampaignWorkflow's ID, the prefix
	// of its round workflows' IDs and of its object keys.
	Campaign string `json:"campaign"`
	Method   string `json:"method"`
	Preset   string `json:"preset"` // "default" or "paper"
	Rounds   int    `json:"rounds"`
	Seed     uint64 `json:"seed"`
	Sites    []Site `json:"sites"`
	// MinSites is the quorum: a fan-out phase with fewer successful sites
	// fails the round, and with it the campaign.
	MinSites int `json:"min_sites"`
	// RoundDeadline bounds each site fan-out of a round (descriptors,
	// training, evaluation), measured on the workflow clock from the
	// fan-out's start: a site that has not answered by then is dropped from
	// the round with reason "timeout" and its activity is cancelled. A round
	// therefore takes at most about 3×RoundDeadline plus server time.
	RoundDeadline time.Duration `json:"round_deadline"`
	// SiteActivityTimeout is the StartToClose timeout of one attempt of a
	// site activity; TrainHeartbeat is the heartbeat timeout of TrainLocal.
	SiteActivityTimeout time.Duration `json:"site_activity_timeout"`
	TrainHeartbeat      time.Duration `json:"train_heartbeat"`
	// ContinueAsNewEvery is how many rounds one run of CampaignWorkflow
	// executes before it continues as new (default 10), keeping each
	// history far below Temporal's limits.
	ContinueAsNewEvery int             `json:"continue_as_new_every"`
	Hyperparameters    Hyperparameters `json:"hyperparameters"`
	// Bucket is the S3 bucket of every artifact of the campaign.
	Bucket string `json:"bucket"`
	// DescriptorRows maps a site to the row indices of its training data
	// used for its descriptor, for exact reproduction of published numbers.
	// Empty: the descriptor activity subsamples with the derived seed.
	DescriptorRows map[string][]int `json:"descriptor_rows,omitempty"`
	// CodeVersion is the version of the code that started the campaign,
	// recorded in every manifest.
	CodeVersion string `json:"code_version,omitempty"`
}

// Defaults applied by WithDefaults.
const (
	DefaultRoundDeadline       = 30 * time.Minute
	DefaultSiteActivityTimeout = 10 * time.Minute
	DefaultTrainHeartbeat      = time.Minute
	DefaultContinueAsNewEvery  = 10
)

// WithDefaults returns a copy of s with zero fields set to their defaults:
// preset "default", MinSites = all sites, the default deadlines, and
// DefaultHyperparameters for zero hyper-parameters (the paper preset uses
// the triangle descriptor).
func (s CampaignSpec) WithDefaults() CampaignSpec {
	if s.Preset == "" {
		s.Preset = PresetDefault
	}
	if s.MinSites == 0 {
		s.MinSites = len(s.Sites)
	}
	if s.RoundDeadline == 0 {
		s.RoundDeadline = DefaultRoundDeadline
	}
	if s.SiteActivityTimeout == 0 {
		s.SiteActivityTimeout = DefaultSiteActivityTimeout
	}
	if s.TrainHeartbeat == 0 {
		s.TrainHeartbeat = DefaultTrainHeartbeat
	}
	if s.ContinueAsNewEvery == 0 {
		s.ContinueAsNewEvery = DefaultContinueAsNewEvery
	}
	d := DefaultHyperparameters()
	if s.Preset == PresetPaper {
		d.Descriptor = DescriptorTriangle
	}
	s.Hyperparameters = s.Hyperparameters.withDefaults(d)
	return s
}

// Validate reports the first problem with the spec, naming the field, so
// that a bad campaign file is rejected before anything starts.
func (s CampaignSpec) Validate() error {
	if !safeName.MatchString(s.Campaign) {
		return fmt.Errorf("campaign %q: must be 1-64 characters of A-Z a-z 0-9 . _ - starting with a letter or digit", s.Campaign)
	}
	known := false
	for _, m := range Methods {
		known = known || m == s.Method
	}
	if !known {
		return fmt.Errorf("method %q: unknown; want one of %v", s.Method, Methods)
	}
	if s.Preset != PresetDefault && s.Preset != PresetPaper {
		return fmt.Errorf("preset %q: want %q or %q", s.Preset, PresetDefault, PresetPaper)
	}
	if s.Rounds < 1 {
		return fmt.Errorf("rounds = %d: must be >= 1", s.Rounds)
	}
	if len(s.Sites) == 0 {
		return fmt.Errorf("sites: at least one site is required")
	}
	seen := make(map[string]bool, len(s.Sites))
	for i, site := range s.Sites {
		if err := site.Validate(); err != nil {
			return fmt.Errorf("sites[%d].%w", i, err)
		}
		if seen[site.Name] {
			return fmt.Errorf("sites[%d].name %q: duplicate", i, site.Name)
		}
		seen[site.Name] = true
	}
	if s.MinSites < 1 || s.MinSites > len(s.Sites) {
		return fmt.Errorf("min_sites = %d: must be in [1, %d] (the number of sites)", s.MinSites, len(s.Sites))
	}
	if s.RoundDeadline <= 0 {
		return fmt.Errorf("round_deadline = %v: must be > 0", s.RoundDeadline)
	}
	if s.SiteActivityTimeout <= 0 {
		return fmt.Errorf("site_activity_timeout = %v: must be > 0", s.SiteActivityTimeout)
	}
	if s.TrainHeartbeat <= 0 {
		return fmt.Errorf("train_heartbeat = %v: must be > 0", s.TrainHeartbeat)
	}
	if s.ContinueAsNewEvery < 1 {
		return fmt.Errorf("continue_as_new_every = %d: must be >= 1", s.ContinueAsNewEvery)
	}
	if s.Bucket == "" {
		return fmt.Errorf("bucket: required")
	}
	// Sorted keys: with two bad entries, ranging over the map would report
	// either one, and the workflow's error would differ between replays.
	rowSites := make([]string, 0, len(s.DescriptorRows))
	//workflowcheck:ignore (the keys are sorted below)
	for site := range s.DescriptorRows {
		rowSites = append(rowSites, site)
	}
	sort.Strings(rowSites)
	for _, site := range rowSites {
		rows := s.DescriptorRows[site]
		if !seen[site] {
			return fmt.Errorf("descriptor_rows[%q]: not one of the sites", site)
		}
		for j, r := range rows {
			if r < 0 {
				return fmt.Errorf("descriptor_rows[%q][%d] = %d: must be >= 0", site, j, r)
			}
		}
	}
	return s.Hyperparameters.Validate(s.Method)
}

// SiteNames returns the site names in spec order.
func (s CampaignSpec) SiteNames() []string {
	names := make([]string, len(s.Sites))
	for i, site := range s.Sites {
		names[i] = site.Name
	}
	return names
}

// SpecHash is the hex SHA-256 of the spec's JSON encoding. encoding/json
// writes struct fields in declaration order and map keys sorted, so the
// encoding, and the hash, is canonical for a given spec and code version.
// It is pure, so workflows may call it.
func (s CampaignSpec) SpecHash() string {
	// workflowcheck flags json.Marshal through its reflection caches and the
	// runtime (allocation, GC); its output is deterministic: struct fields in
	// declaration order, map keys sorted.
	b, err := json.Marshal(s) //workflowcheck:ignore
	if err != nil {
		panic("pipeline: marshal spec: " + err.Error()) // only plain fields: cannot happen
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
