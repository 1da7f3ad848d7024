package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
)

// Site is one member of the federation. Its name appears in task-queue
// names and object keys, so it follows artifact.ValidateName. Where a site's data lives is the site worker's business, not
// the campaign's.
type Site struct {
	Name string `json:"name"`
	// NTrain and NTest are the site's numbers of training and test
	// records, which a dp record campaign's privacy plan needs (they are
	// public under its guarantee); 0 (and absent) otherwise. The site
	// refuses a round when its data no longer have these counts.
	NTrain int `json:"n_train,omitempty"`
	NTest  int `json:"n_test,omitempty"`
}

// Validate reports what is wrong with the site, naming the field.
func (s Site) Validate() error {
	if err := artifact.ValidateName(s.Name); err != nil {
		return fmt.Errorf("name %w", err)
	}
	if s.NTrain < 0 || s.NTest < 0 {
		return fmt.Errorf("n_train = %d, n_test = %d: must not be negative", s.NTrain, s.NTest)
	}
	return nil
}

// CampaignSpec is a whole federated campaign: what to run, on which sites,
// for how many rounds, with which guarantees. It is the input of
// CampaignWorkflow and is stored as campaigns/<campaign>/spec.json.
type CampaignSpec struct {
	// Campaign names the campaign. It is the CampaignWorkflow's ID, the prefix
	// of its round workflows' IDs and of its object keys.
	Campaign string       `json:"campaign"`
	Method   learn.Method `json:"method"`
	Preset   string       `json:"preset"` // method.Default or method.Paper
	Rounds   int          `json:"rounds"`
	Seed     uint64       `json:"seed"`
	Sites    []Site       `json:"sites"`
	// MinSites is the quorum: a fan-out phase with fewer successful sites
	// fails the round, and with it the campaign. 0 means all sites
	// (WithDefaults sets it); a negative value is an error. It is also the
	// fewest models a round may aggregate, which Validate holds against the
	// method's needs (Krum's 2f + 3, a trimmed mean that trims).
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
	ContinueAsNewEvery int                    `json:"continue_as_new_every"`
	Hyperparameters    method.Hyperparameters `json:"hyperparameters"`
	// Bucket is the S3 bucket of every artifact of the campaign.
	Bucket string `json:"bucket"`
	// DescriptorRows maps a site to the row indices of its training data
	// used for its descriptor, for exact reproduction of published numbers.
	// Empty: the descriptor activity subsamples with the derived seed.
	DescriptorRows map[string][]int `json:"descriptor_rows,omitempty"`
	// CodeVersion is the version of the code that started the campaign, in
	// specs stored before the campaign's identity left it out. New specs
	// leave it empty (it is not part of what the campaign is: a rebuild
	// must not make the same spec another campaign); every manifest
	// records the version of the binary that committed its round. Kept so
	// that stored specs still decode and hash as they did.
	CodeVersion string `json:"code_version,omitempty"`
	// Schema, when set, is what every site's data must look like (feature
	// columns, in order); each site worker checks its data against it and
	// drops itself from the round when they differ. `starter run` reads it
	// from the federation directory; nil (a spec stored before it existed,
	// or a campaign whose starter cannot see the data) checks nothing.
	Schema *DataSchema `json:"schema,omitempty"`
	// KeepSiteModels is the retention policy of the sites' model-sized
	// uploads (PrunedRoles): 0 keeps every round's (the default); K > 0
	// keeps those of the last K rounds, deleting older ones after each
	// round commits (PruningAt). It changes no result, only what stays in
	// S3; it is part of the spec, and so of its hash, because the
	// manifests attest to what was deleted under which policy. omitempty:
	// specs without a policy hash as before it existed.
	KeepSiteModels int `json:"keep_site_models,omitempty"`
	// InitialModel is the model every site starts from under model
	// "external", when the campaign file names one (initial_model: a
	// safetensors file the starter uploads to
	// artifact.InitialModelFileKey); nil: round 1 asks the first site's
	// program for it (ActivityInitModel).
	InitialModel *InitialModel `json:"initial_model,omitempty"`
}

