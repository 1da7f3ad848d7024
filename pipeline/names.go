package pipeline

import "fmt"

// Task queues. The server worker polls ServerTaskQueue for workflows and
// server activities; each site worker polls only its own SiteTaskQueue, so a
// site's data never leaves the machine that owns it.
const ServerTaskQueue = "ptopofl-server"

// SiteTaskQueue returns the task queue the worker of site polls,
// "ptopofl-site-<site>". Site names are validated by Site.Validate to be
// safe in a task-queue name and an S3 key.
func SiteTaskQueue(site string) string { return "ptopofl-site-" + site }

// ColocatedActivity returns the name under which a colocated worker (one
// that serves the sites in its own process) registers site's activity,
// "site/<site>/<activity>": a campaign started with a ColocatedQueue runs
// its site activities as local activities of that worker under these names
// instead of through SiteTaskQueue(site). Site names are validated to hold
// no "/".
func ColocatedActivity(site, activity string) string { return "site/" + site + "/" + activity }

// ColocatedTaskQueue returns the task queue of the colocated worker a
// starter runs for the campaign or sweep named id,
// "ptopofl-colocated-<id>": the rounds of a colocated campaign run there, so
// that only the process serving its sites picks them up (another starter
// on the same stack serves other sites), and a starter re-run for the same
// campaign or sweep after a crash serves the same queue again.
func ColocatedTaskQueue(id string) string { return "ptopofl-colocated-" + id }

// Workflow type names, registered by the server worker under these names so
// that a rename of the Go function never breaks running histories.
const (
	CampaignWorkflowName = "CampaignWorkflow"
	RoundWorkflowName    = "RoundWorkflow"
)

// Activity type names. Site activities run on SiteTaskQueue(site), server
// activities on ServerTaskQueue. The workflows schedule them by name, so
// they never import an implementation.
const (
	// Site activities.
	ActivityComputeDescriptor = "ComputeDescriptor" // ComputeDescriptorInput → ComputeDescriptorOutput
	ActivityTrainLocal        = "TrainLocal"        // TrainLocalInput → TrainLocalOutput
	ActivityEvaluate          = "Evaluate"          // EvaluateInput → EvaluateOutput
	// ActivityInitModel asks a site's own program for the campaign's
	// initial model (model "external", round 1).
	ActivityInitModel = "InitModel" // InitModelInput → InitModelOutput

	// Server activities.
	ActivityClusterSites = "ClusterSites" // ClusterSitesInput → ClusterSitesOutput (clustering, trust, drift)
	ActivityAggregate    = "Aggregate"    // AggregateInput → AggregateOutput
	ActivityCommitRound  = "CommitRound"  // CommitRoundInput → CommitRoundOutput
	ActivityPruneRound   = "PruneRound"   // PruneRoundInput → PruneRoundOutput (retention policy)
	// ActivityRoundBoundary does nothing: a campaign whose rounds run as
	// stages of its workflow runs it on its colocated queue before each
	// round, so that the workflow task ends there and the history records
	// every round before the next begins (workflows campaign.boundary).
	ActivityRoundBoundary = "RoundBoundary" // no input → no output
	// ActivityAdoptInitialModel copies the initial model one site's
	// program made to the campaign's keys every site may read.
	ActivityAdoptInitialModel = "AdoptInitialModel" // AdoptInitialModelInput → AdoptInitialModelOutput
	// ActivityReissue gives the sites of a campaign written before sites
	// read only their own aggregates, once, what they start the round from
	// under keys they may read.
	ActivityReissue = "Reissue" // ReissueInput → ReissueOutput
)

// Query and update names of CampaignWorkflow.
const (
	QueryStatus  = "status" // → CampaignStatus
	QueryResume  = "resume" // → ResumePoint; answered by closed runs too (Temporal replays them)
	UpdatePause  = "pause"  // ControlInput → CampaignStatus; rejected when already paused, stopping or done
	UpdateResume = "resume" // ControlInput → CampaignStatus; rejected unless paused
	UpdateStop   = "stop"   // ControlInput → CampaignStatus; rejected when already stopping or done
	// SignalStop (ControlInput) stops the campaign as UpdateStop does, for a
	// parent workflow (a sweep being stopped), which can signal its children
	// but not update them; ignored when already stopping or done.
	SignalStop = "stop-signal"
	// QueryRoundProgress is RoundWorkflow's query → RoundProgress.
	QueryRoundProgress = "round_progress"
	// SignalPause and SignalResume (ControlInput) pause and resume the
	// campaign as UpdatePause and UpdateResume do, for a sweep being
	// paused or resumed; ignored when they would be rejected (pause when
	// already paused, stopping or done; resume when not paused).
	SignalPause  = "pause-signal"
	SignalResume = "resume-signal"
)

// Application error types. An activity that fails with ErrTypeBadSiteData
// is not retried: the site's data is wrong and will stay wrong until a
// person fixes it, so the round records the site as dropped with the
// error's text and goes on if the quorum still holds.
const (
	// ErrTypeBadSiteData: a site's files failed the checks against the
	// campaign's schema (a site activity; the site is dropped, not retried).
	ErrTypeBadSiteData = "BadSiteData"
	// ErrTypeQuorumNotMet: fewer than min_sites sites finished a phase of
	// a round; the round's manifest is written with outcome failed and the
	// campaign fails.
	ErrTypeQuorumNotMet = "QuorumNotMet"
	// ErrTypeInvalidSpec: the campaign's spec does not validate (the
	// workflow refuses it before any round).
	ErrTypeInvalidSpec = "InvalidSpec"
	// ErrTypeDiverged: a site's local update gave a model with a NaN or an
	// infinity (non-retryable: the same inputs give the same bits).
	ErrTypeDiverged = "Diverged"
	// ErrTypeManifestConflict: CommitRound found another manifest at the
	// round's key (committed history never changes).
	ErrTypeManifestConflict = "ManifestConflict"
	// ErrTypePrivacyBudget: a site refused a task because its releases
	// would take the site's lifetime privacy loss, in its own ledger,
	// beyond its operator's budget (worker --privacy-budget); not retried:
	// the site is dropped from the round with DropPrivacyBudget.
	ErrTypePrivacyBudget = "PrivacyBudgetExhausted"
)

// RoundWorkflowID is the workflow ID of round r of a campaign,
// "<campaign>/round-0007": the round number is zero-padded to four digits,
// the same as the round's folder in the store (RoundPrefix), so IDs and
// keys sort in round order. Rounds above 9999 simply get more digits.
func RoundWorkflowID(campaign string, round int) string {
	return fmt.Sprintf("%s/round-%04d", campaign, round)
}

// AttemptRoundWorkflowID is RoundWorkflowID for a campaign's first attempt
// (attempt 0 or 1) and "<campaign>/round-0007/attempt-2" for a later one,
// so that a restarted campaign's round never collides with the earlier
// attempt's workflow of the same round.
func AttemptRoundWorkflowID(campaign string, round, attempt int) string {
	if attempt > 1 {
		return fmt.Sprintf("%s/attempt-%d", RoundWorkflowID(campaign, round), attempt)
	}
	return RoundWorkflowID(campaign, round)
}
