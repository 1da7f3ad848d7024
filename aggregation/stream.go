package aggregation

import (
	"fmt"

	"github.com/ptopofl/ptopofl/learn"
)

// Streams reports whether AggregateStream aggregates method: the methods
// whose aggregates are weighted sums of the site models with weights known
// before any model is read (FedAvg, FedProx, pFedMe, SCAFFOLD and pTopoFL,
// whose weights come from the descriptors). The robust aggregators
// (median, trimmed mean, Krum, FoolsGold, norm clipping) compare the models
// with each other and local training returns them all, so they need every
// model at once.
func Streams(m learn.Method) bool {
	switch m {
	case learn.FedAvg, learn.FedProx, learn.PFedMe, learn.SCAFFOLD, learn.PTopoFL:
		return true
	}
	return false
}

// SiteLoader returns site i's model and, for SCAFFOLD, its control-variate
// message.
type SiteLoader func(i int) (params, control []float64, err error)

// AggregateStream is AggregateRound for the methods Streams accepts, with
// the site models read one at a time: in.Sites carry everything but Params
// and Control, which load returns for site i; it is called once per site,
// in site order, and each model is added to the aggregates before the next
// is read, so memory holds the aggregates and one site model instead of
// every site's (a server aggregating ten 6.6 M-parameter ConvNet-2 models
// holds two float64 models instead of ten). It returns exactly what
// AggregateRound returns for the same models, to the bit: AggregateRound
// computes these methods through it.
func AggregateStream(in RoundInput, load SiteLoader) (RoundOutput, error) {
	out, err := aggregateStream(in, load)
	if err != nil {
		return RoundOutput{}, fmt.Errorf("aggregate round %d (%s): %w", in.Round, in.Method, err)
	}
	return out, nil
}

func aggregateStream(in RoundInput, load SiteLoader) (RoundOutput, error) {
	if !Streams(in.Method) {
		return RoundOutput{}, fmt.Errorf("method %s needs every site model at once; use AggregateRound", in.Method)
	}
	k := len(in.Sites)
	if k == 0 {
		return RoundOutput{}, fmt.Errorf("no sites")
	}
	total := 0.0
	for i, s := range in.Sites {
		if s.N <= 0 {
			return RoundOutput{}, fmt.Errorf("site %d has n = %d, want a positive row count", i, s.N)
		}
		total += float64(s.N)
	}
	// Each site's weight in its sum: pTopoFL's topology weights a_k
	// (Eq. 6) within the site's cluster, n_k otherwise (one sum).
	weight := make([]float64, k)
	group := make([]int, k)
	var top Topology
	ptopofl := in.Method == learn.PTopoFL
	softmax := ptopofl && in.Config.Aggregation == SoftmaxAggregation
	switch in.Config.Aggregation {
	case ClusterAggregation, SoftmaxAggregation, "":
	default:
		return RoundOutput{}, fmt.Errorf("unknown aggregation %q; want %q or %q", in.Config.Aggregation, ClusterAggregation, SoftmaxAggregation)
	}
	if ptopofl {
		var err error
		top, err = TopologyStep(TopologyInput{Round: in.Round, Sites: in.Sites, State: in.State, Config: in.Config})
		if err != nil {
			return RoundOutput{}, err
		}
		n := make([]int, k)
		for i, s := range in.Sites {
			n[i] = s.N
		}
		weight = ClusterWeights(top.Labels, n, top.CentreDistances, top.Trust, top.Lambda)
		group = top.Labels
		if softmax {
			// Eq. (12): one global model, weights α_k; the topology step
			// still measures trust, flags and drift, which it reports.
			if weight, _, err = SoftmaxWeights(in.Sites, in.Config); err != nil {
				return RoundOutput{}, err
			}
			group = make([]int, k)
		}
	} else {
		for i, s := range in.Sites {
			weight[i] = float64(s.N)
		}
	}
	groups := 1
	for _, g := range group {
		groups = max(groups, g+1)
	}
	sums := make([][]float64, groups)
	sizes := make([]int, groups)
	var control weightedSum
	np := -1
	for i := range in.Sites {
		params, ctl, err := load(i)
		if err != nil {
			return RoundOutput{}, fmt.Errorf("site %d: %w", i, err)
		}
		if np < 0 {
			np = len(params)
		}
		if err := finiteVector(params, np); err != nil {
			return RoundOutput{}, fmt.Errorf("site %d model: %w", i, err)
		}
		g := group[i]
		if sums[g] == nil {
			sums[g] = make([]float64, np)
		}
		weightedSum(sums[g]).add(weight[i], params)
		sizes[g]++
		if in.Method == learn.SCAFFOLD {
			if err := finiteVector(ctl, np); err != nil {
				return RoundOutput{}, fmt.Errorf("site %d control variate: %w", i, err)
			}
			if control == nil {
				control = make(weightedSum, np)
			}
			control.add(1, ctl)
		}
	}
	if softmax {
		global := sums[0] // Σ α_k θ_k, Σ α_k = 1
		models := make([][]float64, k)
		for i := range models {
			models[i] = global
		}
		return RoundOutput{
			Models: models, ClusterModels: [][]float64{global}, Labels: group,
			Trust: top.Trust, ZScores: top.ZScores, Flagged: top.Flagged,
			Drift: top.Drift, Reclustered: top.Reclustered, Reassigned: top.Reassigned,
			SiteWeights: weight, State: top.State,
		}, nil
	}
	if ptopofl {
		blended := BlendClusters(sums, sizes, in.Config.Beta)
		models := make([][]float64, k)
		for i, c := range top.Labels {
			models[i] = blended[c]
		}
		return RoundOutput{
			Models: models, ClusterModels: blended, Labels: append([]int(nil), top.Labels...),
			Trust: top.Trust, ZScores: top.ZScores, Flagged: top.Flagged,
			Drift: top.Drift, Reclustered: top.Reclustered, Reassigned: top.Reassigned,
			State: top.State,
		}, nil
	}
	state := in.State
	state.Round = in.Round
	out := RoundOutput{}
	state.Global = weightedSum(sums[0]).scaled(total)
	if in.Method == learn.SCAFFOLD {
		c, err := scaffoldControl(control, k, in.State.Control)
		if err != nil {
			return RoundOutput{}, err
		}
		state.Control, out.Control = c, c
	}
	out.Models = make([][]float64, k)
	for i := range out.Models {
		out.Models[i] = state.Global
	}
	out.State = state
	return out, nil
}
