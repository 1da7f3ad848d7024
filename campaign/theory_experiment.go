package campaign

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/ptopofl/ptopofl/aggregation"
	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/experiments"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/report"
	"github.com/ptopofl/ptopofl/store"
	"github.com/ptopofl/ptopofl/theory"
)

// TheoryJSON is the name of the theory report's JSON asset: the
// theory.Report every verdict and figure comes from.
const TheoryJSON = "theory.json"

// theoryReport measures the theory experiment (TheoryInputs, then
// theory.Measure) and renders its report, with theory.json beside it.
func theoryReport(ctx context.Context, c Collected) (*report.Report, error) {
	in, err := TheoryInputs(ctx, c)
	if err != nil {
		return nil, err
	}
	rep, err := theory.Measure(in, c.Log)
	if err != nil {
		return nil, err
	}
	out, err := report.Theory(rep)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(rep)
	if err != nil {
		return nil, fmt.Errorf("theory: %w", err)
	}
	out.Assets[TheoryJSON] = append(b, '\n')
	return out, nil
}

// TheoryInputs gathers what the theory experiment's checks read from its
// sweep: every campaign's committed rounds in which every site took part
// (the descriptors the server used, each site's start, local and received
// models, from the manifests and the store), each site's training rows as
// it trains on them; for the federations without adversaries, the real
// sites (raw rows, round-1 descriptors, subsample seeds) of Thm 3.3 and
// Cor. 3.4 under the first setting, Thm 3.9's problems (standardised rows,
// FedAvg's weights and Eq. 12's on the round-1 descriptors) and, for the
// first of them, Thm 3.7's site (its largest, as the privacy experiment
// attacks).
func TheoryInputs(ctx context.Context, c Collected) (theory.Inputs, error) {
	in := theory.Inputs{Train: map[string][]learn.Data{}, Sizes: theory.FullSizes}
	if c.Plan.Tiny {
		in.Sizes = theory.TinySizes
	}
	first := ""
	if len(c.Plan.Settings) > 0 {
		first = c.Plan.Settings[0].Label
	}
	log := c.Log
	if log == nil {
		log = io.Discard
	}
	for i, r := range c.Rows {
		if i%10 == 0 {
			fmt.Fprintf(log, "theory: reading campaigns %d–%d of %d (manifests, descriptors, models)\n", i+1, min(i+10, len(c.Rows)), len(c.Rows))
		}
		f, ok := c.Federations[r.Federation]
		if !ok {
			return in, fmt.Errorf("theory: campaign %s: federation %s not in the plan", r.Campaign, r.Federation)
		}
		cfg, err := method.Resolve(learn.Method(r.Method), r.Preset, r.Hyperparameters)
		if err != nil {
			return in, fmt.Errorf("theory: campaign %s: %w", r.Campaign, err)
		}
		run, err := theoryRun(ctx, c, r, f, cfg)
		if err != nil {
			return in, err
		}
		if len(run.Rounds) == 0 {
			return in, fmt.Errorf("theory: campaign %s: no committed round with every site", r.Campaign)
		}
		in.Runs = append(in.Runs, run)
		var train []learn.Data
		var sites []theory.Site
		n := 0
		for _, s := range f.Data.Sites {
			p, err := method.PrepareSite(s.Name, s.XTrain, floats(s.YTrain), s.XTest, floats(s.YTest))
			if err != nil {
				return in, err
			}
			d, _ := p.Splits(cfg.DP.On)
			train = append(train, d)
			sites = append(sites, theory.Site{X: d.X, Y: d.Y})
			n += len(d.X)
		}
		in.Train[r.Campaign] = train
		if f.AttackFraction > 0 || r.Setting != first {
			continue
		}
		fs := theory.FederationSites{Federation: r.Federation, Config: cfg}
		results := make([]aggregation.SiteResult, len(sites))
		p := make([]float64, len(sites))
		for i, s := range f.Data.Sites {
			desc := run.Rounds[0].Descriptors[i]
			fs.Sites = append(fs.Sites, theory.SiteRows{Name: s.Name, X: s.XTrain, Descriptor: desc, Seed: subsampleSeed(r, s.Name)})
			results[i] = aggregation.SiteResult{Descriptor: desc, N: len(sites[i].X)}
			p[i] = float64(len(sites[i].X)) / float64(n)
		}
		in.Federations = append(in.Federations, fs)
		alpha, _, err := aggregation.SoftmaxWeights(results, cfg.Server)
		if err != nil {
			return in, fmt.Errorf("theory: %s: softmax weights: %w", r.Federation, err)
		}
		in.Convergence = append(in.Convergence, theory.ConvergenceProblem{Federation: r.Federation, Sites: sites,
			Aggregators: []theory.Aggregator{{Name: "fedavg", Alpha: p}, {Name: "softmax (Eq. 12)", Alpha: alpha}}})
		if in.Privacy == nil {
			in.Privacy = theoryPrivacy(c, r, f, cfg, in.Sizes)
		}
	}
	return in, nil
}

