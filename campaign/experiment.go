package campaign

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/experiments"
	"github.com/ptopofl/ptopofl/internal/debian"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/report"
	"github.com/ptopofl/ptopofl/store"
	"github.com/ptopofl/ptopofl/tda"
)

// PrepareExperiment writes the plan's federations under
// outDir/federations and returns the sweep that runs the experiment over
// them (ExperimentSweepSpec).
func PrepareExperiment(plan experiments.Plan, outDir, preset, bucket string, tiny bool) (SweepPlan, error) {
	sp, err := WriteExperimentFederations(plan, filepath.Join(outDir, "federations"))
	if err != nil {
		return sp, err
	}
	sp.Spec, err = ExperimentSweepSpec(plan, preset, bucket, tiny)
	return sp, err
}

// WriteExperimentFederations writes every federation of the plan under
// dir, in the layout the round-aware site workers read
// (dataset.WriteFederation). The SweepPlan returned has the federations'
// directories; its Spec comes from ExperimentSweepSpec.
func WriteExperimentFederations(plan experiments.Plan, dir string) (SweepPlan, error) {
	sp := SweepPlan{FedDirs: map[string]string{}}
	for _, f := range plan.Federations {
		d := filepath.Join(dir, f.Name)
		write := func() error { return dataset.WriteFederation(d, f.Data) }
		if f.Images != nil {
			write = func() error { return dataset.WriteImageFederation(d, f.Images, f.ImageManifest) }
		}
		if err := write(); err != nil {
			return sp, err
		}
		sp.FedDirs[f.Name] = d
	}
	return sp, nil
}

// ExperimentSweepSpec turns the plan into the sweep. Its name hashes
// everything that shapes the results, so the same command re-attaches to
// the same durable sweep and a different one starts a new sweep.
//
// A plan that fixes its preset (the deep experiment) overrides preset. A
// federation with a preset of its own runs under it: the sweep carries the
// hyper-parameters in which that preset differs from the sweep's
// (method.Changes), then the federation's own overrides.
func ExperimentSweepSpec(plan experiments.Plan, preset, bucket string, tiny bool) (pipeline.SweepSpec, error) {
	if plan.Preset != "" {
		preset = plan.Preset
	}
	s := pipeline.SweepSpec{
		Preset: preset, Rounds: plan.Rounds, Settings: plan.Settings, Concurrency: plan.Concurrency,
		Bucket: bucket, // no code version: every manifest records its committer's
	}
	for _, m := range plan.Methods {
		h, err := method.Defaults(preset).Apply(plan.Base)
		if err != nil {
			return s, err
		}
		s.Methods = append(s.Methods, pipeline.SweepMethod{Method: m, Hyperparameters: h.ForMethod(m)})
	}
	hash := sha256.New()
	for _, f := range plan.Federations {
		sf := pipeline.SweepFederation{Name: f.Name, Seeds: []uint64{f.Seed}, Set: f.Set}
		if f.Preset != "" && f.Preset != preset {
			sf.Preset = f.Preset
			sf.Set = append(method.Changes(method.Defaults(preset), method.Defaults(f.Preset)), f.Set...)
		}
		if f.Rounds != plan.Rounds {
			sf.Rounds = f.Rounds
		}
		for _, n := range f.SiteNames() {
			sf.Sites = append(sf.Sites, pipeline.Site{Name: n})
		}
		s.Federations = append(s.Federations, sf)
		if f.Images != nil {
			hashImages(hash, f.Images)
		} else {
			b, _ := json.Marshal(dataset.NewManifest(f.Data))
			hash.Write(b)
		}
	}
	shape := s
	shape.CodeVersion = ""
	b, _ := json.Marshal(shape)
	hash.Write(b)
	fmt.Fprintf(hash, "tiny=%v", tiny)
	s.Sweep = plan.Experiment + "-" + hex.EncodeToString(hash.Sum(nil))[:10]
	// Campaigns under dp record get their sites' counts and planned noise.
	s, err := planSweepPrivacy(s.WithDefaults(), planRecords(plan))
	if err != nil {
		return s, fmt.Errorf("experiment %s: %w", plan.Experiment, err)
	}
	if err := s.Validate(); err != nil {
		return s, fmt.Errorf("experiment %s: %w", plan.Experiment, err)
	}
	return s, nil
}

