package workflows

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/ptopofl/ptopofl/pipeline"
)

// inlineQueue is the colocated queue of the tests below.
var inlineQueue = pipeline.ColocatedTaskQueue("hc-test")

// colocatedEnv is a test environment whose campaign serves its sites in
// its own process: the server activities under their names, the site
// activities under pipeline.ColocatedActivity names only (so that a
// dispatched call fails the test), the campaign started on queue.
func colocatedEnv(fed *fakeFederation, queue string) *testsuite.TestWorkflowEnvironment {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(CampaignWorkflow)
	env.RegisterWorkflow(RoundWorkflow)
	for name, fn := range map[string]any{
		pipeline.ActivityClusterSites:  fed.ClusterSites,
		pipeline.ActivityAggregate:     fed.Aggregate,
		pipeline.ActivityCommitRound:   fed.CommitRound,
		pipeline.ActivityPruneRound:    fed.PruneRound,
		pipeline.ActivityRoundBoundary: func(context.Context) error { return nil },
	} {
		env.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
	for name, fn := range map[string]any{
		pipeline.ActivityComputeDescriptor: fed.ComputeDescriptor,
		pipeline.ActivityTrainLocal:        fed.TrainLocal,
		pipeline.ActivityEvaluate:          fed.Evaluate,
	} {
		for _, s := range []string{"c0", "c1", "c2"} {
			env.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: pipeline.ColocatedActivity(s, name)})
		}
	}
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{TaskQueue: queue})
	return env
}

// TestInlineRoundsMatchChildRounds: a colocated campaign started on its
// colocated queue runs its rounds as stages of its own workflow, starting
// no child workflow, and commits exactly the manifests of the same
// campaign started on the server queue, whose rounds are child
// RoundWorkflows (as every colocated campaign begun before ran), a failing
// site dropped with the same reason; the curves are the same bits.
func TestInlineRoundsMatchChildRounds(t *testing.T) {
	run := func(queue string) ([]pipeline.RoundManifest, pipeline.CampaignWorkflowOutput, int) {
		fed := newFakeFederation()
		fed.badFrom["c1"] = 2 // c1's training fails from round 2 on
		env := colocatedEnv(fed, queue)
		children := 0
		env.SetOnChildWorkflowStartedListener(func(*workflow.Info, workflow.Context, converter.EncodedValues) { children++ })
		env.ExecuteWorkflow(CampaignWorkflow, pipeline.CampaignWorkflowInput{Spec: testSpec(3), ColocatedQueue: inlineQueue})
		if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
			t.Fatalf("queue %s: campaign did not complete: %v", queue, env.GetWorkflowError())
		}
		var out pipeline.CampaignWorkflowOutput
		if err := env.GetWorkflowResult(&out); err != nil {
			t.Fatal(err)
		}
		return fed.committed(), out, children
	}
	want, wantOut, wantChildren := run(pipeline.ServerTaskQueue)
	got, gotOut, gotChildren := run(inlineQueue)
	if wantChildren != 3 || gotChildren != 0 {
		t.Errorf("child rounds started: %d on the server queue (want 3), %d on the colocated queue (want 0)", wantChildren, gotChildren)
	}
	if len(want) != 3 {
		t.Fatalf("campaign with child rounds committed %d rounds, want 3", len(want))
	}
	wb, _ := json.Marshal(want)
	gb, _ := json.Marshal(got)
	if string(wb) != string(gb) {
		t.Errorf("inline manifests differ from child rounds':\n got %s\nwant %s", gb, wb)
	}
	if len(got[1].Dropped) != 1 || got[1].Dropped[0].Site != "c1" || got[1].Dropped[0].Reason != pipeline.DropBadSiteData {
		t.Errorf("round 2 drops %+v, want c1 dropped for bad site data", got[1].Dropped)
	}
	ob, _ := json.Marshal(wantOut)
	gob, _ := json.Marshal(gotOut)
	if string(ob) != string(gob) {
		t.Errorf("inline output differs from child rounds':\n got %s\nwant %s", gob, ob)
	}
}

