package workflows

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"github.com/stretchr/testify/suite"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/pipeline"
)

type CampaignSuite struct {
	suite.Suite
	testsuite.WorkflowTestSuite
	env *testsuite.TestWorkflowEnvironment
	fed *fakeFederation
}

func TestCampaignSuite(t *testing.T) { suite.Run(t, new(CampaignSuite)) }

func (s *CampaignSuite) SetupTest() {
	s.env = s.NewTestWorkflowEnvironment()
	s.env.RegisterWorkflow(CampaignWorkflow)
	s.env.RegisterWorkflow(RoundWorkflow)
	registerStubs(s.env)
	s.fed = newFakeFederation()
}

func (s *CampaignSuite) AfterTest(suiteName, testName string) { s.env.AssertExpectations(s.T()) }

// mockAll routes every activity to the fake federation; Maybe, because a
// test that ends early legitimately leaves some activities uncalled. Expectations
// registered before it (slow or failing sites) take precedence: testify
// uses the first matching expectation.
func (s *CampaignSuite) mockAll() {
	s.env.OnActivity(pipeline.ActivityComputeDescriptor, mock.Anything, mock.Anything).Return(s.fed.ComputeDescriptor).Maybe()
	s.env.OnActivity(pipeline.ActivityTrainLocal, mock.Anything, mock.Anything).Return(s.fed.TrainLocal).Maybe()
	s.env.OnActivity(pipeline.ActivityEvaluate, mock.Anything, mock.Anything).Return(s.fed.Evaluate).Maybe()
	s.env.OnActivity(pipeline.ActivityClusterSites, mock.Anything, mock.Anything).Return(s.fed.ClusterSites).Maybe()
	s.env.OnActivity(pipeline.ActivityAggregate, mock.Anything, mock.Anything).Return(s.fed.Aggregate).Maybe()
	s.env.OnActivity(pipeline.ActivityReissue, mock.Anything, mock.Anything).Return(s.fed.Reissue).Maybe()
	s.env.OnActivity(pipeline.ActivityCommitRound, mock.Anything, mock.Anything).Return(s.fed.CommitRound).Maybe()
	s.env.OnActivity(pipeline.ActivityPruneRound, mock.Anything, mock.Anything).Return(s.fed.PruneRound).Maybe()
}

func testSpec(rounds int) pipeline.CampaignSpec {
	return pipeline.CampaignSpec{
		Campaign: "hc-test", Method: learn.PTopoFL, Rounds: rounds, Seed: 42,
		Sites:         []pipeline.Site{{Name: "c0"}, {Name: "c1"}, {Name: "c2"}},
		MinSites:      2,
		RoundDeadline: 30 * time.Minute, SiteActivityTimeout: time.Hour,
		Bucket: "ptopofl", CodeVersion: "test",
	}
}

func (s *CampaignSuite) run(in pipeline.CampaignWorkflowInput) (pipeline.CampaignWorkflowOutput, error) {
	s.env.ExecuteWorkflow(CampaignWorkflow, in)
	s.True(s.env.IsWorkflowCompleted())
	var out pipeline.CampaignWorkflowOutput
	err := s.env.GetWorkflowError()
	if err == nil {
		s.NoError(s.env.GetWorkflowResult(&out))
	}
	return out, err
}

func (s *CampaignSuite) status() pipeline.CampaignStatus {
	v, err := s.env.QueryWorkflow(pipeline.QueryStatus)
	s.Require().NoError(err)
	var st pipeline.CampaignStatus
	s.Require().NoError(v.Get(&st))
	return st
}