// planRecords counts a plan's sites' records from its federations in
// memory.
func planRecords(plan experiments.Plan) recordCounter {
	return func(fedName, site string, _ method.Hyperparameters) (int, int, error) {
		for _, f := range plan.Federations {
			if f.Name != fedName {
				continue
			}
			for _, s := range f.Images {
				if s.Name == site {
					return s.Train.N, s.Test.N, nil
				}
			}
			for _, s := range f.Data.Sites {
				if s.Name == site {
					return len(s.XTrain), len(s.XTest), nil
				}
			}
		}
		return 0, 0, fmt.Errorf("no site %s in federation %s", site, fedName)
	}
}

// hashImages writes the sites' names, shapes, labels and pixels to h, so
// that an experiment's name changes with its images.
func hashImages(h io.Writer, sites []dataset.ImageSite) {
	for _, st := range sites {
		fmt.Fprintf(h, "%s\n", st.Name)
		for _, im := range []*dataset.Images{st.Train, st.Test} {
			fmt.Fprintf(h, "%d %d %d %d %d\n", im.N, im.H, im.W, im.C, im.Classes)
			_ = binary.Write(h, binary.LittleEndian, im.Pixels)
			for _, y := range im.Labels {
				_ = binary.Write(h, binary.LittleEndian, int32(y))
			}
		}
	}
}

