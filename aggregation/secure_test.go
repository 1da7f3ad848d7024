package aggregation

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/learn"
)

func TestFormGroups(t *testing.T) {
	for i, c := range []struct {
		labels   []int
		n, min   int
		groupOf  []string
		names    []string
		errorHas string
	}{
		{nil, 4, 3, []string{"global", "global", "global", "global"}, []string{"global"}, ""}, // 0: one model
		{[]int{0, 0, 0, 1, 1, 1}, 6, 3, // 1: two clusters of 3
			[]string{"cluster-0", "cluster-0", "cluster-0", "cluster-1", "cluster-1", "cluster-1"}, []string{"cluster-0", "cluster-1"}, ""},
		{[]int{0, 1, 0, 0, 2, 2, 2, 1}, 8, 3, // 2: cluster 1 (2 sites) too small; then cluster 0 (3, the lowest id of the smallest) is folded too
			[]string{"global", "global", "global", "global", "cluster-2", "cluster-2", "cluster-2", "global"}, []string{"global", "cluster-2"}, ""},
		{[]int{0, 0, 0, 0, 1, 1, 1, 2, 2, 2}, 10, 3, // 3: every cluster has 3 or more
			[]string{"cluster-0", "cluster-0", "cluster-0", "cluster-0", "cluster-1", "cluster-1", "cluster-1", "cluster-2", "cluster-2", "cluster-2"},
			[]string{"cluster-0", "cluster-1", "cluster-2"}, ""},
		{[]int{0, 1, 2, 3, 0, 1}, 6, 3, // 4: no cluster of 3: one global group
			[]string{"global", "global", "global", "global", "global", "global"}, []string{"global"}, ""},
		{[]int{0, 0, 0, 1, 1, 1, 1, 2, 3, 3, 3}, 11, 3, // 5: singleton cluster 2 + cluster 0 (smallest: 3) folded
			[]string{"global", "global", "global", "cluster-1", "cluster-1", "cluster-1", "cluster-1", "global", "cluster-3", "cluster-3", "cluster-3"},
			[]string{"global", "cluster-1", "cluster-3"}, ""},
		{[]int{0, 0}, 2, 3, nil, nil, "2 sites, fewer than the 3"}, // 6
		{[]int{0, 0, 1}, 4, 3, nil, nil, "3 cluster labels for 4 sites"},
	} {
		g, names, err := FormGroups(c.labels, c.n, c.min)
		if c.errorHas != "" {
			if err == nil || !strings.Contains(err.Error(), c.errorHas) {
				t.Errorf("%d: %v, want an error containing %q", i, err, c.errorHas)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(g, c.groupOf) || !reflect.DeepEqual(names, c.names) {
			t.Errorf("%d: %v %v %v, want %v %v", i, g, names, err, c.groupOf, c.names)
		}
	}
}

// secureRun runs a secure aggregation of sites in the clear: the plan, each
// group's sum of weighted updates over its survivors computed exactly (the
// cryptography and quantisation are package secagg's, tested there), and
// the combination.
func secureRun(t *testing.T, in RoundInput, sites []SiteResult, starts [][]float64, groupOf []string, drop map[int]bool) (RoundOutput, SecurePlan) {
	t.Helper()
	bare := make([]SiteResult, len(sites))
	for i, s := range sites {
		bare[i] = SiteResult{N: s.N, Descriptor: s.Descriptor}
	}
	in.Sites = bare
	plan, err := PlanSecure(in, groupOf)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*SecureSum{}
	var sums []SecureSum
	order := []string{}
	for i, g := range groupOf {
		if byName[g] == nil {
			byName[g] = &SecureSum{Group: g}
			order = append(order, g)
		}
		if drop[i] {
			continue
		}
		s := byName[g]
		s.Survivors = append(s.Survivors, i)
		if s.Update == nil {
			s.Update = make([]float64, len(sites[i].Params))
			if sites[i].Control != nil {
				s.Control = make([]float64, len(sites[i].Params))
			}
		}
		for j, v := range sites[i].Params {
			st := 0.0
			if starts[i] != nil {
				st = starts[i][j]
			}
			s.Update[j] += plan.Weight[i] * (v - st)
			if plan.ControlWeight != nil {
				s.Control[j] += plan.ControlWeight[i] * sites[i].Control[j]
			}
		}
	}
	for _, g := range order {
		sums = append(sums, *byName[g])
	}
	out, err := CombineSecure(in, plan, sums, func(i int) ([]float64, error) { return starts[i], nil })
	if err != nil {
		t.Fatal(err)
	}
	return out, plan
}

func maxDiff(a, b []float64) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	d := 0.0
	for i := range a {
		d = max(d, math.Abs(a[i]-b[i]))
	}
	return d
}

// TestCombineSecureEqualsStream: with every site surviving, the models a
// secure aggregation sends equal AggregateStream's to rounding (1e-9; the
// pTopoFL cluster weights' 1e-8 guard is the largest term), for every
// method it serves, from start models that differ by site; under pTopoFL's
// clusters, the clusters summed on their own get their blended model and
// the sites of the folded clusters the consensus θ̄ = Σ_c (|C_c|/K) θ_c.
func TestCombineSecureEqualsStream(t *testing.T) {
	sites := benchSites(9, 40)
	rng := rand.New(rand.NewPCG(3, 4))
	starts := make([][]float64, len(sites))
	for i := range starts {
		if i == 0 {
			continue // a site without a start model: its update is its model
		}
		starts[i] = make([]float64, 40)
		for j := range starts[i] {
			starts[i][j] = rng.NormFloat64()
		}
	}
	labels := []int{0, 0, 0, 0, 1, 1, 1, 2, 2} // cluster 2 (2 sites) folds, then cluster 1 (3)
	f := NormalizeDescriptors(func() [][]float64 {
		d := make([][]float64, len(sites))
		for i, s := range sites {
			d[i] = s.Descriptor
		}
		return d
	}())
	clustered := ServerState{Labels: labels, Reference: f, DriftSum: make([]float64, 9), DriftCount: []int{1, 1, 1, 1, 1, 1, 1, 1, 1}}
	softmax := DefaultConfig()
	softmax.Aggregation = SoftmaxAggregation
	for _, c := range []struct {
		method learn.Method
		cfg    Config
		state  ServerState
	}{
		{learn.FedAvg, DefaultConfig(), ServerState{}},
		{learn.FedProx, DefaultConfig(), ServerState{}},
		{learn.PFedMe, DefaultConfig(), ServerState{}},
		{learn.SCAFFOLD, DefaultConfig(), ServerState{Control: sites[3].Params}},
		{learn.PTopoFL, softmax, ServerState{}},
		{learn.PTopoFL, DefaultConfig(), clustered},
	} {
		name := fmt.Sprintf("%s/%s", c.method, c.cfg.Aggregation)
		in := RoundInput{Method: c.method, Round: 2, State: c.state, Config: c.cfg}
		plain := in
		plain.Sites = sites
		want, err := AggregateRound(plain)
		if err != nil {
			t.Fatal(err)
		}
		var groupOf []string
		if c.method == learn.PTopoFL && c.cfg.Aggregation != SoftmaxAggregation {
			groupOf, _, err = FormGroups(labels, 9, 3)
		} else {
			groupOf, _, err = FormGroups(nil, 9, 3)
		}
		if err != nil {
			t.Fatal(err)
		}
		got, plan := secureRun(t, in, sites, starts, groupOf, nil)
		if c.method != learn.PTopoFL || c.cfg.Aggregation == SoftmaxAggregation {
			for i := range sites {
				if d := maxDiff(got.Models[i], want.Models[i]); d > 1e-9 {
					t.Errorf("%s: site %d's model differs by %g", name, i, d)
				}
			}
			if d := maxDiff(got.State.Control, want.State.Control); c.method == learn.SCAFFOLD && d > 1e-9 {
				t.Errorf("%s: control variate differs by %g", name, d)
			}
			continue
		}
		// Cluster 0 sums alone: its blended model is the plain one. The
		// others' sites get the consensus, which the plain blend holds:
		// θ̄ = (θ*_c − (1−β)θ_c)/β with θ_c = Σ_{k∈c} a_k θ_k.
		if d := maxDiff(got.ClusterModels[0], want.ClusterModels[0]); d > 1e-9 {
			t.Errorf("%s: cluster 0's blended model differs by %g", name, d)
		}
		n := make([]int, 9)
		for i, s := range sites {
			n[i] = s.N
		}
		a := ClusterWeights(plan.Topology.Labels, n, plan.Topology.CentreDistances, plan.Topology.Trust, plan.Topology.Lambda)
		theta0 := make([]float64, 40)
		for i, l := range labels {
			if l == 0 {
				for j, v := range sites[i].Params {
					theta0[j] += a[i] * v
				}
			}
		}
		beta := c.cfg.Beta
		consensus := make([]float64, 40)
		for j := range consensus {
			consensus[j] = (want.ClusterModels[0][j] - (1-beta)*theta0[j]) / beta
		}
		for i, l := range labels {
			if l != 0 {
				if d := maxDiff(got.Models[i], consensus); d > 1e-9 {
					t.Errorf("%s: folded site %d's model is %g from the consensus", name, i, d)
				}
			}
		}
		if !reflect.DeepEqual(got.Labels, want.Labels) || !reflect.DeepEqual(got.Flagged, want.Flagged) {
			t.Errorf("%s: labels or flags differ", name)
		}
	}
}

// TestCombineSecureSurvivors: FedAvg over the survivors of a group is
// AggregateStream over those sites alone (the weights n_k/N renormalised
// to the survivors).
func TestCombineSecureSurvivors(t *testing.T) {
	sites := benchSites(6, 20)
	starts := make([][]float64, 6)
	for i := range starts {
		starts[i] = sites[5].Params
	}
	groupOf, _, _ := FormGroups(nil, 6, 3)
	got, _ := secureRun(t, RoundInput{Method: learn.FedAvg, Round: 1, Config: DefaultConfig()}, sites, starts, groupOf, map[int]bool{1: true, 4: true})
	survivors := []SiteResult{sites[0], sites[2], sites[3], sites[5]}
	want, err := AggregateRound(RoundInput{Method: learn.FedAvg, Round: 1, Sites: survivors, Config: DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	if d := maxDiff(got.Models[0], want.Models[0]); d > 1e-12 {
		t.Fatalf("survivors' FedAvg differs by %g", d)
	}
}

// TestPlanSecureRefuses: a plan for a method that does not stream, a
// group assignment that does not match the clusters, and a combination
// that names a site of another group are errors.
func TestPlanSecureRefuses(t *testing.T) {
	sites := benchSites(4, 5)
	if _, err := PlanSecure(RoundInput{Method: learn.Krum, Sites: sites, Config: DefaultConfig()}, []string{"global", "global", "global", "global"}); err == nil {
		t.Fatal("krum: planned")
	}
	if _, err := PlanSecure(RoundInput{Method: learn.FedAvg, Sites: sites, Config: DefaultConfig()}, []string{"global", "global", "cluster-0", "global"}); err == nil || !strings.Contains(err.Error(), "sums one group") {
		t.Fatalf("fedavg with a cluster group: %v", err)
	}
	plan, err := PlanSecure(RoundInput{Method: learn.FedAvg, Sites: sites, Config: DefaultConfig()}, []string{"global", "global", "global", "global"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = CombineSecure(RoundInput{Method: learn.FedAvg, Sites: sites, Config: DefaultConfig()}, plan,
		[]SecureSum{{Group: "global", Survivors: []int{0, 7}, Update: make([]float64, 5)}}, func(int) ([]float64, error) { return nil, nil })
	if err == nil || !strings.Contains(err.Error(), "survivor 7 is not one of its sites") {
		t.Fatalf("a survivor out of range: %v", err)
	}
}
