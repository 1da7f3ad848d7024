package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ptopofl/ptopofl/pipeline"
)

// CampaignWorkflow runs a federated campaign: one child RoundWorkflow per
// round, with workflow ID pipeline.RoundWorkflowID (`<campaign>/round-0007`),
// or, for a campaign whose sites this process serves and that runs on
// their colocated worker (inlineRounds), each round as a stage of the
// campaign workflow itself.
//
// Control. The "status" query returns a pipeline.CampaignStatus. "pause",
// "resume" and "stop" are Updates rather than signals so that the CLI gets
// an acknowledgement or a rejection (a validator rejects pause when already
// paused, resume when not paused, stop when already stopping). All three act
// at round boundaries: a running round always finishes and commits, so no
// half-round is ever lost. A paused campaign waits before its next round;
// a stop ends it (state "stopped") after the running round, or at once when
// paused.
//
// Failure. A round below quorum commits a manifest saying why and fails;
// the campaign then fails too with the same ErrTypeQuorumNotMet error (state
// "failed"), since going on would hide a federation that no longer meets
// the guarantee it was started with. Every round committed before stays.
//
// Attempts. A failed or stopped campaign is started again as a new run
// under the same workflow ID with Attempt n+1, the State its last run
// reports through the "resume" query, and the earlier attempt's manifest
// of the next round as Supersedes. Its round workflows and objects are
// named after the attempt (AttemptRoundWorkflowID, artifact.RoundKeys), so
// nothing of the earlier attempt is overwritten. A history without Attempt
// (every one begun before attempts existed) runs exactly as before.
//
// History size. The campaign continues as new after ContinueAsNewEvery
// rounds, or earlier when the server suggests it, carrying only a
// pipeline.CampaignState of references and a few numbers per round.
func CampaignWorkflow(ctx workflow.Context, in pipeline.CampaignWorkflowInput) (pipeline.CampaignWorkflowOutput, error) {
	// Defaults are applied inside the workflow, not only by the starter, so a
	// spec that reaches Temporal by another route is held to the same rules.
	spec := in.Spec.WithDefaults()
	c := &campaign{spec: spec, st: pipeline.CampaignState{NextRound: 1}, attempt: in.Attempt, supersedes: in.Supersedes, colocatedQueue: in.ColocatedQueue}
	if in.State != nil {
		c.st = *in.State
	}
	// The resume query first, so that even a run that fails its spec
	// checks says where a next attempt would start. A query handler adds
	// nothing to the history.
	if err := c.registerResumeQuery(ctx); err != nil {
		return pipeline.CampaignWorkflowOutput{}, err
	}
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
		return pipeline.CampaignWorkflowOutput{}, temporal.NewNonRetryableApplicationError(
			"invalid campaign spec: "+err.Error(), pipeline.ErrTypeInvalidSpec, nil)
	}
	if err := c.registerHandlers(ctx); err != nil {
		return pipeline.CampaignWorkflowOutput{}, err
	}
	if c.inline = c.inlineRounds(ctx); c.inline {
		// The running round's progress, under the query a child round
		// answers: a query handler adds nothing to the history.
		err := workflow.SetQueryHandler(ctx, pipeline.QueryRoundProgress, func() (pipeline.RoundProgress, error) {
			if c.progress == nil {
				return pipeline.RoundProgress{}, fmt.Errorf("campaign %s runs no round now", spec.Campaign)
			}
			return c.progress.snapshot(), nil
		})
		if err != nil {
			return pipeline.CampaignWorkflowOutput{}, err
		}
	}
	if in.State == nil && in.ResumeFrom != nil {
		// A promoted trial of an adaptive sweep: go on from the state its
		// paused run saved.
		actx := workflow.WithActivityOptions(ctx, serverActivityOptions())
		if err := workflow.ExecuteActivity(actx, pipeline.ActivityLoadState, *in.ResumeFrom).Get(ctx, &c.st); err != nil {
			return pipeline.CampaignWorkflowOutput{}, fmt.Errorf("campaign %s: load its paused state: %w", spec.Campaign, err)
		}
	}

	// held: the run has committed its StopAfterRound (an adaptive
	// sweep's rung) and ends paused there.
	held := func() bool { return in.StopAfterRound > 0 && c.st.NextRound > in.StopAfterRound }
	roundsThisRun := 0
	for c.st.NextRound <= spec.Rounds {
		if err := c.boundary(ctx); err != nil {
			return pipeline.CampaignWorkflowOutput{}, err
		}
		// Pause acts between rounds; a stop also releases a paused campaign.
		if err := workflow.Await(ctx, func() bool { return !c.st.Paused || c.st.Stopping }); err != nil {
			return pipeline.CampaignWorkflowOutput{}, err
		}
		if c.st.Stopping || held() {
			break
		}
		if err := c.runRound(ctx); err != nil {
			return pipeline.CampaignWorkflowOutput{}, err
		}
		roundsThisRun++
		if c.st.Stopping || c.st.NextRound > spec.Rounds || held() {
			break
		}
		if roundsThisRun >= spec.ContinueAsNewEvery || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			// An update accepted in this run must finish here: its
			// acknowledgement would be lost if the run closed under it.
			if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
				return pipeline.CampaignWorkflowOutput{}, err
			}
			// The original spec, not the defaulted one: defaults are
			// re-applied by the next run, so both runs see the same spec.
			return pipeline.CampaignWorkflowOutput{}, workflow.NewContinueAsNewError(ctx, CampaignWorkflow,
				pipeline.CampaignWorkflowInput{Spec: in.Spec, State: &c.st, Attempt: in.Attempt, Supersedes: c.supersedes, ColocatedQueue: in.ColocatedQueue, StopAfterRound: in.StopAfterRound})
		}
	}

	c.finished = pipeline.StateDone
	var resume *pipeline.ArtifactRef
	switch {
	case c.st.NextRound <= spec.Rounds && !c.st.Stopping && held():
		// Paused at an adaptive sweep's rung: the state goes to S3 and
		// the output refers to it.
		actx := workflow.WithActivityOptions(ctx, serverActivityOptions())
		var ref pipeline.ArtifactRef
		if err := workflow.ExecuteActivity(actx, pipeline.ActivitySaveState, pipeline.SaveStateInput{
			Campaign: spec.Campaign, Bucket: spec.Bucket, Round: c.st.NextRound - 1, State: c.st,
		}).Get(ctx, &ref); err != nil {
			return pipeline.CampaignWorkflowOutput{}, fmt.Errorf("campaign %s: save its paused state: %w", spec.Campaign, err)
		}
		c.finished, resume = pipeline.StatePaused, &ref
	case c.st.NextRound <= spec.Rounds:
		c.finished = pipeline.StateStopped
	}
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return pipeline.CampaignWorkflowOutput{}, err
	}
	out := pipeline.CampaignWorkflowOutput{
		Campaign:   spec.Campaign,
		Method:     spec.Method,
		State:      c.finished,
		RoundsDone: c.st.NextRound - 1,
		AUCCurve:   c.st.AUCCurve,
		AccCurve:   c.st.AccCurve,
		Clusters:   c.st.Carry.Clusters,

		LastManifest:   c.st.LastManifest,
		StopReason:     c.st.StopReason,
		UpdateAccCurve: c.st.UpdateAccCurve,
		ValAUCCurve:    c.st.ValAUCCurve,
		ValAccCurve:    c.st.ValAccCurve,
		Privacy:        c.st.LastPrivacy,
		Resume:         resume,
	}
	for _, cl := range c.st.Carry.Clusters {
		if cl.Flagged {
			out.Flagged = append(out.Flagged, cl.Site)
		}
	}
	return out, nil
}

