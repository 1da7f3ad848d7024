package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/eval"
	"github.com/ptopofl/ptopofl/experiments"
	"github.com/ptopofl/ptopofl/internal/workers"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/report"
	"github.com/ptopofl/ptopofl/store"
)

// Descriptor entries holding the H0 and H1 persistence entropy (the
// descriptor layout of golden/paper/README.md: 20 + 20 Betti samples, then
// the summary statistics).
const (
	descH0Entropy = 40
	descH1Entropy = 41
)

// experimentOutput is what `experiment --format json` prints.
type experimentOutput struct {
	Experiment  string                 `json:"experiment"`
	Sweep       string                 `json:"sweep"`
	State       string                 `json:"state"`
	Out         string                 `json:"out"`
	Files       []string               `json:"files"`
	Results     string                 `json:"results"`
	Curves      string                 `json:"curves"`
	Rows        []store.SweepResultRow `json:"rows"`
	WallSeconds float64                `json:"wall_seconds"`
}

// runExperiment runs one of the paper's experiments as one durable sweep
// and writes its report from what the sweep left in S3.
func runExperiment(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("experiment", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var conn connFlags
	conn.register(fs)
	seeds := fs.Int("seeds", 3, "number of seeds (1, 2, ...): each generates its own federations and seeds its campaigns")
	preset := fs.String("preset", method.Default, "hyper-parameter preset: default or paper")
	out := fs.String("out", "", "report directory (default out/<experiment>)")
	rounds := fs.Int("rounds", 0, "rounds per campaign (default: the experiment's, 15; stability 20; privacy 2)")
	concurrency := fs.Int("concurrency", 0, "campaigns at once (default 3)")
	tiny := fs.Bool("tiny", false, "tiny federations (3-4 sites of 30-50 rows), for tests and smoke runs")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return inputErrorf("want one experiment: %s", strings.Join(experiments.Names, "|"))
	}
	name := rest[0]
	if err := conn.check(); err != nil {
		return err
	}
	if *preset != method.Default && *preset != method.Paper {
		return inputErrorf("--preset %q: want default or paper", *preset)
	}
	if *rounds < 0 || *concurrency < 0 {
		return inputErrorf("--rounds and --concurrency: want >= 0")
	}
	plan, err := experiments.Build(name, experiments.Options{Seeds: *seeds, Rounds: *rounds, Tiny: *tiny})
	if err != nil {
		return inputErrorf("%v", err)
	}
	if *concurrency > 0 {
		plan.Concurrency = *concurrency
	}
	if *out == "" {
		*out = filepath.Join("out", name)
	}
	// Absolute before the embedded S3 server changes the working directory.
	outDir, err := filepath.Abs(*out)
	if err != nil {
		return inputErrorf("--out: %v", err)
	}
	quiet := conn.format == "json"
	sp, err := writeExperimentFederations(plan, filepath.Join(outDir, "federations"))
	if err != nil {
		return err
	}
	bucketGiven := false
	fs.Visit(func(f *flag.Flag) { bucketGiven = bucketGiven || f.Name == "bucket" })
	if sp.spec, err = experimentSweepSpec(plan, *preset, conn.bucket, *tiny); err != nil {
		return err
	}
	if !quiet {
		fmt.Fprintf(stderr, "experiment %s: sweep %s, %d federations, %d campaigns, %d rounds each\n",
			name, sp.spec.Sweep, len(plan.Federations), countCampaigns(sp.spec), sp.spec.Rounds)
	}
	var files []string
	res, err := executeSweep(ctx, &conn, sp, stderr, func(e *env, so sweepOutput) error {
		rep, err := buildExperimentReport(ctx, e.store, plan, sp.spec, so.Rows)
		if err != nil {
			return fmt.Errorf("experiment %s: report: %w", name, err)
		}
		files, err = writeReport(outDir, rep)
		return err
	})
	if err != nil {
		return err
	}
	eo := experimentOutput{Experiment: name, Sweep: res.Sweep, State: res.State, Out: outDir, Files: files,
		Results: res.Results, Curves: res.Curves, Rows: res.Rows, WallSeconds: res.WallSeconds}
	if quiet {
		return json.NewEncoder(stdout).Encode(eo)
	}
	printSweep(stdout, res)
	fmt.Fprintf(stdout, "report     %s\n", filepath.Join(outDir, "report.html"))
	return nil
}

func countCampaigns(s pipeline.SweepSpec) int {
	cs, _ := s.Campaigns()
	return len(cs)
}