// WriteReport writes report.md, report.html and every asset into dir and
// returns the paths written, in name order.
func WriteReport(dir string, rep *report.Report) ([]string, error) {
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

// Collected is what a finished experiment sweep left in S3, gathered for
// the report: the plan it ran, its results rows, each campaign's curve
// and the store, for the collectors that read manifests, descriptors or
// models.
type Collected struct {
	Plan        experiments.Plan
	Spec        pipeline.SweepSpec
	Rows        []store.SweepResultRow
	Curves      map[string][]store.SweepCurveRow  // campaign → its rounds
	Federations map[string]experiments.Federation // name → federation
	Store       *store.Store
	// Log takes the progress of long collectors (the privacy experiment's
	// attacks); nil is silent.
	Log io.Writer
}

// reportBuilders turns what an experiment collected into its report, one
// entry per experiment: a new experiment adds its collector (a function
// from Collected to the report's input) and one line here.
var reportBuilders = map[string]func(ctx context.Context, c Collected) (*report.Report, error){
	experiments.Table1: func(_ context.Context, c Collected) (*report.Report, error) {
		return report.Table1(Table1Input(c))
	},
	experiments.Adversarial: func(_ context.Context, c Collected) (*report.Report, error) {
		return report.Adversarial(AdversarialInput(c))
	},
	experiments.Stability: func(ctx context.Context, c Collected) (*report.Report, error) {
		in, err := StabilityInput(ctx, c)
		if err != nil {
			return nil, err
		}
		return report.Stability(in)
	},
	experiments.Privacy: func(ctx context.Context, c Collected) (*report.Report, error) {
		in, err := PrivacyInput(ctx, c)
		if err != nil {
			return nil, err
		}
		return report.Privacy(in)
	},
	experiments.Ablation: func(_ context.Context, c Collected) (*report.Report, error) {
		return report.Ablation(AblationInput(c))
	},
	experiments.Deep: func(_ context.Context, c Collected) (*report.Report, error) {
		return report.Deep(DeepInput(c))
	},
	experiments.Theory: theoryReport,
}

// Collect reads what the sweep of plan left in S3 (curves.parquet beside
// the results rows) and checks that every campaign is done.
func (s *Service) Collect(ctx context.Context, plan experiments.Plan, spec pipeline.SweepSpec, rows []store.SweepResultRow) (Collected, error) {
	c := Collected{Plan: plan, Spec: spec, Rows: rows, Curves: map[string][]store.SweepCurveRow{},
		Federations: map[string]experiments.Federation{}, Store: s.Store}
	_, cb, err := s.Store.GetKey(ctx, artifact.SweepCurvesKey(spec.Sweep))
	if err != nil {
		return c, err
	}
	curves, err := store.DecodeSweepCurves(cb)
	if err != nil {
		return c, err
	}
	for _, cr := range curves {
		c.Curves[cr.Campaign] = append(c.Curves[cr.Campaign], cr)
	}
	for _, f := range plan.Federations {
		c.Federations[f.Name] = f
	}
	return c, nil
}

// allDone returns an error naming the first campaign of rows that did not
// finish: the reports of the tabular experiments need every campaign.
func allDone(rows []store.SweepResultRow) error {
	for _, r := range rows {
		if r.State != pipeline.StateDone {
			return fmt.Errorf("campaign %s is %s (%s): the report needs every campaign done", r.Campaign, r.State, r.Error)
		}
	}
	return nil
}

// ExperimentReport reads what the sweep left in S3 (results.parquet,
// curves.parquet, manifests, descriptors, models) and builds the
// experiment's report; a collector that works long (the privacy
// experiment's attacks) says how far it is on log (nil: silent).
func (s *Service) ExperimentReport(ctx context.Context, plan experiments.Plan, spec pipeline.SweepSpec, rows []store.SweepResultRow, log io.Writer) (*report.Report, error) {
	c, err := s.Collect(ctx, plan, spec, rows)
	if err != nil {
		return nil, err
	}
	c.Log = log
	build, ok := reportBuilders[plan.Experiment]
	if !ok {
		return nil, fmt.Errorf("experiment %q: no report", plan.Experiment)
	}
	// The deep report shows a campaign that failed (a model that diverged)
	// as such; the others need every campaign done.
	if plan.Experiment != experiments.Deep {
		if err := allDone(c.Rows); err != nil {
			return nil, err
		}
	}
	return build(ctx, c)
}

// reportRun is one campaign of the sweep as a report run: its committed
// rounds' curves.
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

// Table1Input collects Table 1: every method's runs per scenario.
func Table1Input(c Collected) report.Table1Input {
	plan, rows, curves, feds := c.Plan, c.Rows, c.Curves, c.Federations
	in := report.Table1Input{Reference: string(learn.PTopoFL)}
	notes := experiments.Table1Provenance(c.Spec.Preset)
	for _, m := range plan.Methods {
		if n, ok := notes[m]; ok {
			in.Provenance = append(in.Provenance, report.MethodNote{Method: string(m), Note: n})
		}
	}
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

// AdversarialInput collects the adversarial experiment per attack level
// and flip rate: every method's final AUC and AUC per round, pTopoFL once
// per setting (τ = 1.8, and τ = 2 beside it as "ptopofl (τ = 2)"); per
// seed, whom each method's selection left out against who was
// adversarial: pTopoFL's anomaly flags (at its first setting, τ = 1.8),
// Krum's unselected sites, FoolsGold's zero-weight sites; Fig. 4(B)'s
// levels (experiments.Fig4BFraction and Fig4BFlipRates), pTopoFL and
// FedAvg drawn apart as in the paper's figure; and the τ,
// detector and flag rule pTopoFL's campaigns resolved to (method.Resolve).
func AdversarialInput(c Collected) report.AdversarialInput {
	plan, rows, feds := c.Plan, c.Rows, c.Federations
	type key struct{ fraction, flip float64 }
	var levels []key
	sites := map[key]int{}
	for _, f := range plan.Federations {
		if k := (key{f.AttackFraction, f.FlipRate}); !slices.Contains(levels, k) {
			levels = append(levels, k)
			sites[k] = len(f.Data.Sites)
		}
	}
	series := adversarialSeries(plan)
	in := report.AdversarialInput{CurveFraction: experiments.Fig4BFraction, CurveFlipRates: experiments.Fig4BFlipRates,
		CurveFocus: []string{string(learn.PTopoFL), string(learn.FedAvg)}}
	if i := slices.IndexFunc(series, func(se reportSeries) bool { return se.method == learn.PTopoFL }); i >= 0 {
		if j := slices.IndexFunc(rows, series[i].has); j >= 0 {
			// The flag rule is the preset's (method.Resolve), not a
			// column of the results; a row that does not resolve says
			// nothing about τ.
			if cfg, err := method.Resolve(learn.PTopoFL, rows[j].Preset, rows[j].Hyperparameters); err == nil {
				in.Tau, in.Detector, in.FlagTrustBelow = cfg.Server.Tau, string(cfg.Server.Detector), cfg.Server.FlagTrustBelow
			}
		}
	}
	for _, lv := range levels {
		al := report.AttackLevel{Fraction: lv.fraction, FlipRate: lv.flip, Sites: sites[lv]}
		at := func(r store.SweepResultRow) bool {
			f := feds[r.Federation]
			return f.AttackFraction == lv.fraction && f.FlipRate == lv.flip
		}
		for _, se := range series {
			mr := report.MethodRuns{Method: se.name}
			for _, r := range rows {
				if se.has(r) && at(r) {
					mr.Runs = append(mr.Runs, reportRun(r, c.Curves[r.Campaign]))
				}
			}
			al.Methods = append(al.Methods, mr)
		}
		for _, d := range []struct {
			name   string
			method learn.Method
			sites  func(store.SweepResultRow) string
		}{
			{"pTopoFL detector", learn.PTopoFL, func(r store.SweepResultRow) string { return r.Flagged }},
			{"Krum selection", learn.Krum, func(r store.SweepResultRow) string { return r.Excluded }},
			{"FoolsGold weights", learn.FoolsGold, func(r store.SweepResultRow) string { return r.Excluded }},
		} {
			i := slices.IndexFunc(series, func(se reportSeries) bool { return se.method == d.method })
			if i < 0 {
				continue
			}
			dr := report.DetectorRuns{Name: d.name}
			for _, r := range rows {
				if series[i].has(r) && at(r) {
					dr.Counts = append(dr.Counts, detectionCounts(int64(r.Seed), feds[r.Federation], d.sites(r)))
				}
			}
			al.Detectors = append(al.Detectors, dr)
		}
		in.Levels = append(in.Levels, al)
	}
	return in
}

// reportSeries is one series of a report: a method under one setting
// ("" for any, in a plan without settings).
type reportSeries struct {
	name    string
	method  learn.Method
	setting string
}

func (a reportSeries) has(r store.SweepResultRow) bool {
	return learn.Method(r.Method) == a.method && (a.setting == "" || r.Setting == a.setting)
}

// methodSeries lists methods, each once per setting of settings that
// applies to it, in their order (each once, under any setting, when there
// are no settings): a method's first setting is its series under its own
// name, a later one is named by later(method, setting).
func methodSeries(methods []learn.Method, settings []pipeline.SweepSetting, later func(learn.Method, pipeline.SweepSetting) string) []reportSeries {
	var out []reportSeries
	for _, m := range methods {
		if len(settings) == 0 {
			out = append(out, reportSeries{string(m), m, ""})
			continue
		}
		first := true
		for _, set := range settings {
			if len(set.Methods) > 0 && !slices.Contains(set.Methods, m) {
				continue
			}
			name := string(m)
			if !first {
				name = later(m, set)
			}
			out = append(out, reportSeries{name, m, set.Label})
			first = false
		}
	}
	return out
}

// adversarialSeries is methodSeries of the adversarial plan: the first
// setting of a method is the one its detector's counts come from;
// pTopoFL at the comparison τ is "ptopofl (τ = 2)".
func adversarialSeries(plan experiments.Plan) []reportSeries {
	return methodSeries(plan.Methods, plan.Settings, func(m learn.Method, set pipeline.SweepSetting) string {
		if set.Label == experiments.AdversarialComparisonSetting {
			return fmt.Sprintf("%s (τ = %g)", m, experiments.ComparisonTau)
		}
		return fmt.Sprintf("%s (%s)", m, set.Label)
	})
}

// detectionCounts scores the comma-separated sites a method left out
// against the federation's adversarial sites.
func detectionCounts(seed int64, f experiments.Federation, left string) report.DetectionCounts {
	out := map[string]bool{}
	for _, s := range strings.Split(left, ",") {
		out[s] = s != ""
	}
	dc := report.DetectionCounts{Seed: seed}
	for _, s := range f.Data.Sites {
		switch {
		case s.IsAdversarial && out[s.Name]:
			dc.TruePositives++
		case s.IsAdversarial:
			dc.FalseNegatives++
		case out[s.Name]:
			dc.FalsePositives++
		default:
			dc.TrueNegatives++
		}
	}
	return dc
}

// StabilityInput traces every site of the first seed's campaign over its
// rounds: H0/H1 entropy from the descriptor each round computed, drift Δ
// and re-clustering from the round manifests.
func StabilityInput(ctx context.Context, c Collected) (report.StabilityInput, error) {
	st, plan, rows := c.Store, c.Plan, c.Rows
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
			// The manifest says whether drift re-clustering fired for
			// the site and whether it moved it.
			if c.Reclustered {
				traces[i].Reclustered = append(traces[i].Reclustered, round)
			}
			if c.Reassigned {
				traces[i].Reassigned = append(traces[i].Reassigned, round)
			}
		}
		for _, a := range m.Outputs {
			if a.Role != pipeline.RoleDescriptor {
				continue
			}
			i, ok := index[a.Site]
			if !ok {
				continue
			}
			d, err := st.GetDescriptor(ctx, toStoreRef(a.Ref))
			if err != nil {
				return in, err
			}
			if len(d.Descriptor) > tda.EntropyH1 {
				traces[i].H0Entropy[round-1] = d.Descriptor[tda.EntropyH0]
				traces[i].H1Entropy[round-1] = d.Descriptor[tda.EntropyH1]
			}
		}
	}
	in.Sites = traces
	return in, nil
}

