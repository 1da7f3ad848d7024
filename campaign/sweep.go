package campaign

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/store"
)

// SweepFile is the YAML sweep file. Unknown keys are errors.
//
//	sweep: demo-sweep               # names the sweep; re-running the file re-attaches
//	preset: default                 # or paper
//	rounds: 15
//	seeds: [1, 2, 3]
//	methods: [ptopofl, fedavg]
//	federations:                    # each: a directory of <site>_train.csv/<site>_test.csv
//	  - {name: hc, path: ../federation, min_sites: 0}   # path relative to this file; min_sites 0: all sites
//	                                # (each federation's size is checked against every method before anything starts)
//	hyperparameters: {c: 1.0}       # base overrides for every method
//	grid: {beta: [0, 0.3]}          # cartesian product, applied to every method
//	variants:                       # explicit settings (after the grid)
//	  - {label: M1, methods: [ptopofl], set: {clusters: 1}}
//	concurrency: 4                  # campaigns at once
//	continue_as_new_every: 100
//	round_deadline: 30m
//	bucket: ptopofl
type SweepFile struct {
	Sweep              string                `yaml:"sweep"`
	Preset             string                `yaml:"preset"`
	Rounds             int                   `yaml:"rounds"`
	Seeds              []uint64              `yaml:"seeds"`
	Methods            []string              `yaml:"methods"`
	Federations        []SweepFileFederation `yaml:"federations"`
	Hyperparameters    map[string]any        `yaml:"hyperparameters"`
	Grid               map[string][]any      `yaml:"grid"`
	Variants           []SweepFileVariant    `yaml:"variants"`
	Concurrency        int                   `yaml:"concurrency"`
	ContinueAsNewEvery int                   `yaml:"continue_as_new_every"`
	RoundDeadline      string                `yaml:"round_deadline"`
	Bucket             string                `yaml:"bucket"`
}

// SweepFileFederation is one entry of a sweep file's federations.
type SweepFileFederation struct {
	Name     string   `yaml:"name"`
	Path     string   `yaml:"path"`
	Sites    []string `yaml:"sites"`
	MinSites int      `yaml:"min_sites"`
	Seeds    []uint64 `yaml:"seeds"`
}

// SweepFileVariant is one entry of a sweep file's variants.
type SweepFileVariant struct {
	Label   string         `yaml:"label"`
	Methods []learn.Method `yaml:"methods"`
	Set     map[string]any `yaml:"set"`
}

// SweepPlan is a validated sweep and where each federation's data lives
// (for the in-process site workers of a local run).
type SweepPlan struct {
	Spec    pipeline.SweepSpec
	FedDirs map[string]string // federation name → absolute directory
}

// ReadSweepFile decodes the sweep file at path strictly; errors wrap
// ErrInput and name the file, the line and the field.
func ReadSweepFile(path string) (SweepFile, error) {
	var sf SweepFile
	err := decodeStrict(path, "sweep file", &sf)
	return sf, err
}

// paramValues turns {name: value} into sorted ParamValues.
func paramValues(m map[string]any, where string) ([]method.ParamValue, error) {
	var out []method.ParamValue
	for _, k := range sortedKeys(m) {
		pv, err := paramValue(k, m[k])
		if err != nil {
			return nil, inputErrorf("%s: %v", where, err)
		}
		out = append(out, pv)
	}
	return out, nil
}

// GridSettings expands {a: [1,2], b: [x]} into the cartesian product, in
// sorted name order, first name varying slowest.
func GridSettings(grid map[string][]any) ([]pipeline.SweepSetting, error) {
	settings := []pipeline.SweepSetting{{}}
	for _, name := range sortedKeys(grid) {
		if len(grid[name]) == 0 {
			return nil, inputErrorf("sweep file: grid.%s: no values", name)
		}
		var next []pipeline.SweepSetting
		for _, s := range settings {
			for _, v := range grid[name] {
				pv, err := paramValue(name, v)
				if err != nil {
					return nil, inputErrorf("sweep file: grid: %v", err)
				}
				next = append(next, pipeline.SweepSetting{Set: append(append([]method.ParamValue(nil), s.Set...), pv)})
			}
		}
		settings = next
	}
	if len(grid) == 0 {
		return nil, nil
	}
	for i := range settings {
		settings[i].Label = strings.ReplaceAll(pipeline.SettingLabel(settings[i].Set), "+", "")
	}
	return settings, nil
}