func (s *CampaignSuite) Test_ThreeRoundHappyPath() {
	s.mockAll()
	out, err := s.run(pipeline.CampaignWorkflowInput{Spec: testSpec(3)})
	s.Require().NoError(err)
	s.Equal(pipeline.StateDone, out.State)
	s.Equal(3, out.RoundsDone)
	s.Len(out.AUCCurve, 3)
	s.InDelta(0.75+0.03+0.001, out.AUCCurve[2], 1e-12) // mean of 0.78+{0,.001,.002}
	s.Equal([]string{"c1"}, out.Flagged)

	// Descriptors and clustering happen in round 1 only (no drift check asked).
	s.Equal(3, s.fed.callCount(pipeline.ActivityComputeDescriptor))
	s.Equal(1, s.fed.callCount(pipeline.ActivityClusterSites))
	s.Equal(9, s.fed.callCount(pipeline.ActivityTrainLocal))

	ms := s.fed.committed()
	s.Require().Len(ms, 3)
	s.Equal("", ms[0].PrevManifestSHA256)
	for i, m := range ms {
		s.Equal(i+1, m.Round)
		s.Equal(pipeline.OutcomeCommitted, m.Outcome)
		s.Equal([]string{"c0", "c1", "c2"}, m.Participants)
		s.Empty(m.Dropped)
		s.Equal(testSpec(3).WithDefaults().SpecHash(), m.SpecHash)
		s.Len(m.Metrics, 3)
		s.Equal(101, m.Metrics[1].NumTrain)
	}
	// The chain: each manifest names its predecessor's hash, the last one
	// is what the campaign reports.
	s.Equal(ms[0].Round, 1)
	s.NotEmpty(ms[1].PrevManifestSHA256)
	s.NotEqual(ms[1].PrevManifestSHA256, ms[2].PrevManifestSHA256)
	s.Equal("campaigns/hc-test/round-0003/manifest.json", out.LastManifest.Key)
	s.True(ms[0].DescriptorsRecomputed)
	s.False(ms[1].DescriptorsRecomputed)

	st := s.status()
	s.Equal(pipeline.StateDone, st.State)
	s.Equal(3, st.RoundsDone)
	s.Equal(3, st.RoundsTotal)
}

func (s *CampaignSuite) Test_BadSiteDataIsRecordedAndRoundProceeds() {
	s.fed.bad["c1"] = true
	s.mockAll()
	out, err := s.run(pipeline.CampaignWorkflowInput{Spec: testSpec(2)})
	s.Require().NoError(err)
	s.Equal(2, out.RoundsDone)
	ms := s.fed.committed()
	s.Require().Len(ms, 2)
	for _, m := range ms {
		s.Equal([]string{"c0", "c2"}, m.Participants)
		s.Require().Len(m.Dropped, 1)
		d := m.Dropped[0]
		s.Equal("c1", d.Site)
		s.Equal(pipeline.PhaseTrain, d.Phase)
		s.Equal(pipeline.DropBadSiteData, d.Reason)
		s.Equal("site c1: c1_train.csv:17: expected 20 features, got 19", d.Error)
		s.Equal(2, m.Mean.Sites)
	}
	// Non-retryable: one attempt per round, not a retry storm.
	s.Equal(2*3, s.fed.callCount(pipeline.ActivityTrainLocal))
}

func (s *CampaignSuite) Test_BelowQuorumStopsCampaignWithReason() {
	s.fed.bad["c1"] = true
	s.fed.bad["c2"] = true
	s.mockAll()
	_, err := s.run(pipeline.CampaignWorkflowInput{Spec: testSpec(3)})
	s.Require().Error(err)
	var appErr *temporal.ApplicationError
	s.Require().True(errors.As(err, &appErr), "error %v", err)
	s.Equal(pipeline.ErrTypeQuorumNotMet, appErr.Type())
	s.Contains(appErr.Error(), "round 1, train phase: 1 of 3 sites remain, below the quorum min_sites=2")
	var qf pipeline.QuorumFailure
	s.Require().NoError(appErr.Details(&qf))
	s.Equal("campaigns/hc-test/round-0001/manifest.json", qf.Manifest.Key)

	ms := s.fed.committed()
	s.Require().Len(ms, 1, "the failed round's manifest is committed")
	s.Equal(pipeline.OutcomeFailed, ms[0].Outcome)
	s.Contains(ms[0].FailureReason, "below the quorum")
	s.Len(ms[0].Dropped, 2)
	s.Zero(s.fed.callCount(pipeline.ActivityAggregate))

	st := s.status()
	s.Equal(pipeline.StateFailed, st.State)
	s.Contains(st.FailureReason, "below the quorum")
	s.Len(st.LastDropped, 2)
}