// TestInlineRoundProgress: ten minutes into an inline round whose site c2
// does not answer its training, the campaign answers both the status
// query (its Round) and the round_progress query `starter status` asks a
// child round: phase train, c0 and c1 answered, c2 awaited until the
// deadline 30 minutes after the fan-out began. Between rounds the status
// has no Round and the progress query says no round runs.
func TestInlineRoundProgress(t *testing.T) {
	fed := newFakeFederation()
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(CampaignWorkflow)
	spec := testSpec(2)
	for name, fn := range map[string]any{
		pipeline.ActivityClusterSites:  fed.ClusterSites,
		pipeline.ActivityAggregate:     fed.Aggregate,
		pipeline.ActivityCommitRound:   fed.CommitRound,
		pipeline.ActivityRoundBoundary: func(context.Context) error { return nil },
	} {
		env.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
	for name, fn := range map[string]any{
		pipeline.ActivityComputeDescriptor: fed.ComputeDescriptor,
		pipeline.ActivityTrainLocal:        fed.TrainLocal,
		pipeline.ActivityEvaluate:          fed.Evaluate,
	} {
		for _, s := range []string{"c0", "c1", "c2"} {
			env.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: pipeline.ColocatedActivity(s, name)})
		}
	}
	// c2's training in round 1 runs into the round deadline.
	env.OnActivity(pipeline.ColocatedActivity("c2", pipeline.ActivityTrainLocal), mock.Anything,
		mock.MatchedBy(func(in pipeline.TrainLocalInput) bool { return in.Round == 1 })).
		Return(pipeline.TrainLocalOutput{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE, nil)).
		After(spec.RoundDeadline)
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{TaskQueue: inlineQueue})
	query := func(name string, v any) error {
		val, err := env.QueryWorkflow(name)
		if err != nil {
			return err
		}
		return val.Get(v)
	}
	start := env.Now()
	var stuck pipeline.RoundProgress
	var status pipeline.CampaignStatus
	var stuckErr, statusErr error
	env.RegisterDelayedCallback(func() {
		stuckErr = query(pipeline.QueryRoundProgress, &stuck)
		statusErr = query(pipeline.QueryStatus, &status)
	}, 10*time.Minute)
	env.ExecuteWorkflow(CampaignWorkflow, pipeline.CampaignWorkflowInput{Spec: spec, ColocatedQueue: inlineQueue})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("campaign did not complete: %v", env.GetWorkflowError())
	}
	if stuckErr != nil || statusErr != nil {
		t.Fatalf("queries mid-round: %v, %v", stuckErr, statusErr)
	}
	want := pipeline.RoundProgress{Round: 1, Phase: pipeline.PhaseTrain, Answered: []string{"c0", "c1"}, Awaited: []string{"c2"},
		Deadline: start.Add(spec.RoundDeadline)}
	wb, _ := json.Marshal(want)
	for i, got := range []*pipeline.RoundProgress{&stuck, status.Round} {
		if got == nil {
			t.Errorf("%d: no round progress in the status mid-round: %+v", i, status)
			continue
		}
		got.Deadline = got.Deadline.UTC()
		if gb, _ := json.Marshal(got); string(gb) != string(wb) {
			t.Errorf("%d: progress mid-round %s, want %s", i, gb, wb)
		}
	}
	if status.CurrentRound != 1 || status.RoundsDone != 0 {
		t.Errorf("status mid-round: current round %d, rounds done %d", status.CurrentRound, status.RoundsDone)
	}
	var after pipeline.CampaignStatus
	if err := query(pipeline.QueryStatus, &after); err != nil || after.Round != nil || after.RoundsDone != 2 {
		t.Errorf("status after the campaign: %+v, %v; want two rounds done and no round progress", after, err)
	}
	var none pipeline.RoundProgress
	if err := query(pipeline.QueryRoundProgress, &none); err == nil || !strings.Contains(err.Error(), "runs no round now") {
		t.Errorf("progress query between rounds: %v, want an error saying no round runs", err)
	}
}

// TestInlineRoundBoundaries: before each inline round the campaign ends
// its workflow task with pipeline.ActivityRoundBoundary on its colocated
// queue (one per round, whatever the rounds take), so that the history
// records every round before the next begins; a campaign with child
// rounds runs none. The manifests are the same either way.
func TestInlineRoundBoundaries(t *testing.T) {
	for i, tc := range []struct {
		queue string
		train time.Duration
		want  int
	}{
		{inlineQueue, 0, 4},                        // 0: instantaneous rounds
		{inlineQueue, time.Minute, 4},              // 1: a minute each
		{pipeline.ServerTaskQueue, time.Minute, 0}, // 2: child rounds
	} {
		fed := newFakeFederation()
		env := colocatedEnv(fed, tc.queue)
		if tc.train > 0 {
			for _, s := range []string{"c0", "c1", "c2"} {
				env.OnActivity(pipeline.ColocatedActivity(s, pipeline.ActivityTrainLocal), mock.Anything, mock.Anything).
					Return(fed.TrainLocal).After(tc.train)
			}
		}
		boundaries := 0
		var queues []string
		env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
			if info.ActivityType.Name == pipeline.ActivityRoundBoundary {
				boundaries++
				queues = append(queues, info.TaskQueue)
			}
		})
		env.ExecuteWorkflow(CampaignWorkflow, pipeline.CampaignWorkflowInput{Spec: testSpec(4), ColocatedQueue: inlineQueue})
		if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
			t.Fatalf("%d: campaign did not complete: %v", i, env.GetWorkflowError())
		}
		if boundaries != tc.want {
			t.Errorf("%d: %d round boundaries, want %d", i, boundaries, tc.want)
		}
		for _, q := range queues {
			if q != inlineQueue {
				t.Errorf("%d: a round boundary ran on %s, want %s", i, q, inlineQueue)
			}
		}
		if n := len(fed.committed()); n != 4 {
			t.Errorf("%d: %d rounds committed, want 4", i, n)
		}
	}
}