// AblationInput collects the ablation per scenario (healthcare, then
// benchmark): each variant's final AUC, seed and cluster count over seeds,
// in the order of the plan's settings; the variants of the β grid
// (experiments.AblationBetaLabel) carry the β they ran with, and every
// variant is compared with the full method.
func AblationInput(c Collected) report.AblationInput {
	in := report.AblationInput{Reference: experiments.AblationDescriptions["full"][0]}
	var labels []string
	for _, set := range c.Plan.Settings {
		labels = append(labels, set.Label)
	}
	for _, r := range c.Rows {
		if !slices.Contains(labels, r.Setting) {
			labels = append(labels, r.Setting)
		}
	}
	grid := map[string]bool{}
	for _, b := range experiments.AblationBetas {
		l, _ := experiments.AblationBetaLabel(b)
		grid[l] = true
	}
	for _, sc := range []string{experiments.Healthcare, experiments.Benchmark} {
		for _, l := range labels {
			d := experiments.AblationDescriptions[l]
			v := report.AblationVariant{Name: d[0], Description: d[1], Scenario: sc, OnBetaGrid: grid[l]}
			if v.Name == "" {
				v.Name = l
			}
			for _, r := range c.Rows {
				if r.Setting != l || c.Federations[r.Federation].Scenario != sc {
					continue
				}
				v.FinalAUC = append(v.FinalAUC, r.FinalAUC)
				v.Seeds = append(v.Seeds, int64(r.Seed))
				v.Clusters = append(v.Clusters, r.NumClusters)
				v.Beta = r.Beta
			}
			if len(v.FinalAUC) > 0 {
				in.Variants = append(in.Variants, v)
			}
		}
	}
	return in
}