// Test_SiteTimingOutIsDropped: the round deadline is every site activity's
// ScheduleToClose timeout; the server ends an activity still running then
// with a ScheduleToClose timeout. (The SDK's test environment does not
// enforce ScheduleToClose against its mock clock, so c2's mock gives that
// answer itself at the deadline; internal/workers' e2e test sees the real
// server do it.)
func (s *CampaignSuite) Test_SiteTimingOutIsDropped() {
	spec := testSpec(1)
	s.env.OnActivity(pipeline.ActivityTrainLocal, mock.Anything,
		mock.MatchedBy(func(in pipeline.TrainLocalInput) bool { return in.Site == "c2" })).
		Return(pipeline.TrainLocalOutput{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE, nil)).
		After(spec.RoundDeadline)
	s.mockAll()
	out, err := s.run(pipeline.CampaignWorkflowInput{Spec: spec})
	s.Require().NoError(err)
	s.Equal(1, out.RoundsDone)
	ms := s.fed.committed()
	s.Require().Len(ms, 1)
	s.Equal([]string{"c0", "c1"}, ms[0].Participants)
	s.Require().Len(ms[0].Dropped, 1)
	s.Equal(pipeline.SiteDrop{Site: "c2", Phase: pipeline.PhaseTrain, Reason: pipeline.DropTimeout,
		Error: "no answer within the round deadline (30m0s)"}, ms[0].Dropped[0])
	// The evaluation fan-out did not wait for, or ask, the dropped site.
	s.Equal(2, s.fed.callCount(pipeline.ActivityEvaluate))
}

// Test_StuckRoundSaysWhoItWaitsFor: ten minutes into a round whose site c2
// does not answer its training, the round's progress query names c0 and c1
// as answered and c2 as awaited, with the deadline 30 minutes after the
// training fan-out began (the mock clock's start: the steps before it take
// no time); once the round is over it reports its last server step and
// awaits no one.
func (s *CampaignSuite) Test_StuckRoundSaysWhoItWaitsFor() {
	spec := testSpec(1)
	s.env.OnActivity(pipeline.ActivityTrainLocal, mock.Anything,
		mock.MatchedBy(func(in pipeline.TrainLocalInput) bool { return in.Site == "c2" })).
		Return(pipeline.TrainLocalOutput{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE, nil)).
		After(spec.RoundDeadline)
	s.mockAll()
	progress := func() pipeline.RoundProgress {
		v, err := s.env.QueryWorkflow(pipeline.QueryRoundProgress)
		s.Require().NoError(err)
		var p pipeline.RoundProgress
		s.Require().NoError(v.Get(&p))
		return p
	}
	start := s.env.Now()
	var stuck pipeline.RoundProgress
	s.env.RegisterDelayedCallback(func() { stuck = progress() }, 10*time.Minute)
	s.env.ExecuteWorkflow(RoundWorkflow, pipeline.RoundWorkflowInput{Spec: spec, Round: 1, Protocol: pipeline.RoundProtocolCurrent})
	s.Require().True(s.env.IsWorkflowCompleted())
	s.Require().NoError(s.env.GetWorkflowError())
	s.Equal(1, stuck.Round)
	s.Equal(pipeline.PhaseTrain, stuck.Phase)
	s.Equal([]string{"c0", "c1"}, stuck.Answered)
	s.Equal([]string{"c2"}, stuck.Awaited)
	s.Empty(stuck.Dropped)
	s.Equal(spec.RoundDeadline, stuck.Deadline.Sub(start))
	done := progress()
	s.Equal(pipeline.RoundProgress{Round: 1, Phase: pipeline.StepCommit, Answered: []string{}, Awaited: []string{}}, done)
}