// TestInlineFailureNamesTheRound: a round that fails as a stage of the
// campaign workflow is described as a failed child round is: its number,
// the step and the root message once.
func TestInlineFailureNamesTheRound(t *testing.T) {
	fed := newFakeFederation()
	fed.aggregateErr = map[int]error{2: temporal.NewNonRetryableApplicationError(krumMessage, "AggregationFailed", nil)}
	env := colocatedEnv(fed, inlineQueue)
	spec := testSpec(3)
	env.ExecuteWorkflow(CampaignWorkflow, pipeline.CampaignWorkflowInput{Spec: spec, ColocatedQueue: inlineQueue})
	err := env.GetWorkflowError()
	if err == nil {
		t.Fatal("the campaign did not fail")
	}
	want := pipeline.Failure{Campaign: spec.Campaign, Round: 2, Step: "aggregate", Type: "AggregationFailed", Message: krumMessage}
	if got := pipeline.DescribeFailure(spec.Campaign, err); got != want {
		t.Errorf("got  %+v\nwant %+v\nfrom %v", got, want, err)
	}
	var st pipeline.CampaignStatus
	val, qerr := env.QueryWorkflow(pipeline.QueryStatus)
	if qerr == nil {
		qerr = val.Get(&st)
	}
	if qerr != nil || st.State != pipeline.StateFailed || st.FailureReason != "round 2 (aggregate): "+krumMessage {
		t.Errorf("status after the failure: %+v, %v", st, qerr)
	}
}

// TestSweepStartsCampaignsWhereTheyRunInline: a sweep whose sites its
// process serves (ColocatedQueue) starts its campaigns on that queue,
// where they run their rounds inline; one whose sites run workers of
// their own starts them on the server queue, as before.
func TestSweepStartsCampaignsWhereTheyRunInline(t *testing.T) {
	for i, tc := range []struct {
		colocated, want string
	}{
		{"", pipeline.ServerTaskQueue}, // 0: sites with workers of their own
		{inlineQueue, inlineQueue},     // 1: sites served by the sweep's process
	} {
		var ts testsuite.WorkflowTestSuite
		env := ts.NewTestWorkflowEnvironment()
		RegisterSweep(env)
		Register(env)
		env.RegisterActivityWithOptions(func(context.Context, pipeline.RecordSweepInput) (pipeline.RecordSweepOutput, error) {
			return pipeline.RecordSweepOutput{}, nil
		}, activity.RegisterOptions{Name: pipeline.ActivityRecordSweep})
		env.RegisterActivityWithOptions(func(context.Context, pipeline.BuildSweepResultsInput) (pipeline.BuildSweepResultsOutput, error) {
			return pipeline.BuildSweepResultsOutput{}, nil
		}, activity.RegisterOptions{Name: pipeline.ActivityBuildSweepResults})
		env.OnWorkflow(pipeline.CampaignWorkflowName, mock.Anything, mock.Anything).Return(
			func(ctx workflow.Context, in pipeline.CampaignWorkflowInput) (pipeline.CampaignWorkflowOutput, error) {
				return pipeline.CampaignWorkflowOutput{Campaign: in.Spec.Campaign, State: pipeline.StateDone, RoundsDone: in.Spec.Rounds}, nil
			})
		var queues []string
		env.SetOnChildWorkflowStartedListener(func(info *workflow.Info, _ workflow.Context, _ converter.EncodedValues) {
			queues = append(queues, info.TaskQueueName)
		})
		env.ExecuteWorkflow(SweepWorkflow, pipeline.SweepWorkflowInput{Spec: sweepSpec(2), ColocatedQueue: tc.colocated})
		if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
			t.Fatalf("%d: sweep did not complete: %v", i, env.GetWorkflowError())
		}
		if len(queues) != 6 {
			t.Errorf("%d: %d campaigns started, want 6", i, len(queues))
		}
		for _, q := range queues {
			if q != tc.want {
				t.Errorf("%d: a campaign started on %s, want %s", i, q, tc.want)
				break
			}
		}
	}
}