// campaign is the in-memory state of one run of CampaignWorkflow. Handlers
// and the main loop share it without locks: the SDK runs workflow code one
// coroutine at a time.
type campaign struct {
	spec          pipeline.CampaignSpec
	st            pipeline.CampaignState
	currentRound  int                 // running round, 0 between rounds
	lastDropped   []pipeline.SiteDrop // drops of the last finished round
	finished      string              // "" while running, then done/stopped/failed
	failureReason string
	// attempt is the input's Attempt (0 or 1: the first); supersedes the
	// earlier attempt's manifest of the next round, until that round commits.
	attempt    int
	supersedes *pipeline.ArtifactRef
	// failedManifest is the manifest of a round that failed below quorum:
	// the status reports it as the last manifest, while st keeps the state
	// after the last committed round, where a new attempt resumes.
	failedManifest *pipeline.ArtifactRef
	// colocatedQueue is the input's ColocatedQueue, where every round runs.
	colocatedQueue string
	// inline: the rounds run as stages of this workflow (inlineRounds);
	// progress is the running inline round's, for the progress and status
	// queries (nil between rounds).
	inline   bool
	progress *roundProgress
}

func (c *campaign) runRound(ctx workflow.Context) error {
	n := c.st.NextRound
	var privacy *pipeline.RoundPrivacy
	if c.spec.Hyperparameters.IsDP() {
		p, exceeded, err := c.chargePrivacy(ctx, n)
		if err != nil {
			return c.fail(n, err)
		}
		if exceeded != "" {
			// The budget is spent: the campaign ends here, stopped, with
			// the reason; no site is asked for anything more.
			c.st.Stopping, c.st.StopReason = true, exceeded
			return nil
		}
		privacy = p
	}
	c.currentRound = n
	defer func() { c.currentRound = 0 }()
	rin := pipeline.RoundWorkflowInput{
		Spec: c.spec, Round: n, Carry: c.st.Carry, Protocol: pipeline.RoundProtocolCurrent,
		Attempt: c.attempt, Supersedes: c.supersedes, Privacy: privacy, ColocatedQueue: c.colocatedQueue,
	}
	var out pipeline.RoundWorkflowOutput
	var err error
	if c.inline {
		out, err = c.runInline(ctx, rin)
	} else {
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
			// A deterministic ID per round: a replayed or continued campaign finds
			// its round again instead of starting a second one, and operators can
			// find a round by name.
			// A later attempt's rounds get IDs of their own, so they never meet
			// the earlier attempt's workflow of the same round.
			WorkflowID: pipeline.AttemptRoundWorkflowID(c.spec.Campaign, n, c.attempt),
			TaskQueue:  c.roundQueue(),
		})
		err = workflow.ExecuteChildWorkflow(cctx, RoundWorkflow, rin).Get(ctx, &out)
	}
	if err != nil {
		return c.fail(n, err)
	}
	c.supersedes = nil
	c.st.Carry = out.Carry
	c.st.NextRound = n + 1
	c.st.AUCCurve = append(c.st.AUCCurve, out.Mean.AUC)
	c.st.AccCurve = append(c.st.AccCurve, out.Mean.Accuracy)
	if out.Mean.UpdateAccuracy != nil {
		c.st.UpdateAccCurve = append(c.st.UpdateAccCurve, *out.Mean.UpdateAccuracy)
	}
	if out.Mean.ValAUC != nil && out.Mean.ValAccuracy != nil {
		c.st.ValAUCCurve = append(c.st.ValAUCCurve, *out.Mean.ValAUC)
		c.st.ValAccCurve = append(c.st.ValAccCurve, *out.Mean.ValAccuracy)
	}
	manifest := out.Manifest
	mean := out.Mean
	c.st.LastManifest = &manifest
	c.st.LastMetrics = &mean
	c.lastDropped = out.Dropped
	return nil
}