// DeepInput collects the deep experiment: one column per scenario and data
// set (Scenario C at each α, then D), every method's runs over seeds with
// their per-round mean top-1 accuracy after the local update and after the
// aggregation (the curves table's update_acc and acc), committed rounds
// only; a campaign that did not finish (a model that diverged) is a run
// marked failed, with its state and error.
func DeepInput(c Collected) report.DeepInput {
	type column struct {
		scenario string
		alpha    float64
	}
	var order []column
	cols := map[column]*report.DeepScenario{}
	for _, f := range c.Plan.Federations {
		k := column{f.Scenario, f.Alpha}
		if _, ok := cols[k]; ok {
			continue
		}
		name := f.Scenario
		if f.Scenario == experiments.ScenarioC {
			name = fmt.Sprintf("C, α = %v", f.Alpha)
		}
		rounds := f.Rounds
		if rounds == 0 {
			rounds = c.Plan.Rounds
		}
		preset := f.Preset
		if preset == "" {
			preset = c.Spec.Preset
		}
		cols[k] = &report.DeepScenario{Name: name, Data: f.Source, Sites: len(f.Images), Preset: preset, Rounds: rounds}
		order = append(order, k)
	}
	// A row per method and setting; a method with more than one setting
	// (pTopoFL's descriptor models) names its extra rows by the setting.
	rows := methodSeries(c.Plan.Methods, c.Spec.Settings, func(m learn.Method, set pipeline.SweepSetting) string {
		return fmt.Sprintf("%s (%s)", m, set.Label)
	})
	for _, k := range order {
		sc := cols[k]
		for _, w := range rows {
			mr := report.DeepMethodRuns{Method: w.name}
			for _, r := range c.Rows {
				f := c.Federations[r.Federation]
				if !w.has(r) || (column{f.Scenario, f.Alpha}) != k {
					continue
				}
				run := report.DeepRun{Seed: int64(r.Seed)}
				if r.State != pipeline.StateDone {
					run.Failed = fmt.Sprintf("%s after %d of %d rounds: %s", r.State, r.RoundsDone, r.Rounds, r.Error)
				}
				for _, cr := range c.Curves[r.Campaign] {
					if cr.Outcome == pipeline.OutcomeCommitted {
						run.Update = append(run.Update, cr.UpdateAcc)
						run.Aggregate = append(run.Aggregate, cr.Acc)
					}
				}
				mr.Runs = append(mr.Runs, run)
			}
			sc.Methods = append(sc.Methods, mr)
		}
	}
	in := report.DeepInput{Reference: string(learn.PTopoFL)}
	for _, k := range order {
		in.Scenarios = append(in.Scenarios, *cols[k])
	}
	for _, set := range c.Spec.Settings {
		if len(set.Set) == 0 {
			continue
		}
		var ms, vs []string
		for _, m := range set.Methods {
			ms = append(ms, string(m))
		}
		for _, v := range set.Set {
			val := v.Text
			if val == "" {
				val = fmt.Sprint(v.Value)
			}
			vs = append(vs, v.Name+" = "+val)
		}
		if set.Label == experiments.DeepGlobalSetting {
			in.Notes = append(in.Notes, fmt.Sprintf("%s (%s): run with %s, its preset otherwise: descriptors every round under the model each site was sent, clusters fitted afresh from them; the row without it computes descriptors once, under the initial model.", strings.Join(ms, ", "), set.Label, strings.Join(vs, ", ")))
			continue
		}
		in.Notes = append(in.Notes, fmt.Sprintf("%s: run with %s (setting %s), its preset otherwise.", strings.Join(ms, ", "), strings.Join(vs, ", "), set.Label))
	}
	return in
}