// Test_LegacyRoundKeepsItsDeadlineTimer: a round started by an older
// CampaignWorkflow (Protocol zero) still waits on a workflow timer, so its
// history replays; a site answering three hours late is dropped at the
// 30-minute deadline all the same.
func (s *CampaignSuite) Test_LegacyRoundKeepsItsDeadlineTimer() {
	spec := testSpec(1)
	s.env.OnActivity(pipeline.ActivityTrainLocal, mock.Anything,
		mock.MatchedBy(func(in pipeline.TrainLocalInput) bool { return in.Site == "c2" })).
		Return(s.fed.TrainLocal).After(3 * time.Hour)
	s.mockAll()
	s.env.ExecuteWorkflow(RoundWorkflow, pipeline.RoundWorkflowInput{Spec: spec, Round: 1, Protocol: pipeline.RoundProtocolLegacy})
	s.Require().True(s.env.IsWorkflowCompleted())
	s.Require().NoError(s.env.GetWorkflowError())
	ms := s.fed.committed()
	s.Require().Len(ms, 1)
	s.Equal([]string{"c0", "c1"}, ms[0].Participants)
	s.Equal([]pipeline.SiteDrop{{Site: "c2", Phase: pipeline.PhaseTrain, Reason: pipeline.DropTimeout,
		Error: "no answer within the round deadline (30m0s)"}}, ms[0].Dropped)
	s.Equal(2, s.fed.callCount(pipeline.ActivityEvaluate))
}

// update sends an update and records its outcome.
type updateOutcome struct {
	accepted, rejected bool
	err                error
	status             pipeline.CampaignStatus
}

func (s *CampaignSuite) update(name string, reason string) *updateOutcome {
	o := &updateOutcome{}
	s.env.UpdateWorkflow(name, name+"-"+reason, &testsuite.TestUpdateCallback{
		OnAccept: func() { o.accepted = true },
		OnReject: func(err error) { o.rejected, o.err = true, err },
		OnComplete: func(v any, err error) {
			if st, ok := v.(pipeline.CampaignStatus); ok {
				o.status = st
			}
			if err != nil {
				o.err = err
			}
		},
	}, pipeline.ControlInput{Reason: reason})
	return o
}

func (s *CampaignSuite) Test_PauseResumeStop() {
	// Each training takes ten minutes of workflow time, so a round is a
	// little over ten minutes and the callbacks below land mid-round.
	s.env.OnActivity(pipeline.ActivityTrainLocal, mock.Anything, mock.Anything).
		Return(s.fed.TrainLocal).After(10 * time.Minute)
	s.mockAll()
	var pause1, pause2, resume1, resume2, stop1, stop2 *updateOutcome
	var pausedStatus pipeline.CampaignStatus
	s.env.RegisterDelayedCallback(func() { pause1 = s.update(pipeline.UpdatePause, "maintenance") }, 5*time.Minute)
	s.env.RegisterDelayedCallback(func() { pause2 = s.update(pipeline.UpdatePause, "again") }, 6*time.Minute)
	// Round 1 finishes; the campaign then waits, paused, for as long as it takes.
	s.env.RegisterDelayedCallback(func() { pausedStatus = s.status() }, 5*time.Hour)
	s.env.RegisterDelayedCallback(func() { resume1 = s.update(pipeline.UpdateResume, "done") }, 6*time.Hour)
	s.env.RegisterDelayedCallback(func() { resume2 = s.update(pipeline.UpdateResume, "twice") }, 6*time.Hour+time.Minute)
	// Mid round 2: stop lets round 2 finish and commit, then ends the campaign.
	s.env.RegisterDelayedCallback(func() { stop1 = s.update(pipeline.UpdateStop, "enough") }, 6*time.Hour+5*time.Minute)
	s.env.RegisterDelayedCallback(func() { stop2 = s.update(pipeline.UpdateStop, "really") }, 6*time.Hour+6*time.Minute)

	out, err := s.run(pipeline.CampaignWorkflowInput{Spec: testSpec(5)})
	s.Require().NoError(err)

	s.True(pause1.accepted)
	s.NoError(pause1.err)
	s.Equal(pipeline.StatePaused, pause1.status.State)
	s.True(pause2.rejected, "pause while paused must be rejected")
	s.ErrorContains(pause2.err, "already paused")

	s.Equal(pipeline.StatePaused, pausedStatus.State)
	s.Equal(1, pausedStatus.RoundsDone, "the running round finished before the pause took effect")
	s.Equal("maintenance", pausedStatus.PauseReason)
	s.Zero(pausedStatus.CurrentRound)

	s.True(resume1.accepted)
	s.Equal(pipeline.StateRunning, resume1.status.State)
	s.True(resume2.rejected)
	s.ErrorContains(resume2.err, "not paused")

	s.True(stop1.accepted)
	s.Equal(pipeline.StateStopping, stop1.status.State)
	s.True(stop2.rejected)
	s.ErrorContains(stop2.err, "already stopping")

	s.Equal(pipeline.StateStopped, out.State)
	s.Equal(2, out.RoundsDone)
	s.Equal("enough", out.StopReason)
	s.Len(s.fed.committed(), 2)
	s.Equal(pipeline.StateStopped, s.status().State)
}