// inlineRounds reports whether this run runs its rounds as stages of its
// own instead of as child RoundWorkflows: when it runs on its
// ColocatedQueue, whose worker serves every site in its own process, and
// under versionInlineRounds. A campaign started on the server queue
// (every campaign begun before, and one whose sites run workers of their
// own) keeps its child rounds, and so do its replays; no version marker
// is recorded for it.
//
// What a child round costs that an inline one does not: the child's start
// and close (its execution, history and visibility records, the
// transfer tasks that start it and report its end), the parent's events
// and workflow tasks that learn of both, and the round's input and output
// sent through the server twice. The round's steps, their local
// activities, inputs, outputs and artifacts are the same (round.run), so
// the manifests are the same bytes.
func (c *campaign) inlineRounds(ctx workflow.Context) bool {
	if c.colocatedQueue == "" || workflow.GetInfo(ctx).TaskQueueName != c.colocatedQueue {
		return false
	}
	return workflow.GetVersion(ctx, versionInlineRounds, workflow.DefaultVersion, 1) >= 1
}

// runInline runs round in.Round as a stage of this workflow, its progress
// answered by the campaign's progress and status queries.
func (c *campaign) runInline(ctx workflow.Context, in pipeline.RoundWorkflowInput) (pipeline.RoundWorkflowOutput, error) {
	r := newRound(ctx, in)
	c.progress = r.progress
	defer func() { c.progress = nil }()
	return r.run(ctx)
}

