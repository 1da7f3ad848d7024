package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
)

// Sweep workflow, activity, query and update names.
const (
	SweepWorkflowName = "SweepWorkflow"

	// ActivityRecordSweep writes the sweep's spec and every campaign's
	// spec.json before any campaign starts (RecordSweepInput → RecordSweepOutput).
	ActivityRecordSweep = "RecordSweep"
	// ActivityBuildSweepResults reads every campaign's manifests and writes
	// results.parquet and curves.parquet (BuildSweepResultsInput → BuildSweepResultsOutput).
	ActivityBuildSweepResults = "BuildSweepResults"

	// QuerySweepSpec returns the SweepSpec a sweep runs (with its
	// defaults), for a starter to compare a file against before
	// sweeps/<sweep>/spec.json is written.
	QuerySweepSpec = "spec"
)

// MaxSweepNameLen is the longest sweep name: artifact.MaxNameLen less room
// for the longest suffix a shortened campaign name adds (see Validate).
const MaxSweepNameLen = 40

// Default sweep settings.
const (
	DefaultSweepConcurrency = 4
	// DefaultSweepContinueAsNewEvery is how many campaigns one run of
	// SweepWorkflow starts before it drains and continues as new.
	DefaultSweepContinueAsNewEvery = 100
)

// SweepCampaignWorkflowID is the workflow ID of a sweep's child campaign,
// "<sweep>/<campaign>". It is deterministic, so a replayed or continued
// sweep finds its campaigns again instead of starting them twice.
func SweepCampaignWorkflowID(sweep, campaign string) string { return sweep + "/" + campaign }

// CampaignName returns the campaign a command-line argument names: a
// campaign's name as it is, or a sweep's campaign as `starter ls` lists it,
// "<sweep>/<campaign>" (SweepCampaignWorkflowID), whose campaign part must
// then be one of that sweep's names ("<sweep>-…"). Both parts are checked
// with artifact.ValidateName.
func CampaignName(arg string) (string, error) {
	sweep, campaign, ok := strings.Cut(arg, "/")
	if !ok {
		if err := artifact.ValidateName(arg); err != nil {
			return "", err
		}
		return arg, nil
	}
	if err := artifact.ValidateName(sweep); err != nil {
		return "", fmt.Errorf("sweep part of %q: %w", arg, err)
	}
	if err := artifact.ValidateName(campaign); err != nil {
		return "", fmt.Errorf("campaign part of %q: %w", arg, err)
	}
	if !strings.HasPrefix(campaign, sweep+"-") {
		return "", fmt.Errorf("%q: campaign %s is not one of sweep %s's (their names start with %s-)", arg, campaign, sweep, sweep)
	}
	return campaign, nil
}

// SweepMethod is one method of a sweep with its base hyper-parameters (the
// starter resolves them from the preset, as `starter run` does, so the
// workflow never needs the core's presets).
type SweepMethod struct {
	Method          learn.Method           `json:"method"`
	Hyperparameters method.Hyperparameters `json:"hyperparameters"`
}

// SweepSetting is one point of the hyper-parameter grid: a label (part of
// the campaign name and of the results table) and the overrides it applies
// over a method's base hyper-parameters. Methods, when not empty, limits the
// setting to those methods (an ablation of β means nothing to FedAvg).
type SweepSetting struct {
	Label   string              `json:"label"`
	Set     []method.ParamValue `json:"set,omitempty"`
	Methods []learn.Method      `json:"methods,omitempty"`
}

