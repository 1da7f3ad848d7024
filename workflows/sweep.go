package workflows

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ptopofl/ptopofl/pipeline"
)

// sweepResultsTimeout bounds one attempt of BuildSweepResults, which reads
// every round manifest of every campaign.
const sweepResultsTimeout = 30 * time.Minute

// SweepWorkflow runs a grid of campaigns (pipeline.SweepSpec.Campaigns:
// federations × methods × settings × seeds) as child CampaignWorkflows with
// workflow IDs "<sweep>/<campaign>", at most Concurrency at a time, then
// has the server build sweeps/<sweep>/results.parquet and curves.parquet.
//
// Durability. The children are workflows of their own: after a crash of
// any process the sweep and its running campaigns carry on, and a replayed
// sweep finds its children again by their deterministic IDs.
//
// Control. The "status" query returns a pipeline.SweepStatus (campaigns
// done out of total; an adaptive sweep's trials so far). The updates act
// as a campaign's do, on every running campaign: "pause" starts no new
// campaign and pauses the running ones after their running round
// (pipeline.SignalPause), "resume" resumes them (pipeline.SignalResume)
// and lets the sweep go on, and "stop" starts no new campaign, stops the
// running ones after their running round (at once when paused;
// pipeline.SignalStop, with reason "sweep <name> stopped: <reason>") and
// then builds the tables from the campaigns that ran (state "stopped").
// Sweeps paused before versionPauseChildren let their running campaigns
// go on, and replay so.
//
// Failures. A campaign that fails (below quorum, say) is recorded as failed
// with its error and does not fail the sweep: the other grid points are
// still worth having, and the results table says which one failed and why.
//
// History size. After ContinueAsNewEvery campaigns started in one run, or
// when the server suggests it, the sweep starts no more, waits for the
// running ones (children must not outlive the run that started them), and
// continues as new carrying a pipeline.SweepState of a few numbers per campaign.
func SweepWorkflow(ctx workflow.Context, in pipeline.SweepWorkflowInput) (pipeline.SweepWorkflowOutput, error) {
	spec := in.Spec.WithDefaults()
	// Histories begun before the spec checks of versionSpecSizeChecks
	// replay under the rules they started with (a running campaign must
	// not fail its own validation on upgrade); new runs get every check.
	validate := spec.Validate
	switch workflow.GetVersion(ctx, versionSpecSizeChecks, workflow.DefaultVersion, 2) {
	case workflow.DefaultVersion:
		validate = spec.LegacyValidate
	case 1:
		validate = spec.ValidateBeforeNameChecks
	}
	if err := validate(); err != nil {
		return pipeline.SweepWorkflowOutput{}, temporal.NewNonRetryableApplicationError(
			"invalid sweep spec: "+err.Error(), pipeline.ErrTypeInvalidSpec, nil)
	}
	campaigns, err := spec.Campaigns()
	if err != nil { // Validate expanded the same grid: cannot happen
		return pipeline.SweepWorkflowOutput{}, err
	}
	s := &sweep{spec: spec, campaigns: campaigns, running: map[int]bool{}, children: map[int]workflow.ChildWorkflowFuture{}, colocatedQueue: in.ColocatedQueue}
	if in.State != nil {
		s.st = *in.State
	}
	if spec.Search != nil && s.st.Search == nil {
		s.st.Search = &pipeline.SearchState{Budget: spec.Search.Budget, TrialCap: spec.Search.Trials}
	}
	if err := s.registerHandlers(ctx); err != nil {
		return pipeline.SweepWorkflowOutput{}, err
	}
	actx := workflow.WithActivityOptions(ctx, serverActivityOptions())
	if !s.st.Recorded {
		var rec pipeline.RecordSweepOutput
		if err := workflow.ExecuteActivity(actx, pipeline.ActivityRecordSweep, pipeline.RecordSweepInput{Spec: spec}).Get(ctx, &rec); err != nil {
			return pipeline.SweepWorkflowOutput{}, fmt.Errorf("sweep %s: record specs: %w", spec.Sweep, err)
		}
		s.st.Recorded = true
	}

	if spec.Search != nil {
		return s.runSearch(ctx, in)
	}
	startedThisRun := 0
	total := len(campaigns)
	runLimitReached := func() bool {
		return startedThisRun >= spec.ContinueAsNewEvery || workflow.GetInfo(ctx).GetContinueAsNewSuggested()
	}
	for {
		var canStart bool
		err := workflow.Await(ctx, func() bool {
			canStart = !s.st.Paused && !s.st.Stopping && s.st.Next < total &&
				len(s.running) < spec.Concurrency && !runLimitReached()
			drained := len(s.running) == 0 && (s.st.Stopping || s.st.Next >= total || runLimitReached())
			return canStart || drained
		})
		if err != nil {
			return pipeline.SweepWorkflowOutput{}, err
		}
		if !canStart {
			break
		}
		s.start(ctx, campaigns[s.st.Next])
		s.st.Next++
		startedThisRun++
	}

	if !s.st.Stopping && s.st.Next < total {
		// The run limit: every child of this run has finished (drained), so
		// nothing is lost by closing it.
		if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
			return pipeline.SweepWorkflowOutput{}, err
		}
		s.st.ContinuedAsNew++
		return pipeline.SweepWorkflowOutput{}, workflow.NewContinueAsNewError(ctx, SweepWorkflow,
			pipeline.SweepWorkflowInput{Spec: in.Spec, State: &s.st, ColocatedQueue: in.ColocatedQueue})
	}

	return s.finish(ctx, pipeline.BuildSweepResultsInput{Spec: spec, Outcomes: s.sortedOutcomes()}, s.st.Next < total)
}

