package workflows

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/suite"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
)

type SweepSuite struct {
	suite.Suite
	testsuite.WorkflowTestSuite
	env *testsuite.TestWorkflowEnvironment

	mu          sync.Mutex
	running     int
	maxRunning  int
	started     []string        // campaign names in start order
	failing     map[string]bool // campaigns that fail below quorum
	resultsIn   *pipeline.BuildSweepResultsInput
	campaignDur time.Duration
}

func TestSweepSuite(t *testing.T) { suite.Run(t, new(SweepSuite)) }

func (s *SweepSuite) SetupTest() {
	s.env = s.NewTestWorkflowEnvironment()
	RegisterSweep(s.env)
	Register(s.env)
	s.running, s.maxRunning, s.started, s.resultsIn = 0, 0, nil, nil
	s.failing = map[string]bool{}
	s.campaignDur = time.Hour
	s.env.RegisterActivityWithOptions(func(context.Context, pipeline.RecordSweepInput) (pipeline.RecordSweepOutput, error) {
		return pipeline.RecordSweepOutput{}, nil
	}, activity.RegisterOptions{Name: pipeline.ActivityRecordSweep})
	s.env.RegisterActivityWithOptions(func(context.Context, pipeline.BuildSweepResultsInput) (pipeline.BuildSweepResultsOutput, error) {
		return pipeline.BuildSweepResultsOutput{}, nil
	}, activity.RegisterOptions{Name: pipeline.ActivityBuildSweepResults})
	s.env.OnActivity(pipeline.ActivityRecordSweep, mock.Anything, mock.Anything).Return(pipeline.RecordSweepOutput{}, nil).Maybe()
	s.env.OnActivity(pipeline.ActivityBuildSweepResults, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in pipeline.BuildSweepResultsInput) (pipeline.BuildSweepResultsOutput, error) {
			s.mu.Lock()
			s.resultsIn = &in
			s.mu.Unlock()
			return pipeline.BuildSweepResultsOutput{
				Results: pipeline.ArtifactRef{Bucket: "ptopofl", Key: artifact.SweepResultsKey(in.Spec.Sweep)},
				Curves:  pipeline.ArtifactRef{Bucket: "ptopofl", Key: artifact.SweepCurvesKey(in.Spec.Sweep)},
				Rows:    len(in.Outcomes),
			}, nil
		}).Maybe()
	// The child campaigns: each takes campaignDur of workflow time.
	s.env.OnWorkflow(pipeline.CampaignWorkflowName, mock.Anything, mock.Anything).Return(
		func(ctx workflow.Context, in pipeline.CampaignWorkflowInput) (pipeline.CampaignWorkflowOutput, error) {
			s.mu.Lock()
			s.running++
			s.maxRunning = max(s.maxRunning, s.running)
			s.started = append(s.started, in.Spec.Campaign)
			s.mu.Unlock()
			err := workflow.Sleep(ctx, s.campaignDur)
			s.mu.Lock()
			s.running--
			fail := s.failing[in.Spec.Campaign]
			s.mu.Unlock()
			if err != nil {
				return pipeline.CampaignWorkflowOutput{}, err
			}
			if fail {
				return pipeline.CampaignWorkflowOutput{}, temporal.NewNonRetryableApplicationError(
					"round 2 below quorum", pipeline.ErrTypeQuorumNotMet, nil,
					pipeline.QuorumFailure{Round: 2, Manifest: pipeline.ArtifactRef{Key: artifact.ManifestKey(in.Spec.Campaign, 2)}})
			}
			curve := []float64{0.7, 0.8, 0.8 + float64(in.Spec.Seed)/100}
			return pipeline.CampaignWorkflowOutput{
				Campaign: in.Spec.Campaign, Method: in.Spec.Method, State: pipeline.StateDone,
				RoundsDone: in.Spec.Rounds, AUCCurve: curve, AccCurve: curve,
				LastManifest: &pipeline.ArtifactRef{Key: artifact.ManifestKey(in.Spec.Campaign, in.Spec.Rounds)},
			}, nil
		}).Maybe()
}