// SweepFederation is one federation a sweep runs on: its sites (whose
// workers must poll their queues) and its quorum.
type SweepFederation struct {
	Name     string `json:"name"`
	Sites    []Site `json:"sites"`
	MinSites int    `json:"min_sites,omitempty"` // 0: all sites
	// Seeds, when not empty, replace SweepSpec.Seeds for this federation:
	// a generated federation is usually paired with the seed it was
	// generated from.
	Seeds []uint64 `json:"seeds,omitempty"`
	// DescriptorRows as in CampaignSpec; rarely used in sweeps.
	DescriptorRows map[string][]int `json:"descriptor_rows,omitempty"`
	// Schema is the federation's CampaignSpec.Schema, given to each of
	// its campaigns; nil checks nothing.
	Schema *DataSchema `json:"schema,omitempty"`
	// Preset, Rounds and Set, when given, let one federation's campaigns
	// differ from the sweep's: Preset names the preset they run under (the
	// campaign spec's label), Rounds replaces SweepSpec.Rounds, and Set
	// applies after a method's base hyper-parameters and before the
	// setting's overrides. The starter resolves a federation's preset into
	// Set (the hyper-parameters in which it differs from the sweep's
	// preset), so that the workflow never reads the core's presets. A
	// deep experiment runs Scenario C and D federations in one sweep this
	// way.
	Preset string              `json:"preset,omitempty"`
	Rounds int                 `json:"rounds,omitempty"`
	Set    []method.ParamValue `json:"set,omitempty"`
}

// SweepSpec is a grid of campaigns: federations × methods × settings ×
// seeds, in that nesting order (Campaigns lists them). It is the input of
// SweepWorkflow and is stored as sweeps/<sweep>/spec.json. It stays small
// however large the grid: the workflow expands it.
type SweepSpec struct {
	// Sweep names the sweep: the SweepWorkflow's ID, the prefix of its
	// campaigns' names and IDs, and sweeps/<sweep>/ in the store.
	Sweep       string            `json:"sweep"`
	Preset      string            `json:"preset"`
	Rounds      int               `json:"rounds"`
	Seeds       []uint64          `json:"seeds"`
	Methods     []SweepMethod     `json:"methods"`
	Settings    []SweepSetting    `json:"settings"` // empty: one setting "base" without overrides
	Federations []SweepFederation `json:"federations"`
	// Concurrency bounds the campaigns running at once.
	Concurrency int `json:"concurrency"`
	// ContinueAsNewEvery is how many campaigns one run of the sweep
	// starts before it lets them finish and continues as new.
	ContinueAsNewEvery int `json:"continue_as_new_every"`
	// Campaign settings shared by every campaign (zero: CampaignSpec's defaults).
	RoundDeadline              time.Duration `json:"round_deadline,omitempty"`
	SiteActivityTimeout        time.Duration `json:"site_activity_timeout,omitempty"`
	TrainHeartbeat             time.Duration `json:"train_heartbeat,omitempty"`
	CampaignContinueAsNewEvery int           `json:"campaign_continue_as_new_every,omitempty"`
	Bucket                     string        `json:"bucket"`
	CodeVersion                string        `json:"code_version,omitempty"`
	// Privacy holds the noise the starter planned for the campaigns that
	// run under dp record (method.PlanPrivacy needs float arithmetic, which
	// the workflow does not do): one entry per federation, method and
	// setting, whose Set applies after the setting's.
	Privacy []SweepPrivacy `json:"privacy,omitempty"`
	// PrivacyBudget, when set, is the sweep file's privacy: every site's
	// releases over the whole sweep stay within it (the starter sized
	// every campaign's noise to fit; campaign.PlanSweepPrivacy). The
	// workflow does not read it; the starter refuses to extend such a
	// sweep's budget, which the plan was sized for.
	PrivacyBudget *SweepPrivacyBudget `json:"privacy_budget,omitempty"`
	// Search, when set, makes the sweep adaptive: instead of the grid of
	// Settings, the sweep's strategy proposes trials from a search space
	// and decides how many rounds each trains (SweepSearch).
	Search *SweepSearch `json:"search,omitempty"`
}

// SweepPrivacy is the planned noise of the dp record campaigns of one
// federation, method and setting (every seed alike): the overrides that
// turn their hyper-parameters into planned ones.
type SweepPrivacy struct {
	Federation string              `json:"federation"`
	Method     learn.Method        `json:"method"`
	Setting    string              `json:"setting"`
	Set        []method.ParamValue `json:"set"`
}