// finish has the server build the sweep's tables from in (the outcomes,
// and an adaptive sweep's record), waits for the updates it accepted and
// returns the sweep's output: state stopped when stopped, done otherwise.
func (s *sweep) finish(ctx workflow.Context, in pipeline.BuildSweepResultsInput, stopped bool) (pipeline.SweepWorkflowOutput, error) {
	s.building = true
	rctx := workflow.WithActivityOptions(ctx, func() workflow.ActivityOptions {
		o := serverActivityOptions()
		o.StartToCloseTimeout = sweepResultsTimeout
		return o
	}())
	var res pipeline.BuildSweepResultsOutput
	if err := workflow.ExecuteActivity(rctx, pipeline.ActivityBuildSweepResults, in).Get(ctx, &res); err != nil {
		return pipeline.SweepWorkflowOutput{}, fmt.Errorf("sweep %s: build results: %w", s.spec.Sweep, err)
	}
	s.finished = pipeline.SweepDone
	if stopped {
		s.finished = pipeline.SweepStopped
	}
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return pipeline.SweepWorkflowOutput{}, err
	}
	st := s.status()
	return pipeline.SweepWorkflowOutput{
		Sweep: s.spec.Sweep, State: s.finished,
		CampaignsDone: st.CampaignsDone, CampaignsTotal: st.CampaignsTotal, Failed: st.Failed,
		Results: res.Results, Curves: res.Curves, Outcomes: in.Outcomes, StopReason: s.st.StopReason,
		Search: s.st.Search, ContinuedAsNew: s.st.ContinuedAsNew,
	}, nil
}

// sweep is the in-memory state of one run of SweepWorkflow. Child
// coroutines and handlers share it without locks: the SDK runs workflow
// code one coroutine at a time.
type sweep struct {
	spec           pipeline.SweepSpec
	campaigns      []pipeline.SweepCampaign
	st             pipeline.SweepState
	running        map[int]bool                         // campaign index → running; read only through sorted keys
	children       map[int]workflow.ChildWorkflowFuture // campaign index → its child, while running
	building       bool
	finished       string
	colocatedQueue string // the input's ColocatedQueue, passed to every campaign
	search         searchSweep
}

// start launches campaign c as a child workflow and records its outcome
// when it ends, from a coroutine of its own so that up to Concurrency
// children run at once.
func (s *sweep) start(ctx workflow.Context, c pipeline.SweepCampaign) {
	s.launch(ctx, c, pipeline.CampaignWorkflowInput{Spec: c.Spec, ColocatedQueue: s.colocatedQueue},
		func(o pipeline.CampaignOutcome, _ pipeline.CampaignWorkflowOutput) {
			s.st.Outcomes = append(s.st.Outcomes, o)
		})
}