func (s *SweepSuite) AfterTest(suiteName, testName string) { s.env.AssertExpectations(s.T()) }

// sweepSpec: 2 methods × 3 seeds on one 3-site federation = 6 campaigns.
func sweepSpec(concurrency int) pipeline.SweepSpec {
	return pipeline.SweepSpec{
		Sweep: "sw", Rounds: 3, Seeds: []uint64{1, 2, 3},
		Methods: []pipeline.SweepMethod{
			{Method: learn.PTopoFL, Hyperparameters: method.Defaults(method.Default)},
			{Method: learn.FedAvg, Hyperparameters: method.Defaults(method.Default)},
		},
		Federations: []pipeline.SweepFederation{{Name: "fed", Sites: []pipeline.Site{{Name: "c0"}, {Name: "c1"}, {Name: "c2"}}}},
		Concurrency: concurrency, Bucket: "ptopofl",
	}
}

func (s *SweepSuite) run(in pipeline.SweepWorkflowInput) (pipeline.SweepWorkflowOutput, error) {
	s.env.ExecuteWorkflow(SweepWorkflow, in)
	s.True(s.env.IsWorkflowCompleted())
	var out pipeline.SweepWorkflowOutput
	err := s.env.GetWorkflowError()
	if err == nil {
		s.NoError(s.env.GetWorkflowResult(&out))
	}
	return out, err
}

func (s *SweepSuite) status() pipeline.SweepStatus {
	v, err := s.env.QueryWorkflow(pipeline.QueryStatus)
	s.Require().NoError(err)
	var st pipeline.SweepStatus
	s.Require().NoError(v.Get(&st))
	return st
}

func (s *SweepSuite) update(name, reason string) *error {
	var got error
	done := &got
	s.env.UpdateWorkflow(name, name+"-"+reason, &testsuite.TestUpdateCallback{
		OnAccept:   func() {},
		OnReject:   func(err error) { *done = err },
		OnComplete: func(any, error) {},
	}, pipeline.ControlInput{Reason: reason})
	return done
}

func (s *SweepSuite) Test_ConcurrencyBoundAndStatus() {
	var mid pipeline.SweepStatus
	// Between the first and second wave (each campaign takes an hour).
	s.env.RegisterDelayedCallback(func() { mid = s.status() }, 90*time.Minute)
	out, err := s.run(pipeline.SweepWorkflowInput{Spec: sweepSpec(2)})
	s.Require().NoError(err)
	s.Equal(2, s.maxRunning, "never more than Concurrency campaigns at once")
	s.Equal(pipeline.SweepDone, out.State)
	s.Equal(6, out.CampaignsDone)
	s.Equal(6, out.CampaignsTotal)
	s.Equal("sweeps/sw/results.parquet", out.Results.Key)
	s.Require().Len(out.Outcomes, 6)
	for i, o := range out.Outcomes {
		s.Equal(i, o.Index)
		s.Equal(pipeline.StateDone, o.State)
		s.Equal(3, o.RoundsDone)
	}
	s.Equal("sw-fed-ptopofl-base-s1", out.Outcomes[0].Campaign)
	s.Equal("sw-fed-fedavg-base-s3", out.Outcomes[5].Campaign)
	s.InDelta(0.83, out.Outcomes[2].FinalAUC, 1e-12)
	// Campaigns start in the grid's order, two at a time. Within a wave the
	// test environment runs the two mocked children concurrently, so the
	// order in which their mocks record the start is not defined: compare
	// each wave as a set.
	want := []string{"sw-fed-ptopofl-base-s1", "sw-fed-ptopofl-base-s2", "sw-fed-ptopofl-base-s3",
		"sw-fed-fedavg-base-s1", "sw-fed-fedavg-base-s2", "sw-fed-fedavg-base-s3"}
	s.Require().Len(s.started, len(want))
	for w := 0; w < len(want); w += 2 {
		s.ElementsMatch(want[w:w+2], s.started[w:w+2], "wave %d", w/2+1)
	}

	s.Equal(2, mid.CampaignsDone)
	s.Equal(6, mid.CampaignsTotal)
	s.Equal(pipeline.SweepRunning, mid.State)
	s.Equal([]string{"sw-fed-ptopofl-base-s3", "sw-fed-fedavg-base-s1"}, mid.Running)

	s.Require().NotNil(s.resultsIn)
	s.Len(s.resultsIn.Outcomes, 6)
	s.Equal(pipeline.SweepDone, s.status().State)
}

