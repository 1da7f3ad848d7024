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

// streamed is the part of a streamed aggregation decided before any model
// is read: each site's weight in its sum and the sum it goes to (its
// pTopoFL cluster, or 0), the topology step, and the total of the row
// counts.
type streamed struct {
	weight           []float64
	group            []int
	top              Topology
	ptopofl, softmax bool
	total            float64
}

// streamWeights decides the weights of a streamed aggregation from the
// sites' row counts and descriptors alone: pTopoFL's topology weights a_k
// (Eq. 6) within the site's cluster or its softmax weights α_k (Eq. 12),
// n_k otherwise (one sum).
func streamWeights(in RoundInput) (streamed, error) {
	k := len(in.Sites)
	var sw streamed
	for i, s := range in.Sites {
		if s.N <= 0 {
			return streamed{}, fmt.Errorf("site %d has n = %d, want a positive row count", i, s.N)
		}
		sw.total += float64(s.N)
	}
	sw.weight = make([]float64, k)
	sw.group = make([]int, k)
	sw.ptopofl = in.Method == learn.PTopoFL
	sw.softmax = sw.ptopofl && in.Config.Aggregation == SoftmaxAggregation
	switch in.Config.Aggregation {
	case ClusterAggregation, SoftmaxAggregation, "":
	default:
		return streamed{}, fmt.Errorf("unknown aggregation %q; want %q or %q", in.Config.Aggregation, ClusterAggregation, SoftmaxAggregation)
	}
	if sw.ptopofl {
		var err error
		sw.top, err = TopologyStep(TopologyInput{Round: in.Round, Sites: in.Sites, State: in.State, Config: in.Config})
		if err != nil {
			return streamed{}, err
		}
		n := make([]int, k)
		for i, s := range in.Sites {
			n[i] = s.N
		}
		sw.weight = ClusterWeights(sw.top.Labels, n, sw.top.CentreDistances, sw.top.Trust, sw.top.Lambda)
		sw.group = sw.top.Labels
		if sw.softmax {
			// Eq. (12): one global model, weights α_k; the topology step
			// still measures trust, flags and drift, which it reports.
			if sw.weight, _, err = SoftmaxWeights(in.Sites, in.Config); err != nil {
				return streamed{}, err
			}
			sw.group = make([]int, k)
		}
	} else {
		for i, s := range in.Sites {
			sw.weight[i] = float64(s.N)
		}
	}
	return sw, nil
}

func aggregateStream(in RoundInput, load SiteLoader) (RoundOutput, error) {
	if !Streams(in.Method) {
		return RoundOutput{}, fmt.Errorf("method %s needs every site model at once; use AggregateRound", in.Method)
	}
	k := len(in.Sites)
	if k == 0 {
		return RoundOutput{}, fmt.Errorf("no sites")
	}
	sw, err := streamWeights(in)
	if err != nil {
		return RoundOutput{}, err
	}
	weight, group, top, ptopofl, softmax := sw.weight, sw.group, sw.top, sw.ptopofl, sw.softmax
	total := sw.total
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
