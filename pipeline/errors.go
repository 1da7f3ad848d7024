package pipeline

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.temporal.io/sdk/temporal"
)

// NewBadSiteDataError is the error a site activity returns when the site's
// own data is unusable (wrong feature count, NaN, one class only, empty
// file, missing label column). It is non-retryable: retrying cannot fix the
// data, so the round records the site as dropped with this text at once
// instead of burning its deadline on retries. line <= 0 omits the line.
func NewBadSiteDataError(site, file string, line int, format string, args ...any) error {
	where := file
	if line > 0 {
		where = fmt.Sprintf("%s:%d", file, line)
	}
	msg := fmt.Sprintf("site %s: %s: %s", site, where, fmt.Sprintf(format, args...))
	return temporal.NewNonRetryableApplicationError(msg, ErrTypeBadSiteData, nil)
}

// NewPrivacyBudgetError is the error a site activity returns when the
// site refuses the task for its privacy budget (ErrTypePrivacyBudget):
// non-retryable, so the round drops the site at once with
// DropPrivacyBudget and msg.
func NewPrivacyBudgetError(site, format string, args ...any) error {
	msg := fmt.Sprintf("site %s: privacy budget exhausted: %s", site, fmt.Sprintf(format, args...))
	return temporal.NewNonRetryableApplicationError(msg, ErrTypePrivacyBudget, nil)
}

// Failure is a campaign's failure as its user reads it: where it happened
// and the message of the error that started it, once. Temporal delivers a
// failure as a chain (workflow → child round workflow → activity → cause)
// in which every layer's text repeats the text of the layers below it.
type Failure struct {
	Campaign string
	Round    int    // the round whose workflow failed; 0 when none did
	Step     string // the activity that failed ("Aggregate"); "" when none did
	Type     string // the root ApplicationError's type ("AggregationFailed"); "" when the root is not one
	Message  string // the root error's own message
}

// DescribeFailure reduces the error of campaign's workflow to a Failure.
// The root is the error returned by the innermost activity or workflow of
// the chain (the cause below its last ActivityError,
// ChildWorkflowExecutionError or WorkflowExecutionError); for an
// ApplicationError its Message, without the causes that Error appends.
// The round comes from a failed child round workflow's ID (RoundWorkflowID).
// An error that is no Temporal chain is its own root.
func DescribeFailure(campaign string, err error) Failure {
	f := Failure{Campaign: campaign}
	if err == nil {
		return f
	}
	root := err
	var prev error
	for e := err; e != nil; prev, e = e, errors.Unwrap(e) {
		var boundary error
		var child *temporal.ChildWorkflowExecutionError
		var act *temporal.ActivityError
		var wf *temporal.WorkflowExecutionError
		switch {
		case errors.As(e, &child) && child == e:
			// Only a round workflow's ID names a round: a sweep's child
			// campaign may itself be called "round-5".
			if r, ok := roundOfWorkflowID(child.WorkflowID()); ok && child.WorkflowType() == RoundWorkflowName {
				f.Round = r
			}
			boundary = child
		case errors.As(e, &act) && act == e:
			var r int
			f.Step, r = activityStep(prev, act)
			if f.Round == 0 {
				// A round run as a stage of the campaign workflow has no
				// workflow ID of its own: its step's context names it.
				f.Round = r
			}
			boundary = act
		case errors.As(e, &wf) && wf == e:
			boundary = wf
		}
		if boundary != nil {
			if cause := errors.Unwrap(boundary); cause != nil {
				root = cause
			} else {
				root = boundary
			}
		}
	}
	var app *temporal.ApplicationError
	if errors.As(root, &app) && app == root {
		f.Type, f.Message = app.Type(), app.Message()
	} else {
		f.Message = root.Error()
	}
	// A campaign's own failure (the quorum) names the campaign; the
	// sentence names it once already.
	for _, p := range []string{"campaign " + campaign + " stopped: ", "campaign " + campaign + ": "} {
		f.Message = strings.TrimPrefix(f.Message, p)
	}
	return f
}