func (s *SweepSuite) Test_PauseStartsNoNewCampaignUntilResume() {
	var paused, resumedEarly pipeline.SweepStatus
	var pauseErr, resumeErr, secondPauseErr *error
	s.env.RegisterDelayedCallback(func() { pauseErr = s.update(pipeline.UpdatePause, "maintenance") }, 30*time.Minute)
	s.env.RegisterDelayedCallback(func() { secondPauseErr = s.update(pipeline.UpdatePause, "again") }, 40*time.Minute)
	// At 5h the first two are long done and nothing new started.
	s.env.RegisterDelayedCallback(func() { paused = s.status() }, 5*time.Hour)
	s.env.RegisterDelayedCallback(func() { resumeErr = s.update(pipeline.UpdateResume, "go") }, 6*time.Hour)
	s.env.RegisterDelayedCallback(func() { resumedEarly = s.status() }, 6*time.Hour+time.Minute)
	out, err := s.run(pipeline.SweepWorkflowInput{Spec: sweepSpec(2)})
	s.Require().NoError(err)
	s.NoError(*pauseErr)
	s.Error(*secondPauseErr, "pause when paused is rejected")
	s.NoError(*resumeErr)
	s.Equal(pipeline.SweepPaused, paused.State)
	s.Equal("maintenance", paused.PauseReason)
	s.Equal(2, paused.CampaignsDone, "the running campaigns finished while paused")
	s.Empty(paused.Running)
	s.Len(resumedEarly.Running, 2)
	s.Equal(6, out.CampaignsDone)
	s.Equal(pipeline.SweepDone, out.State)
}

func (s *SweepSuite) Test_StopRunsNoNewCampaignAndBuildsResults() {
	var stopErr *error
	s.env.RegisterDelayedCallback(func() { stopErr = s.update(pipeline.UpdateStop, "enough") }, 30*time.Minute)
	out, err := s.run(pipeline.SweepWorkflowInput{Spec: sweepSpec(2)})
	s.Require().NoError(err)
	s.NoError(*stopErr)
	s.Equal(pipeline.SweepStopped, out.State)
	s.Equal("enough", out.StopReason)
	s.Equal(2, out.CampaignsDone, "the two running campaigns end")
	s.Equal(6, out.CampaignsTotal)
	s.Len(s.started, 2)
	s.Require().NotNil(s.resultsIn)
	s.Len(s.resultsIn.Outcomes, 2)

	// Once over, control updates are rejected.
	s.Equal(pipeline.SweepStopped, s.status().State)
}

func (s *SweepSuite) Test_FailedCampaignIsRecordedNotFatal() {
	s.failing["sw-fed-fedavg-base-s2"] = true
	out, err := s.run(pipeline.SweepWorkflowInput{Spec: sweepSpec(3)})
	s.Require().NoError(err)
	s.Equal(pipeline.SweepDone, out.State)
	s.Equal(1, out.Failed)
	o := out.Outcomes[4]
	s.Equal("sw-fed-fedavg-base-s2", o.Campaign)
	s.Equal(pipeline.StateFailed, o.State)
	s.Contains(o.Error, "below quorum")
	s.Equal(1, o.RoundsDone)
	s.Equal("campaigns/sw-fed-fedavg-base-s2/round-0002/manifest.json", o.LastManifest.Key)
}

