//go:build genhistory

package workflows

// Regenerates the golden histories in testdata/ from a real run on the
// embedded Temporal server of internal/devstack, with the fake federation as
// activities on the real task queues (one worker per site queue):
//
//	go test -tags genhistory -run TestGenerateGoldenHistory ./workflows/
//
// Run it only when a deliberate, versioned change to the workflows makes the
// old histories obsolete; otherwise TestReplayGoldenHistories must keep
// passing against the histories already committed. The tag keeps the
// Temporal server (a 200 MB link) out of the ordinary test binary.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/ptopofl/ptopofl/activities"
	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/internal/devstack"
	"github.com/ptopofl/ptopofl/pipeline"
)

func TestGenerateGoldenHistory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := goldenServer(t, ctx)

	spec := replaySpec()
	fed := newFakeFederation()
	fed.bad["c1"] = true // a dropped site in the history

	startFakeFederation(t, c, fed, spec.SiteNames(), nil)

	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: spec.Campaign, TaskQueue: pipeline.ServerTaskQueue,
	}, pipeline.CampaignWorkflowName, pipeline.CampaignWorkflowInput{Spec: spec})
	require.NoError(t, err)

	// Pause at once, check the status, then resume: the history then holds
	// accepted updates and a paused wait.
	update := func(name string) (pipeline.CampaignStatus, error) {
		h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
			WorkflowID: spec.Campaign, RunID: run.GetRunID(), UpdateName: name,
			Args: []any{pipeline.ControlInput{Reason: "golden"}}, WaitForStage: client.WorkflowUpdateStageCompleted,
		})
		if err != nil {
			return pipeline.CampaignStatus{}, err
		}
		var st pipeline.CampaignStatus
		// A rejected update returns its error here, not from UpdateWorkflow.
		return st, h.Get(ctx, &st)
	}
	st, err := update(pipeline.UpdatePause)
	require.NoError(t, err)
	require.Equal(t, pipeline.StatePaused, st.State)
	_, err = update(pipeline.UpdatePause)
	require.ErrorContains(t, err, "already paused")
	require.Eventually(t, func() bool {
		v, err := c.QueryWorkflow(ctx, spec.Campaign, run.GetRunID(), pipeline.QueryStatus)
		if err != nil {
			return false
		}
		var st pipeline.CampaignStatus
		if err := v.Get(&st); err != nil {
			return false
		}
		// Paused between rounds (before round 1 when the update reached the
		// workflow with its first task).
		return st.State == pipeline.StatePaused && st.CurrentRound == 0
	}, time.Minute, 500*time.Millisecond)
	_, err = update(pipeline.UpdateResume)
	require.NoError(t, err)

	var out pipeline.CampaignWorkflowOutput
	require.NoError(t, run.Get(ctx, &out))
	require.Equal(t, pipeline.StateDone, out.State)
	require.Equal(t, spec.Rounds, out.RoundsDone)

	writeGoldenHistory(t, ctx, c, spec.Campaign, run.GetRunID(), campaignHistoryFile)
	writeGoldenHistory(t, ctx, c, pipeline.RoundWorkflowID(spec.Campaign, 1), "", roundHistoryFile)
}

