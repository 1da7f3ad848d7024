package simulate

import (
	"fmt"

	"github.com/ptopofl/ptopofl/aggregation"
	"github.com/ptopofl/ptopofl/eval"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/tda"
)

// Site is one site's raw data and its topological summary.
type Site struct {
	Name          string
	TrainX, TestX [][]float64
	TrainY, TestY []float64
	Descriptor    []float64
	H0, H1        []tda.Pair // for aggregation.WassersteinDistance only
	Init          []float64  // optional round-1 parameters (see learn.SiteInput.Init)
}

// RoundRecord is the outcome of one round.
type RoundRecord struct {
	Round            int
	AUC, Acc         float64   // unweighted means over sites
	SiteAUC, SiteAcc []float64 // per site
	// pTopoFL's server outputs (nil for other methods).
	Labels  []int
	Trust   []float64
	Flagged []bool
	Drift   []float64
}

// Result is the outcome of a campaign.
type Result struct {
	Rounds             []RoundRecord
	AUCCurve, AccCurve []float64
	FinalAUC, FinalAcc float64
	// ConvRound is the first round with AUC ≥ 0.95·final AUC.
	ConvRound int
	// SampleWeights are pTopoFL's per-site topology sample weights.
	SampleWeights [][]float64
	// Held is, for RunDeep, the model each site was sent after the last
	// round (float32 values), as the pipeline's store holds it.
	Held [][]float64
	// UpdateAccCurve is, for RunDeep, the round's unweighted site mean of
	// the top-1 accuracy of each site's model right after its local update,
	// before the aggregation (the pipeline's mean update_accuracy).
	UpdateAccCurve []float64
}

// Run runs cfg.Rounds rounds of cfg.Method over sites. Each site's rows
// are standardised (method.PrepareSite) and, under topo_features "augment"
// or "both", given the four topological columns of its descriptor
// (method.AugmentTopology). Each round: every
// site runs learn.UpdateSite with what the server pushed last round; the
// server runs aggregation.AggregateRound; every site is evaluated with
// learn.EvaluationParams on its test split; the round metric is the
// unweighted site mean.
func Run(sites []Site, cfg Config) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	if len(sites) == 0 {
		return Result{}, fmt.Errorf("simulate: no sites")
	}
	k := len(sites)
	prep := make([]method.PreparedSite, k)
	for i, s := range sites {
		p, err := method.PrepareSite(s.Name, s.TrainX, s.TrainY, s.TestX, s.TestY)
		if err != nil {
			return Result{}, err
		}
		if cfg.AugmentsFeatures() {
			// topo_features "augment" or "both": the four columns of §3.2.
			if p.Train, p.Test, p.Val, err = method.AugmentTopology(p.Train, p.Test, p.Val, s.Descriptor); err != nil {
				return Result{}, fmt.Errorf("simulate: site %s: %w", s.Name, err)
			}
		}
		prep[i] = p
	}
	states := make([]learn.SiteState, k)
	pushed := make([][]float64, k)
	var control []float64
	server := aggregation.ServerState{}
	var res Result
	for r := 1; r <= cfg.Rounds; r++ {
		results := make([]aggregation.SiteResult, k)
		for i, s := range sites {
			train, _ := prep[i].Splits(cfg.DP.On)
			site := cfg.Site
			if cfg.DP.On {
				dp := *site.DP
				dp.Random = cfg.Noise(s.Name, r)
				site.DP = &dp
			}
			out, err := learn.UpdateSite(learn.SiteInput{
				Method: cfg.Method, Round: r, Seed: cfg.Seed + uint32(i), Init: s.Init,
				Train: train, TopologyX: s.TrainX, Descriptor: s.Descriptor,
				Pushed: pushed[i], ServerControl: control,
				State: states[i], Config: site,
			})
			if err != nil {
				return Result{}, fmt.Errorf("simulate: site %s: %w", s.Name, err)
			}
			states[i] = out.State
			if r == 1 && out.SampleWeights != nil {
				res.SampleWeights = append(res.SampleWeights, out.SampleWeights)
			}
			results[i] = aggregation.SiteResult{
				Params: out.Params, Control: out.Control, N: out.N,
				Descriptor: s.Descriptor, H0: s.H0, H1: s.H1,
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
		pushed = agg.Models
		rec := RoundRecord{Round: r, SiteAUC: make([]float64, k), SiteAcc: make([]float64, k),
			Labels: agg.Labels, Trust: agg.Trust, Flagged: agg.Flagged, Drift: agg.Drift}
		for i, s := range sites {
			_, test := prep[i].Splits(cfg.DP.On)
			auc, acc, err := method.EvaluateSite(cfg.Site, learn.EvaluationParams(cfg.Method, pushed[i], states[i]), test)
			if err != nil {
				return Result{}, fmt.Errorf("simulate: site %s round %d: %w", s.Name, r, err)
			}
			rec.SiteAUC[i], rec.SiteAcc[i] = auc, acc
		}
		res.addRound(rec)
	}
	res.finish()
	return res, nil
}

// addRound records rec, its means taken over its sites' scores, as the
// next round of the result.
func (res *Result) addRound(rec RoundRecord) {
	rec.AUC, rec.Acc = eval.SiteMean(rec.SiteAUC), eval.SiteMean(rec.SiteAcc)
	res.Rounds = append(res.Rounds, rec)
	res.AUCCurve = append(res.AUCCurve, rec.AUC)
	res.AccCurve = append(res.AccCurve, rec.Acc)
}

// finish sets the final scores and the convergence round from the curves
// (at least one round).
func (res *Result) finish() {
	res.FinalAUC = res.AUCCurve[len(res.AUCCurve)-1]
	res.FinalAcc = res.AccCurve[len(res.AccCurve)-1]
	res.ConvRound = eval.ConvergenceRound(res.AUCCurve)
}