// boundary ends the workflow task before an inline round, as starting
// a child round did: the history then records the campaign's state and
// every round before it (the resume point a restart after a termination
// reads, pipeline.QueryResume, exists only once a workflow task has
// completed), queries and updates held while the task ran are answered,
// and pause and stop act here. Without it a run of inline rounds is one
// workflow task whose local activities keep coming back (the SDK only
// heartbeats it, after 80 % of its timeout). It runs
// pipeline.ActivityRoundBoundary, which does nothing, on the colocated
// queue; a timer would end the task as well, but the server fires timers
// about a second late, which would cost more than the child round saves.
func (c *campaign) boundary(ctx workflow.Context) error {
	if !c.inline {
		return nil
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           c.colocatedQueue,
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	})
	return workflow.ExecuteActivity(actx, pipeline.ActivityRoundBoundary).Get(ctx, nil)
}

// fail ends the campaign after round n failed. A quorum failure keeps its
// type and details, so the CLI can print the manifest that says why.
func (c *campaign) fail(n int, err error) error {
	c.finished = pipeline.StateFailed
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Type() == pipeline.ErrTypeQuorumNotMet {
		var qf pipeline.QuorumFailure
		if appErr.HasDetails() && appErr.Details(&qf) == nil {
			c.failureReason = qf.Reason
			c.lastDropped = qf.Dropped
			manifest := qf.Manifest
			c.failedManifest = &manifest
		} else {
			c.failureReason = appErr.Message()
		}
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("campaign %s stopped: %s", c.spec.Campaign, appErr.Message()),
			pipeline.ErrTypeQuorumNotMet, nil, qf)
	}
	// The status query's reason is the root cause once; the error returned
	// keeps the whole chain, its types and retry flags.
	c.failureReason = pipeline.DescribeFailure(c.spec.Campaign, err).Reason()
	return fmt.Errorf("campaign %s: round %d: %w", c.spec.Campaign, n, err)
}

func (c *campaign) status() pipeline.CampaignStatus {
	s := pipeline.CampaignStatus{
		Campaign:      c.spec.Campaign,
		State:         controlState(c.finished, c.st.Stopping, c.st.Paused),
		RoundsDone:    c.st.NextRound - 1,
		RoundsTotal:   c.spec.Rounds,
		CurrentRound:  c.currentRound,
		LastMetrics:   c.st.LastMetrics,
		LastManifest:  c.st.LastManifest,
		LastDropped:   c.lastDropped,
		PauseReason:   c.st.PauseReason,
		StopReason:    c.st.StopReason,
		FailureReason: c.failureReason,
		Privacy:       c.st.LastPrivacy,
	}
	if c.failedManifest != nil {
		s.LastManifest = c.failedManifest
	}
	if c.progress != nil {
		// The inline round's progress, which a child round answers
		// through its own query.
		p := c.progress.snapshot()
		s.Round = &p
	}
	return s
}

// controlState is the state a workflow under pause and stop control
// reports (campaigns and sweeps name their states alike): its end state
// once finished, else stopping, paused or running.
func controlState(finished string, stopping, paused bool) string {
	switch {
	case finished != "":
		return finished
	case stopping:
		return pipeline.StateStopping
	case paused:
		return pipeline.StatePaused
	}
	return pipeline.StateRunning
}

// registerResumeQuery installs the query that says where a new attempt
// resumes. Temporal answers it for a closed run too, by replaying it, so
// the starter reads the state after the last committed round from the run
// that failed or stopped.
func (c *campaign) registerResumeQuery(ctx workflow.Context) error {
	return workflow.SetQueryHandler(ctx, pipeline.QueryResume, func() (pipeline.ResumePoint, error) {
		return pipeline.ResumePoint{Attempt: max(c.attempt, 1), State: c.st}, nil
	})
}