// BuildSweepPlan turns the sweep file sf, read from file, into a validated
// SweepSpec and its federations' directories. Method base hyper-parameters
// come from the preset, as for a single campaign. bucket is used when the
// file names none or bucketGiven (the user set it on the command line).
func BuildSweepPlan(sf SweepFile, file, bucket string, bucketGiven bool) (SweepPlan, error) {
	plan := SweepPlan{FedDirs: map[string]string{}}
	s := pipeline.SweepSpec{
		Sweep: sf.Sweep, Preset: sf.Preset, Rounds: sf.Rounds, Seeds: sf.Seeds,
		Concurrency: sf.Concurrency, ContinueAsNewEvery: sf.ContinueAsNewEvery, Bucket: sf.Bucket,
		// No code version: a campaign is the spec without it, and every
		// manifest records the version of the binary that committed it.
	}
	if s.Preset == "" {
		s.Preset = method.Default
	}
	if s.Rounds == 0 {
		s.Rounds = 15
	}
	if s.Bucket == "" || bucketGiven {
		s.Bucket = bucket
	}
	if sf.RoundDeadline != "" {
		d, err := time.ParseDuration(sf.RoundDeadline)
		if err != nil {
			return plan, inputErrorf("sweep file: round_deadline = %q: not a duration", sf.RoundDeadline)
		}
		s.RoundDeadline = d
	}
	base, err := paramValues(sf.Hyperparameters, "sweep file: hyperparameters")
	if err != nil {
		return plan, err
	}
	for _, m := range sf.Methods {
		if _, err := learn.ParseMethod(m); err != nil {
			return plan, inputErrorf("sweep file: methods: %q: unknown; want one of %v", m, learn.Methods)
		}
		h, err := method.Defaults(s.Preset).Apply(base)
		if err != nil {
			return plan, inputErrorf("sweep file: hyperparameters: %v", err)
		}
		h = method.DPDefaults(h, func(name string) bool { _, ok := sf.Hyperparameters[name]; return ok })
		s.Methods = append(s.Methods, pipeline.SweepMethod{Method: learn.Method(m), Hyperparameters: h})
	}
	if s.Settings, err = GridSettings(sf.Grid); err != nil {
		return plan, err
	}
	for i, v := range sf.Variants {
		set, err := paramValues(v.Set, fmt.Sprintf("sweep file: variants[%d].set", i))
		if err != nil {
			return plan, err
		}
		label := v.Label
		if label == "" {
			label = pipeline.SettingLabel(set)
		}
		s.Settings = append(s.Settings, pipeline.SweepSetting{Label: label, Set: set, Methods: v.Methods})
	}
	for i, f := range sf.Federations {
		if f.Path == "" {
			return plan, inputErrorf("sweep file: federations[%d].path: required", i)
		}
		p := f.Path
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(file), p)
		}
		fed, err := DiscoverFederation(p)
		if err != nil {
			return plan, fmt.Errorf("federations[%d]: %w", i, err)
		}
		name := f.Name
		if name == "" {
			name = filepath.Base(fed.Dir)
		}
		sites := f.Sites
		if len(sites) == 0 {
			sites = fed.Sites
		}
		sf := pipeline.SweepFederation{Name: name, MinSites: f.MinSites, Seeds: f.Seeds, Schema: fed.Schema}
		for _, n := range sites {
			sf.Sites = append(sf.Sites, pipeline.Site{Name: n})
		}
		s.Federations = append(s.Federations, sf)
		plan.FedDirs[name] = fed.Dir
	}
	s, err = PlanSweepPrivacy(s.WithDefaults(), plan.FedDirs)
	if err != nil {
		return plan, err
	}
	if err := s.Validate(); err != nil {
		return plan, inputErrorf("sweep file: %v", err)
	}
	plan.Spec = s
	return plan, siteDirsConsistent(plan)
}

