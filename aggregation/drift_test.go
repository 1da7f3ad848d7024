package aggregation

import (
	"math"
	"slices"
	"testing"
)

// driftSites are four sites in two groups, {0, 1} near (1, 0, 0) and
// {2, 3} near (0, 1, 0); shifted is the same federation after site 0's
// data moved next to the second group.
func driftSites(shifted bool) []SiteResult {
	d0 := []float64{1, 0, 0}
	if shifted {
		d0 = []float64{0, 1, 0.05}
	}
	return []SiteResult{{Descriptor: d0}, {Descriptor: []float64{1, 0.1, 0}}, {Descriptor: []float64{0, 1, 0}}, {Descriptor: []float64{0.1, 1, 0}}}
}

// shiftDistance is ‖φ̂_0' − φ̂_0‖ between site 0's normalised descriptors
// before and after the shift, by hand: each vector divided by its norm
// plus NormalizeDescriptors' 1e-8 guard.
func shiftDistance() float64 {
	n0 := 1 + 1e-8
	n1 := math.Sqrt(1+0.05*0.05) + 1e-8
	return math.Sqrt(math.Pow(1/n0, 2) + math.Pow(1/n1, 2) + math.Pow(0.05/n1, 2))
}

const driftTol = 1e-12

// TestDriftDividesByMeasurements: Eq. (9)'s R is the number of times the
// site's descriptor was measured, not the round number. With descriptors
// measured in rounds 1 and 3 only (drift_check_every = 2), site 0's drift
// after its shift is d/2 (distances 0 and d over two measurements), not
// d/3; a round that measures nothing leaves it unchanged.
func TestDriftDividesByMeasurements(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DriftThreshold = 0 // measure only
	d := shiftDistance()
	none := []bool{false, false, false, false}
	var st ServerState
	for i, step := range []struct {
		round    int
		shifted  bool
		measured []bool
		want0    float64 // site 0's drift after the step
	}{
		{1, false, nil, 0},  // 0: the reference
		{2, false, none, 0}, // 1: no measurement
		{3, true, nil, d / 2},
		{4, true, none, d / 2}, // 3: unchanged without a measurement
		{5, true, nil, 2 * d / 3},
	} {
		top, err := TopologyStep(TopologyInput{Round: step.round, Sites: driftSites(step.shifted), State: st, Config: cfg, Measured: step.measured})
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if math.Abs(top.Drift[0]-step.want0) > driftTol {
			t.Errorf("step %d (round %d): drift %v, want %v", i, step.round, top.Drift[0], step.want0)
		}
		for k := 1; k < 4; k++ {
			if top.Drift[k] != 0 {
				t.Errorf("step %d: unchanged site %d drifted %v", i, k, top.Drift[k])
			}
		}
		st = top.State
	}
}

// TestDriftReclustersOnce: a site whose drift passes the threshold is
// re-clustered in that round and its current descriptor becomes its
// reference, so in the following rounds, its data unchanged, its drift is
// 0 and it is not re-clustered again.
func TestDriftReclustersOnce(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DriftThreshold = 0.1
	d := shiftDistance()
	var st ServerState
	for i, step := range []struct {
		round     int
		shifted   bool
		want0     float64 // site 0's drift reported for the round
		recluster bool    // site 0 re-clustered in the round
	}{
		{1, false, 0, false},   // 0
		{2, true, d / 2, true}, // 1: 0.707 > 0.1
		{3, true, 0, false},    // 2: measured against the new reference
		{4, true, 0, false},
	} {
		top, err := TopologyStep(TopologyInput{Round: step.round, Sites: driftSites(step.shifted), State: st, Config: cfg})
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if math.Abs(top.Drift[0]-step.want0) > driftTol {
			t.Errorf("step %d (round %d): drift %v, want %v", i, step.round, top.Drift[0], step.want0)
		}
		if got := slices.Contains(top.Reclustered, 0); got != step.recluster || len(top.Reclustered) > 1 {
			t.Errorf("step %d (round %d): re-clustered %v, want site 0 %v only", i, step.round, top.Reclustered, step.recluster)
		}
		if step.round == 1 && (top.Labels[0] != top.Labels[1] || top.Labels[2] != top.Labels[3] || top.Labels[0] == top.Labels[2]) {
			t.Fatalf("round 1 clusters %v, want {0,1} and {2,3}", top.Labels)
		}
		if step.shifted && top.Labels[0] != top.Labels[2] {
			t.Errorf("step %d: site 0 in cluster %d, want its new neighbours' %d", i, top.Labels[0], top.Labels[2])
		}
		st = top.State
	}
}

// TestDriftOldState: a state saved before DriftCount existed divides by the
// rounds before this one, as the old code did, so a campaign crossing the
// upgrade keeps its drift values continuous.
func TestDriftOldState(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DriftThreshold = 0
	top, err := TopologyStep(TopologyInput{Round: 1, Sites: driftSites(false), State: ServerState{}, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	old := top.State
	old.DriftCount = nil
	old.DriftSum = []float64{0.3, 0, 0, 0} // as if measured in rounds 1-3
	top, err = TopologyStep(TopologyInput{Round: 4, Sites: driftSites(false), State: old, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	// Three earlier measurements and this one: (0.3 + 0) / 4.
	if want := 0.3 / 4; math.Abs(top.Drift[0]-want) > driftTol || top.State.DriftCount[0] != 4 {
		t.Errorf("drift %v (count %d), want %v (count 4)", top.Drift[0], top.State.DriftCount[0], want)
	}
}

// TestRefitClusters: with RefitClusters (descriptor_model "global") the
// clusters are fitted afresh from every round's descriptors, whatever the
// state holds: after site 0's descriptor moves next to sites 2 and 3 it is
// clustered with them at once, with drift 0 and no re-clustering by drift;
// without it (and no drift threshold) site 0 keeps its round-1 cluster.
func TestRefitClusters(t *testing.T) {
	for i, tc := range []struct {
		refit     bool
		withTwo   bool    // site 0 in sites 2 and 3's cluster in round 2
		wantDrift float64 // site 0's drift in round 2
	}{
		{true, true, 0},                     // 0
		{false, false, shiftDistance() / 2}, // 1: Eq. (9) over two measurements
	} {
		cfg := DefaultConfig()
		cfg.DriftThreshold = 0
		cfg.RefitClusters = tc.refit
		first, err := TopologyStep(TopologyInput{Round: 1, Sites: driftSites(false), Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		if l := first.Labels; l[0] != l[1] || l[2] != l[3] || l[0] == l[2] {
			t.Fatalf("case %d: round 1 clusters %v, want {0,1} and {2,3}", i, l)
		}
		top, err := TopologyStep(TopologyInput{Round: 2, Sites: driftSites(true), State: first.State, Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		if got := top.Labels[0] == top.Labels[2]; got != tc.withTwo {
			t.Errorf("case %d: round 2 clusters %v: site 0 with sites 2, 3: %v, want %v", i, top.Labels, got, tc.withTwo)
		}
		if math.Abs(top.Drift[0]-tc.wantDrift) > driftTol || len(top.Reclustered) != 0 {
			t.Errorf("case %d: drift %v re-clustered %v, want drift %v and none", i, top.Drift[0], top.Reclustered, tc.wantDrift)
		}
	}
}
