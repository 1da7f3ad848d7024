package aggregation

import (
	"fmt"
	"slices"

	"github.com/ptopofl/ptopofl/learn"
)

// Secure aggregation (the pipeline's secure_aggregation "secagg+"): the
// server never reads a site model, only, for each aggregation group, the
// sum Σ_{k∈S} w_k·(θ_k − θ_start,k) over the group's surviving members S,
// each term weighted by the site before it masks it. The three steps here
// are the server's side of that, everything but the cryptography
// (package secagg):
//
//  1. FormGroups, before any site trains: which sites sum together.
//  2. PlanSecure, once the sites have trained and reported their row
//     counts, still before any model exists outside its site: each
//     site's weight w_k, from counts and descriptors alone.
//  3. CombineSecure, from the groups' sums: the models sent back,
//     exactly AggregateStream's when every member survives (up to the
//     quantisation of the sums), and the same rule over the survivors
//     otherwise.

// GlobalGroup is the name of the group of a method that aggregates one
// model, and of pTopoFL's group of the sites whose clusters are too small
// to sum on their own.
const GlobalGroup = "global"

// ClusterGroup is the name of the group of pTopoFL cluster c.
func ClusterGroup(c int) string { return fmt.Sprintf("cluster-%d", c) }

// FormGroups assigns sites to aggregation groups before they train: every
// site to GlobalGroup when labels is nil (one model: FedAvg, FedProx,
// pFedMe, SCAFFOLD, pTopoFL's softmax rule); under pTopoFL's clusters
// (labels[i] the cluster of site i), each cluster of at least minGroup
// sites to its own group (ClusterGroup), the others' sites to GlobalGroup,
// into which, while it holds some but fewer than minGroup sites, the
// smallest cluster group (the lowest id among equals) is folded too. It
// returns each site's group name and the groups' names in order of first
// appearance; fewer than minGroup sites in all is an error, since no group
// can be formed.
func FormGroups(labels []int, n, minGroup int) (groupOf, names []string, err error) {
	if n < minGroup {
		return nil, nil, fmt.Errorf("%d sites, fewer than the %d a secure-aggregation group needs", n, minGroup)
	}
	if labels != nil && len(labels) != n {
		return nil, nil, fmt.Errorf("%d cluster labels for %d sites", len(labels), n)
	}
	groupOf = make([]string, n)
	if labels == nil {
		for i := range groupOf {
			groupOf[i] = GlobalGroup
		}
		return groupOf, []string{GlobalGroup}, nil
	}
	// Slices indexed by cluster id, never a map walked: workflows call
	// this, and the outcome must not depend on an iteration order.
	nc := 0
	for _, c := range labels {
		if c < 0 {
			return nil, nil, fmt.Errorf("cluster label %d: want a label ≥ 0", c)
		}
		nc = max(nc, c+1)
	}
	size := make([]int, nc)
	for _, c := range labels {
		size[c]++
	}
	own := make([]bool, nc)
	folded := 0
	for c, s := range size {
		if s >= minGroup {
			own[c] = true
		} else {
			folded += s
		}
	}
	for folded > 0 && folded < minGroup {
		smallest := -1
		for c := range own {
			if own[c] && (smallest < 0 || size[c] < size[smallest]) {
				smallest = c
			}
		}
		if smallest < 0 {
			break // n ≥ minGroup: unreachable
		}
		own[smallest] = false
		folded += size[smallest]
	}
	for i, c := range labels {
		name := GlobalGroup
		if own[c] {
			name = ClusterGroup(c)
		}
		groupOf[i] = name
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return groupOf, names, nil
}

// SecurePlan is what the server decides once the sites have trained, from
// their row counts and descriptors alone: the weight each site applies to
// its update before masking it, and what CombineSecure needs to turn the
// groups' sums into models.
type SecurePlan struct {
	// Weight is w_k, in the order of RoundInput.Sites: FedAvg's n_k/N;
	// pTopoFL's intra-cluster weight a_k (Eq. 6) in a cluster's own group,
	// and a_k·|C_c|/|F| in GlobalGroup (|C_c| the sites of its cluster
	// that trained, |F| the trained sites of the group), so that the
	// group's sum is its clusters' share of the consensus; the softmax
	// rule's α_k (Eq. 12).
	Weight []float64
	// ControlWeight is b_k = 1/K for SCAFFOLD's control variates (K the
	// sites that trained): the server adds the mean of the survivors'
	// Δc_k to c. Nil for the other methods.
	ControlWeight []float64
	// Group is each site's group name (FormGroups').
	Group []string
	// Topology is pTopoFL's topology step over the sites that trained.
	Topology Topology
}

// PlanSecure decides the weights of a secure aggregation of in (whose
// sites carry everything but Params and Control: row counts, and for
// pTopoFL descriptors) for sites grouped by groupOf (FormGroups', for the
// sites of in, in order). The weights are those AggregateStream uses
// (streamWeights), normalised over each group.
func PlanSecure(in RoundInput, groupOf []string) (SecurePlan, error) {
	if !Streams(in.Method) {
		return SecurePlan{}, fmt.Errorf("method %s: secure aggregation sums weighted models; it serves the methods AggregateStream does", in.Method)
	}
	k := len(in.Sites)
	if k == 0 {
		return SecurePlan{}, fmt.Errorf("no sites")
	}
	if len(groupOf) != k {
		return SecurePlan{}, fmt.Errorf("%d group assignments for %d sites", len(groupOf), k)
	}
	sw, err := streamWeights(in)
	if err != nil {
		return SecurePlan{}, err
	}
	plan := SecurePlan{Weight: make([]float64, k), Group: slices.Clone(groupOf), Topology: sw.top}
	switch {
	case sw.ptopofl && !sw.softmax:
		// a_k within each cluster (already normalised); in the global
		// group, times its cluster's share of the group.
		size := map[int]int{}
		folded := 0
		for i, c := range sw.top.Labels {
			size[c]++
			if groupOf[i] == GlobalGroup {
				folded++
			}
		}
		for i, c := range sw.top.Labels {
			plan.Weight[i] = sw.weight[i]
			if groupOf[i] == GlobalGroup {
				plan.Weight[i] *= float64(size[c]) / float64(folded)
			} else if groupOf[i] != ClusterGroup(c) {
				return SecurePlan{}, fmt.Errorf("site %d is in cluster %d but was put in group %q", i, c, groupOf[i])
			}
		}
	default:
		// One sum: n_k/N, or α_k (Σ α = 1).
		total := 0.0
		for _, w := range sw.weight {
			total += w
		}
		for i, w := range sw.weight {
			if groupOf[i] != GlobalGroup {
				return SecurePlan{}, fmt.Errorf("site %d was put in group %q; method %s sums one group, %q", i, groupOf[i], in.Method, GlobalGroup)
			}
			plan.Weight[i] = w / total
		}
	}
	if in.Method == learn.SCAFFOLD {
		plan.ControlWeight = make([]float64, k)
		for i := range plan.ControlWeight {
			plan.ControlWeight[i] = 1 / float64(k)
		}
	}
	return plan, nil
}

// SecureSum is one group's outcome: the sites (indices into
// RoundInput.Sites) whose masked inputs the sum holds, and the sum itself,
// Σ_{k∈Survivors} w_k·(θ_k − θ_start,k) (Update) and, for SCAFFOLD,
// Σ b_k·Δc_k (Control).
type SecureSum struct {
	Group     string
	Survivors []int
	Update    []float64
	Control   []float64
}

// CombineSecure is the server step of a secure aggregation: from each
// group's sum and the start models it sent the sites (start(i), site i's;
// nil for a site that started from its own initialisation, taken as
// zeros, so its update is its model), the model of each group,
//
//	θ_G = (Σ_{k∈S} w_k θ_start,k + Σ_{k∈S} w_k (θ_k − θ_start,k)) / Σ_{k∈S} w_k,
//
// and from them what AggregateStream returns: one model for FedAvg,
// FedProx, pFedMe, SCAFFOLD (with c + Σ b_k Δc_k / Σ b_k) and pTopoFL's
// softmax rule; under pTopoFL's clusters the blended cluster models of
// Eq. (7), θ*_c = (1−β)θ_c + βθ̄, with the consensus θ̄ the groups' models
// weighted by their sites (|S_c| for a cluster's group, |F|·Σ_S w_k for
// the global group, whose sum is its clusters' part of Σ_c |C_c|θ_c), and
// the consensus θ̄ itself for the sites of the clusters folded into the
// global group. With every site surviving this is AggregateStream's
// output for the same models, up to the sums' quantisation.
func CombineSecure(in RoundInput, plan SecurePlan, sums []SecureSum, start func(i int) ([]float64, error)) (RoundOutput, error) {
	out, err := combineSecure(in, plan, sums, start)
	if err != nil {
		return RoundOutput{}, fmt.Errorf("aggregate round %d (%s, secure): %w", in.Round, in.Method, err)
	}
	return out, nil
}

func combineSecure(in RoundInput, plan SecurePlan, sums []SecureSum, start func(i int) ([]float64, error)) (RoundOutput, error) {
	k := len(in.Sites)
	if len(plan.Weight) != k || len(plan.Group) != k {
		return RoundOutput{}, fmt.Errorf("a plan of %d weights for %d sites", len(plan.Weight), k)
	}
	if len(sums) == 0 {
		return RoundOutput{}, fmt.Errorf("no group sums")
	}
	np := len(sums[0].Update)
	models := make(map[string][]float64, len(sums))
	mass := make(map[string]float64, len(sums))
	var control weightedSum
	controlMass := 0.0
	for _, g := range sums {
		if err := finiteVector(g.Update, np); err != nil {
			return RoundOutput{}, fmt.Errorf("group %s's sum: %w", g.Group, err)
		}
		if len(g.Survivors) == 0 {
			return RoundOutput{}, fmt.Errorf("group %s: no survivors", g.Group)
		}
		theta := make(weightedSum, np)
		w := 0.0
		for _, i := range g.Survivors {
			if i < 0 || i >= k || plan.Group[i] != g.Group {
				return RoundOutput{}, fmt.Errorf("group %s: survivor %d is not one of its sites", g.Group, i)
			}
			s, err := start(i)
			if err != nil {
				return RoundOutput{}, fmt.Errorf("site %d's start model: %w", i, err)
			}
			if s != nil {
				if err := finiteVector(s, np); err != nil {
					return RoundOutput{}, fmt.Errorf("site %d's start model: %w", i, err)
				}
				theta.add(plan.Weight[i], s)
			}
			w += plan.Weight[i]
		}
		if !(w > 0) {
			return RoundOutput{}, fmt.Errorf("group %s: its survivors weigh %v", g.Group, w)
		}
		theta.add(1, g.Update)
		mass[g.Group] = float64(len(g.Survivors))
		if g.Group == GlobalGroup && in.Method == learn.PTopoFL && in.Config.Aggregation != SoftmaxAggregation {
			folded := 0
			for _, name := range plan.Group {
				if name == GlobalGroup {
					folded++
				}
			}
			mass[g.Group] = float64(folded) * w
		}
		models[g.Group] = theta.scaled(w)
		if in.Method == learn.SCAFFOLD {
			if err := finiteVector(g.Control, np); err != nil {
				return RoundOutput{}, fmt.Errorf("group %s's control sum: %w", g.Group, err)
			}
			if control == nil {
				control = make(weightedSum, np)
			}
			control.add(1, g.Control)
			for _, i := range g.Survivors {
				controlMass += plan.ControlWeight[i]
			}
		}
	}
	out := RoundOutput{Models: make([][]float64, k)}
	if in.Method != learn.PTopoFL || in.Config.Aggregation == SoftmaxAggregation {
		global, ok := models[GlobalGroup]
		if !ok || len(models) != 1 {
			return RoundOutput{}, fmt.Errorf("method %s sums one group, %q; got %d", in.Method, GlobalGroup, len(models))
		}
		for i := range out.Models {
			out.Models[i] = global
		}
		if in.Method == learn.PTopoFL {
			top := plan.Topology
			out.ClusterModels, out.Labels = [][]float64{global}, make([]int, k)
			out.Trust, out.ZScores, out.Flagged, out.Drift = top.Trust, top.ZScores, top.Flagged, top.Drift
			out.Reclustered, out.Reassigned, out.SiteWeights, out.State = top.Reclustered, top.Reassigned, slices.Clone(plan.Weight), top.State
			return out, nil
		}
		state := in.State
		state.Round, state.Global = in.Round, global
		if in.Method == learn.SCAFFOLD {
			if !(controlMass > 0) {
				return RoundOutput{}, fmt.Errorf("no control variates")
			}
			c, err := scaffoldControl(control.scaled(controlMass), 1, in.State.Control)
			if err != nil {
				return RoundOutput{}, err
			}
			state.Control, out.Control = c, c
		}
		out.State = state
		return out, nil
	}
	// pTopoFL's clusters: the consensus of the groups' models, weighted
	// by their sites, and each cluster of its own group blended with it.
	consensus := make(weightedSum, np)
	total := 0.0
	for _, g := range sums { // the order the caller gave: spec order of first member
		consensus.add(mass[g.Group], models[g.Group])
		total += mass[g.Group]
	}
	consensus.scaled(total)
	top := plan.Topology
	nc := numClusters(top.Labels)
	out.ClusterModels = make([][]float64, nc)
	beta := in.Config.Beta
	for i, c := range top.Labels {
		if out.ClusterModels[c] != nil {
			continue
		}
		if plan.Group[i] == GlobalGroup {
			out.ClusterModels[c] = consensus
			continue
		}
		m, ok := models[plan.Group[i]]
		if !ok {
			return RoundOutput{}, fmt.Errorf("no sum of group %s", plan.Group[i])
		}
		b := make([]float64, np)
		for j, v := range m {
			b[j] = (1-beta)*v + beta*consensus[j]
		}
		out.ClusterModels[c] = b
	}
	for i, c := range top.Labels {
		out.Models[i] = out.ClusterModels[c]
	}
	out.Labels = slices.Clone(top.Labels)
	out.Trust, out.ZScores, out.Flagged, out.Drift = top.Trust, top.ZScores, top.Flagged, top.Drift
	out.Reclustered, out.Reassigned, out.State = top.Reclustered, top.Reassigned, top.State
	return out, nil
}
