package pipeline

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestPruningAt: which round's site uploads each round deletes. Expected
// values follow from the rule "after round r, round r-K goes; rounds
// r-K+1 … r stay", worked out by hand per case.
func TestPruningAt(t *testing.T) {
	for i, tc := range []struct {
		keep, round int
		want        int // the round pruned; 0: nothing
	}{
		{0, 1, 0},       // 0: keep everything
		{0, 500, 0},     // 1
		{-1, 5, 0},      // 2: Validate rejects it; nothing is pruned regardless
		{1, 1, 0},       // 3: round 1 is the last round, it stays
		{1, 2, 1},       // 4
		{1, 4, 3},       // 5
		{3, 3, 0},       // 6: K equal to the rounds so far: nothing yet
		{3, 4, 1},       // 7
		{3, 15, 12},     // 8: the example of the docs: rounds 13–15 stay
		{10, 4, 0},      // 9: K above the campaign's rounds: nothing, ever
		{9999, 9999, 0}, // 10
	} {
		p := PruningAt(tc.keep, tc.round)
		if tc.want == 0 {
			if p != nil {
				t.Errorf("%d: PruningAt(%d, %d) = %+v, want nil", i, tc.keep, tc.round, p)
			}
			continue
		}
		want := &Pruning{KeepRounds: tc.keep, Round: tc.want, Roles: []string{RoleLocalModel, RoleControl}}
		if !reflect.DeepEqual(p, want) {
			t.Errorf("%d: PruningAt(%d, %d) = %+v, want %+v", i, tc.keep, tc.round, p, want)
		}
	}
}

// TestPruningOverACampaign: over a whole campaign every round but the
// last K is pruned exactly once, for K = 0, 1, 3, R-1, R and above R.
func TestPruningOverACampaign(t *testing.T) {
	const rounds = 6
	for i, keep := range []int{0, 1, 3, rounds - 1, rounds, rounds + 4} {
		pruned := map[int]int{}
		for r := 1; r <= rounds; r++ {
			if p := PruningAt(keep, r); p != nil {
				pruned[p.Round]++
			}
		}
		for r := 1; r <= rounds; r++ {
			want := 0
			if keep > 0 && r <= rounds-keep {
				want = 1
			}
			if pruned[r] != want {
				t.Errorf("%d: K=%d: round %d pruned %d times, want %d", i, keep, r, pruned[r], want)
			}
		}
	}
}

// TestPrunes: a pruning covers its round's local models and control
// updates and nothing else.
func TestPrunes(t *testing.T) {
	p := PruningAt(2, 5) // prunes round 3
	for i, tc := range []struct {
		round int
		role  string
		want  bool
	}{
		{3, RoleLocalModel, true},   // 0
		{3, RoleControl, true},      // 1
		{3, RoleAggregate, false},   // 2: models sent back stay
		{3, RoleServerState, false}, // 3
		{3, RoleSiteState, false},   // 4: a site that misses rounds reads an older one
		{3, RoleDescriptor, false},  // 5: descriptors are carried across rounds
		{3, RoleSiteModel, false},   // 6: an aggregate, as each site holds it
		{4, RoleLocalModel, false},  // 7: another round
	} {
		if got := p.Prunes(tc.round, tc.role); got != tc.want {
			t.Errorf("%d: Prunes(%d, %s) = %v, want %v", i, tc.round, tc.role, got, tc.want)
		}
	}
	var none *Pruning
	if none.Prunes(3, RoleLocalModel) {
		t.Error("a nil pruning prunes something")
	}
}

// TestKeepSiteModelsSpec: a spec without a policy hashes as before the
// field existed (omitempty), a policy changes the hash, and a negative one
// is rejected naming the field.
func TestKeepSiteModelsSpec(t *testing.T) {
	s := validSpec()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "keep_site_models") {
		t.Errorf("a spec without a policy encodes keep_site_models: %s", b)
	}
	k := s
	k.KeepSiteModels = 3
	if k.SpecHash() == s.SpecHash() {
		t.Error("the policy does not change the spec hash")
	}
	if err := k.Validate(); err != nil {
		t.Errorf("keep 3: %v", err)
	}
	k.KeepSiteModels = -1
	if err := k.Validate(); err == nil || !strings.Contains(err.Error(), "keep_site_models = -1") {
		t.Errorf("keep -1: %v", err)
	}
}
