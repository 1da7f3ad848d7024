//go:build genhistory

package workflows

// Generators of the golden histories of colocated campaigns and sweeps
// (a process that serves its sites itself: `starter run --local`,
// `starter experiment`), run like those of replay_gen_test.go:
//
//	go test -tags genhistory -run 'TestGenerateGoldenColocated|TestGenerateGoldenInline' ./workflows/
//
// TestGenerateGoldenColocated* start the campaign and the sweep on the
// server queue, as every starter did before rounds ran inline; the files
// they wrote at commit c7d6f8d (this file, with replayColocatedSpec and
// the file names of replay_test.go, copied into a checkout of it)
// are the "_v0" histories the current code must replay. The
// TestGenerateGoldenInline* start them as the starter now does.

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/pipeline"
)

// goldenColocatedQueue is the colocated queue of these histories.
var goldenColocatedQueue = pipeline.ColocatedTaskQueue("golden")

// startColocatedFederation runs a server worker on the server queue and
// the colocated worker on goldenColocatedQueue, both with the workflows,
// the server activities and extra; the colocated one also has fed's site
// activities under pipeline.ColocatedActivity names, each training
// taking train (so that rounds take time). Every worker stops when the
// test ends.
func startColocatedFederation(t *testing.T, c client.Client, fed *fakeFederation, sites []string, train time.Duration, extra func(worker.Worker)) {
	t.Helper()
	for _, q := range []string{pipeline.ServerTaskQueue, goldenColocatedQueue} {
		w := worker.New(c, q, worker.Options{})
		Register(w)
		w.RegisterActivityWithOptions(fed.ClusterSites, activity.RegisterOptions{Name: pipeline.ActivityClusterSites})
		w.RegisterActivityWithOptions(fed.Aggregate, activity.RegisterOptions{Name: pipeline.ActivityAggregate})
		w.RegisterActivityWithOptions(fed.Reissue, activity.RegisterOptions{Name: pipeline.ActivityReissue})
		w.RegisterActivityWithOptions(fed.CommitRound, activity.RegisterOptions{Name: pipeline.ActivityCommitRound})
		w.RegisterActivityWithOptions(func(context.Context) error { return nil }, activity.RegisterOptions{Name: pipeline.ActivityRoundBoundary})
		if extra != nil {
			extra(w)
		}
		if q == goldenColocatedQueue {
			trainSlowly := func(ctx context.Context, in pipeline.TrainLocalInput) (pipeline.TrainLocalOutput, error) {
				time.Sleep(train)
				return fed.TrainLocal(ctx, in)
			}
			for _, s := range sites {
				w.RegisterActivityWithOptions(fed.ComputeDescriptor, activity.RegisterOptions{Name: pipeline.ColocatedActivity(s, pipeline.ActivityComputeDescriptor)})
				w.RegisterActivityWithOptions(trainSlowly, activity.RegisterOptions{Name: pipeline.ColocatedActivity(s, pipeline.ActivityTrainLocal)})
				w.RegisterActivityWithOptions(fed.Evaluate, activity.RegisterOptions{Name: pipeline.ColocatedActivity(s, pipeline.ActivityEvaluate)})
			}
		}
		require.NoError(t, w.Start())
		t.Cleanup(w.Stop)
	}
}

// goldenColocatedCampaign runs replayColocatedSpec's campaign with
// ColocatedQueue on queue, paused and resumed at once through updates,
// and writes its first run's history to file (and, when roundFile is
// set, the history of its round 1's workflow to roundFile).
func goldenColocatedCampaign(t *testing.T, queue string, train time.Duration, file, roundFile string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := goldenServer(t, ctx)
	spec := replayColocatedSpec()
	fed := newFakeFederation()
	fed.bad["c1"] = true // a dropped site in the history
	startColocatedFederation(t, c, fed, spec.SiteNames(), train, nil)
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: spec.Campaign, TaskQueue: queue},
		pipeline.CampaignWorkflowName, pipeline.CampaignWorkflowInput{Spec: spec, ColocatedQueue: goldenColocatedQueue})
	require.NoError(t, err)
	for _, u := range []string{pipeline.UpdatePause, pipeline.UpdateResume} {
		h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
			WorkflowID: spec.Campaign, RunID: run.GetRunID(), UpdateName: u,
			Args: []any{pipeline.ControlInput{Reason: "golden"}}, WaitForStage: client.WorkflowUpdateStageCompleted,
		})
		require.NoError(t, err)
		var st pipeline.CampaignStatus
		require.NoError(t, h.Get(ctx, &st))
	}
	var out pipeline.CampaignWorkflowOutput
	require.NoError(t, c.GetWorkflow(ctx, spec.Campaign, "").Get(ctx, &out))
	require.Equal(t, pipeline.StateDone, out.State)
	require.Equal(t, spec.Rounds, out.RoundsDone)
	writeGoldenHistory(t, ctx, c, spec.Campaign, run.GetRunID(), file)
	if roundFile != "" {
		writeGoldenHistory(t, ctx, c, pipeline.RoundWorkflowID(spec.Campaign, 1), "", roundFile)
	}
}

