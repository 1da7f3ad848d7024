package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.yaml.in/yaml/v3"

	"github.com/ptopofl/ptopofl/activities"
	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/internal/workers"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/store"
)

// sweepFile is the YAML sweep file. Unknown keys are errors.
//
//	sweep: demo-sweep               # names the sweep; re-running the file re-attaches
//	preset: default                 # or paper
//	rounds: 15
//	seeds: [1, 2, 3]
//	methods: [ptopofl, fedavg]
//	federations:                    # each: a directory of <site>_train.csv/<site>_test.csv
//	  - {name: hc, path: ../federation, min_sites: 0}   # path relative to this file
//	hyperparameters: {c: 1.0}       # base overrides for every method
//	grid: {beta: [0, 0.3]}          # cartesian product, applied to every method
//	variants:                       # explicit settings (after the grid)
//	  - {label: M1, methods: [ptopofl], set: {clusters: 1}}
//	concurrency: 4                  # campaigns at once
//	continue_as_new_every: 100
//	round_deadline: 30m
//	bucket: ptopofl
type sweepFile struct {
	Sweep              string                `yaml:"sweep"`
	Preset             string                `yaml:"preset"`
	Rounds             int                   `yaml:"rounds"`
	Seeds              []uint64              `yaml:"seeds"`
	Methods            []string              `yaml:"methods"`
	Federations        []sweepFileFederation `yaml:"federations"`
	Hyperparameters    map[string]any        `yaml:"hyperparameters"`
	Grid               map[string][]any      `yaml:"grid"`
	Variants           []sweepFileVariant    `yaml:"variants"`
	Concurrency        int                   `yaml:"concurrency"`
	ContinueAsNewEvery int                   `yaml:"continue_as_new_every"`
	RoundDeadline      string                `yaml:"round_deadline"`
	Bucket             string                `yaml:"bucket"`
}

type sweepFileFederation struct {
	Name     string   `yaml:"name"`
	Path     string   `yaml:"path"`
	Sites    []string `yaml:"sites"`
	MinSites int      `yaml:"min_sites"`
	Seeds    []uint64 `yaml:"seeds"`
}

type sweepFileVariant struct {
	Label   string         `yaml:"label"`
	Methods []learn.Method `yaml:"methods"`
	Set     map[string]any `yaml:"set"`
}

// sweepPlan is a validated sweep and where each federation's data lives
// (for the in-process site workers of --local).
type sweepPlan struct {
	spec    pipeline.SweepSpec
	fedDirs map[string]string // federation name → absolute directory
}

