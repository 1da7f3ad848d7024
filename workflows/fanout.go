package workflows

import (
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ptopofl/ptopofl/pipeline"
)

// fanOutRequest describes one fan-out phase: the same activity on every
// listed site's own queue.
type fanOutRequest struct {
	Phase     string   // pipeline.PhaseDescriptor, PhaseTrain or PhaseEvaluate
	Activity  string   // activity type name
	Sites     []string // in spec order
	Heartbeat bool     // set a heartbeat timeout (long-running training)
	Input     func(site string) any
}

// fanOutResult holds the answers in a map that is only ever read by key
// while walking an ordered site list: ranging over it would make the order
// of what the workflow does depend on Go's randomised map iteration.
type fanOutResult[T any] struct {
	OK    map[string]T
	Drops []pipeline.SiteDrop // in the order the sites failed, then timed-out sites in spec order
}

// fanOut starts req.Activity on every site of req.Sites and waits, on a
// Selector, until every site has answered or the deadline (a timer of
// spec.RoundDeadline started with this fan-out) fires. A
// site whose activity failed is recorded with the failure's reason; a site
// still running at the deadline is recorded as timed out and its activity
// is cancelled. Nothing is silently dropped: every site of req.Sites ends in
// OK or in Drops.
//
// A Selector rather than workflow.Go: the SDK's deterministic scheduler
// makes goroutines safe, but one Selector loop is simpler to reason about
// and needs no channels.
func fanOut[T any](ctx workflow.Context, spec pipeline.CampaignSpec, req fanOutRequest) fanOutResult[T] {
	res := fanOutResult[T]{OK: make(map[string]T, len(req.Sites))}
	if len(req.Sites) == 0 {
		return res
	}
	// Cancelling this context cancels every activity still running at the
	// deadline, so a slow site stops burning its CPU for a round that has
	// moved on, and cancels the timer when every site answered in time, so
	// no stray timer fires later in the history.
	fanCtx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	// A workflow timer, not time.Now: it is recorded in the history, so a
	// replay sees the deadline fire at the same point of the fan-out.
	deadline := workflow.NewTimer(fanCtx, spec.RoundDeadline)

	sel := workflow.NewSelector(ctx)
	answered := make(map[string]bool, len(req.Sites))
	pending := len(req.Sites)
	for _, site := range req.Sites {
		site := site
		actx := workflow.WithActivityOptions(fanCtx, siteActivityOptions(spec, site, req.Heartbeat))
		f := workflow.ExecuteActivity(actx, req.Activity, req.Input(site))
		sel.AddFuture(f, func(f workflow.Future) {
			pending--
			answered[site] = true
			var out T
			if err := f.Get(ctx, &out); err != nil {
				res.Drops = append(res.Drops, errorDrop(req.Phase, site, err))
				return
			}
			res.OK[site] = out
		})
	}
	timedOut := false
	sel.AddFuture(deadline, func(workflow.Future) { timedOut = true })
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

// errorDrop classifies a failed site activity. The activity error wraps the
// cause; the cause's type decides the reason, its text is kept verbatim.
func errorDrop(phase, site string, err error) pipeline.SiteDrop {
	d := pipeline.SiteDrop{Site: site, Phase: phase, Reason: pipeline.DropError, Error: err.Error()}
	var appErr *temporal.ApplicationError
	var toErr *temporal.TimeoutError
	switch {
	case errors.As(err, &appErr):
		d.Error = appErr.Message()
		if appErr.Type() == pipeline.ErrTypeBadSiteData {
			d.Reason = pipeline.DropBadSiteData
		}
	case errors.As(err, &toErr):
		d.Reason = pipeline.DropTimeout
	}
	return d
}