// DeepSources are where the deep experiment's image data sets are:
// Fashion-MNIST's four files (dataset.FashionMNISTFiles), CIFAR-10's
// binary version and LEAF's FEMNIST JSON; "" leaves a data set out.
type DeepSources struct {
	FashionMNIST, CIFAR10, FEMNIST string
}

// femnistFiles is how many of LEAF's FEMNIST files per split the deep
// experiment reads: about 100 writers each, a pool of about 400 writers
// for Scenario D's 50 sites (all 36 files are 2.5 GB as float32).
const femnistFiles = 4

// LoadDeepImages reads the deep experiment's data sets. Fashion-MNIST is
// read when its directory is given and either CIFAR-10 or FEMNIST is not
// (it stands in for them).
func LoadDeepImages(src DeepSources) (experiments.DeepImages, error) {
	var im experiments.DeepImages
	var err error
	if src.CIFAR10 != "" {
		if im.CIFARTrain, im.CIFARTest, err = dataset.ReadCIFAR10Dir(src.CIFAR10); err != nil {
			return im, inputErrorf("--cifar10: %v", err)
		}
	}
	if src.FEMNIST != "" {
		if im.FEMNISTTrain, im.FEMNISTTest, err = dataset.ReadFEMNISTDir(src.FEMNIST, femnistFiles); err != nil {
			return im, inputErrorf("--femnist: %v", err)
		}
	}
	if src.FashionMNIST != "" && (src.CIFAR10 == "" || src.FEMNIST == "") {
		if im.FashionTrain, im.FashionTest, err = dataset.ReadFashionMNIST(src.FashionMNIST); err != nil {
			return im, inputErrorf("--fashion-mnist: %v", err)
		}
	}
	return im, nil
}

// EnsureDeepImages is LoadDeepImages after making sure Fashion-MNIST is
// there: needed unless both CIFAR-10 and FEMNIST are given, it is
// installed from Debian (saying so on log) when its default directory
// lacks it, unless noInstall.
func EnsureDeepImages(ctx context.Context, src DeepSources, noInstall bool, log io.Writer) (experiments.DeepImages, error) {
	if src.CIFAR10 != "" && src.FEMNIST != "" {
		src.FashionMNIST = ""
	}
	if src.FashionMNIST == dataset.FashionMNISTDir {
		in := debian.Installer{Log: log, Disabled: noInstall}
		present := func() bool { return dataset.MissingFashionMNIST(src.FashionMNIST) == "" }
		if err := in.Ensure(ctx, dataset.FashionMNISTPackage, "starter experiment deep", present); err != nil {
			return experiments.DeepImages{}, inputErrorf("%v (or pass --fashion-mnist DIR holding %v)", err, dataset.FashionMNISTFiles)
		}
	}
	return LoadDeepImages(src)
}
