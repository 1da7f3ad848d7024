package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ptopofl/ptopofl/pipeline"
)

// serverActivityTimeout bounds one attempt of a server activity
// (clustering, aggregation, commit): they read a few objects per site and do
// little arithmetic.
const serverActivityTimeout = 10 * time.Minute

// siteRetryPolicy retries a site activity on transient failures (a worker
// restarted, S3 briefly unreachable, a site's training program that
// crashed) with capped backoff, at most siteMaxAttempts attempts in all,
// and never past the round deadline. The waits between the attempts are
// 1, 2, 4, 8, 16, 32 and 60 s: 123 s in all, so an outage of S3 or of a
// site's worker shorter than two minutes is ridden out (e2e's 60-second
// outages and a killed worker's heartbeat timeout included), while a
// failure that is not transient (a broken training program that exits 1
// at every attempt) costs the site that round after about two minutes
// plus eight attempts' run time, instead of the whole round deadline (30
// minutes by default). Failures that no retry can mend are not retried at
// all: bad site data, and the non-retryable errors the activities raise
// (a bad model, a program's output that breaks the trainer protocol, a
// diverged model); the site is recorded as dropped with the error's text
// and kind at once.
var siteRetryPolicy = &temporal.RetryPolicy{
	InitialInterval:        time.Second,
	BackoffCoefficient:     2,
	MaximumInterval:        time.Minute,
	MaximumAttempts:        siteMaxAttempts,
	NonRetryableErrorTypes: []string{pipeline.ErrTypeBadSiteData},
}

// siteMaxAttempts bounds the attempts of a site activity (siteRetryPolicy).
const siteMaxAttempts = 8

// siteActivityOptions puts a site activity on the site's own queue, so only
// that site's worker (and data) ever runs it. ScheduleToClose is the round
// deadline: an attempt can never outlive the fan-out that waits for it.
// Every site activity heartbeats, so a site worker killed mid-activity is
// noticed after TrainHeartbeat rather than after the whole StartToClose
// timeout.
func siteActivityOptions(spec pipeline.CampaignSpec, site string) workflow.ActivityOptions {
	// Every site activity heartbeats (activities.Site wraps each in
	// withHeartbeat), so every one gets the heartbeat timeout: an attempt
	// whose worker died, or whose task the server handed to a poll whose
	// answer never arrived, is noticed within TrainHeartbeat (a minute by
	// default) and retried, instead of after its StartToClose (ten
	// minutes).
	return workflow.ActivityOptions{
		TaskQueue:              pipeline.SiteTaskQueue(site),
		ScheduleToCloseTimeout: spec.RoundDeadline,
		StartToCloseTimeout:    spec.SiteActivityTimeout,
		HeartbeatTimeout:       spec.TrainHeartbeat,
		RetryPolicy:            siteRetryPolicy,
	}
}

// siteLocalActivityOptions runs a site activity as a local activity of the
// colocated worker, which serves the campaign's sites in its own process
// and runs its rounds (pipeline.CampaignWorkflowInput.ColocatedQueue). The deadline and the
// retries are siteActivityOptions': ScheduleToClose is the round deadline,
// each attempt is bounded by SiteActivityTimeout, bad site data is not
// retried. A local activity has no heartbeat (the SDK heartbeats the
// workflow task instead, so a long training keeps it alive), and a worker
// killed mid-activity is noticed when the workflow task times out; the
// activity then runs again, which is safe because site activities are
// deterministic in their inputs and write content-addressed keys.
//
// What it saves is Temporal's share of a small round: an ordinary activity
// is a task queued, polled and completed through the server, three history
// events and their persistence writes, and a workflow task to learn of its
// end; a local activity is one marker, written with the workflow task that
// runs it, so a tabular round's ten trainings and ten evaluations take a
// handful of workflow tasks instead of twenty activity tasks.
func siteLocalActivityOptions(spec pipeline.CampaignSpec) workflow.LocalActivityOptions {
	return workflow.LocalActivityOptions{
		ScheduleToCloseTimeout: spec.RoundDeadline,
		StartToCloseTimeout:    spec.SiteActivityTimeout,
		RetryPolicy:            siteRetryPolicy,
	}
}