// writeExperimentFederations writes every federation of the plan under dir,
// in the layout the round-aware site workers read (dataset.WriteFederation).
func writeExperimentFederations(plan experiments.Plan, dir string) (sweepPlan, error) {
	sp := sweepPlan{fedDirs: map[string]string{}}
	for _, f := range plan.Federations {
		d := filepath.Join(dir, f.Name)
		if err := dataset.WriteFederation(d, f.Data); err != nil {
			return sp, err
		}
		sp.fedDirs[f.Name] = d
	}
	return sp, nil
}

// experimentSweepSpec turns the plan into the sweep. Its name hashes
// everything that shapes the results, so the same command re-attaches to
// the same durable sweep and a different one starts a new sweep.
func experimentSweepSpec(plan experiments.Plan, preset, bucket string, tiny bool) (pipeline.SweepSpec, error) {
	s := pipeline.SweepSpec{
		Preset: preset, Rounds: plan.Rounds, Settings: plan.Settings, Concurrency: plan.Concurrency,
		Bucket: bucket, CodeVersion: workers.CodeVersion(),
	}
	for _, m := range plan.Methods {
		h, err := method.Defaults(preset).Apply(plan.Base)
		if err != nil {
			return s, err
		}
		s.Methods = append(s.Methods, pipeline.SweepMethod{Method: m, Hyperparameters: h})
	}
	hash := sha256.New()
	for _, f := range plan.Federations {
		sf := pipeline.SweepFederation{Name: f.Name, Seeds: []uint64{f.Seed}}
		for _, n := range f.Data.SiteNames() {
			sf.Sites = append(sf.Sites, pipeline.Site{Name: n})
		}
		s.Federations = append(s.Federations, sf)
		b, _ := json.Marshal(dataset.NewManifest(f.Data))
		hash.Write(b)
	}
	shape := s
	shape.CodeVersion = ""
	b, _ := json.Marshal(shape)
	hash.Write(b)
	fmt.Fprintf(hash, "tiny=%v", tiny)
	s.Sweep = plan.Experiment + "-" + hex.EncodeToString(hash.Sum(nil))[:10]
	s = s.WithDefaults()
	if err := s.Validate(); err != nil {
		return s, fmt.Errorf("experiment %s: %w", plan.Experiment, err)
	}
	return s, nil
}

// writeReport writes report.md, report.html and every asset into dir.
func writeReport(dir string, rep *report.Report) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	files := map[string][]byte{"report.md": rep.Markdown, "report.html": rep.HTML}
	for k, v := range rep.Assets {
		files[k] = v
	}
	var names []string
	for _, name := range sortedKeys(files) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, files[name], 0o644); err != nil {
			return nil, err
		}
		names = append(names, p)
	}
	return names, nil
}

// buildExperimentReport reads what the sweep left in S3 (results.parquet,
// curves.parquet, manifests, descriptors, models) and builds the report.
func buildExperimentReport(ctx context.Context, st *store.Store, plan experiments.Plan, spec pipeline.SweepSpec, rows []store.SweepResultRow) (*report.Report, error) {
	_, cb, err := st.GetKey(ctx, artifact.SweepCurvesKey(spec.Sweep))
	if err != nil {
		return nil, err
	}
	curves, err := store.DecodeSweepCurves(cb)
	if err != nil {
		return nil, err
	}
	byCampaign := map[string][]store.SweepCurveRow{}
	for _, c := range curves {
		byCampaign[c.Campaign] = append(byCampaign[c.Campaign], c)
	}
	feds := map[string]experiments.Federation{}
	for _, f := range plan.Federations {
		feds[f.Name] = f
	}
	for _, r := range rows {
		if r.State != pipeline.StateDone {
			return nil, fmt.Errorf("campaign %s is %s (%s): the report needs every campaign done", r.Campaign, r.State, r.Error)
		}
	}
	switch plan.Experiment {
	case experiments.Table1:
		return report.Table1(table1Input(plan, rows, byCampaign, feds))
	case experiments.Adversarial:
		return report.Adversarial(adversarialInput(plan, rows, feds))
	case experiments.Stability:
		in, err := stabilityInput(ctx, st, plan, rows)
		if err != nil {
			return nil, err
		}
		return report.Stability(in)
	case experiments.Privacy:
		in, err := privacyInput(ctx, st, plan, rows, feds)
		if err != nil {
			return nil, err
		}
		return report.Privacy(in)
	case experiments.Ablation:
		return report.Ablation(ablationInput(rows))
	}
	return nil, fmt.Errorf("experiment %q: no report", plan.Experiment)
}