// launch starts campaign c as a child workflow with input in and calls
// done with its outcome (and its output, zero when it failed) when it
// ends, from a coroutine of its own.
func (s *sweep) launch(ctx workflow.Context, c pipeline.SweepCampaign, in pipeline.CampaignWorkflowInput,
	done func(pipeline.CampaignOutcome, pipeline.CampaignWorkflowOutput)) {
	s.running[c.Index] = true
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		// Deterministic: a replayed sweep finds the same child again. A
		// promoted trial's campaign starts a new run under the ID of
		// the one that paused (closed by then).
		WorkflowID: c.WorkflowID,
		TaskQueue:  s.campaignQueue(ctx),
	})
	fut := workflow.ExecuteChildWorkflow(cctx, pipeline.CampaignWorkflowName, in)
	s.children[c.Index] = fut
	workflow.Go(ctx, func(gctx workflow.Context) {
		var out pipeline.CampaignWorkflowOutput
		err := fut.Get(gctx, &out)
		o := pipeline.CampaignOutcome{Index: c.Index, Campaign: c.Spec.Campaign}
		if err != nil {
			// The reason once, not the chain that repeats it per layer.
			o.State, o.Error = pipeline.StateFailed, pipeline.DescribeFailure(c.Spec.Campaign, err).Reason()
			var appErr *temporal.ApplicationError
			var qf pipeline.QuorumFailure
			if errors.As(err, &appErr) && appErr.Type() == pipeline.ErrTypeQuorumNotMet && appErr.HasDetails() && appErr.Details(&qf) == nil {
				m := qf.Manifest
				o.LastManifest, o.RoundsDone = &m, qf.Round-1
			}
		} else {
			o.State, o.RoundsDone, o.LastManifest = out.State, out.RoundsDone, out.LastManifest
			if n := len(out.AUCCurve); n > 0 {
				o.FinalAUC = out.AUCCurve[n-1]
			}
			if n := len(out.AccCurve); n > 0 {
				o.FinalAcc = out.AccCurve[n-1]
			}
		}
		delete(s.running, c.Index)
		delete(s.children, c.Index)
		done(o, out)
	})
}

// campaignQueue is the task queue the sweep's campaigns run on: the
// colocated worker's, whose process serves the sites, so that they run
// their rounds inline (CampaignWorkflow), under versionInlineRounds; the
// server's for a sweep whose sites run workers of their own, and in the
// replay of a sweep begun before.
func (s *sweep) campaignQueue(ctx workflow.Context) string {
	if s.colocatedQueue != "" && workflow.GetVersion(ctx, versionInlineRounds, workflow.DefaultVersion, 1) >= 1 {
		return s.colocatedQueue
	}
	return pipeline.ServerTaskQueue
}

// stopChildren signals every running campaign to stop after its running
// round (pipeline.SignalStop), in campaign index order, so that stopping a
// sweep stops its work instead of waiting for whole campaigns. Sweeps
// stopped before versionStopChildren let their campaigns run to the end,
// and replay so.
func (s *sweep) stopChildren(ctx workflow.Context, reason string) {
	if workflow.GetVersion(ctx, versionStopChildren, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return
	}
	for _, i := range s.runningIndices() {
		fut, name := s.children[i], s.campaigns[i].Spec.Campaign
		workflow.Go(ctx, func(gctx workflow.Context) {
			// SignalChildWorkflow waits for the child to have started. A
			// child that ended meanwhile cannot be signalled; its outcome
			// is recorded as it ended.
			if err := fut.SignalChildWorkflow(gctx, pipeline.SignalStop, pipeline.ControlInput{Reason: reason}).Get(gctx, nil); err != nil {
				workflow.GetLogger(gctx).Info("stop signal not delivered", "campaign", name, "error", err)
			}
		})
	}
}

// signalChildren sends signal (pipeline.SignalPause or SignalResume) to
// every running campaign, in campaign index order, for a sweep's pause or
// resume; sweeps paused or resumed before versionPauseChildren signalled
// none, and replay so.
func (s *sweep) signalChildren(ctx workflow.Context, signal, reason string) {
	if workflow.GetVersion(ctx, versionPauseChildren, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return
	}
	for _, i := range s.runningIndices() {
		fut, name := s.children[i], s.campaigns[i].Spec.Campaign
		workflow.Go(ctx, func(gctx workflow.Context) {
			// As for a stop: a child that ended meanwhile cannot be
			// signalled, and its outcome is recorded as it ended.
			if err := fut.SignalChildWorkflow(gctx, signal, pipeline.ControlInput{Reason: reason}).Get(gctx, nil); err != nil {
				workflow.GetLogger(gctx).Info("signal not delivered", "signal", signal, "campaign", name, "error", err)
			}
		})
	}
}