// TestGenerateGoldenAttemptHistory records a campaign restarted as a new
// attempt: replayAttemptSpec's 2 rounds, whose first attempt fails below
// quorum in round 2 (c1 and c2's training fails from round 2 on); the
// sites fixed, attempt 2 starts from the state the first run's resume
// query gives, superseding the failed manifest, and commits round 2. The
// files are attempt 2's campaign history and its round 2's.
func TestGenerateGoldenAttemptHistory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := goldenServer(t, ctx)

	spec := replayAttemptSpec()
	fed := newFakeFederation()
	fed.badFrom["c1"], fed.badFrom["c2"] = 2, 2
	startFakeFederation(t, c, fed, spec.SiteNames(), nil)

	first, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: spec.Campaign, TaskQueue: pipeline.ServerTaskQueue},
		pipeline.CampaignWorkflowName, pipeline.CampaignWorkflowInput{Spec: spec})
	require.NoError(t, err)
	require.ErrorContains(t, first.Get(ctx, nil), "below the quorum")
	v, err := c.QueryWorkflow(ctx, spec.Campaign, first.GetRunID(), pipeline.QueryResume)
	require.NoError(t, err)
	var rp pipeline.ResumePoint
	require.NoError(t, v.Get(&rp))
	require.Equal(t, 2, rp.State.NextRound)

	fed.mu.Lock()
	fed.badFrom = map[string]int{}
	fed.mu.Unlock()
	failed := fakeRef(spec.Bucket, artifact.ManifestKey(spec.Campaign, 2))
	second, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: spec.Campaign, TaskQueue: pipeline.ServerTaskQueue,
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
	}, pipeline.CampaignWorkflowName, pipeline.CampaignWorkflowInput{Spec: spec, State: &rp.State, Attempt: rp.Attempt + 1, Supersedes: &failed})
	require.NoError(t, err)
	var out pipeline.CampaignWorkflowOutput
	require.NoError(t, second.Get(ctx, &out))
	require.Equal(t, pipeline.StateDone, out.State)
	require.Equal(t, spec.Rounds, out.RoundsDone)

	writeGoldenHistory(t, ctx, c, spec.Campaign, second.GetRunID(), campaignAttemptHistoryFile)
	writeGoldenHistory(t, ctx, c, pipeline.AttemptRoundWorkflowID(spec.Campaign, 2, 2), "", roundAttemptHistoryFile)
}

// TestGenerateGoldenSweepHistory records the golden SweepWorkflow history:
// a sweep of two 1-round campaigns (pTopoFL and FedAvg on the three fake
// sites, one at a time) whose child campaigns and rounds run on the same
// server, with the fake federation as activities.
func TestGenerateGoldenSweepHistory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := goldenServer(t, ctx)

	spec := replaySweepSpec()
	fed := newFakeFederation()
	startFakeFederation(t, c, fed, []string{"c0", "c1", "c2"}, func(w worker.Worker) {
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
		pipeline.SweepWorkflowName, pipeline.SweepWorkflowInput{Spec: spec})
	require.NoError(t, err)
	var out pipeline.SweepWorkflowOutput
	require.NoError(t, run.Get(ctx, &out))
	require.Equal(t, pipeline.SweepDone, out.State)
	require.Equal(t, 2, out.CampaignsDone)

	writeGoldenHistory(t, ctx, c, spec.Sweep, run.GetRunID(), sweepHistoryFile)
}