// InitialModel is a campaign's initial model as the starter uploaded it:
// the hex sha256 and the size of the safetensors file the campaign file
// named, which is stored by its sha256 (artifact.InitialModelFileKey).
type InitialModel struct {
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// File is the reference of the uploaded file in bucket.
func (m InitialModel) File(bucket string) ArtifactRef {
	return ArtifactRef{Bucket: bucket, Key: artifact.InitialModelFileKey(m.SHA256), SHA256: m.SHA256, Size: m.Size}
}

// Defaults applied by WithDefaults.
const (
	DefaultRoundDeadline       = 30 * time.Minute
	DefaultSiteActivityTimeout = 10 * time.Minute
	DefaultTrainHeartbeat      = time.Minute
	DefaultContinueAsNewEvery  = 10
)

// WithDefaults returns a copy of s with zero fields set to their defaults:
// preset "default", MinSites = all sites, the default deadlines, and the
// preset's defaults for zero hyper-parameters whose zero is not a setting.
func (s CampaignSpec) WithDefaults() CampaignSpec {
	if s.Preset == "" {
		s.Preset = method.Default
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
	s.Hyperparameters = s.Hyperparameters.WithDefaults(s.Preset).ForMethod(s.Method)
	return s
}

// Validate reports the first problem with the spec, naming the field, so
// that a bad campaign file is rejected before anything starts: besides each
// field on its own, it checks that rounds keep the keys in order (at most
// artifact.MaxRound), that the method can aggregate as few models as the
// quorum allows (method.Hyperparameters.ValidateFederation), that no site
// is named like an aggregate the server writes for other sites
// (artifact.ValidateSiteName) and that no site's descriptor_rows names a
// row twice. Whether the rows exist only the site knows: it drops itself
// from the round when one does not.
func (s CampaignSpec) Validate() error {
	if err := s.ValidateBeforeNameChecks(); err != nil {
		return err
	}
	for i, site := range s.Sites {
		if err := artifact.ValidateSiteName(site.Name); err != nil {
			return fmt.Errorf("sites[%d].name %w", i, err)
		}
	}
	if err := validateDistinctRows(s.DescriptorRows); err != nil {
		return err
	}
	if err := s.validateInitialModel(); err != nil {
		return err
	}
	return s.validatePrivacy()
}

// validateInitialModel holds initial_model to model "external" and to the
// form the starter writes.
func (s CampaignSpec) validateInitialModel() error {
	im := s.InitialModel
	if im == nil {
		return nil
	}
	if !s.Hyperparameters.IsExternal() {
		return fmt.Errorf("initial_model: applies only to model %q (our own models start from a seeded initialisation)", method.ModelExternal)
	}
	if b, err := hex.DecodeString(im.SHA256); err != nil || len(b) != sha256.Size || strings.ToLower(im.SHA256) != im.SHA256 {
		return fmt.Errorf("initial_model.sha256 = %q: want the 64 hex digits of the file's sha256", im.SHA256)
	}
	if im.Size <= 8 {
		return fmt.Errorf("initial_model.size = %d: a safetensors file has more than 8 bytes", im.Size)
	}
	return nil
}

// ValidateBeforeNameChecks is Validate without the checks added last (site
// names reserved for aggregates, repeated descriptor rows). Workflows
// replaying a history begun before those checks use it, so that a
// campaign running under the old rules replays as it ran.
func (s CampaignSpec) ValidateBeforeNameChecks() error {
	if err := s.LegacyValidate(); err != nil {
		return err
	}
	if s.Schema != nil {
		if err := s.Schema.Validate(); err != nil {
			return fmt.Errorf("schema.%w", err)
		}
	}
	if err := validateKeepSiteModels(s.KeepSiteModels); err != nil {
		return err
	}
	if s.Rounds > artifact.MaxRound {
		return fmt.Errorf("rounds = %d: must be <= %d (round keys have four digits and would no longer sort by round)", s.Rounds, artifact.MaxRound)
	}
	return s.Hyperparameters.ValidateFederation(s.Method, s.MinSites)
}

// LegacyValidate is Validate without the checks added later (rounds at
// most artifact.MaxRound, the method against the quorum's size). Workflows
// replaying a history begun before those checks use it, so that a
// campaign that started under the old rules replays as it ran instead of
// failing on upgrade; everything else calls Validate.
func (s CampaignSpec) LegacyValidate() error {
	if err := artifact.ValidateName(s.Campaign); err != nil {
		return fmt.Errorf("campaign %w", err)
	}
	if _, err := learn.ParseMethod(string(s.Method)); err != nil {
		return fmt.Errorf("method %q: unknown; want one of %v", s.Method, learn.Methods)
	}
	if err := method.CheckPreset(s.Preset); err != nil {
		return err
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
		return fmt.Errorf("min_sites = %d: must be in [1, %d] (the number of sites), or 0 for all sites", s.MinSites, len(s.Sites))
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

// validateDistinctRows reports a site whose descriptor rows name a row
// twice: the descriptor would weigh that row double, and the site would
// refuse the list (tda.ComputeDescriptor) only once the round runs.
func validateDistinctRows(rows map[string][]int) error {
	sites := make([]string, 0, len(rows))
	//workflowcheck:ignore (the keys are sorted below)
	for site := range rows {
		sites = append(sites, site)
	}
	sort.Strings(sites)
	for _, site := range sites {
		first := make(map[int]int, len(rows[site]))
		for j, r := range rows[site] {
			if k, seen := first[r]; seen {
				return fmt.Errorf("descriptor_rows[%q][%d] = %d: repeats descriptor_rows[%q][%d]; list each row once", site, j, r, site, k)
			}
			first[r] = j
		}
	}
	return nil
}

// SiteNames returns the site names in spec order.
func (s CampaignSpec) SiteNames() []string {
	names := make([]string, len(s.Sites))
	for i, site := range s.Sites {
		names[i] = site.Name
	}
	return names
}

// SameCampaign reports whether s and o describe the same campaign: equal
// with their defaults applied, whatever code version each carries (a spec
// stored by an older binary names one; the campaign is the same).
func (s CampaignSpec) SameCampaign(o CampaignSpec) bool {
	s.CodeVersion, o.CodeVersion = "", ""
	return s.WithDefaults().SpecHash() == o.WithDefaults().SpecHash()
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