// serverLocalActivityOptions runs a server activity (clustering,
// aggregation, commit) as a local activity: in the server worker that runs
// the workflow, right away, instead of through a task queue. A server
// activity reads a few objects, does little arithmetic and writes a few
// more, so the two round trips to the Temporal server, the activity's three
// history events and the extra workflow task of an ordinary activity cost
// more than the work itself.
//
// Replay and durability hold as for an ordinary activity: the local
// activity's result is recorded in the history (a marker written with the
// workflow task that follows it), so a replay reads it from there and never
// runs it again; if the worker dies before the marker is written, the
// workflow task is retried and the activity runs again, which is safe
// because server activities are idempotent (deterministic keys, a manifest
// committed only if absent or identical). Retries are unlimited on transient
// failures, as for serverActivityOptions; the SDK backs off with timers
// between attempts once the backoff is long.
func serverLocalActivityOptions() workflow.LocalActivityOptions {
	o := serverActivityOptions()
	return workflow.LocalActivityOptions{
		StartToCloseTimeout: o.StartToCloseTimeout,
		RetryPolicy:         o.RetryPolicy,
	}
}

// serverHeartbeatTimeout is how long a server activity may go without
// heartbeating (activities.Server.Register: every one heartbeats while it
// runs) before its attempt is retried: an attempt lost with a killed
// server worker is noticed within it, not after serverActivityTimeout.
const serverHeartbeatTimeout = time.Minute

// serverActivityOptions: server activities are idempotent (deterministic
// keys), so they retry without limit on transient failures; a bug shows up
// as a pending activity with a growing attempt count, not as a lost round.
func serverActivityOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		TaskQueue:           pipeline.ServerTaskQueue,
		StartToCloseTimeout: serverActivityTimeout,
		HeartbeatTimeout:    serverHeartbeatTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
		},
	}
}

// versionSpecSizeChecks is the workflow.GetVersion change ID of the spec
// checks added after the first release. Version 1 brought rounds at most
// artifact.MaxRound and the method against the quorum's size
// (pipeline.CampaignSpec.ValidateBeforeNameChecks); version 2 site names
// reserved for aggregates and repeated descriptor rows (the rest of
// pipeline.CampaignSpec.Validate). Version workflow.DefaultVersion runs
// pipeline.CampaignSpec.LegacyValidate.
const versionSpecSizeChecks = "spec-size-checks"

// versionStopChildren is the workflow.GetVersion change ID of a sweep's
// stop update signalling its running campaigns to stop (version 1); at
// workflow.DefaultVersion they ran to their end.
const versionStopChildren = "sweep-stop-children"

// versionRetention is the workflow.GetVersion change ID of the retention
// step (version 1): a round whose campaign keeps only the last K rounds of
// site models records pipeline.Pruning in its manifest and deletes them
// after the commit. It is asked only when the policy prunes something.
const versionRetention = "retention"

// versionOwnReads is the workflow.GetVersion change ID of a round whose
// sites read only what is their own (version 1): the training input names
// the shared state (SCAFFOLD's control variate) instead of the server's
// whole state and no longer names the clustering, and a round that begins
// with references written before (pTopoFL cluster models, a server state
// without its shared part) first has them reissued (round.reissue). At
// workflow.DefaultVersion the round runs as it always did.
const versionOwnReads = "site-reads-own"

// versionSearchVirtualCut is the workflow.GetVersion change ID of an
// adaptive sweep's loop that keeps its decisions equal to the offline
// replay's wherever its history is cut (version 1): at its run limit it
// stops asking and reporting, lets this run's campaigns end with their
// results pending, and continues as new carrying the trials in flight,
// the virtual clock and why it was waiting; a paused sweep takes no
// decision until resumed; a record of the trials is written after each
// report (pipeline.ActivityRecordSearch); the median pruner's Prune and
// Finish actions and warm-started trials exist. At
// workflow.DefaultVersion a sweep drained by reporting its running trials
// before continuing as new, which, with more than one trial in flight,
// took decisions in another order than the replay's.
const versionSearchVirtualCut = "sweep-virtual-cut"

// versionPauseChildren is the workflow.GetVersion change ID of a sweep's
// pause and resume updates signalling its running campaigns to pause and
// resume (version 1), as a campaign's pause acts at its next round; at
// workflow.DefaultVersion they ran on and only new campaigns waited.
const versionPauseChildren = "sweep-pause-children"

// versionInlineRounds is the workflow.GetVersion change ID of a campaign
// that runs its rounds as stages of its own workflow (version 1) instead
// of as child RoundWorkflows: one that runs on the colocated worker of the
// process serving its sites (campaign.inlineRounds). It is asked only
// there, so a campaign on the server queue records no marker; histories
// recorded before it (every colocated campaign ran on the server queue
// then) replay with their child rounds.
const versionInlineRounds = "inline-rounds"