// runningIndices are the indices of the running campaigns, sorted: ranging
// over the map would visit them in a different order on replay.
func (s *sweep) runningIndices() []int {
	idx := make([]int, 0, len(s.running))
	//workflowcheck:ignore (the keys are sorted below)
	for i := range s.running {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	return idx
}

func (s *sweep) sortedOutcomes() []pipeline.CampaignOutcome {
	out := append([]pipeline.CampaignOutcome(nil), s.st.Outcomes...)
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}

func (s *sweep) status() pipeline.SweepStatus {
	st := pipeline.SweepStatus{
		Sweep: s.spec.Sweep, State: controlState(s.finished, s.st.Stopping, s.st.Paused),
		CampaignsDone: len(s.st.Outcomes), CampaignsTotal: len(s.campaigns),
		PauseReason: s.st.PauseReason, StopReason: s.st.StopReason, ContinuedAsNew: s.st.ContinuedAsNew,
	}
	for _, o := range s.st.Outcomes {
		if o.State == pipeline.StateFailed {
			st.Failed++
		}
	}
	if s.st.Search != nil {
		// An adaptive sweep: its campaigns so far, done when not running.
		st.CampaignsDone, st.CampaignsTotal, st.Failed = 0, len(s.campaigns), 0
		for _, t := range s.st.Search.Trials {
			st.Trials++
			for _, c := range t.Campaigns {
				if !c.Running && c.Outcome.State != "" {
					st.CampaignsDone++
				}
				if c.Outcome.State == pipeline.StateFailed {
					st.Failed++
				}
			}
		}
	}
	for _, i := range s.runningIndices() {
		st.Running = append(st.Running, s.campaigns[i].Spec.Campaign)
	}
	if ss := s.st.Search; ss != nil {
		c := *ss
		c.Trials = historyOf(ss.Trials)
		st.Search = &c
	}
	return st
}

// registerHandlers installs the status and spec queries and the control
// updates.
// Validators only read state (a rejected update is not in the history).
func (s *sweep) registerHandlers(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, pipeline.QueryStatus, func() (pipeline.SweepStatus, error) {
		return s.status(), nil
	}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, pipeline.QuerySweepSpec, func() (pipeline.SweepSpec, error) {
		return s.spec, nil
	}); err != nil {
		return err
	}
	name := s.spec.Sweep
	handlers := []struct {
		name     string
		validate func() error
		apply    func(pipeline.ControlInput)
	}{
		{pipeline.UpdatePause, func() error {
			switch {
			case s.st.Stopping:
				return fmt.Errorf("sweep %s is stopping; pause is pointless", name)
			case s.st.Paused:
				return fmt.Errorf("sweep %s is already paused", name)
			}
			return nil
		}, func(in pipeline.ControlInput) { s.st.Paused, s.st.PauseReason = true, in.Reason }},
		{pipeline.UpdateResume, func() error {
			if !s.st.Paused {
				return fmt.Errorf("sweep %s is not paused", name)
			}
			return nil
		}, func(pipeline.ControlInput) { s.st.Paused, s.st.PauseReason = false, "" }},
		{pipeline.UpdateStop, func() error {
			if s.st.Stopping {
				return fmt.Errorf("sweep %s is already stopping", name)
			}
			return nil
		}, func(in pipeline.ControlInput) { s.st.Stopping, s.st.StopReason = true, in.Reason }},
	}
	for _, h := range handlers {
		h := h
		err := workflow.SetUpdateHandlerWithOptions(ctx, h.name,
			func(ctx workflow.Context, in pipeline.ControlInput) (pipeline.SweepStatus, error) {
				h.apply(in)
				reason := "sweep " + name + " " + map[string]string{pipeline.UpdatePause: "paused", pipeline.UpdateResume: "resumed", pipeline.UpdateStop: "stopped"}[h.name]
				if in.Reason != "" {
					reason += ": " + in.Reason
				}
				switch h.name {
				case pipeline.UpdateStop:
					s.stopChildren(ctx, reason)
				case pipeline.UpdatePause:
					s.signalChildren(ctx, pipeline.SignalPause, reason)
				case pipeline.UpdateResume:
					s.signalChildren(ctx, pipeline.SignalResume, reason)
				}
				return s.status(), nil
			},
			workflow.UpdateHandlerOptions{
				Validator: func(ctx workflow.Context, in pipeline.ControlInput) error {
					if s.finished != "" || s.building {
						return fmt.Errorf("sweep %s has run all its campaigns", name)
					}
					return h.validate()
				},
			})
		if err != nil {
			return err
		}
	}
	if s.spec.Search == nil {
		return nil
	}
	return workflow.SetUpdateHandlerWithOptions(ctx, pipeline.UpdateExtend,
		func(ctx workflow.Context, in pipeline.ExtendInput) (pipeline.SweepStatus, error) {
			s.st.Search.Budget += in.Budget
			s.st.Search.TrialCap += in.Trials
			s.search.idle = false
			return s.status(), nil
		},
		workflow.UpdateHandlerOptions{
			Validator: func(ctx workflow.Context, in pipeline.ExtendInput) error {
				if s.finished != "" || s.building {
					return fmt.Errorf("sweep %s has ended", name)
				}
				if s.st.Stopping {
					return fmt.Errorf("sweep %s is stopping", name)
				}
				return pipeline.ValidateExtend(name, s.st.Search, in)
			},
		})
}