// siteDirsConsistent rejects two federations with a site of the same name
// in different directories: a site's task queue is named after the site, so
// one worker would serve both.
func siteDirsConsistent(plan SweepPlan) error {
	dir := map[string]string{}
	for _, f := range plan.Spec.Federations {
		for _, s := range f.Sites {
			d := plan.FedDirs[f.Name]
			if prev, ok := dir[s.Name]; ok && prev != d {
				return inputErrorf("site %s is in two federation directories (%s, %s): its task queue %s would serve both; rename the sites",
					s.Name, prev, d, pipeline.SiteTaskQueue(s.Name))
			}
			dir[s.Name] = d
		}
	}
	return nil
}

// SweepOutput is a sweep's outcome and results table, as `starter sweep
// --format json` prints it.
type SweepOutput struct {
	Sweep          string                 `json:"sweep"`
	State          string                 `json:"state"`
	CampaignsDone  int                    `json:"campaigns_done"`
	CampaignsTotal int                    `json:"campaigns_total"`
	Failed         int                    `json:"failed"`
	Results        string                 `json:"results"` // s3://bucket/sweeps/<sweep>/results.parquet
	Curves         string                 `json:"curves"`
	Rows           []store.SweepResultRow `json:"rows"`
	WallSeconds    float64                `json:"wall_seconds"`
	// Strategy is how the sweep chose its configurations ("grid": every
	// one); RoundsSpent the campaign-rounds its campaigns trained; Trials
	// the configurations (method and setting) it started, each run over
	// every federation and seed; Best the trial with the highest mean
	// validation AUC (validation_fraction), nil when its campaigns have
	// none: a sweep never selects on the test split it reports.
	Strategy    string     `json:"strategy"`
	RoundsSpent int        `json:"rounds_spent"`
	Trials      int        `json:"trials"`
	Best        *SweepBest `json:"best"`
}

// SweepBest is SweepOutput.Best: a trial's hyper-parameter values (with
// its method), its mean validation and test AUC over its campaigns (every
// federation and seed), and those campaigns.
type SweepBest struct {
	Method    string         `json:"method"`
	Setting   map[string]any `json:"setting"`
	ValAUC    float64        `json:"val_auc"`
	FinalAUC  float64        `json:"final_auc"`
	Campaigns []string       `json:"campaigns"`
}

// summarise fills o's Strategy, RoundsSpent, Trials and Best from its rows
// and spec's settings.
func (o *SweepOutput) summarise(spec pipeline.SweepSpec) {
	o.Strategy = "grid"
	type trial struct {
		method, setting string
		val, test       []float64
		campaigns       []string
	}
	var trials []*trial
	index := map[[2]string]*trial{}
	for _, r := range o.Rows {
		o.RoundsSpent += r.RoundsDone
		k := [2]string{r.Method, r.Setting}
		t := index[k]
		if t == nil {
			t = &trial{method: r.Method, setting: r.Setting}
			index[k] = t
			trials = append(trials, t)
		}
		t.val, t.test = append(t.val, r.FinalValAUC), append(t.test, r.FinalAUC)
		t.campaigns = append(t.campaigns, r.Campaign)
	}
	o.Trials = len(trials)
	mean := func(x []float64) float64 {
		s := 0.0
		for _, v := range x {
			s += v
		}
		return s / float64(len(x))
	}
	for _, t := range trials {
		v := mean(t.val)
		if math.IsNaN(v) || (o.Best != nil && v <= o.Best.ValAUC) {
			continue // no validation (or a failed campaign), or not better
		}
		setting := map[string]any{}
		for _, st := range spec.Settings {
			if st.Label == t.setting {
				for _, pv := range st.Set {
					if pv.Text != "" {
						setting[pv.Name] = pv.Text
					} else {
						setting[pv.Name] = pv.Value
					}
				}
			}
		}
		o.Best = &SweepBest{Method: t.method, Setting: setting, ValAUC: v, FinalAUC: mean(t.test), Campaigns: t.campaigns}
	}
}

// sortedKeys is the keys of m in order.
func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}