// subsampleSeed is the seed site's descriptor rows were drawn with in
// campaign r (activities' descriptorSeed: round 0, PurposeDescriptor).
func subsampleSeed(r store.SweepResultRow, site string) uint64 {
	return pipeline.DeriveSeed(r.Seed, 0, site, pipeline.PurposeDescriptor)
}

// theoryPrivacy is Thm 3.7's problem: the largest site of federation f,
// attacked with the campaign's configuration; the per-release costs are
// those of a dp record campaign at the privacy experiment's middle budget
// over the same rounds and sites.
func theoryPrivacy(c Collected, r store.SweepResultRow, f experiments.Federation, cfg method.Config, sz theory.Sizes) *theory.PrivacyProblem {
	largest := f.Data.Sites[0]
	var records []method.SiteRecords
	for _, s := range f.Data.Sites {
		if len(s.XTrain) > len(largest.XTrain) {
			largest = s
		}
		records = append(records, method.SiteRecords{Site: s.Name, Train: len(s.XTrain), Test: len(s.XTest)})
	}
	rounds := r.Rounds
	if rounds == 0 {
		rounds = c.Plan.Rounds
	}
	return &theory.PrivacyProblem{
		Site: theory.PrivacySite{Name: largest.Name, X: largest.XTrain, Y: floats(largest.YTrain), XTest: largest.XTest, YTest: floats(largest.YTest),
			SubsampleSeed: subsampleSeed(r, largest.Name)},
		Options: theory.PrivacyOptions{Config: cfg, Preset: r.Preset, Trials: sz.PrivacyTrials, Seed: f.Seed,
			Epsilon: experiments.PrivacyEpsilons[len(experiments.PrivacyEpsilons)/2], Rounds: rounds, Records: records},
	}
}

// theoryRun reads campaign r's committed rounds from its manifests and the
// store.
func theoryRun(ctx context.Context, c Collected, r store.SweepResultRow, f experiments.Federation, cfg method.Config) (theory.CampaignRun, error) {
	run := theory.CampaignRun{Campaign: r.Campaign, Federation: r.Federation, Setting: r.Setting, Config: cfg}
	if f.AttackFraction > 0 {
		adv := 0
		for _, s := range f.Data.Sites {
			if s.IsAdversarial {
				adv++
			}
		}
		run.Level = fmt.Sprintf("%d of %d sites flip %g %%", adv, len(f.Data.Sites), 100*f.FlipRate)
	}
	var names []string
	for _, s := range f.Data.Sites {
		run.Sites = append(run.Sites, theory.RunSite{Name: s.Name, Adversarial: s.IsAdversarial, N: len(s.XTrain)})
		names = append(names, s.Name)
	}
	k := len(names)
	last := make([][]float64, k) // each site's last descriptor
	for round := 1; round <= r.RoundsDone; round++ {
		var m pipeline.RoundManifest
		if _, err := c.Store.GetJSONKey(ctx, artifact.ManifestKey(r.Campaign, round), &m); err != nil {
			return run, fmt.Errorf("theory: campaign %s round %d: %w", r.Campaign, round, err)
		}
		rr := theory.RunRound{Round: round, Start: make([][]float64, k), Local: make([][]float64, k), Received: make([][]float64, k)}
		model := func(ref pipeline.ArtifactRef) ([]float64, error) {
			mod, err := c.Store.GetModel(ctx, toStoreRef(ref))
			if err != nil {
				return nil, fmt.Errorf("theory: campaign %s round %d: %w", r.Campaign, round, err)
			}
			return mod.Params, nil
		}
		for _, a := range append(slices.Clone(m.Inputs), m.Outputs...) {
			i := slices.Index(names, a.Site)
			if i < 0 {
				continue
			}
			var err error
			switch a.Role {
			case pipeline.RoleDescriptor:
				d, err := c.Store.GetDescriptor(ctx, toStoreRef(a.Ref))
				if err != nil {
					return run, fmt.Errorf("theory: campaign %s round %d: %w", r.Campaign, round, err)
				}
				last[i] = d.Descriptor
			case pipeline.RoleStartModel:
				rr.Start[i], err = model(a.Ref)
			case pipeline.RoleLocalModel:
				rr.Local[i], err = model(a.Ref)
			case pipeline.RoleSiteModel:
				rr.Received[i], err = model(a.Ref)
			}
			if err != nil {
				return run, err
			}
		}
		complete := m.Outcome == pipeline.OutcomeCommitted && len(m.Participants) == k
		startKnown := true
		for i := range k {
			complete = complete && last[i] != nil && rr.Local[i] != nil && rr.Received[i] != nil
			startKnown = startKnown && rr.Start[i] != nil
		}
		if !complete {
			continue
		}
		if !startKnown {
			rr.Start = nil
		}
		rr.Descriptors = slices.Clone(last)
		run.Rounds = append(run.Rounds, rr)
	}
	return run, nil
}