// SweepPrivacyBudget is a sweep's privacy budget: (Epsilon, Delta) for
// every site over the whole sweep, and the most campaign-rounds one site
// takes part in, which the plan divided it by.
type SweepPrivacyBudget struct {
	Epsilon        float64 `json:"epsilon"`
	Delta          float64 `json:"delta"`
	CampaignRounds int     `json:"campaign_rounds"`
}

// privacyFor returns the planned overrides of one federation, method and
// setting (nil when none).
func (s SweepSpec) privacyFor(fed string, m learn.Method, setting string) []method.ParamValue {
	for _, p := range s.Privacy {
		if p.Federation == fed && p.Method == m && p.Setting == setting {
			return p.Set
		}
	}
	return nil
}

// WithDefaults fills the zero concurrency, continue-as-new period, preset
// and settings.
func (s SweepSpec) WithDefaults() SweepSpec {
	if s.Preset == "" {
		s.Preset = method.Default
	}
	if s.Concurrency == 0 {
		s.Concurrency = DefaultSweepConcurrency
	}
	if s.ContinueAsNewEvery == 0 {
		s.ContinueAsNewEvery = DefaultSweepContinueAsNewEvery
	}
	if len(s.Settings) == 0 {
		s.Settings = []SweepSetting{{Label: "base"}}
	}
	return s
}

// SweepCampaign is one campaign of a sweep, with where it sits in the grid.
type SweepCampaign struct {
	Index      int          `json:"index"`
	Federation string       `json:"federation"`
	Method     learn.Method `json:"method"`
	Setting    string       `json:"setting"`
	Seed       uint64       `json:"seed"`
	Spec       CampaignSpec `json:"spec"` // defaulted
	WorkflowID string       `json:"workflow_id"`
}

// Campaigns expands the grid into its campaigns, in a fixed order
// (federations, then methods, then settings, then seeds). Campaign names
// are "<sweep>-<federation>-<method>-<setting>-s<seed>" when that is a
// valid name (artifact.ValidateName), otherwise "<sweep>-c<index>-<hash>"
// shortened to fit. It is pure, so the workflow calls it on every replay.
func (s SweepSpec) Campaigns() ([]SweepCampaign, error) {
	s = s.WithDefaults()
	var out []SweepCampaign
	for _, fed := range s.Federations {
		for _, m := range s.Methods {
			for _, set := range s.Settings {
				if !settingApplies(set, m.Method) {
					continue
				}
				h, err := m.Hyperparameters.Apply(fed.Set)
				if err != nil {
					return nil, fmt.Errorf("federations[%s].set: %w", fed.Name, err)
				}
				if h, err = h.Apply(set.Set); err != nil {
					return nil, fmt.Errorf("settings[%s]: %w", set.Label, err)
				}
				if h, err = h.Apply(s.privacyFor(fed.Name, m.Method, set.Label)); err != nil {
					return nil, fmt.Errorf("privacy[%s/%s/%s]: %w", fed.Name, m.Method, set.Label, err)
				}
				preset, rounds := s.Preset, s.Rounds
				if fed.Preset != "" {
					preset = fed.Preset
				}
				if fed.Rounds > 0 {
					rounds = fed.Rounds
				}
				seeds := s.Seeds
				if len(fed.Seeds) > 0 {
					seeds = fed.Seeds
				}
				for _, seed := range seeds {
					i := len(out)
					name := sweepCampaignName(s.Sweep, fed.Name, string(m.Method), set.Label, seed, i)
					spec := CampaignSpec{
						Campaign: name, Method: m.Method, Preset: preset, Rounds: rounds, Seed: seed,
						Sites: fed.Sites, MinSites: fed.MinSites,
						RoundDeadline: s.RoundDeadline, SiteActivityTimeout: s.SiteActivityTimeout,
						TrainHeartbeat: s.TrainHeartbeat, ContinueAsNewEvery: s.CampaignContinueAsNewEvery,
						Hyperparameters: h, Bucket: s.Bucket, DescriptorRows: fed.DescriptorRows,
						CodeVersion: s.CodeVersion, Schema: fed.Schema,
					}.WithDefaults()
					out = append(out, SweepCampaign{
						Index: i, Federation: fed.Name, Method: m.Method, Setting: set.Label, Seed: seed,
						Spec: spec, WorkflowID: SweepCampaignWorkflowID(s.Sweep, name),
					})
				}
			}
		}
	}
	return out, nil
}