func reportRun(r store.SweepResultRow, curve []store.SweepCurveRow) report.Run {
	out := report.Run{Seed: int64(r.Seed), FinalAUC: r.FinalAUC, FinalAccuracy: r.FinalAcc, ConvergenceRound: r.ConvRound}
	for _, c := range curve {
		if c.Outcome == pipeline.OutcomeCommitted {
			out.AUC = append(out.AUC, c.AUC)
			out.Accuracy = append(out.Accuracy, c.Acc)
		}
	}
	return out
}

func table1Input(plan experiments.Plan, rows []store.SweepResultRow, curves map[string][]store.SweepCurveRow, feds map[string]experiments.Federation) report.Table1Input {
	in := report.Table1Input{Reference: string(learn.PTopoFL)}
	for _, sc := range []string{experiments.Healthcare, experiments.Benchmark} {
		s := report.Table1Scenario{Name: sc}
		for _, m := range plan.Methods {
			mr := report.MethodRuns{Method: string(m)}
			for _, r := range rows {
				if learn.Method(r.Method) == m && feds[r.Federation].Scenario == sc {
					mr.Runs = append(mr.Runs, reportRun(r, curves[r.Campaign]))
				}
			}
			s.Methods = append(s.Methods, mr)
		}
		in.Scenarios = append(in.Scenarios, s)
	}
	return in
}

func adversarialInput(plan experiments.Plan, rows []store.SweepResultRow, feds map[string]experiments.Federation) report.AdversarialInput {
	var in report.AdversarialInput
	var levels []float64
	seen := map[float64]bool{}
	for _, f := range plan.Federations {
		if !seen[f.AttackFraction] {
			seen[f.AttackFraction] = true
			levels = append(levels, f.AttackFraction)
		}
	}
	sort.Float64s(levels)
	for _, lv := range levels {
		// The level's real fraction: round(fraction·K) sites of K.
		al := report.AttackLevel{Fraction: lv}
		for _, m := range plan.Methods {
			ms := report.MethodScores{Method: string(m)}
			for _, r := range rows {
				if learn.Method(r.Method) == m && feds[r.Federation].AttackFraction == lv {
					ms.FinalAUC = append(ms.FinalAUC, r.FinalAUC)
				}
			}
			al.Methods = append(al.Methods, ms)
		}
		for _, r := range rows {
			f := feds[r.Federation]
			if learn.Method(r.Method) != learn.PTopoFL || f.AttackFraction != lv {
				continue
			}
			flagged := map[string]bool{}
			for _, s := range strings.Split(r.Flagged, ",") {
				flagged[s] = s != ""
			}
			dc := report.DetectionCounts{Seed: int64(r.Seed)}
			for _, s := range f.Data.Sites {
				switch {
				case s.IsAdversarial && flagged[s.Name]:
					dc.TruePositives++
				case s.IsAdversarial:
					dc.FalseNegatives++
				case flagged[s.Name]:
					dc.FalsePositives++
				default:
					dc.TrueNegatives++
				}
			}
			al.Detection = append(al.Detection, dc)
		}
		in.Levels = append(in.Levels, al)
	}
	return in
}

