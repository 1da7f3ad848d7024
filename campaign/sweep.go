package campaign

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/search"
	"github.com/ptopofl/ptopofl/store"
)

// SweepFile is the YAML sweep file. Unknown keys are errors; every error
// names the line, the field and the forms it accepts.
//
//	sweep: demo-sweep               # names the sweep; re-running the same file re-attaches, an edited one is refused
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
//
// An adaptive sweep replaces grid and variants with a search space, a
// strategy and a budget (one method; validation_fraction set in
// hyperparameters, since trials are ranked on validation):
//
//	search:                         # a list of search.Dimension: uniform, log_uniform, int (log), choice
//	  - {name: lr, log_uniform: [0.003, 0.3]}
//	  - {name: beta, uniform: [0, 1]}
//	  - {name: clusters, choice: [1, 2, 3]}
//	search:                         # or the same space as a mapping keyed by name (a bare list is a choice)
//	  lr: {log_uniform: [0.003, 0.3]}
//	  beta: {uniform: [0, 1]}
//	  clusters: [1, 2, 3]
//	strategy: tpe+asha              # grid | random | asha | tpe | tpe+asha (default) | hyperband
//	budget: {campaign_rounds: 600, trials: 0}   # 0: no limit; one at least, except for grid
//	objective: {metric: val_auc, mode: max}     # or val_acc; mode min ranks the lowest first
//	asha: {min_rounds: 1, eta: 3, grace: 0}     # asha, tpe+asha, hyperband (defaults: search.ASHAOptions)
//	tpe: {startup_trials: 10, candidates: 24}   # tpe, tpe+asha (Optuna's defaults)
//	pruner: median                  # random and tpe: Optuna's MedianPruner
//	median: {startup_trials: 5, warmup_steps: 0, interval_steps: 1, min_trials: 1}   # its options (Optuna's defaults)
//	warm_start: grid-sweep          # seed the search with a finished grid's configurations, not trained again
//	seed: 1                         # the sweep's own seed: the sampler's draws
//	privacy: {epsilon: 8, delta: 1e-5}   # dp record: every site within (ε, δ) over the whole sweep
//	continue_as_new_every: 100
//	round_deadline: 30m
//	bucket: ptopofl
//
// A grid block with a strategy other than grid is the search space of
// that strategy (a choice per hyper-parameter); `strategy: grid` beside
// it is the grid sweep.
type SweepFile struct {
	Sweep              string                `yaml:"sweep"`                 // the sweep's name; re-running the same file re-attaches, an edited one is refused (add budget with sweep extend)
	Preset             string                `yaml:"preset"`                // the defaults of every campaign
	Rounds             int                   `yaml:"rounds"`                // rounds per campaign
	Seeds              []uint64              `yaml:"seeds"`                 // each campaign runs once per seed
	Methods            []string              `yaml:"methods"`               // the methods compared (one per search sweep)
	Federations        []SweepFileFederation `yaml:"federations"`           // the federations every method runs on
	Hyperparameters    map[string]any        `yaml:"hyperparameters"`       // base values for every campaign
	Grid               map[string][]any      `yaml:"grid"`                  // parameter → values: every combination is a setting (the space of an adaptive strategy)
	Variants           []SweepFileVariant    `yaml:"variants"`              // labelled settings limited to some methods (ablations)
	Concurrency        int                   `yaml:"concurrency"`           // campaigns at once
	ContinueAsNewEvery int                   `yaml:"continue_as_new_every"` // as in a campaign file
	RoundDeadline      string                `yaml:"round_deadline"`        // as in a campaign file
	Bucket             string                `yaml:"bucket"`                // the S3 bucket

	Search    SearchSpace           `yaml:"search"`     // an adaptive sweep's space (instead of grid): a list of dimensions or a mapping by name
	Strategy  string                `yaml:"strategy"`   // grid, random, asha, tpe, tpe+asha (default) or hyperband
	Budget    *SweepFileBudget      `yaml:"budget"`     // when an adaptive sweep stops
	Objective *SweepFileObjective   `yaml:"objective"`  // what it ranks trials on, and in which direction
	ASHA      *search.ASHAOptions   `yaml:"asha"`       // the rungs of asha and tpe+asha
	TPE       *search.TPEOptions    `yaml:"tpe"`        // TPE's settings
	Pruner    string                `yaml:"pruner"`     // median: Optuna's MedianPruner for random and tpe (none by default)
	Median    *search.MedianOptions `yaml:"median"`     // the median pruner's settings
	WarmStart string                `yaml:"warm_start"` // a finished grid sweep whose configurations seed the search, not trained again
	Seed      uint64                `yaml:"seed"`       // the search's own seed (its decisions, not the campaigns')

	Privacy *SweepFilePrivacy `yaml:"privacy"` // every site's budget over the whole sweep (dp record)
}

// SweepFileBudget is an adaptive sweep's budget: campaign-rounds trained
// over every campaign, and trials started; 0 is no limit.
type SweepFileBudget struct {
	CampaignRounds int `yaml:"campaign_rounds"`
	Trials         int `yaml:"trials"`
}