// activityStep names the step whose activity failed: the context the
// workflow gave the activity's error ("round 3: aggregate: %w" gives
// "aggregate", and round 3), read from wrapper, the error above act in
// the chain (an ApplicationError once it crossed Temporal, the workflow's
// own wrapping inside it); else the activity type and round 0. (A local
// activity's type is its function's name, not the name it runs under, so
// the workflow's words are the reliable ones.)
func activityStep(wrapper error, act *temporal.ActivityError) (string, int) {
	if wrapper == nil {
		return act.ActivityType().GetName(), 0
	}
	msg := wrapper.Error()
	var app *temporal.ApplicationError
	if errors.As(wrapper, &app) && app == wrapper {
		msg = app.Message()
	}
	context, ok := strings.CutSuffix(msg, ": "+act.Error())
	if !ok {
		return act.ActivityType().GetName(), 0
	}
	round := 0
	if head, rest, ok := strings.Cut(context, ": "); ok && strings.HasPrefix(head, "round ") {
		if n, err := strconv.Atoi(strings.TrimPrefix(head, "round ")); err == nil && n > 0 {
			round = n
		}
		context = rest
	}
	return context, round
}

// roundOfWorkflowID is n for an AttemptRoundWorkflowID
// "<campaign>/round-<n>" or "<campaign>/round-<n>/attempt-<a>".
func roundOfWorkflowID(id string) (int, bool) {
	if i := strings.LastIndex(id, "/attempt-"); i >= 0 {
		if _, err := strconv.Atoi(id[i+len("/attempt-"):]); err == nil {
			id = id[:i]
		}
	}
	i := strings.LastIndex(id, "/round-")
	if i < 0 {
		return 0, false
	}
	n, err := strconv.Atoi(id[i+len("/round-"):])
	return n, err == nil && n > 0
}

// Reason is where and what, without the campaign and the advice:
// "round 1 (Aggregate): aggregate round 1 (krum): krum: …".
func (f Failure) Reason() string {
	msg := strings.TrimRight(f.Message, ". ")
	var where []string
	if f.Round > 0 {
		where = append(where, fmt.Sprintf("round %d", f.Round))
	}
	if f.Step != "" {
		where = append(where, "("+f.Step+")")
	}
	if len(where) == 0 {
		return msg
	}
	return strings.Join(where, " ") + ": " + msg
}

// String is one sentence: what happened, to which campaign and round, and
// what to do about it.
func (f Failure) String() string {
	return fmt.Sprintf("campaign %s failed: %s; %s", f.Campaign, f.Reason(), f.advice())
}

// advice says what to do after a failure of f's kind.
func (f Failure) advice() string { return Advice(f.Type) }

// Advice says what to do after a campaign failed with an error of type
// errType (an ErrType constant; any other type gets the general advice).
func Advice(errType string) string {
	switch errType {
	case ErrTypeInvalidSpec:
		return "fix the campaign spec and start the campaign again"
	case ErrTypeQuorumNotMet:
		return "the round's manifest lists the sites that dropped out and why; bring them back (or lower min_sites) and run the campaign again: it resumes from the last committed round as a new attempt"
	case ErrTypeManifestConflict:
		return "the round's record in the store is not the one this run computed and is never overwritten; run under another name (starter run --new-campaign)"
	case ErrTypeBadSiteData:
		return "the site leaves the round (dropped[] names file, line, column and problem, never a value); its operator fixes the file and the site rejoins at the next round"
	case ErrTypePrivacyBudget:
		return "the site's operator limits its lifetime privacy loss (worker --privacy-budget), and its ledger (worker ledger) says this data has spent it; the site takes no part in private campaigns on this data any more"
	case ErrTypeDiverged:
		return "lower the learning rate (lr) or the local steps, or check the site's data for extreme values; the same inputs diverge again"
	}
	return "the rounds it committed stay in the audit record; remove the cause and run the campaign again"
}