// goldenColocatedSweep runs replaySweepSpec's sweep with ColocatedQueue,
// started on the server queue, and writes its history to file.
func goldenColocatedSweep(t *testing.T, file string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := goldenServer(t, ctx)
	spec := replaySweepSpec()
	fed := newFakeFederation()
	startColocatedFederation(t, c, fed, []string{"c0", "c1", "c2"}, 0, func(w worker.Worker) {
		RegisterSweep(w)
		w.RegisterActivityWithOptions(func(context.Context, pipeline.RecordSweepInput) (pipeline.RecordSweepOutput, error) {
			return pipeline.RecordSweepOutput{Spec: fakeRef(spec.Bucket, artifact.SweepSpecKey(spec.Sweep))}, nil
		}, activity.RegisterOptions{Name: pipeline.ActivityRecordSweep})
		w.RegisterActivityWithOptions(func(_ context.Context, in pipeline.BuildSweepResultsInput) (pipeline.BuildSweepResultsOutput, error) {
			return pipeline.BuildSweepResultsOutput{
				Results: fakeRef(spec.Bucket, artifact.SweepResultsKey(spec.Sweep)),
				Curves:  fakeRef(spec.Bucket, artifact.SweepCurvesKey(spec.Sweep)),
				Rows:    len(in.Outcomes), Rounds: len(in.Outcomes),
			}, nil
		}, activity.RegisterOptions{Name: pipeline.ActivityBuildSweepResults})
	})
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: spec.Sweep, TaskQueue: pipeline.ServerTaskQueue},
		pipeline.SweepWorkflowName, pipeline.SweepWorkflowInput{Spec: spec, ColocatedQueue: goldenColocatedQueue})
	require.NoError(t, err)
	var out pipeline.SweepWorkflowOutput
	require.NoError(t, run.Get(ctx, &out))
	require.Equal(t, pipeline.SweepDone, out.State)
	writeGoldenHistory(t, ctx, c, spec.Sweep, run.GetRunID(), file)
}

// TestGenerateGoldenColocatedHistory records a colocated campaign started
// on the server queue (its rounds child workflows on the colocated queue)
// and its round 1.
func TestGenerateGoldenColocatedHistory(t *testing.T) {
	goldenColocatedCampaign(t, pipeline.ServerTaskQueue, 0, "campaign_colocated_history_v0.json", "round_colocated_history_v0.json")
}

// TestGenerateGoldenColocatedSweepHistory records a colocated sweep.
func TestGenerateGoldenColocatedSweepHistory(t *testing.T) {
	goldenColocatedSweep(t, "sweep_colocated_history_v0.json")
}

// TestGenerateGoldenInlineHistory records a colocated campaign started on
// its colocated queue, whose rounds run inline (version "inline-rounds"
// 1), each after a round boundary, continuing as new after two of its
// three rounds.
func TestGenerateGoldenInlineHistory(t *testing.T) {
	goldenColocatedCampaign(t, goldenColocatedQueue, 0, campaignInlineHistoryFile, "")
}

// TestGenerateGoldenInlineSweepHistory records a colocated sweep that
// starts its campaigns on the colocated queue.
func TestGenerateGoldenInlineSweepHistory(t *testing.T) {
	goldenColocatedSweep(t, sweepInlineHistoryFile)
}