// goldenServer starts an embedded Temporal server for a generator and
// returns a client of it; both stop when the test ends.
func goldenServer(t *testing.T, ctx context.Context) client.Client {
	t.Helper()
	srv, err := devstack.StartTemporal(ctx, devstack.TemporalConfig{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Stop() })
	c, err := client.Dial(client.Options{HostPort: srv.HostPort(), Namespace: devstack.DefaultNamespace})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// startFakeFederation runs the workflows and fed's activities on the real
// task queues: the server's and one per site. extra registers more on the
// server worker. Every worker stops when the test ends.
func startFakeFederation(t *testing.T, c client.Client, fed *fakeFederation, sites []string, extra func(worker.Worker)) {
	t.Helper()
	server := worker.New(c, pipeline.ServerTaskQueue, worker.Options{})
	Register(server)
	server.RegisterActivityWithOptions(fed.ClusterSites, activity.RegisterOptions{Name: pipeline.ActivityClusterSites})
	server.RegisterActivityWithOptions(fed.Aggregate, activity.RegisterOptions{Name: pipeline.ActivityAggregate})
	server.RegisterActivityWithOptions(fed.Reissue, activity.RegisterOptions{Name: pipeline.ActivityReissue})
	server.RegisterActivityWithOptions(fed.CommitRound, activity.RegisterOptions{Name: pipeline.ActivityCommitRound})
	if extra != nil {
		extra(server)
	}
	require.NoError(t, server.Start())
	t.Cleanup(server.Stop)
	for _, site := range sites {
		w := worker.New(c, pipeline.SiteTaskQueue(site), worker.Options{})
		w.RegisterActivityWithOptions(fed.ComputeDescriptor, activity.RegisterOptions{Name: pipeline.ActivityComputeDescriptor})
		w.RegisterActivityWithOptions(fed.TrainLocal, activity.RegisterOptions{Name: pipeline.ActivityTrainLocal})
		w.RegisterActivityWithOptions(fed.Evaluate, activity.RegisterOptions{Name: pipeline.ActivityEvaluate})
		require.NoError(t, w.Start())
		t.Cleanup(w.Stop)
	}
}

// writeGoldenHistory writes the history of one workflow run to testdata.
func writeGoldenHistory(t *testing.T, ctx context.Context, c client.Client, id, runID, file string) {
	t.Helper()
	it := c.GetWorkflowHistory(ctx, id, runID, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var events historyEvents
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		events = append(events, e)
	}
	b, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(events.history())
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join("testdata", file), append(b, '\n'), 0o644))
	t.Logf("wrote testdata/%s: %d events", file, len(events))
}

// TestGenerateGoldenRetentionHistory records the golden history of a round
// that prunes: round 2 of a 2-round campaign keeping the site models of the
// last round only (version "retention" 1, its pruning in the manifest, the
// PruneRound local activity after the commit).
func TestGenerateGoldenRetentionHistory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := goldenServer(t, ctx)

	spec := replayRetentionSpec()
	fed := newFakeFederation()
	startFakeFederation(t, c, fed, spec.SiteNames(), func(w worker.Worker) {
		w.RegisterActivityWithOptions(fed.PruneRound, activity.RegisterOptions{Name: pipeline.ActivityPruneRound})
	})
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: spec.Campaign, TaskQueue: pipeline.ServerTaskQueue},
		pipeline.CampaignWorkflowName, pipeline.CampaignWorkflowInput{Spec: spec})
	require.NoError(t, err)
	var out pipeline.CampaignWorkflowOutput
	require.NoError(t, run.Get(ctx, &out))
	require.Equal(t, pipeline.StateDone, out.State)
	require.Equal(t, []int{1}, fed.pruned)

	writeGoldenHistory(t, ctx, c, pipeline.RoundWorkflowID(spec.Campaign, 2), "", roundRetentionHistoryFile)
}