func (s *SweepSuite) Test_ContinueAsNewAfterDraining() {
	spec := sweepSpec(2)
	spec.ContinueAsNewEvery = 3
	_, err := s.run(pipeline.SweepWorkflowInput{Spec: spec})
	var can *workflow.ContinueAsNewError
	s.Require().True(errors.As(err, &can), "want continue-as-new, got %v", err)
	var next pipeline.SweepWorkflowInput
	s.Require().NoError(converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	s.Require().NotNil(next.State)
	s.Equal(3, next.State.Next)
	s.Len(next.State.Outcomes, 3, "every child of the run finished before it closed")
	s.True(next.State.Recorded)
	s.Len(s.started, 3)
	s.Zero(s.running)
}

func (s *SweepSuite) Test_ContinuedRunFinishesTheGrid() {
	spec := sweepSpec(2)
	spec.ContinueAsNewEvery = 3
	state := &pipeline.SweepState{Recorded: true, Next: 3, Outcomes: []pipeline.CampaignOutcome{
		{Index: 2, Campaign: "sw-fed-ptopofl-base-s3", State: pipeline.StateDone},
		{Index: 0, Campaign: "sw-fed-ptopofl-base-s1", State: pipeline.StateDone},
		{Index: 1, Campaign: "sw-fed-ptopofl-base-s2", State: pipeline.StateDone},
	}}
	out, err := s.run(pipeline.SweepWorkflowInput{Spec: spec, State: state})
	s.Require().NoError(err)
	s.Equal(6, out.CampaignsDone)
	// Two at a time; the mocks of one wave record their start in no
	// defined order (see Test_ConcurrencyBoundAndStatus).
	s.Require().Len(s.started, 3)
	s.ElementsMatch([]string{"sw-fed-fedavg-base-s1", "sw-fed-fedavg-base-s2"}, s.started[:2])
	s.Equal("sw-fed-fedavg-base-s3", s.started[2])
	for i, o := range out.Outcomes {
		s.Equal(i, o.Index)
	}
}

func (s *SweepSuite) Test_InvalidSpecIsRejected() {
	spec := sweepSpec(2)
	spec.Seeds = nil
	_, err := s.run(pipeline.SweepWorkflowInput{Spec: spec})
	var appErr *temporal.ApplicationError
	s.Require().True(errors.As(err, &appErr), "%v", err)
	s.Equal(pipeline.ErrTypeInvalidSpec, appErr.Type())
	s.Contains(appErr.Error(), "seeds")
}

func TestSweepCampaignsGrid(t *testing.T) {
	spec := sweepSpec(2)
	spec.Settings = []pipeline.SweepSetting{
		{Label: "full"},
		{Label: "M1", Set: []method.ParamValue{{Name: "clusters", Value: 1}}, Methods: []learn.Method{learn.PTopoFL}},
		{Label: "beta0", Set: []method.ParamValue{{Name: "beta", Value: 0}}, Methods: []learn.Method{learn.PTopoFL}},
	}
	cs, err := spec.WithDefaults().Campaigns()
	if err != nil {
		t.Fatal(err)
	}
	// ptopofl: 3 settings × 3 seeds; fedavg: only "full" × 3 seeds.
	if len(cs) != 12 {
		t.Fatalf("%d campaigns, want 12", len(cs))
	}
	if c := cs[3]; c.Spec.Campaign != "sw-fed-ptopofl-M1-s1" || c.Spec.Hyperparameters.Clusters != 1 || c.WorkflowID != "sw/sw-fed-ptopofl-M1-s1" {
		t.Errorf("campaign 3: %+v", c)
	}
	if c := cs[6]; c.Spec.Hyperparameters.Beta != 0 || c.Setting != "beta0" {
		t.Errorf("campaign 6: setting %s beta %v", c.Setting, c.Spec.Hyperparameters.Beta)
	}
	if err := spec.WithDefaults().Validate(); err != nil {
		t.Errorf("valid sweep rejected: %v", err)
	}
	long := spec
	long.Sweep = "a-rather-long-sweep-name-of-forty-chars"
	long.Federations[0].Name = "a-long-federation-name"
	cs, err = long.WithDefaults().Campaigns()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if err := c.Spec.Validate(); err != nil {
			t.Errorf("long names: %v", err)
		}
	}
	bad := spec
	bad.Settings = []pipeline.SweepSetting{{Label: "x", Set: []method.ParamValue{{Name: "betta", Value: 1}}}}
	if err := bad.WithDefaults().Validate(); err == nil {
		t.Error("unknown hyper-parameter accepted")
	}
}