// registerHandlers installs the status query and the control updates.
// Validators only read state: a validator that changed it would change
// the workflow even for a rejected update, which is never written to the
// history, and replay would diverge.
func (c *campaign) registerHandlers(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, pipeline.QueryStatus, func() (pipeline.CampaignStatus, error) {
		return c.status(), nil
	}); err != nil {
		return err
	}

	notOver := func() error {
		if c.finished != "" {
			return fmt.Errorf("campaign %s is %s", c.spec.Campaign, c.finished)
		}
		return nil
	}
	handlers := []struct {
		name     string
		validate func(pipeline.ControlInput) error
		apply    func(pipeline.ControlInput)
	}{
		{
			name: pipeline.UpdatePause,
			validate: func(pipeline.ControlInput) error {
				switch {
				case c.st.Stopping:
					return fmt.Errorf("campaign %s is stopping; pause is pointless", c.spec.Campaign)
				case c.st.Paused:
					return fmt.Errorf("campaign %s is already paused", c.spec.Campaign)
				}
				return nil
			},
			apply: func(in pipeline.ControlInput) { c.st.Paused, c.st.PauseReason = true, in.Reason },
		},
		{
			name: pipeline.UpdateResume,
			validate: func(pipeline.ControlInput) error {
				if !c.st.Paused {
					return fmt.Errorf("campaign %s is not paused", c.spec.Campaign)
				}
				return nil
			},
			apply: func(pipeline.ControlInput) { c.st.Paused, c.st.PauseReason = false, "" },
		},
		{
			name: pipeline.UpdateStop,
			validate: func(pipeline.ControlInput) error {
				if c.st.Stopping {
					return fmt.Errorf("campaign %s is already stopping", c.spec.Campaign)
				}
				return nil
			},
			apply: func(in pipeline.ControlInput) { c.st.Stopping, c.st.StopReason = true, in.Reason },
		},
	}
	for _, h := range handlers {
		h := h
		err := workflow.SetUpdateHandlerWithOptions(ctx, h.name,
			func(ctx workflow.Context, in pipeline.ControlInput) (pipeline.CampaignStatus, error) {
				h.apply(in)
				return c.status(), nil
			},
			workflow.UpdateHandlerOptions{
				Validator: func(ctx workflow.Context, in pipeline.ControlInput) error {
					if err := notOver(); err != nil {
						return err
					}
					return h.validate(in)
				},
			})
		if err != nil {
			return err
		}
	}
	// A sweep stops its running campaigns with a signal (a workflow cannot
	// update another). Receiving it changes state only, no command, so
	// histories without the signal replay as before.
	stops := workflow.GetSignalChannel(ctx, pipeline.SignalStop)
	workflow.Go(ctx, func(gctx workflow.Context) {
		for {
			var in pipeline.ControlInput
			stops.Receive(gctx, &in)
			if c.finished == "" && !c.st.Stopping {
				c.st.Stopping, c.st.StopReason = true, in.Reason
			}
		}
	})
	// A sweep pauses and resumes its running campaigns the same way, with
	// the updates' rules: a signal the update would reject is ignored.
	pauses, resumes := workflow.GetSignalChannel(ctx, pipeline.SignalPause), workflow.GetSignalChannel(ctx, pipeline.SignalResume)
	workflow.Go(ctx, func(gctx workflow.Context) {
		for {
			var in pipeline.ControlInput
			sel := workflow.NewSelector(gctx)
			sel.AddReceive(pauses, func(ch workflow.ReceiveChannel, _ bool) {
				ch.Receive(gctx, &in)
				if c.finished == "" && !c.st.Stopping && !c.st.Paused {
					c.st.Paused, c.st.PauseReason = true, in.Reason
				}
			})
			sel.AddReceive(resumes, func(ch workflow.ReceiveChannel, _ bool) {
				ch.Receive(gctx, &in)
				if c.st.Paused {
					c.st.Paused, c.st.PauseReason = false, ""
				}
			})
			sel.Select(gctx)
		}
	})
	return nil
}

// roundQueue is the task queue the campaign's rounds run on: the colocated
// worker's (pipeline.CampaignWorkflowInput.ColocatedQueue), whose process
// serves the sites, or the server's.
func (c *campaign) roundQueue() string {
	if c.colocatedQueue != "" {
		return c.colocatedQueue
	}
	return pipeline.ServerTaskQueue
}