// TestGenerateGoldenOwnReadsHistory records the golden histories of rounds
// whose sites read only their own objects (version "site-reads-own" 1):
// replayOwnReadsSpec's pTopoFL campaign resumed at round 2 from a state of
// the old layout (every site holds a "cluster-<c>" model of round 1), so
// round 2 reissues them (the Reissue local activity) and round 3, which
// starts from per-site aggregates, does not.
func TestGenerateGoldenOwnReadsHistory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := goldenServer(t, ctx)

	spec := replayOwnReadsSpec()
	fed := newFakeFederation()
	startFakeFederation(t, c, fed, spec.SiteNames(), nil)
	ref := func(key string) pipeline.ArtifactRef { return fakeRef(spec.Bucket, key) }
	clustering := ref(artifact.ClusteringKey(spec.Campaign, 1))
	state := pipeline.CampaignState{NextRound: 2, AUCCurve: []float64{0.7}, AccCurve: []float64{0.6}, Carry: pipeline.RoundCarry{
		PrevManifestSHA256: "golden", Clustering: &clustering,
		Clusters: []pipeline.SiteCluster{{Site: "c0", Cluster: 0, Trust: 1}, {Site: "c1", Cluster: 1, Trust: 1}, {Site: "c2", Cluster: 0, Trust: 1}},
		Descriptors: []pipeline.SiteArtifact{
			{Site: "c0", Ref: ref(artifact.DescriptorKey(spec.Campaign, 1, "c0"))}, {Site: "c1", Ref: ref(artifact.DescriptorKey(spec.Campaign, 1, "c1"))},
			{Site: "c2", Ref: ref(artifact.DescriptorKey(spec.Campaign, 1, "c2"))}},
		Models: []pipeline.SiteArtifact{
			{Site: "c0", Ref: ref(artifact.AggregateKey(spec.Campaign, 1, "cluster-0"))}, {Site: "c1", Ref: ref(artifact.AggregateKey(spec.Campaign, 1, "cluster-1"))},
			{Site: "c2", Ref: ref(artifact.AggregateKey(spec.Campaign, 1, "cluster-0"))}},
	}}
	state.Carry.ClusterDescriptors = state.Carry.Descriptors
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: spec.Campaign, TaskQueue: pipeline.ServerTaskQueue},
		pipeline.CampaignWorkflowName, pipeline.CampaignWorkflowInput{Spec: spec, State: &state})
	require.NoError(t, err)
	var out pipeline.CampaignWorkflowOutput
	require.NoError(t, run.Get(ctx, &out))
	require.Equal(t, pipeline.StateDone, out.State)
	require.Equal(t, 1, fed.callCount(pipeline.ActivityReissue))

	writeGoldenHistory(t, ctx, c, pipeline.RoundWorkflowID(spec.Campaign, 2), "", roundOwnReadsReissueFile)
	writeGoldenHistory(t, ctx, c, pipeline.RoundWorkflowID(spec.Campaign, 3), "", roundOwnReadsFile)
}

// TestGenerateGoldenSearchSweepHistory records the golden histories of an
// adaptive sweep (replaySearchSweepSpec: asha over a grid of β × clusters,
// two trials at once, continuing as new after every 3 campaigns), with its
// child campaigns and rounds on the same server and the fake federation
// as activities (validation AUC from fakeSearchScore, so that rungs rank
// trials): the first run's history, which ends in continue-as-new, and
// the last run's, which builds the results (searchSweepHistoryFiles). The
// first run is paused while campaigns run (they get the pause signal) and
// resumed.
func TestGenerateGoldenSearchSweepHistory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c := goldenServer(t, ctx)

	spec := replaySearchSweepSpec()
	fed := newFakeFederation()
	var mu sync.Mutex
	saved := map[string]pipeline.CampaignState{}
	startSearchFederation(t, c, fed, []string{"c0", "c1", "c2"}, func(w worker.Worker) {
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
		w.RegisterActivityWithOptions(func(_ context.Context, in pipeline.SearchNextInput) (pipeline.SearchNextOutput, error) {
			return activities.SearchNext(in)
		}, activity.RegisterOptions{Name: pipeline.ActivitySearchNext})
		w.RegisterActivityWithOptions(func(_ context.Context, in pipeline.SearchRecordInput) (pipeline.ArtifactRef, error) {
			return fakeRef(spec.Bucket, artifact.SweepSearchKey(spec.Sweep)), nil
		}, activity.RegisterOptions{Name: pipeline.ActivityRecordSearch})
		w.RegisterActivityWithOptions(func(_ context.Context, in pipeline.SaveStateInput) (pipeline.ArtifactRef, error) {
			key := artifact.PausedStateKey(in.Campaign, in.Round)
			mu.Lock()
			saved[key] = in.State
			mu.Unlock()
			return fakeRef(in.Bucket, key), nil
		}, activity.RegisterOptions{Name: pipeline.ActivitySaveState})
		w.RegisterActivityWithOptions(func(_ context.Context, ref pipeline.ArtifactRef) (pipeline.CampaignState, error) {
			mu.Lock()
			defer mu.Unlock()
			st, ok := saved[ref.Key]
			if !ok {
				return st, fmt.Errorf("no paused state at %s", ref.Key)
			}
			return st, nil
		}, activity.RegisterOptions{Name: pipeline.ActivityLoadState})
	})
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: spec.Sweep, TaskQueue: pipeline.ServerTaskQueue},
		pipeline.SweepWorkflowName, pipeline.SweepWorkflowInput{Spec: spec})
	require.NoError(t, err)
	firstRun := run.GetRunID() // Get moves the run's ID along the chain
	// Pause while campaigns run, then resume.
	require.Eventually(t, func() bool {
		v, err := c.QueryWorkflow(ctx, spec.Sweep, firstRun, pipeline.QueryStatus)
		var st pipeline.SweepStatus
		return err == nil && v.Get(&st) == nil && len(st.Running) > 0
	}, time.Minute, 10*time.Millisecond)
	for _, name := range []string{pipeline.UpdatePause, pipeline.UpdateResume} {
		h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
			WorkflowID: spec.Sweep, RunID: firstRun, UpdateName: name,
			Args: []any{pipeline.ControlInput{Reason: "golden"}}, WaitForStage: client.WorkflowUpdateStageCompleted,
		})
		require.NoError(t, err)
		require.NoError(t, h.Get(ctx, nil))
		time.Sleep(300 * time.Millisecond)
	}
	var out pipeline.SweepWorkflowOutput
	// Get follows the continue-as-new chain to the last run.
	require.NoError(t, run.Get(ctx, &out))
	require.Equal(t, pipeline.SweepDone, out.State)
	require.NotNil(t, out.Search)
	last, err := c.DescribeWorkflowExecution(ctx, spec.Sweep, "")
	require.NoError(t, err)
	lastRun := last.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	require.NotEqual(t, firstRun, lastRun, "the sweep never continued as new")
	files := searchSweepHistoryFiles()
	writeGoldenHistory(t, ctx, c, spec.Sweep, firstRun, files[0])
	writeGoldenHistory(t, ctx, c, spec.Sweep, lastRun, files[1])
}

