package simulate

import (
	"fmt"

	"github.com/ptopofl/ptopofl/aggregation"
	"github.com/ptopofl/ptopofl/eval"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/nn"
	"github.com/ptopofl/ptopofl/tda"
)

// DeepSite is one site's images for RunDeep.
type DeepSite struct {
	Name  string
	Shape nn.Shape
	// Train and Test are the images as the network reads them (pixels in
	// [0, 1], labels below the campaign's classes).
	Train, Test nn.Data
}

// DeepSeeds are the seeds of a deep run, as the durable pipeline derives
// them (pipeline.DeriveSeed; this package does not import the pipeline):
// Init seeds the one initial model every site starts from, Train(round,
// site) a site's minibatch order in a round, Descriptor(site) the images
// of its descriptor.
type DeepSeeds struct {
	Init       uint64
	Train      func(round int, site string) uint64
	Descriptor func(site string) uint64
}

// RunDeep is Run for a deep model (cfg.IsDeep): each round every site runs
// nn.UpdateSite from the model it holds, the server runs
// aggregation.AggregateRound on the float64 vectors of the sites' float32
// models, every model sent back is rounded to float32 (as the pipeline
// stores it), and each site is scored with method.EvaluateDeep. pTopoFL's
// descriptors (method.DeepDescriptor) are computed once, in round 1, from
// the initial model, or under descriptor_model "global" in every round from
// the model each site was sent for it (round 1: the initial model), with
// the clusters fitted afresh each round; a configuration that re-computes
// them otherwise (drift_check_every > 0) is not supported here. The round metric is the
// unweighted site mean of top-1 accuracy (Acc) and macro AUC (AUC).
func RunDeep(sites []DeepSite, cfg Config, seeds DeepSeeds) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	if !cfg.IsDeep() {
		return Result{}, fmt.Errorf("simulate: RunDeep needs a deep model, the configuration has %q", cfg.Model)
	}
	if len(sites) == 0 {
		return Result{}, fmt.Errorf("simulate: no sites")
	}
	k := len(sites)
	nets := make([]*nn.Network, k)
	for i, s := range sites {
		net, err := cfg.NewNetwork(s.Shape)
		if err != nil {
			return Result{}, fmt.Errorf("simulate: site %s: %w", s.Name, err)
		}
		nets[i] = net
	}
	descs := make([]tda.Descriptor, k)
	states := make([]nn.SiteState, k)
	pushed := make([][]float32, k)
	// descriptors computes every site's descriptor under the model it
	// holds: the initial model before round 1's aggregation, then the one
	// it was sent.
	descriptors := func() error {
		for i, s := range sites {
			held := pushed[i]
			if held == nil {
				nets[i].Init(seeds.Init)
				held = append([]float32(nil), nets[i].Params()...)
			}
			d, err := method.DeepDescriptor(nets[i], held, s.Train, cfg.Config, seeds.Descriptor(s.Name), nil)
			if err != nil {
				return fmt.Errorf("simulate: site %s: %w", s.Name, err)
			}
			descs[i] = d
		}
		return nil
	}
	var control []float64
	server := aggregation.ServerState{}
	var res Result
	for r := 1; r <= cfg.Rounds; r++ {
		if method.NeedsDescriptors(cfg.Method) && (r == 1 || cfg.DescriptorModel == method.DescriptorGlobal) {
			if err := descriptors(); err != nil {
				return Result{}, err
			}
		}
		results := make([]aggregation.SiteResult, k)
		ownScores := make([][2]float64, k)
		updateAcc := make([]float64, k)
		for i, s := range sites {
			sc := cfg.DeepSite
			sc.Train.Seed = seeds.Train(r, s.Name)
			out, err := nn.UpdateSite(nets[i], nn.SiteInput{
				Method: cfg.Method, Round: r, InitSeed: seeds.Init, Train: s.Train,
				Pushed: pushed[i], ServerControl: method.ToFloat32(control), State: states[i], Config: sc,
			})
			if err != nil {
				return Result{}, fmt.Errorf("simulate: site %s: %w", s.Name, err)
			}
			states[i] = out.State
			results[i] = aggregation.SiteResult{
				Params: method.ToFloat64(out.Params), Control: method.ToFloat64(out.Control), N: out.N,
				Descriptor: descs[i].Vector, H0: descs[i].H0, H1: descs[i].H1,
			}
			// The update's own score, as the pipeline's training activity
			// computes it: the network still holds out.Params.
			if _, updateAcc[i], err = method.EvaluateDeep(nets[i], out.Params, s.Test); err != nil {
				return Result{}, fmt.Errorf("simulate: site %s round %d: %w", s.Name, r, err)
			}
			if method.EvaluatesOwnUpdate(cfg.Method) {
				// Scored in the training step, before the aggregation,
				// as the pipeline does (the score does not depend on it).
				auc, acc, err := method.EvaluateDeep(nets[i], nn.EvaluationParams(cfg.Method, nil, states[i]), s.Test)
				if err != nil {
					return Result{}, fmt.Errorf("simulate: site %s round %d: %w", s.Name, r, err)
				}
				ownScores[i] = [2]float64{auc, acc}
			}
		}
		agg, err := aggregation.AggregateRound(aggregation.RoundInput{
			Method: cfg.Method, Round: r, Sites: results, State: server, Config: cfg.Server,
		})
		if err != nil {
			return Result{}, fmt.Errorf("simulate: %w", err)
		}
		server = agg.State
		control = agg.Control
		for i := range pushed {
			pushed[i] = method.ToFloat32(agg.Models[i])
		}
		rec := RoundRecord{Round: r, SiteAUC: make([]float64, k), SiteAcc: make([]float64, k),
			Labels: agg.Labels, Trust: agg.Trust, Flagged: agg.Flagged, Drift: agg.Drift}
		for i, s := range sites {
			if method.EvaluatesOwnUpdate(cfg.Method) {
				rec.SiteAUC[i], rec.SiteAcc[i] = ownScores[i][0], ownScores[i][1]
				continue
			}
			auc, acc, err := method.EvaluateDeep(nets[i], nn.EvaluationParams(cfg.Method, pushed[i], states[i]), s.Test)
			if err != nil {
				return Result{}, fmt.Errorf("simulate: site %s round %d: %w", s.Name, r, err)
			}
			rec.SiteAUC[i], rec.SiteAcc[i] = auc, acc
		}
		res.addRound(rec)
		res.UpdateAccCurve = append(res.UpdateAccCurve, eval.SiteMean(updateAcc))
	}
	for i := range sites {
		res.Held = append(res.Held, method.ToFloat64(pushed[i]))
	}
	res.finish()
	return res, nil
}