// SweepFileObjective is what an adaptive sweep ranks trials on: a
// validation metric (val_auc, the default, or val_acc), and the
// direction: mode max (the default) keeps the highest, min the lowest (a
// loss-like metric, or the configurations that hurt a model most).
type SweepFileObjective struct {
	Metric string `yaml:"metric"`
	Mode   string `yaml:"mode"`
}

// searchOf returns sf's search (nil when it has none), or an error naming
// the field that is set without a search space or is wrong. A grid block
// with a strategy other than grid is turned into a space of choices (its
// names in sorted order, as GridSettings orders them).
func searchOf(sf SweepFile) (*pipeline.SweepSearch, error) {
	dims := []search.Dimension(sf.Search)
	if len(dims) == 0 && len(sf.Grid) > 0 && sf.Strategy != "" && sf.Strategy != string(search.StrategyGrid) {
		if len(sf.Variants) > 0 {
			return nil, inputErrorf("sweep file: variants: not with strategy %s (its space is the grid block's values)", sf.Strategy)
		}
		for _, name := range sortedKeys(sf.Grid) {
			dims = append(dims, search.Dimension{Name: name, Choice: sf.Grid[name]})
		}
		sf.Grid = nil
	}
	if len(dims) == 0 {
		for _, f := range []struct {
			name string
			set  bool
		}{
			{"strategy", sf.Strategy != "" && sf.Strategy != string(search.StrategyGrid)}, {"budget", sf.Budget != nil},
			{"objective", sf.Objective != nil}, {"asha", sf.ASHA != nil}, {"tpe", sf.TPE != nil}, {"pruner", sf.Pruner != ""},
			{"median", sf.Median != nil}, {"warm_start", sf.WarmStart != ""}, {"seed", sf.Seed != 0},
		} {
			if f.set {
				return nil, inputErrorf("sweep file: %s: only with a search space (search:, or grid: with an adaptive strategy); a sweep without one is a grid", f.name)
			}
		}
		return nil, nil
	}
	q := &pipeline.SweepSearch{Dims: dims, Strategy: search.Strategy(sf.Strategy), Objective: pipeline.ObjectiveValAUC, Seed: sf.Seed, Pruner: search.Pruner(sf.Pruner)}
	if q.Strategy == "" {
		q.Strategy = search.StrategyTPEASHA
	}
	if b := sf.Budget; b != nil {
		q.Budget, q.Trials = b.CampaignRounds, b.Trials
	}
	if o := sf.Objective; o != nil {
		if o.Metric != "" {
			q.Objective = o.Metric
		}
		switch o.Mode {
		case "", pipeline.ModeMax:
		case pipeline.ModeMin:
			q.Mode = pipeline.ModeMin
		default:
			return nil, inputErrorf("sweep file: objective.mode = %q: want max or min", o.Mode)
		}
	}
	if sf.ASHA != nil {
		q.ASHA = *sf.ASHA
	}
	if sf.TPE != nil {
		q.TPE = *sf.TPE
	}
	if sf.Median != nil {
		q.Median = *sf.Median
	}
	if len(sf.Grid) > 0 || len(sf.Variants) > 0 {
		return nil, inputErrorf("sweep file: grid/variants: not with search (strategy grid searches a space of choices)")
	}
	return q, nil
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
	// WarmStart is the grid sweep the file's warm_start names: the
	// service resolves it into Spec.Search.Warm from that grid's table
	// (Service.ResolveWarmStart) before the sweep starts.
	WarmStart string
}