// startSearchFederation is startFakeFederation with evaluations that
// carry a validation AUC (fakeSearchScore).
func startSearchFederation(t *testing.T, c client.Client, fed *fakeFederation, sites []string, extra func(worker.Worker)) {
	t.Helper()
	startFakeFederation(t, c, fed, nil, extra)
	for _, site := range sites {
		w := worker.New(c, pipeline.SiteTaskQueue(site), worker.Options{})
		w.RegisterActivityWithOptions(fed.ComputeDescriptor, activity.RegisterOptions{Name: pipeline.ActivityComputeDescriptor})
		w.RegisterActivityWithOptions(func(ctx context.Context, in pipeline.TrainLocalInput) (pipeline.TrainLocalOutput, error) {
			out, err := fed.TrainLocal(ctx, in)
			if out.Evaluation != nil {
				ev := fakeSearchScore(in.SiteCall)
				out.Evaluation = &ev
			}
			return out, err
		}, activity.RegisterOptions{Name: pipeline.ActivityTrainLocal})
		w.RegisterActivityWithOptions(func(_ context.Context, in pipeline.EvaluateInput) (pipeline.EvaluateOutput, error) {
			return fakeSearchScore(in.SiteCall), nil
		}, activity.RegisterOptions{Name: pipeline.ActivityEvaluate})
		require.NoError(t, w.Start())
		t.Cleanup(w.Stop)
	}
}

// fakeSearchScore is fakeScore with a validation AUC that follows fakeVal
// for the call's β and clusters.
func fakeSearchScore(call pipeline.SiteCall) pipeline.EvaluateOutput {
	ev := fakeScore(call)
	v := fakeVal(trialConfig(pipeline.CampaignSpec{Hyperparameters: call.Hyperparameters}), call.CampaignSeed, call.Round, 3)
	ev.ValAUC, ev.ValAccuracy, ev.NumVal = &v, &v, 10
	return ev
}