// stabilityInput traces every site of the first seed's campaign over its
// rounds: H0/H1 entropy from the descriptor each round computed, drift Δ
// and re-clustering from the round manifests.
func stabilityInput(ctx context.Context, st *store.Store, plan experiments.Plan, rows []store.SweepResultRow) (report.StabilityInput, error) {
	in := report.StabilityInput{}
	if len(rows) == 0 {
		return in, fmt.Errorf("no campaign")
	}
	r := rows[0]
	in.DriftThreshold = r.DriftThreshold
	var fed experiments.Federation
	for _, f := range plan.Federations {
		if f.Name == r.Federation {
			fed = f
		}
	}
	shifted := map[string]int{}
	for _, s := range fed.Data.Shifted {
		shifted[s.Name] = s.AfterRound + 1
	}
	traces := make([]report.SiteTrace, len(fed.Data.Sites))
	index := map[string]int{}
	for i, s := range fed.Data.Sites {
		traces[i] = report.SiteTrace{Site: s.Name, Shifted: shifted[s.Name] > 0, ShiftRound: shifted[s.Name]}
		index[s.Name] = i
	}
	prevCluster := map[string]int{}
	for round := 1; round <= r.RoundsDone; round++ {
		in.Rounds = append(in.Rounds, round)
		var m pipeline.RoundManifest
		if _, err := st.GetJSONKey(ctx, artifact.ManifestKey(r.Campaign, round), &m); err != nil {
			return in, err
		}
		for i := range traces {
			traces[i].H0Entropy = append(traces[i].H0Entropy, math.NaN())
			traces[i].H1Entropy = append(traces[i].H1Entropy, math.NaN())
			traces[i].Drift = append(traces[i].Drift, math.NaN())
		}
		for _, c := range m.Clusters {
			i, ok := index[c.Site]
			if !ok {
				continue
			}
			traces[i].Drift[round-1] = c.Drift
			// Re-clustering fires when Δ exceeds the threshold (or the
			// site's cluster changes).
			prev, had := prevCluster[c.Site]
			if (r.DriftThreshold > 0 && c.Drift > r.DriftThreshold && r.Preset != method.Paper) || (had && prev != c.Cluster) {
				traces[i].Reclustered = append(traces[i].Reclustered, round)
			}
			prevCluster[c.Site] = c.Cluster
		}
		for _, a := range m.Outputs {
			if a.Role != pipeline.RoleDescriptor {
				continue
			}
			i, ok := index[a.Site]
			if !ok {
				continue
			}
			d, err := st.GetDescriptor(ctx, a.Ref)
			if err != nil {
				return in, err
			}
			if len(d.Descriptor) > descH1Entropy {
				traces[i].H0Entropy[round-1] = d.Descriptor[descH0Entropy]
				traces[i].H1Entropy[round-1] = d.Descriptor[descH1Entropy]
			}
		}
	}
	in.Sites = traces
	return in, nil
}

// privacyInput computes ρ and the MI proxy per site from what the
// campaigns recorded: each site's training size (manifest metrics), the
// model size (a local model artifact) and the descriptor size (a
// descriptor artifact).
func privacyInput(ctx context.Context, st *store.Store, plan experiments.Plan, rows []store.SweepResultRow, feds map[string]experiments.Federation) (report.PrivacyInput, error) {
	var in report.PrivacyInput
	for _, r := range rows {
		var m pipeline.RoundManifest
		if _, err := st.GetJSONKey(ctx, artifact.ManifestKey(r.Campaign, 1), &m); err != nil {
			return in, err
		}
		var names []string
		var sizes []int
		for _, sm := range m.Metrics {
			names = append(names, sm.Site)
			sizes = append(sizes, sm.NumTrain)
		}
		params, dim := 0, 0
		for _, a := range m.Outputs {
			switch {
			case a.Role == pipeline.RoleLocalModel && params == 0:
				mod, err := st.GetModel(ctx, a.Ref)
				if err != nil {
					return in, err
				}
				params = len(mod.Params)
			case a.Role == pipeline.RoleDescriptor && dim == 0:
				d, err := st.GetDescriptor(ctx, a.Ref)
				if err != nil {
					return in, err
				}
				dim = len(d.Descriptor)
			}
		}
		if params < 2 || dim == 0 {
			return in, fmt.Errorf("campaign %s round 1: no local model or descriptor recorded", r.Campaign)
		}
		// A logistic model: p = d + 1 parameters.
		set := eval.PrivacySettings{Features: params - 1, ModelParams: params, DescriptorDim: dim, Compression: eval.CompressionFactor}
		pr, err := eval.Privacy(names, sizes, set)
		if err != nil {
			return in, err
		}
		f := feds[r.Federation]
		in.Federations = append(in.Federations, report.PrivacyFederation{
			Name: fmt.Sprintf("%s (seed %d)", f.Scenario, f.Seed), Report: pr})
	}
	return in, nil
}

func ablationInput(rows []store.SweepResultRow) report.AblationInput {
	in := report.AblationInput{Scenario: experiments.Healthcare}
	var order []string
	byLabel := map[string]*report.AblationVariant{}
	for _, r := range rows {
		v, ok := byLabel[r.Setting]
		if !ok {
			d := experiments.AblationDescriptions[r.Setting]
			v = &report.AblationVariant{Name: d[0], Description: d[1]}
			if v.Name == "" {
				v.Name = r.Setting
			}
			byLabel[r.Setting] = v
			order = append(order, r.Setting)
		}
		v.FinalAUC = append(v.FinalAUC, r.FinalAUC)
		v.Clusters = append(v.Clusters, r.NumClusters)
	}
	for _, l := range order {
		in.Variants = append(in.Variants, *byLabel[l])
	}
	return in
}