func (s *CampaignSuite) Test_StopWhilePausedEndsAtOnce() {
	s.mockAll()
	var stop *updateOutcome
	// Round 1 is instantaneous on the test clock: pause before it starts.
	s.env.RegisterDelayedCallback(func() { s.update(pipeline.UpdatePause, "") }, 0)
	s.env.RegisterDelayedCallback(func() { stop = s.update(pipeline.UpdateStop, "cancelled") }, time.Hour)
	out, err := s.run(pipeline.CampaignWorkflowInput{Spec: testSpec(3)})
	s.Require().NoError(err)
	s.True(stop.accepted)
	s.Equal(pipeline.StateStopped, out.State)
	s.Less(out.RoundsDone, 3)
}

// Test_StopSignalActsLikeStop: the stop signal a stopping sweep sends its
// campaigns lets the running round commit and then ends the campaign with
// the signal's reason; a second one changes nothing.
func (s *CampaignSuite) Test_StopSignalActsLikeStop() {
	s.env.OnActivity(pipeline.ActivityTrainLocal, mock.Anything, mock.Anything).
		Return(s.fed.TrainLocal).After(10 * time.Minute)
	s.mockAll()
	signal := func(reason string) func() {
		return func() { s.env.SignalWorkflow(pipeline.SignalStop, pipeline.ControlInput{Reason: reason}) }
	}
	s.env.RegisterDelayedCallback(signal("sweep sw stopped: enough"), 15*time.Minute) // mid round 2
	s.env.RegisterDelayedCallback(signal("again"), 16*time.Minute)
	out, err := s.run(pipeline.CampaignWorkflowInput{Spec: testSpec(5)})
	s.Require().NoError(err)
	s.Equal(pipeline.StateStopped, out.State)
	s.Equal(2, out.RoundsDone)
	s.Equal("sweep sw stopped: enough", out.StopReason)
	s.Len(s.fed.committed(), 2)
}

func (s *CampaignSuite) Test_StatusQueryMidRound() {
	s.env.OnActivity(pipeline.ActivityTrainLocal, mock.Anything, mock.Anything).
		Return(s.fed.TrainLocal).After(10 * time.Minute)
	s.mockAll()
	var mid pipeline.CampaignStatus
	s.env.RegisterDelayedCallback(func() { mid = s.status() }, 15*time.Minute) // during round 2
	_, err := s.run(pipeline.CampaignWorkflowInput{Spec: testSpec(3)})
	s.Require().NoError(err)
	s.Equal(pipeline.StateRunning, mid.State)
	s.Equal(1, mid.RoundsDone)
	s.Equal(2, mid.CurrentRound)
	s.Equal(3, mid.RoundsTotal)
	s.Require().NotNil(mid.LastMetrics)
	s.Equal(1, mid.LastMetrics.Round)
	s.Equal("campaigns/hc-test/round-0001/manifest.json", mid.LastManifest.Key)
}