func readSweepFile(path string) (sweepFile, error) {
	var sf sweepFile
	b, err := os.ReadFile(path)
	if err != nil {
		return sf, inputErrorf("sweep file: %v", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&sf); err != nil {
		msg := strings.ReplaceAll(strings.TrimPrefix(err.Error(), "yaml: "), "\n ", "")
		msg = strings.ReplaceAll(msg, "in type main.sweepFile", "")
		return sf, inputErrorf("sweep file %s: %s", path, strings.TrimSpace(msg))
	}
	return sf, nil
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

// gridSettings expands {a: [1,2], b: [x]} into the cartesian product, in
// sorted name order, first name varying slowest.
func gridSettings(grid map[string][]any) ([]pipeline.SweepSetting, error) {
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

// buildSweepSpec turns the file into a validated SweepSpec. Method base
// hyper-parameters come from the preset, as for `starter run`.
func buildSweepSpec(sf sweepFile, file, bucket string, bucketGiven bool) (sweepPlan, error) {
	plan := sweepPlan{fedDirs: map[string]string{}}
	s := pipeline.SweepSpec{
		Sweep: sf.Sweep, Preset: sf.Preset, Rounds: sf.Rounds, Seeds: sf.Seeds,
		Concurrency: sf.Concurrency, ContinueAsNewEvery: sf.ContinueAsNewEvery, Bucket: sf.Bucket,
		CodeVersion: workers.CodeVersion(),
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
		s.Methods = append(s.Methods, pipeline.SweepMethod{Method: learn.Method(m), Hyperparameters: h})
	}
	if s.Settings, err = gridSettings(sf.Grid); err != nil {
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
		fed, err := discoverFederation(p)
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
		sf := pipeline.SweepFederation{Name: name, MinSites: f.MinSites, Seeds: f.Seeds}
		for _, n := range sites {
			sf.Sites = append(sf.Sites, pipeline.Site{Name: n})
		}
		s.Federations = append(s.Federations, sf)
		plan.fedDirs[name] = fed.Dir
	}
	s = s.WithDefaults()
	if err := s.Validate(); err != nil {
		return plan, inputErrorf("sweep file: %v", err)
	}
	plan.spec = s
	return plan, siteDirsConsistent(plan)
}

// siteDirsConsistent rejects two federations with a site of the same name
// in different directories: a site's task queue is named after the site, so
// one worker would serve both.
func siteDirsConsistent(plan sweepPlan) error {
	dir := map[string]string{}
	for _, f := range plan.spec.Federations {
		for _, s := range f.Sites {
			d := plan.fedDirs[f.Name]
			if prev, ok := dir[s.Name]; ok && prev != d {
				return inputErrorf("site %s is in two federation directories (%s, %s): its task queue %s would serve both; rename the sites",
					s.Name, prev, d, pipeline.SiteTaskQueue(s.Name))
			}
			dir[s.Name] = d
		}
	}
	return nil
}

// sweepOutput is what `sweep --format json` prints.
type sweepOutput struct {
	Sweep          string                 `json:"sweep"`
	State          string                 `json:"state"`
	CampaignsDone  int                    `json:"campaigns_done"`
	CampaignsTotal int                    `json:"campaigns_total"`
	Failed         int                    `json:"failed"`
	Results        string                 `json:"results"` // s3://bucket/sweeps/<sweep>/results.parquet
	Curves         string                 `json:"curves"`
	Rows           []store.SweepResultRow `json:"rows"`
	WallSeconds    float64                `json:"wall_seconds"`
}

// runSweep runs a sweep file: `starter sweep FILE.yaml`.
func runSweep(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sweep", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var conn connFlags
	conn.register(fs)
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return inputErrorf("want one sweep file: starter sweep FILE.yaml")
	}
	if err := conn.check(); err != nil {
		return err
	}
	bucketGiven := false
	fs.Visit(func(f *flag.Flag) { bucketGiven = bucketGiven || f.Name == "bucket" })
	file, err := filepath.Abs(rest[0])
	if err != nil {
		return inputErrorf("%v", err)
	}
	sf, err := readSweepFile(file)
	if err != nil {
		return err
	}
	plan, err := buildSweepSpec(sf, file, conn.bucket, bucketGiven)
	if err != nil {
		return err
	}
	out, err := executeSweep(ctx, &conn, plan, stderr, nil)
	if err != nil {
		return err
	}
	if conn.format == "json" {
		return json.NewEncoder(stdout).Encode(out)
	}
	printSweep(stdout, out)
	return nil
}

// executeSweep connects, starts the local workers if asked, runs (or
// re-attaches to) the sweep and reads its results table back from S3;
// then, if after is not nil, calls it while the connection is still open.
func executeSweep(ctx context.Context, conn *connFlags, plan sweepPlan, stderr io.Writer, after func(*env, sweepOutput) error) (sweepOutput, error) {
	start := time.Now()
	quiet := conn.format == "json"
	var progress io.Writer
	if !quiet {
		progress = stderr
	}
	e, err := conn.connect(ctx, stderr)
	if err != nil {
		return sweepOutput{}, err
	}
	defer e.Close()
	if conn.local {
		stop, err := startSweepWorkers(e, plan, progress)
		if err != nil {
			return sweepOutput{}, err
		}
		defer stop()
	}
	res, err := runSweepWorkflow(ctx, e.client, plan.spec, progress)
	if err != nil {
		return sweepOutput{}, err
	}
	b, err := e.store.Get(ctx, res.Results)
	if err != nil {
		return sweepOutput{}, fmt.Errorf("sweep %s: read results: %w", plan.spec.Sweep, err)
	}
	rows, err := store.DecodeSweepResults(b)
	if err != nil {
		return sweepOutput{}, fmt.Errorf("sweep %s: %w", plan.spec.Sweep, err)
	}
	out := sweepOutput{
		Sweep: res.Sweep, State: res.State, CampaignsDone: res.CampaignsDone, CampaignsTotal: res.CampaignsTotal,
		Failed: res.Failed, Results: res.Results.String(), Curves: res.Curves.String(), Rows: rows,
		WallSeconds: time.Since(start).Seconds(),
	}
	if after != nil {
		if err := after(e, out); err != nil {
			return out, err
		}
	}
	return out, nil
}

// startSweepWorkers starts in this process the server worker (campaigns,
// rounds, sweeps and their activities) and one site worker per distinct
// site of the sweep's federations, each reading only its own files, per
// round (activities.Site reads dataset.RoundDir), so continual scenarios work.
func startSweepWorkers(e *env, plan sweepPlan, progress io.Writer) (stop func(), err error) {
	var started []worker.Worker
	stop = func() {
		for i := len(started) - 1; i >= 0; i-- {
			started[i].Stop()
		}
	}
	w := workers.NewServer(e.client, e.store, workers.Options{})
	if err := w.Start(); err != nil {
		return nil, fmt.Errorf("start server worker: %w", err)
	}
	started = append(started, w)
	seen := map[string]bool{}
	for _, f := range plan.spec.Federations {
		for _, s := range f.Sites {
			if seen[s.Name] {
				continue
			}
			seen[s.Name] = true
			// One poller: a sweep can have a hundred sites in one process.
			sw := worker.New(e.client, pipeline.SiteTaskQueue(s.Name), worker.Options{MaxConcurrentActivityTaskPollers: 1})
			activities.NewSite(s.Name, plan.fedDirs[f.Name], e.store, dataset.SiteOptions{}).Register(sw)
			if err := sw.Start(); err != nil {
				stop()
				return nil, fmt.Errorf("start site worker %s: %w", s.Name, err)
			}
			started = append(started, sw)
		}
	}
	if progress != nil {
		fmt.Fprintf(progress, "workers: server + %d sites in process\n", len(seen))
	}
	return stop, nil
}

// startSweep starts the sweep's workflow or finds the one already running
// or finished under the same ID (re-running a sweep re-attaches).
func startSweep(ctx context.Context, c client.Client, spec pipeline.SweepSpec) (client.WorkflowRun, error) {
	return startOrAttach(ctx, c, "sweep", spec.Sweep, pipeline.SweepWorkflowName, pipeline.SweepWorkflowInput{Spec: spec})
}

// runSweepWorkflow starts or re-attaches to the sweep and waits for it,
// printing a progress line whenever a campaign ends.
func runSweepWorkflow(ctx context.Context, c client.Client, spec pipeline.SweepSpec, progress io.Writer) (pipeline.SweepWorkflowOutput, error) {
	run, err := startSweep(ctx, c, spec)
	if err != nil {
		return pipeline.SweepWorkflowOutput{}, err
	}
	done := make(chan struct{})
	if progress != nil {
		go func() {
			start, first, last := time.Now(), -1, -1
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				var st pipeline.SweepStatus
				qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				v, err := c.QueryWorkflow(qctx, spec.Sweep, "", pipeline.QueryStatus)
				cancel()
				if err == nil && v.Get(&st) == nil && st.CampaignsDone != last {
					if first < 0 {
						first = st.CampaignsDone
					}
					last = st.CampaignsDone
					el := time.Since(start)
					eta := "--"
					if n := st.CampaignsDone - first; n > 0 {
						eta = fmtDuration(el.Seconds() / float64(n) * float64(st.CampaignsTotal-st.CampaignsDone))
					}
					fmt.Fprintf(progress, "sweep %s  campaigns %d/%d  %s  failed %d  running %d  elapsed %s  eta %s\n",
						spec.Sweep, st.CampaignsDone, st.CampaignsTotal, st.State, st.Failed, len(st.Running), fmtDuration(el.Seconds()), eta)
				}
				select {
				case <-done:
					return
				case <-t.C:
				}
			}
		}()
	}
	var out pipeline.SweepWorkflowOutput
	err = awaitResult(ctx, run, &out)
	close(done)
	if err != nil {
		return out, fmt.Errorf("sweep %s: %w", spec.Sweep, err)
	}
	return out, nil
}

func printSweep(w io.Writer, out sweepOutput) {
	fmt.Fprintf(w, "%-10s %-9s %-12s %6s %-8s %6s %9s %9s %5s  %-12s %s\n",
		"federation", "method", "setting", "seed", "state", "rounds", "final AUC", "accuracy", "conv", "flagged", "campaign")
	for _, r := range out.Rows {
		flagged := r.Flagged
		if flagged == "" {
			flagged = "-"
		}
		fmt.Fprintf(w, "%-10s %-9s %-12s %6d %-8s %6d %9.4f %9.4f %5d  %-12s %s\n",
			r.Federation, r.Method, r.Setting, r.Seed, r.State, r.RoundsDone, r.FinalAUC, r.FinalAcc, r.ConvRound, flagged, r.Campaign)
	}
	// Mean ± std over seeds per grid point.
	type key struct{ fed, method, setting string }
	groups := map[key][]float64{}
	var order []key
	for _, r := range out.Rows {
		k := key{r.Federation, r.Method, r.Setting}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = groups[k][:len(groups[k]):len(groups[k])]
		if !math.IsNaN(r.FinalAUC) {
			groups[k] = append(groups[k], r.FinalAUC)
		}
	}
	fmt.Fprintf(w, "\n%-10s %-9s %-12s %5s %17s\n", "federation", "method", "setting", "seeds", "final AUC")
	for _, k := range order {
		m, sd := meanStd(groups[k])
		fmt.Fprintf(w, "%-10s %-9s %-12s %5d %8.4f ± %.4f\n", k.fed, k.method, k.setting, len(groups[k]), m, sd)
	}
	fmt.Fprintf(w, "\nsweep %s: %s, %d/%d campaigns (%d failed) in %.1fs\nresults    %s\ncurves     %s\n",
		out.Sweep, out.State, out.CampaignsDone, out.CampaignsTotal, out.Failed, out.WallSeconds, out.Results, out.Curves)
}

// meanStd is the mean and the sample standard deviation (0 for one value).
func meanStd(v []float64) (float64, float64) {
	if len(v) == 0 {
		return math.NaN(), math.NaN()
	}
	var m float64
	for _, x := range v {
		m += x
	}
	m /= float64(len(v))
	if len(v) < 2 {
		return m, 0
	}
	var ss float64
	for _, x := range v {
		ss += (x - m) * (x - m)
	}
	return m, math.Sqrt(ss / float64(len(v)-1))
}