func settingApplies(set SweepSetting, method learn.Method) bool {
	if len(set.Methods) == 0 {
		return true
	}
	for _, m := range set.Methods {
		if m == method {
			return true
		}
	}
	return false
}

func sweepCampaignName(sweep, fed, method, setting string, seed uint64, index int) string {
	name := fmt.Sprintf("%s-%s-%s-%s-s%d", sweep, fed, method, setting, seed)
	if artifact.ValidateName(name) == nil {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	suffix := fmt.Sprintf("-c%d-%s", index, hex.EncodeToString(sum[:4]))
	prefix := sweep
	if len(prefix)+len(suffix) > artifact.MaxNameLen {
		prefix = prefix[:artifact.MaxNameLen-len(suffix)]
	}
	return prefix + suffix
}

// Validate reports the first problem with the sweep, naming the field; it
// also validates every campaign the grid expands to (CampaignSpec.Validate),
// so a method that cannot work on one federation's size is named with that
// federation before any campaign starts.
func (s SweepSpec) Validate() error {
	return s.validate(CampaignSpec.Validate)
}

// LegacyValidate is Validate with CampaignSpec.LegacyValidate for the
// campaigns, for workflows replaying a history begun before the later checks.
func (s SweepSpec) LegacyValidate() error {
	return s.validate(CampaignSpec.LegacyValidate)
}

// ValidateBeforeNameChecks is Validate with
// CampaignSpec.ValidateBeforeNameChecks for the campaigns, for workflows
// replaying a history begun before the name checks.
func (s SweepSpec) ValidateBeforeNameChecks() error {
	return s.validate(CampaignSpec.ValidateBeforeNameChecks)
}

func (s SweepSpec) validate(validateCampaign func(CampaignSpec) error) error {
	// A sweep name follows artifact.ValidateName and is at most
	// MaxSweepNameLen long, so that the shortened name of any of its
	// campaigns ("<sweep>-c<index>-<hash>", see Campaigns) still starts
	// with the whole sweep name.
	if artifact.ValidateName(s.Sweep) != nil || len(s.Sweep) > MaxSweepNameLen {
		return fmt.Errorf("sweep %q: must be 1-%d characters of A-Z a-z 0-9 . _ - starting with a letter or digit", s.Sweep, MaxSweepNameLen)
	}
	if len(s.Methods) == 0 {
		return fmt.Errorf("methods: at least one method is required")
	}
	for i, f := range s.Federations {
		if len(s.Seeds) == 0 && len(f.Seeds) == 0 {
			return fmt.Errorf("seeds: at least one seed is required (or federations[%d].seeds)", i)
		}
	}
	if len(s.Federations) == 0 {
		return fmt.Errorf("federations: at least one federation is required")
	}
	if s.Concurrency < 1 {
		return fmt.Errorf("concurrency = %d: must be >= 1", s.Concurrency)
	}
	if s.ContinueAsNewEvery < 1 {
		return fmt.Errorf("continue_as_new_every = %d: must be >= 1", s.ContinueAsNewEvery)
	}
	seen := map[string]bool{}
	for i, f := range s.Federations {
		if err := artifact.ValidateName(f.Name); err != nil {
			return fmt.Errorf("federations[%d].name %w", i, err)
		}
		if seen[f.Name] {
			return fmt.Errorf("federations[%d].name %q: duplicate", i, f.Name)
		}
		if f.Rounds < 0 {
			return fmt.Errorf("federations[%d].rounds = %d: must be >= 0 (0: the sweep's rounds)", i, f.Rounds)
		}
		seen[f.Name] = true
	}
	if s.Search != nil {
		if err := s.Search.validate(s); err != nil {
			return err
		}
	}
	labels := map[string]bool{}
	for i, set := range s.Settings {
		if err := artifact.ValidateName(set.Label); err != nil {
			return fmt.Errorf("settings[%d].label %w", i, err)
		}
		if labels[set.Label] {
			return fmt.Errorf("settings[%d].label %q: duplicate", i, set.Label)
		}
		labels[set.Label] = true
	}
	cs, err := s.Campaigns()
	if err != nil {
		return err
	}
	if len(cs) == 0 {
		return fmt.Errorf("settings: no setting applies to any method; the sweep has no campaign")
	}
	names := map[string]bool{}
	for _, c := range cs {
		if err := validateCampaign(c.Spec); err != nil {
			return fmt.Errorf("campaign %s (federation %s, method %s, setting %s, seed %d): %w",
				c.Spec.Campaign, c.Federation, c.Method, c.Setting, c.Seed, err)
		}
		if names[c.Spec.Campaign] {
			return fmt.Errorf("campaign %s: two grid points give the same name (duplicate seed, method or setting?)", c.Spec.Campaign)
		}
		names[c.Spec.Campaign] = true
	}
	return nil
}

// SettingLabel makes a label from overrides, e.g. "beta0.3_clusters2".
func SettingLabel(set []method.ParamValue) string {
	if len(set) == 0 {
		return "base"
	}
	parts := make([]string, len(set))
	for i, p := range set {
		v := p.Text
		if v == "" {
			v = strconv.FormatFloat(p.Value, 'g', -1, 64)
		}
		parts[i] = strings.ReplaceAll(p.Name, "_", "") + v
	}
	return strings.Join(parts, "_")
}

// Sweep states reported by the status query.
const (
	SweepRunning  = "running"
	SweepPaused   = "paused"   // no new campaign starts until resume; running ones go on
	SweepStopping = "stopping" // no new campaign starts; the running ones stop after their running round, then results are built
	SweepDone     = "done"
	SweepStopped  = "stopped"
)

// SweepWorkflowInput starts or continues a sweep. State is nil on the
// first run and set by continue-as-new.
type SweepWorkflowInput struct {
	Spec  SweepSpec   `json:"spec"`
	State *SweepState `json:"state,omitempty"`
	// ColocatedQueue is passed to every campaign of the sweep: see
	// CampaignWorkflowInput.
	ColocatedQueue string `json:"colocated_queue,omitempty"`
}

// SweepState is what one run of SweepWorkflow carries to the next.
type SweepState struct {
	Recorded    bool              `json:"recorded"`
	Next        int               `json:"next"` // index of the next campaign to start
	Outcomes    []CampaignOutcome `json:"outcomes"`
	Paused      bool              `json:"paused"`
	PauseReason string            `json:"pause_reason,omitempty"`
	Stopping    bool              `json:"stopping"`
	StopReason  string            `json:"stop_reason,omitempty"`
	// Search is an adaptive sweep's trials (Spec.Search); nil for a grid.
	Search *SearchState `json:"search,omitempty"`
	// ContinuedAsNew counts the runs that continued as new before this one.
	ContinuedAsNew int `json:"continued_as_new,omitempty"`
}

// CampaignOutcome is how one campaign of a sweep ended: small, references only.
type CampaignOutcome struct {
	Index        int          `json:"index"`
	Campaign     string       `json:"campaign"`
	State        string       `json:"state"` // StateDone, StateStopped or StateFailed
	RoundsDone   int          `json:"rounds_done"`
	FinalAUC     float64      `json:"final_auc"`
	FinalAcc     float64      `json:"final_acc"`
	LastManifest *ArtifactRef `json:"last_manifest,omitempty"`
	Error        string       `json:"error,omitempty"`
	// Search says, for an adaptive sweep's campaign, its trial, rung and
	// status; nil in a grid sweep.
	Search *OutcomeSearch `json:"search,omitempty"`
}

// SweepStatus answers the status query and acknowledges every update.
type SweepStatus struct {
	Sweep          string   `json:"sweep"`
	State          string   `json:"state"`
	CampaignsDone  int      `json:"campaigns_done"` // ended, whatever the outcome
	CampaignsTotal int      `json:"campaigns_total"`
	Failed         int      `json:"failed"`
	Running        []string `json:"running,omitempty"` // campaign names
	// Trials is, for an adaptive sweep, the trials started so far
	// (CampaignsTotal then counts their campaigns, not a grid's).
	Trials      int    `json:"trials,omitempty"`
	PauseReason string `json:"pause_reason,omitempty"`
	StopReason  string `json:"stop_reason,omitempty"`
	// ContinuedAsNew counts the sweep's runs that continued as new
	// (SweepState.ContinuedAsNew).
	ContinuedAsNew int `json:"continued_as_new,omitempty"`
	// Search is, for an adaptive sweep, its trials, actions and limits so
	// far (without the campaigns' resume states and pending results), from
	// which `starter sweep status` shows the rungs, the incumbent and the
	// budget spent; nil for a grid, and from sweeps begun before it.
	Search *SearchState `json:"search,omitempty"`
}

// SweepWorkflowOutput is a finished sweep.
type SweepWorkflowOutput struct {
	Sweep          string            `json:"sweep"`
	State          string            `json:"state"` // SweepDone or SweepStopped
	CampaignsDone  int               `json:"campaigns_done"`
	CampaignsTotal int               `json:"campaigns_total"`
	Failed         int               `json:"failed"`
	Results        ArtifactRef       `json:"results"`
	Curves         ArtifactRef       `json:"curves"`
	Outcomes       []CampaignOutcome `json:"outcomes"`
	StopReason     string            `json:"stop_reason,omitempty"`
	// Search is an adaptive sweep's trials at the end (their resume
	// states included): `starter sweep extend` continues from it.
	Search *SearchState `json:"search,omitempty"`
	// ContinuedAsNew counts the sweep's runs that continued as new.
	ContinuedAsNew int `json:"continued_as_new,omitempty"`
}

// RecordSweepInput asks the server to write the sweep's spec and every
// campaign's spec.json (deterministic keys and bytes, so idempotent).
type RecordSweepInput struct {
	Spec SweepSpec `json:"spec"`
	// Trials, for an adaptive sweep, are the new trials whose campaigns'
	// specs to write (each trial's before its campaigns start); the
	// sweep's first call has none and writes the sweep's spec alone.
	Trials []SearchTrial `json:"trials,omitempty"`
}

// RecordSweepOutput: the sweep spec's reference.
type RecordSweepOutput struct {
	Spec ArtifactRef `json:"spec"`
}

// BuildSweepResultsInput asks the server to build the sweep's tables from
// the campaigns' manifests. Outcomes are in campaign index order; campaigns
// never started (a stopped sweep) are absent.
type BuildSweepResultsInput struct {
	Spec     SweepSpec         `json:"spec"`
	Outcomes []CampaignOutcome `json:"outcomes"`
	// Search is an adaptive sweep's record, written as
	// sweeps/<sweep>/search.json; Outcomes' indices refer to
	// Spec.SearchCampaigns(Search.Trials).
	Search *SearchRecord `json:"search,omitempty"`
}

// BuildSweepResultsOutput: the two tables.
type BuildSweepResultsOutput struct {
	Results ArtifactRef `json:"results"`
	Curves  ArtifactRef `json:"curves"`
	Rows    int         `json:"rows"`
	Rounds  int         `json:"rounds"`
}