func (s *CampaignSuite) Test_InvalidSpecIsRejectedNamingTheField() {
	spec := testSpec(3)
	spec.MinSites = 9
	_, err := s.run(pipeline.CampaignWorkflowInput{Spec: spec})
	var appErr *temporal.ApplicationError
	s.Require().True(errors.As(err, &appErr))
	s.Equal(pipeline.ErrTypeInvalidSpec, appErr.Type())
	s.Contains(appErr.Error(), "min_sites = 9")
}

// continueAsNewInput decodes the input a run handed to its successor.
func continueAsNewInput(t *testing.T, err error) pipeline.CampaignWorkflowInput {
	t.Helper()
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(err, &can), "want continue-as-new, got %v", err)
	require.Equal(t, "CampaignWorkflow", can.WorkflowType.Name)
	var in pipeline.CampaignWorkflowInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &in))
	return in
}

func (s *CampaignSuite) Test_ContinueAsNewCarriesState() {
	spec := testSpec(5)
	spec.ContinueAsNewEvery = 2
	s.mockAll()
	_, err := s.run(pipeline.CampaignWorkflowInput{Spec: spec})
	next := continueAsNewInput(s.T(), err)
	s.Equal(spec, next.Spec, "the spec is carried as given")
	st := next.State
	s.Require().NotNil(st)
	s.Equal(3, st.NextRound)
	s.Len(st.AUCCurve, 2)
	ms := s.fed.committed()
	s.Require().Len(ms, 2)
	s.Equal(st.LastManifest.SHA256, st.Carry.PrevManifestSHA256)
	s.Len(st.Carry.Models, 3)
	s.Len(st.Carry.Descriptors, 3)
	s.NotNil(st.Carry.Clustering)

	// The next run picks up at round 3 and finishes the campaign, with one
	// more continue-as-new after round 4.
	env2 := s.NewTestWorkflowEnvironment()
	env2.RegisterWorkflow(CampaignWorkflow)
	env2.RegisterWorkflow(RoundWorkflow)
	registerStubs(env2)
	fed2 := newFakeFederation()
	for _, name := range []string{pipeline.ActivityComputeDescriptor, pipeline.ActivityTrainLocal, pipeline.ActivityEvaluate,
		pipeline.ActivityClusterSites, pipeline.ActivityAggregate, pipeline.ActivityCommitRound} {
		fn := map[string]any{
			pipeline.ActivityComputeDescriptor: fed2.ComputeDescriptor, pipeline.ActivityTrainLocal: fed2.TrainLocal,
			pipeline.ActivityEvaluate: fed2.Evaluate, pipeline.ActivityClusterSites: fed2.ClusterSites,
			pipeline.ActivityAggregate: fed2.Aggregate, pipeline.ActivityCommitRound: fed2.CommitRound,
		}[name]
		env2.OnActivity(name, mock.Anything, mock.Anything).Return(fn).Maybe()
	}
	env2.ExecuteWorkflow(CampaignWorkflow, next)
	next2 := continueAsNewInput(s.T(), env2.GetWorkflowError())
	s.Equal(5, next2.State.NextRound)
	s.Len(next2.State.AUCCurve, 4)
	ms2 := fed2.committed()
	s.Require().Len(ms2, 2)
	s.Equal(3, ms2[0].Round)
	s.Equal(st.Carry.PrevManifestSHA256, ms2[0].PrevManifestSHA256, "the chain crosses continue-as-new")
	s.Zero(fed2.callCount(pipeline.ActivityComputeDescriptor), "descriptors carried, not recomputed")
}

func (s *CampaignSuite) Test_ContinueAsNewWhenSuggested() {
	s.env.SetContinueAsNewSuggested(true)
	s.mockAll()
	_, err := s.run(pipeline.CampaignWorkflowInput{Spec: testSpec(3)})
	next := continueAsNewInput(s.T(), err)
	s.Equal(2, next.State.NextRound, "suggested: continue after the first round")
}