// TestSweepStopStopsRunningCampaigns: the sweep's stop update also stops
// the campaigns it is running (a signal: a workflow cannot update another),
// which end "stopped" after their running round with the sweep's reason,
// instead of running every remaining round. The campaigns here stand in for
// CampaignWorkflow: an hour per round, a stop signal honoured between rounds.
func TestSweepStopStopsRunningCampaigns(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	RegisterSweep(env)
	env.RegisterWorkflowWithOptions(func(ctx workflow.Context, in pipeline.CampaignWorkflowInput) (pipeline.CampaignWorkflowOutput, error) {
		out := pipeline.CampaignWorkflowOutput{Campaign: in.Spec.Campaign, Method: in.Spec.Method, State: pipeline.StateDone}
		stops := workflow.GetSignalChannel(ctx, pipeline.SignalStop)
		for out.RoundsDone < in.Spec.Rounds {
			if err := workflow.Sleep(ctx, time.Hour); err != nil {
				return out, err
			}
			out.RoundsDone++
			var stop pipeline.ControlInput
			if stops.ReceiveAsync(&stop) {
				out.State, out.StopReason = pipeline.StateStopped, stop.Reason
				break
			}
		}
		return out, nil
	}, workflow.RegisterOptions{Name: pipeline.CampaignWorkflowName})
	env.RegisterActivityWithOptions(func(context.Context, pipeline.RecordSweepInput) (pipeline.RecordSweepOutput, error) {
		return pipeline.RecordSweepOutput{}, nil
	}, activity.RegisterOptions{Name: pipeline.ActivityRecordSweep})
	env.RegisterActivityWithOptions(func(_ context.Context, in pipeline.BuildSweepResultsInput) (pipeline.BuildSweepResultsOutput, error) {
		return pipeline.BuildSweepResultsOutput{Rows: len(in.Outcomes)}, nil
	}, activity.RegisterOptions{Name: pipeline.ActivityBuildSweepResults})

	spec := sweepSpec(2)
	spec.Rounds = 10
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(pipeline.UpdateStop, "stop", &testsuite.TestUpdateCallback{
			OnAccept: func() {}, OnReject: func(err error) { t.Errorf("stop rejected: %v", err) }, OnComplete: func(any, error) {},
		}, pipeline.ControlInput{Reason: "enough"})
	}, 150*time.Minute) // during round 3 of the first two campaigns
	env.ExecuteWorkflow(SweepWorkflow, pipeline.SweepWorkflowInput{Spec: spec})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var out pipeline.SweepWorkflowOutput
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	if out.State != pipeline.SweepStopped || len(out.Outcomes) != 2 {
		t.Fatalf("sweep %s with %d outcomes, want stopped with the 2 campaigns it had started", out.State, len(out.Outcomes))
	}
	for _, o := range out.Outcomes {
		if o.State != pipeline.StateStopped || o.RoundsDone != 3 {
			t.Errorf("campaign %s: %s after %d rounds, want stopped after round 3 of 10", o.Campaign, o.State, o.RoundsDone)
		}
	}
}