// ReadSweepFile decodes the sweep file at path strictly
// (decodeSweepFile); errors wrap ErrInput and name the file, the line,
// the field and the forms it accepts.
func ReadSweepFile(path string) (SweepFile, error) {
	var sf SweepFile
	b, err := os.ReadFile(path)
	if err != nil {
		return sf, inputErrorf("sweep file: %v", err)
	}
	return sf, decodeSweepFile(path, b, &sf)
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

// LoadSweepPlan reads the sweep file at path (made absolute first, so the
// paths in it resolve from any working directory) and builds its plan
// (ReadSweepFile, BuildSweepPlan).
func LoadSweepPlan(path, bucket string, bucketGiven bool) (SweepPlan, error) {
	file, err := filepath.Abs(path)
	if err != nil {
		return SweepPlan{}, inputErrorf("%v", err)
	}
	sf, err := ReadSweepFile(file)
	if err != nil {
		return SweepPlan{}, err
	}
	return BuildSweepPlan(sf, file, bucket, bucketGiven)
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
			return plan, inputErrorf("sweep file: round_deadline = %q: want a duration such as 30m or 1h", sf.RoundDeadline)
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
		s.Methods = append(s.Methods, pipeline.SweepMethod{Method: learn.Method(m), Hyperparameters: h.ForMethod(learn.Method(m))})
	}
	grid := sf.Grid
	if sf.Strategy != "" && sf.Strategy != string(search.StrategyGrid) && len(sf.Search) == 0 {
		grid = nil // the space of the strategy (searchOf)
	}
	if s.Settings, err = GridSettings(grid); err != nil {
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
	if s.Search, err = searchOf(sf); err != nil {
		return plan, err
	}
	plan.WarmStart = sf.WarmStart
	s, err = PlanSweepPrivacyBudget(s.WithDefaults(), plan.FedDirs, sf.Privacy)
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
	// Privacy is what the whole sweep's releases under dp record spent
	// at each site (SweepPrivacySpent); nil when no campaign ran under it.
	Privacy *SweepPrivacySpent `json:"privacy,omitempty"`
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
// and spec. A trial is a (method, setting) pair, its score the mean of its
// campaigns' objective (validation AUC, or accuracy when the search says
// so); Best is the incumbent as search.Replay defines it: among the trials
// trained to the most rounds any trial reached (a score after 3 rounds is
// not comparable with one after 15), the best score in the objective's
// direction (objective.mode). A warm start's grid configurations compete
// too (at the grid's rounds, with the grid's campaigns) when the objective
// is val_auc, the metric Best reports; they are not among the rows and
// cost no rounds here.
func (o *SweepOutput) summarise(spec pipeline.SweepSpec) {
	o.Strategy = "grid"
	objective := pipeline.ObjectiveValAUC
	q := pipeline.SweepSearch{}
	if spec.Search != nil {
		q = *spec.Search
		o.Strategy, objective = string(q.Strategy), q.Objective
	}
	type trial struct {
		method, setting string
		rounds          int
		val, obj, test  []float64
		campaigns       []string
		h               method.Hyperparameters
		config          map[string]any // a warm trial's
	}
	var trials []*trial
	index := map[[2]string]*trial{}
	for _, r := range o.Rows {
		o.RoundsSpent += r.RoundsDone
		k := [2]string{r.Method, r.Setting}
		t := index[k]
		if t == nil {
			t = &trial{method: r.Method, setting: r.Setting, rounds: r.RoundsDone, h: r.Hyperparameters}
			index[k] = t
			trials = append(trials, t)
		}
		t.rounds = min(t.rounds, r.RoundsDone)
		score := r.FinalValAUC
		if objective == pipeline.ObjectiveValAcc {
			score = r.FinalValAcc
		}
		t.val, t.obj, t.test = append(t.val, r.FinalValAUC), append(t.obj, score), append(t.test, r.FinalAUC)
		t.campaigns = append(t.campaigns, r.Campaign)
	}
	o.Trials = len(trials)
	if w := q.Warm; w != nil && objective == pipeline.ObjectiveValAUC {
		for _, wt := range w.Trials {
			n := len(wt.Val)
			if n == 0 || len(wt.Test) < n {
				continue
			}
			cfg := map[string]any{}
			for _, pv := range wt.Config {
				if pv.Text != "" {
					cfg[pv.Name] = pv.Text
				} else {
					cfg[pv.Name] = pv.Value
				}
			}
			trials = append(trials, &trial{
				method: string(spec.Methods[0].Method), rounds: n, val: []float64{wt.Val[n-1]}, obj: []float64{wt.Val[n-1]},
				test: []float64{wt.Test[n-1]}, campaigns: wt.Campaigns, config: cfg,
			})
		}
	}
	mean := func(x []float64) float64 {
		s := 0.0
		for _, v := range x {
			s += v
		}
		return s / float64(len(x))
	}
	top := 0
	for _, t := range trials {
		if !math.IsNaN(mean(t.obj)) {
			top = max(top, t.rounds)
		}
	}
	bestScore := math.NaN()
	for _, t := range trials {
		v := mean(t.obj)
		if math.IsNaN(v) || t.rounds < top || (o.Best != nil && !q.Better(v, bestScore)) {
			continue // no validation (or a failed campaign), stopped early, or not better
		}
		bestScore = v
		setting := t.config
		if setting == nil {
			setting = trialSetting(spec, t.setting, t.h)
		}
		o.Best = &SweepBest{Method: t.method, Setting: setting, ValAUC: mean(t.val), FinalAUC: mean(t.test), Campaigns: t.campaigns}
	}
}

// trialSetting returns a trial's hyper-parameter values: a grid setting's
// overrides, or the values of an adaptive sweep's searched dimensions in
// the campaigns' hyper-parameters h.
func trialSetting(spec pipeline.SweepSpec, label string, h method.Hyperparameters) map[string]any {
	setting := map[string]any{}
	put := func(name string, v method.Value) {
		if v.Text != "" {
			setting[name] = v.Text
		} else {
			setting[name] = v.Num
		}
	}
	if spec.Search != nil {
		for _, d := range spec.Search.Dims {
			if p, ok := method.Lookup(d.Name); ok {
				put(d.Name, p.Get(h))
			}
		}
		return setting
	}
	for _, st := range spec.Settings {
		if st.Label == label {
			for _, pv := range st.Set {
				put(pv.Name, method.Value{Num: pv.Value, Text: pv.Text})
			}
		}
	}
	return setting
}

// sortedKeys is the keys of m in order.
func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}