func (s *CampaignSuite) Test_PausedStateSurvivesContinueAsNew() {
	spec := testSpec(3)
	spec.ContinueAsNewEvery = 1
	s.env.OnActivity(pipeline.ActivityTrainLocal, mock.Anything, mock.Anything).
		Return(s.fed.TrainLocal).After(10 * time.Minute)
	s.mockAll()
	s.env.RegisterDelayedCallback(func() { s.update(pipeline.UpdatePause, "hold") }, 5*time.Minute)
	_, err := s.run(pipeline.CampaignWorkflowInput{Spec: spec})
	next := continueAsNewInput(s.T(), err)
	s.True(next.State.Paused)
	s.Equal("hold", next.State.PauseReason)
}

// Test_PausesAtStopAfterRoundAndResumesFromSavedState: a run with
// StopAfterRound 2 of 4 commits rounds 1–2, saves its state and ends
// paused with a reference to it; a run from that reference (ResumeFrom)
// loads the state and commits rounds 3–4 only, its chain continuing from
// round 2's manifest: an adaptive sweep's promotion trains nothing twice.
func (s *CampaignSuite) Test_PausesAtStopAfterRoundAndResumesFromSavedState() {
	var saved pipeline.SaveStateInput
	register := func() {
		s.env.RegisterActivityWithOptions(func(context.Context, pipeline.SaveStateInput) (pipeline.ArtifactRef, error) {
			return pipeline.ArtifactRef{}, nil
		}, activity.RegisterOptions{Name: pipeline.ActivitySaveState})
		s.env.RegisterActivityWithOptions(func(context.Context, pipeline.ArtifactRef) (pipeline.CampaignState, error) {
			return pipeline.CampaignState{}, nil
		}, activity.RegisterOptions{Name: pipeline.ActivityLoadState})
		s.env.OnActivity(pipeline.ActivitySaveState, mock.Anything, mock.Anything).Return(
			func(_ context.Context, in pipeline.SaveStateInput) (pipeline.ArtifactRef, error) {
				saved = in
				return pipeline.ArtifactRef{Bucket: in.Bucket, Key: artifact.PausedStateKey(in.Campaign, in.Round)}, nil
			}).Maybe()
		s.env.OnActivity(pipeline.ActivityLoadState, mock.Anything, mock.Anything).Return(
			func(_ context.Context, ref pipeline.ArtifactRef) (pipeline.CampaignState, error) {
				if ref.Key != artifact.PausedStateKey(saved.Campaign, saved.Round) {
					return pipeline.CampaignState{}, errors.New("no state at " + ref.Key)
				}
				return saved.State, nil
			}).Maybe()
		s.mockAll()
	}
	register()
	out, err := s.run(pipeline.CampaignWorkflowInput{Spec: testSpec(4), StopAfterRound: 2})
	s.Require().NoError(err)
	s.Equal(pipeline.StatePaused, out.State)
	s.Equal(2, out.RoundsDone)
	s.Require().NotNil(out.Resume)
	s.Equal("campaigns/hc-test/paused-0002.json", out.Resume.Key)
	s.Equal(3, saved.State.NextRound)
	s.Len(saved.State.AUCCurve, 2)
	s.Len(s.fed.committed(), 2)

	// The promotion: a new run from the saved state.
	s.env = s.NewTestWorkflowEnvironment()
	s.env.RegisterWorkflow(CampaignWorkflow)
	s.env.RegisterWorkflow(RoundWorkflow)
	registerStubs(s.env)
	register()
	out, err = s.run(pipeline.CampaignWorkflowInput{Spec: testSpec(4), ResumeFrom: out.Resume})
	s.Require().NoError(err)
	s.Equal(pipeline.StateDone, out.State)
	s.Equal(4, out.RoundsDone)
	s.Len(out.AUCCurve, 4)
	s.Nil(out.Resume)
	ms := s.fed.committed()
	s.Require().Len(ms, 4, "rounds 1–2, then 3–4: none twice")
	for i, m := range ms {
		s.Equal(i+1, m.Round)
	}
	s.NotEmpty(ms[2].PrevManifestSHA256, "round 3 chains to round 2's manifest")
}
