package workflows

import (
	"context"
	"strings"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
)

// countingCharge is a ChargePrivacy that counts rounds instead of composing
// ε (the accounting is package activities' and method's, tested there):
// each charge adds one release to every site's ledger, a site's "ε" is its
// count of charged rounds, and a count beyond dp_epsilon is refused. It
// records every round it was asked to charge.
type countingCharge struct{ rounds []int }

func (c *countingCharge) charge(_ context.Context, in pipeline.ChargePrivacyInput) (pipeline.ChargePrivacyOutput, error) {
	c.rounds = append(c.rounds, in.Round)
	before := map[string]int{}
	if in.Ledger != nil {
		for _, s := range in.Ledger.Sites {
			before[s.Site] = s.Train[0].Count
		}
	}
	out := pipeline.ChargePrivacyOutput{Ledger: &pipeline.PrivacyLedger{}, Round: &pipeline.RoundPrivacy{Delta: 1e-5, Budget: in.Hyperparameters.DPEpsilon}}
	for _, s := range in.Records {
		n := before[s.Name] + 1
		if float64(n) > in.Hyperparameters.DPEpsilon {
			return pipeline.ChargePrivacyOutput{Exceeded: "round " + string(rune('0'+in.Round)) + " is beyond the budget"}, nil
		}
		out.Ledger.Sites = append(out.Ledger.Sites, pipeline.SiteLedger{Site: s.Name, Train: []pipeline.PrivacyEvent{{Z: 1, Q: 1, Count: n}}})
		out.Round.Sites = append(out.Round.Sites, pipeline.SitePrivacy{Site: s.Name, Epsilon: float64(n), EpsilonRound: 1})
	}
	return out, nil
}

// privateSpec is testSpec under dp record with a "budget" of rounds.
func privateSpec(rounds int, budget float64) pipeline.CampaignSpec {
	spec := testSpec(rounds)
	spec.Method = learn.FedAvg
	spec.Sites = []pipeline.Site{{Name: "c0", NTrain: 100, NTest: 30}, {Name: "c1", NTrain: 100, NTest: 30}, {Name: "c2", NTrain: 100, NTest: 30}}
	h := method.Defaults(method.Default)
	h.DP, h.DPEpsilon, h.DPNoise, h.DPMetricsNoise = method.DPRecord, budget, 10, 10
	spec.Hyperparameters = h
	return spec
}

// TestPrivacyLedgerAcrossAttempts: every round is charged before it is
// dispatched, so a round that fails below quorum stays charged: the resume
// point carries the ledger with it, attempt 2 charges the failed round
// again (its releases are new ones) and then the next, and each manifest
// records the ε of the charge before it; when the next charge would go
// beyond the budget, the campaign stops before the round with the reason.
func TestPrivacyLedgerAcrossAttempts(t *testing.T) {
	spec := privateSpec(3, 10)
	c := &countingCharge{}
	withCharge := func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterActivityWithOptions(c.charge, activity.RegisterOptions{Name: pipeline.ActivityChargePrivacy})
	}
	broken := newFakeFederation()
	broken.badFrom["c1"], broken.badFrom["c2"] = 2, 2
	env, _, err := runFakeWith(t, broken, pipeline.CampaignWorkflowInput{Spec: spec}, withCharge)
	if err == nil {
		t.Fatal("attempt 1 did not fail")
	}
	v, err := env.QueryWorkflow(pipeline.QueryResume)
	if err != nil {
		t.Fatal(err)
	}
	var rp pipeline.ResumePoint
	if err := v.Get(&rp); err != nil {
		t.Fatal(err)
	}
	if rp.State.NextRound != 2 || rp.State.Privacy == nil || rp.State.Privacy.Sites[0].Train[0].Count != 2 {
		t.Fatalf("resume point: next round %d, ledger %+v; want round 2 next with rounds 1 and 2 charged", rp.State.NextRound, rp.State.Privacy)
	}
	first := broken.committed()
	if first[1].Outcome != pipeline.OutcomeFailed || first[1].Privacy == nil || first[1].Privacy.Sites[0].Epsilon != 2 {
		t.Errorf("the failed round's manifest records %+v, want the round's charge (2)", first[1].Privacy)
	}

	st := rp.State
	failed := fakeRef("fedavg", artifact.ManifestKey(spec.Campaign, 2))
	fixed := newFakeFederation()
	_, out, err := runFakeWith(t, fixed, pipeline.CampaignWorkflowInput{Spec: spec, State: &st, Attempt: 2, Supersedes: &failed}, withCharge)
	if err != nil {
		t.Fatal(err)
	}
	second := fixed.committed()
	if out.State != pipeline.StateDone || len(second) != 2 {
		t.Fatalf("attempt 2: %s with %d manifests", out.State, len(second))
	}
	for i, want := range []float64{3, 4} {
		if p := second[i].Privacy; p == nil || p.Sites[0].Epsilon != want {
			t.Errorf("attempt 2, round %d: privacy %+v, want %v charged rounds", second[i].Round, p, want)
		}
	}
	if out.Privacy == nil || out.Privacy.Epsilon() != 4 {
		t.Errorf("campaign output privacy %+v, want 4", out.Privacy)
	}
	if got := c.rounds; len(got) != 4 || got[0] != 1 || got[1] != 2 || got[2] != 2 || got[3] != 3 {
		t.Errorf("charged rounds %v, want [1 2 2 3]: the failed round is paid for again", got)
	}

	// A budget of 3 charged rounds: attempt 2 stops before round 3.
	tight := privateSpec(3, 3)
	st = rp.State
	stopped := newFakeFederation()
	_, out, err = runFakeWith(t, stopped, pipeline.CampaignWorkflowInput{Spec: tight, State: &st, Attempt: 2, Supersedes: &failed}, withCharge)
	if err != nil {
		t.Fatal(err)
	}
	if out.State != pipeline.StateStopped || out.RoundsDone != 2 || !strings.Contains(out.StopReason, "beyond the budget") || len(stopped.committed()) != 1 {
		t.Errorf("over budget: %s after %d rounds (%q), %d manifests; want stopped after round 2, no round 3", out.State, out.RoundsDone, out.StopReason, len(stopped.committed()))
	}
}
