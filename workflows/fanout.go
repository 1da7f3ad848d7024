package workflows

import (
	"errors"
	"fmt"
	"regexp"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ptopofl/ptopofl/pipeline"
)

// fanOutRequest describes one fan-out phase: the same activity on every
// listed site's own queue.
type fanOutRequest struct {
	Phase    string   // pipeline.PhaseDescriptor, PhaseTrain or PhaseEvaluate
	Activity string   // activity type name
	Sites    []string // in spec order
	// Protocol is the round's pipeline.RoundProtocol*: how the deadline
	// is kept.
	Protocol int
	// Colocated runs the activity as a local activity of this (the
	// colocated) worker, under pipeline.ColocatedActivity(site, Activity)
	// (siteLocalActivityOptions).
	Colocated bool
	Input     func(site string) any
	// Progress, when set, is told the fan-out's sites, its deadline and
	// each answer, for the round's progress query.
	Progress *roundProgress
}

// fanOutResult holds the answers in a map that is only ever read by key
// while walking an ordered site list: ranging over it would make the order
// of what the workflow does depend on Go's randomised map iteration.
type fanOutResult[T any] struct {
	OK    map[string]T
	Drops []pipeline.SiteDrop // in the order the sites failed or timed out (then, with a deadline timer, the sites still running, in spec order)
}

// fanOut starts req.Activity on every site of req.Sites and waits, on a
// Selector, until every site has answered or the round deadline has
// passed. A site whose activity failed is recorded with the failure's
// reason; a site still running at the deadline is recorded as timed out.
// Nothing is silently dropped: every site of req.Sites ends in OK or in
// Drops.
//
// The deadline is kept in one of two ways (req.Protocol):
//
//   - pipeline.RoundProtocolCurrent: every activity's ScheduleToClose
//     timeout is the round deadline (siteActivityOptions), counted from
//     the same moment, so the server ends every attempt and retry still
//     running then with a ScheduleToClose timeout, and every future is
//     resolved by the deadline. No timer: two history events and a timer
//     task fewer per fan-out.
//   - pipeline.RoundProtocolLegacy, for rounds started by an older
//     CampaignWorkflow: a workflow timer of spec.RoundDeadline, after which
//     the activities still running are cancelled. Kept so that their
//     histories replay.
//
// A Selector rather than workflow.Go: the SDK's deterministic scheduler
// makes goroutines safe, but one Selector loop is simpler to reason about
// and needs no channels.
func fanOut[T any](ctx workflow.Context, spec pipeline.CampaignSpec, req fanOutRequest) fanOutResult[T] {
	res := fanOutResult[T]{OK: make(map[string]T, len(req.Sites))}
	if len(req.Sites) == 0 {
		return res
	}
	// Cancelling this context cancels every activity still running when the
	// fan-out returns (only possible with the deadline timer) and the timer
	// itself when every site answered in time, so no stray timer fires
	// later in the history.
	fanCtx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	if req.Progress != nil {
		// workflow.Now is the workflow task's time, recorded in the
		// history: the deadline a replay reports is the one it had.
		req.Progress.fanOut(req.Phase, req.Sites, workflow.Now(ctx).Add(spec.RoundDeadline))
	}

	sel := workflow.NewSelector(ctx)
	timedOut := false
	if req.Protocol == pipeline.RoundProtocolLegacy {
		// A workflow timer, not time.Now: it is recorded in the history, so
		// a replay sees the deadline fire at the same point of the fan-out.
		// Started before the activities, as it always was: the order of
		// commands is part of what a replay checks.
		deadline := workflow.NewTimer(fanCtx, spec.RoundDeadline)
		sel.AddFuture(deadline, func(workflow.Future) { timedOut = true })
	}
	answered := make(map[string]bool, len(req.Sites))
	pending := len(req.Sites)
	for _, site := range req.Sites {
		site := site
		var f workflow.Future
		if req.Colocated {
			lctx := workflow.WithLocalActivityOptions(fanCtx, siteLocalActivityOptions(spec))
			f = workflow.ExecuteLocalActivity(lctx, pipeline.ColocatedActivity(site, req.Activity), req.Input(site))
		} else {
			actx := workflow.WithActivityOptions(fanCtx, siteActivityOptions(spec, site))
			f = workflow.ExecuteActivity(actx, req.Activity, req.Input(site))
		}
		sel.AddFuture(f, func(f workflow.Future) {
			pending--
			answered[site] = true
			var out T
			err := f.Get(ctx, &out)
			if req.Progress != nil {
				req.Progress.answer(site, err == nil)
			}
			if err != nil {
				res.Drops = append(res.Drops, errorDrop(spec, req.Phase, site, err))
				return
			}
			res.OK[site] = out
		})
	}
	for pending > 0 && !timedOut {
		sel.Select(ctx)
	}
	// Answers that arrived in the same workflow task as the deadline are
	// still answers: take them before declaring the rest timed out.
	for timedOut && pending > 0 && sel.HasPending() {
		sel.Select(ctx)
	}
	if timedOut {
		for _, site := range req.Sites { // spec order, not map order
			if !answered[site] {
				res.Drops = append(res.Drops, timeoutDrop(spec, req.Phase, site))
			}
		}
	}
	return res
}

func timeoutDrop(spec pipeline.CampaignSpec, phase, site string) pipeline.SiteDrop {
	return pipeline.SiteDrop{
		Site: site, Phase: phase, Reason: pipeline.DropTimeout,
		Error: fmt.Sprintf("no answer within the round deadline (%v)", spec.RoundDeadline),
	}
}

// dropKind is what an error type must look like to be a drop's kind: the
// application error types the activities name (BadSiteData,
// TrainerNoResult, …), not the Go type names the SDK gives other errors
// (wrapError, errorString), which start with a lower-case letter.
var dropKind = regexp.MustCompile(`^[A-Z][A-Za-z0-9]{0,63}$`)

// errorDrop classifies a failed site activity. The activity error wraps the
// cause; the cause's type decides the reason, its text is kept verbatim. A
// ScheduleToClose timeout is the round deadline passing and reads as it does
// with the deadline timer.
func errorDrop(spec pipeline.CampaignSpec, phase, site string, err error) pipeline.SiteDrop {
	d := pipeline.SiteDrop{Site: site, Phase: phase, Reason: pipeline.DropError, Error: err.Error()}
	var appErr *temporal.ApplicationError
	var toErr *temporal.TimeoutError
	switch {
	case errors.As(err, &appErr):
		d.Error = appErr.Message()
		switch appErr.Type() {
		case pipeline.ErrTypeBadSiteData:
			d.Reason = pipeline.DropBadSiteData
		case pipeline.ErrTypePrivacyBudget:
			d.Reason = pipeline.DropPrivacyBudget
		}
		if dropKind.MatchString(appErr.Type()) {
			d.Kind = appErr.Type()
		}
	case errors.As(err, &toErr):
		d.Reason = pipeline.DropTimeout
		if toErr.TimeoutType() == enumspb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE {
			d = timeoutDrop(spec, phase, site)
		}
	}
	return d
}
