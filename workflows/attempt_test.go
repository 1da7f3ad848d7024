package workflows

import (
	"strings"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/pipeline"
)

// runFake runs CampaignWorkflow with in over fed in a fresh test
// environment and returns the environment (closed) and the run's error.
func runFake(t *testing.T, fed *fakeFederation, in pipeline.CampaignWorkflowInput) (*testsuite.TestWorkflowEnvironment, pipeline.CampaignWorkflowOutput, error) {
	t.Helper()
	return runFakeWith(t, fed, in, nil)
}

// runFakeWith is runFake with setup, when not nil, applied to the
// environment before the run (to mock a workflow.GetVersion, say).
func runFakeWith(t *testing.T, fed *fakeFederation, in pipeline.CampaignWorkflowInput, setup func(*testsuite.TestWorkflowEnvironment)) (*testsuite.TestWorkflowEnvironment, pipeline.CampaignWorkflowOutput, error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	if setup != nil {
		setup(env)
	}
	env.RegisterWorkflow(CampaignWorkflow)
	env.RegisterWorkflow(RoundWorkflow)
	for name, fn := range map[string]any{
		pipeline.ActivityComputeDescriptor: fed.ComputeDescriptor, pipeline.ActivityTrainLocal: fed.TrainLocal,
		pipeline.ActivityEvaluate: fed.Evaluate, pipeline.ActivityClusterSites: fed.ClusterSites,
		pipeline.ActivityAggregate: fed.Aggregate, pipeline.ActivityCommitRound: fed.CommitRound,
	} {
		env.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
	env.ExecuteWorkflow(CampaignWorkflow, in)
	if !env.IsWorkflowCompleted() {
		t.Fatal("the campaign did not finish")
	}
	var out pipeline.CampaignWorkflowOutput
	err := env.GetWorkflowError()
	if err == nil {
		err = env.GetWorkflowResult(&out)
	}
	return env, out, err
}

// TestAttemptResumesAfterTheLastCommittedRound: a 3-round campaign fails
// below quorum in round 2 (two of three sites' training fails from round
// 2 on, min_sites 2); its resume query reports attempt 1 and round 2 as
// the next; attempt 2, started from that state with the failed manifest as
// Supersedes, runs rounds 2 and 3 only, under attempt-2 keys, chained to
// round 1's manifest, and the campaign ends done with all three rounds'
// curves.
func TestAttemptResumesAfterTheLastCommittedRound(t *testing.T) {
	spec := testSpec(3)
	broken := newFakeFederation()
	broken.badFrom["c1"], broken.badFrom["c2"] = 2, 2
	env, _, err := runFake(t, broken, pipeline.CampaignWorkflowInput{Spec: spec})
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
	first := broken.committed()
	if len(first) != 2 || first[1].Outcome != pipeline.OutcomeFailed {
		t.Fatalf("attempt 1 committed %d manifests; want round 1 and the failed round 2", len(first))
	}
	if rp.Attempt != 1 || rp.State.NextRound != 2 || len(rp.State.AUCCurve) != 1 || rp.State.Carry.PrevManifestSHA256 == "" {
		t.Fatalf("resume point %+v; want attempt 1, next round 2, one round of curves, round 1's manifest hash", rp)
	}
	// The status reports the failed manifest; the resume point keeps the
	// last committed one.
	if rp.State.LastManifest == nil || rp.State.LastManifest.Key != artifact.ManifestKey(spec.Campaign, 1) {
		t.Errorf("resume point's last manifest %+v; want round 1's", rp.State.LastManifest)
	}

	failed := fakeRef("ptopofl", artifact.ManifestKey(spec.Campaign, 2))
	fixed := newFakeFederation()
	st := rp.State
	_, out, err := runFake(t, fixed, pipeline.CampaignWorkflowInput{Spec: spec, State: &st, Attempt: 2, Supersedes: &failed})
	if err != nil {
		t.Fatal(err)
	}
	if out.State != pipeline.StateDone || out.RoundsDone != 3 || len(out.AUCCurve) != 3 {
		t.Errorf("attempt 2: state %s, %d rounds, %d AUC points; want done, 3, 3", out.State, out.RoundsDone, len(out.AUCCurve))
	}
	second := fixed.committed()
	if len(second) != 2 || second[0].Round != 2 || second[1].Round != 3 {
		t.Fatalf("attempt 2 committed %d manifests; want rounds 2 and 3", len(second))
	}
	for i, m := range second {
		if m.Attempt != 2 || m.Outcome != pipeline.OutcomeCommitted {
			t.Errorf("%d: round %d: attempt %d outcome %s; want attempt 2 committed", i, m.Round, m.Attempt, m.Outcome)
		}
		for _, o := range m.Outputs {
			if o.Role == pipeline.RoleLocalModel && !strings.Contains(o.Ref.Key, "/attempt-2/") {
				t.Errorf("%d: round %d's local model %s is not under the attempt's keys", i, m.Round, o.Ref.Key)
			}
		}
	}
	if second[0].Supersedes == nil || *second[0].Supersedes != failed || second[1].Supersedes != nil {
		t.Errorf("supersedes: round 2 %+v, round 3 %+v; want the failed manifest, then none", second[0].Supersedes, second[1].Supersedes)
	}
	if second[0].PrevManifestSHA256 != rp.State.Carry.PrevManifestSHA256 {
		t.Errorf("attempt 2's round 2 chains to %s, want round 1's %s", second[0].PrevManifestSHA256, rp.State.Carry.PrevManifestSHA256)
	}
}

// TestSpecChecksByVersion: a new campaign gets every spec check, a
// repeated descriptor row or a site named like an aggregate among them; a
// history begun at version 1 of the checks (before those two) replays
// under its rules and runs such a spec as it ran then.
func TestSpecChecksByVersion(t *testing.T) {
	for i, edit := range []func(*pipeline.CampaignSpec){
		func(s *pipeline.CampaignSpec) { s.DescriptorRows = map[string][]int{"c1": {4, 4}} }, // 0
		func(s *pipeline.CampaignSpec) { s.Sites[2].Name = "global" },                        // 1
	} {
		spec := testSpec(1)
		spec.Sites = append([]pipeline.Site(nil), spec.Sites...)
		edit(&spec)
		_, _, err := runFake(t, newFakeFederation(), pipeline.CampaignWorkflowInput{Spec: spec})
		if err == nil || !strings.Contains(err.Error(), "invalid campaign spec") {
			t.Errorf("%d: a new run: %v, want the spec refused", i, err)
		}
		atVersion1 := func(env *testsuite.TestWorkflowEnvironment) {
			env.OnGetVersion(versionSpecSizeChecks, workflow.DefaultVersion, 2).Return(workflow.Version(1))
		}
		_, out, err := runFakeWith(t, newFakeFederation(), pipeline.CampaignWorkflowInput{Spec: spec}, atVersion1)
		if err != nil || out.RoundsDone != 1 {
			t.Errorf("%d: at version 1: %d rounds, error %v; want the round run", i, out.RoundsDone, err)
		}
	}
}

// TestResumeQueryOfARunThatFailedItsSpecChecks: a run that fails before
// its first round still tells where the next attempt starts (round 1, or
// the round its continued state had reached), so a restart never meets a
// run that cannot answer.
func TestResumeQueryOfARunThatFailedItsSpecChecks(t *testing.T) {
	spec := testSpec(10000) // above artifact.MaxRound: refused by Validate
	state := pipeline.CampaignState{NextRound: 4, AUCCurve: []float64{0.7, 0.8, 0.9}}
	for i, tc := range []struct {
		in      pipeline.CampaignWorkflowInput
		attempt int
		next    int
	}{
		{pipeline.CampaignWorkflowInput{Spec: spec}, 1, 1},                            // 0
		{pipeline.CampaignWorkflowInput{Spec: spec, State: &state, Attempt: 3}, 3, 4}, // 1
	} {
		env, _, err := runFake(t, newFakeFederation(), tc.in)
		if err == nil || !strings.Contains(err.Error(), "invalid campaign spec") {
			t.Fatalf("%d: want the spec refused, got %v", i, err)
		}
		v, err := env.QueryWorkflow(pipeline.QueryResume)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		var rp pipeline.ResumePoint
		if err := v.Get(&rp); err != nil || rp.Attempt != tc.attempt || rp.State.NextRound != tc.next {
			t.Errorf("%d: resume point %+v (%v); want attempt %d, next round %d", i, rp, err, tc.attempt, tc.next)
		}
	}
}
