package workers_test

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
)

// TestRoundDeadlineOnRealServer: a site that never answers its training
// activity is dropped at the round deadline by the real Temporal server
// (the activity's ScheduleToClose timeout; the workflow starts no timer of
// its own), recorded in the manifest as timed out with the deadline in the
// text, and the round goes on with the others.
func TestRoundDeadlineOnRealServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack")
	}
	s := startStack(t)
	sites := []pipeline.Site{{Name: "client0"}, {Name: "client1"}, {Name: "client2"}}
	startWorkers(t, s, sites[:2]) // the server worker, client0 and client1
	// client2's worker takes its training task and hangs until the
	// activity's context ends (the deadline) or a minute passes.
	hung := worker.New(s.client, pipeline.SiteTaskQueue("client2"), worker.Options{})
	hung.RegisterActivityWithOptions(func(ctx context.Context, in pipeline.TrainLocalInput) (pipeline.TrainLocalOutput, error) {
		select {
		case <-ctx.Done():
		case <-time.After(time.Minute):
		}
		return pipeline.TrainLocalOutput{}, ctx.Err()
	}, activity.RegisterOptions{Name: pipeline.ActivityTrainLocal})
	if err := hung.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hung.Stop)

	const deadline = 3 * time.Second
	spec := pipeline.CampaignSpec{
		Campaign: "deadline", Method: learn.FedAvg, Rounds: 1, Seed: 1, Sites: sites, MinSites: 2,
		RoundDeadline: deadline, Bucket: s.store.Bucket(), Hyperparameters: method.Defaults(method.Default),
	}.WithDefaults()
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	run, err := s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: spec.Campaign, TaskQueue: pipeline.ServerTaskQueue},
		pipeline.CampaignWorkflowName, pipeline.CampaignWorkflowInput{Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	var out pipeline.CampaignWorkflowOutput
	if err := run.Get(ctx, &out); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if out.RoundsDone != 1 {
		t.Fatalf("rounds done %d, want 1", out.RoundsDone)
	}
	if took < deadline {
		t.Errorf("campaign took %v, less than the %v deadline the hung site should have cost", took, deadline)
	}
	var m pipeline.RoundManifest
	if _, err := s.store.GetJSONKey(ctx, artifact.ManifestKey(spec.Campaign, 1), &m); err != nil {
		t.Fatal(err)
	}
	want := pipeline.SiteDrop{Site: "client2", Phase: pipeline.PhaseTrain, Reason: pipeline.DropTimeout,
		Error: "no answer within the round deadline (3s)"}
	if len(m.Dropped) != 1 || m.Dropped[0] != want {
		t.Errorf("dropped %+v, want [%+v]", m.Dropped, want)
	}
	if got := m.Participants; len(got) != 2 || got[0] != "client0" || got[1] != "client1" {
		t.Errorf("participants %v, want [client0 client1]", got)
	}
	// No timer in the round's history: the deadline is the activities'.
	it := s.client.GetWorkflowHistory(ctx, pipeline.RoundWorkflowID(spec.Campaign, 1), "", false, 0)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if e.GetTimerStartedEventAttributes() != nil {
			t.Errorf("event %d: a timer was started; fan-outs should keep the deadline by ScheduleToClose", e.EventId)
		}
	}
}
