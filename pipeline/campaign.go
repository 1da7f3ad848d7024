package pipeline

import (
	"time"

	"github.com/ptopofl/ptopofl/learn"
)

// Campaign states reported by the status query.
const (
	StateRunning  = "running"
	StatePaused   = "paused"   // no new round starts until resume
	StateStopping = "stopping" // the current round finishes, then the campaign ends
	StateDone     = "done"     // every round committed
	StateStopped  = "stopped"  // ended early by stop
	StateFailed   = "failed"   // a round failed (below quorum): FailureReason
)

// CampaignWorkflowInput starts or continues a campaign. State is nil on the
// first run and set by continue-as-new.
type CampaignWorkflowInput struct {
	Spec  CampaignSpec   `json:"spec"`
	State *CampaignState `json:"state,omitempty"`
	// Attempt numbers the runs of a campaign restarted after a failure or a
	// stop: 0 or 1 for the first, then 2, 3, … (Service.Execute). Each
	// later attempt starts from the ResumePoint of the one before it, with
	// State set, and writes its rounds under artifact.RoundKeys{…, Attempt}.
	Attempt int `json:"attempt,omitempty"`
	// Supersedes is the latest manifest an earlier attempt wrote for the
	// round this attempt starts with (State.NextRound), if any: the round's
	// new manifest records it as superseded. Carried by continue-as-new
	// only until that round is committed.
	Supersedes *ArtifactRef `json:"supersedes,omitempty"`
	// ColocatedQueue, when set, is the task queue of a worker that serves
	// every site of the campaign in its own process (ColocatedTaskQueue: a
	// local stack, where the starter runs the server and every site in one
	// process), with their activities registered under ColocatedActivity
	// names. The rounds run on that queue and run the site activities as
	// local activities there instead of dispatching them through the
	// sites' task queues. The same activities with the same site
	// identities, data and inputs, so the same artifacts and manifests;
	// what changes is what Temporal records (a marker per site activity
	// instead of an activity task with three events, and a tabular round in
	// one workflow task). Carried by continue-as-new; a deployment with site
	// workers of their own leaves it empty.
	ColocatedQueue string `json:"colocated_queue,omitempty"`
	// StopAfterRound, when set below the spec's rounds, ends this run
	// after committing that round, with state StatePaused: the campaign's
	// state is saved to S3 (artifact.PausedStateKey, ActivitySaveState)
	// and the output's Resume refers to it. An adaptive sweep pauses a
	// trial at a rung this way and promotes it later by starting the same
	// campaign (same workflow ID and attempt) with ResumeFrom, so that it
	// continues from its last round instead of training again. Carried by
	// continue-as-new.
	StopAfterRound int `json:"stop_after_round,omitempty"`
	// ResumeFrom, when set and State is not, is a state saved by a run
	// that paused at its StopAfterRound: the run loads it
	// (ActivityLoadState) and goes on from there. A reference, not the
	// state, so that a sweep of many paused campaigns carries a few bytes
	// for each.
	ResumeFrom *ArtifactRef `json:"resume_from,omitempty"`
}

// Campaign server activities of adaptive sweeps' paused campaigns.
const (
	// ActivitySaveState writes a paused campaign's state (SaveStateInput
	// → ArtifactRef).
	ActivitySaveState = "SaveCampaignState"
	// ActivityLoadState reads it back (ArtifactRef → CampaignState).
	ActivityLoadState = "LoadCampaignState"
)

// SaveStateInput is a campaign's state after round Round, to save at
// artifact.PausedStateKey(Campaign, Round) in Bucket.
type SaveStateInput struct {
	Campaign string        `json:"campaign"`
	Bucket   string        `json:"bucket"`
	Round    int           `json:"round"`
	State    CampaignState `json:"state"`
}

// ResumePoint answers QueryResume: where a new attempt of the campaign
// starts. State is the campaign's state after its last committed round
// (pause and stop cleared by the starter), Attempt the number of the run
// that answers (1 for the first).
type ResumePoint struct {
	Attempt int           `json:"attempt"`
	State   CampaignState `json:"state"`
}

// CampaignState is everything a campaign carries from one run to the next
// across continue-as-new: small, references only.
type CampaignState struct {
	NextRound   int        `json:"next_round"` // 1-based
	Carry       RoundCarry `json:"carry"`
	Paused      bool       `json:"paused"`
	PauseReason string     `json:"pause_reason,omitempty"`
	Stopping    bool       `json:"stopping"`
	StopReason  string     `json:"stop_reason,omitempty"`
	// Curves of the mean metrics, index r-1 for round r (a few numbers per
	// round, so 200 rounds stay far below the payload limit).
	AUCCurve     []float64     `json:"auc_curve"`
	AccCurve     []float64     `json:"acc_curve"`
	LastManifest *ArtifactRef  `json:"last_manifest,omitempty"`
	LastMetrics  *RoundMetrics `json:"last_metrics,omitempty"`
	// UpdateAccCurve is the curve of RoundMetrics.UpdateAccuracy (deep
	// campaigns; empty otherwise).
	UpdateAccCurve []float64 `json:"update_acc_curve,omitempty"`
	// ValAUCCurve and ValAccCurve are the curves of RoundMetrics.ValAUC
	// and ValAccuracy (validation_fraction; empty otherwise).
	ValAUCCurve []float64 `json:"val_auc_curve,omitempty"`
	ValAccCurve []float64 `json:"val_acc_curve,omitempty"`
	// Privacy is the privacy ledger of a dp record campaign: every round's
	// releases, charged before the round is dispatched, so that a round
	// that ran in an earlier run or attempt stays paid for; nil otherwise.
	Privacy *PrivacyLedger `json:"privacy,omitempty"`
	// LastPrivacy is the last charged round's record (the ε spent so far).
	LastPrivacy *RoundPrivacy `json:"last_privacy,omitempty"`
}

// RoundCarry is what one round hands to the next: references to the state
// of the method, never the state itself. Site lists are in spec order.
type RoundCarry struct {
	PrevManifestSHA256 string         `json:"prev_manifest_sha256"`
	Descriptors        []SiteArtifact `json:"descriptors,omitempty"`         // latest per site
	ClusterDescriptors []SiteArtifact `json:"cluster_descriptors,omitempty"` // the ones the clustering used
	Clustering         *ArtifactRef   `json:"clustering,omitempty"`
	Clusters           []SiteCluster  `json:"clusters,omitempty"`
	Models             []SiteArtifact `json:"models,omitempty"`       // the model each site holds
	SiteStates         []SiteArtifact `json:"site_states,omitempty"`  // per-site method state
	ServerState        *ArtifactRef   `json:"server_state,omitempty"` // the server's own
	// SharedState is the part of the server state every site reads
	// (SCAFFOLD's control variate); nil for the other methods and in
	// states saved before it existed.
	SharedState        *ArtifactRef `json:"shared_state,omitempty"`
	RecheckDescriptors bool         `json:"recheck_descriptors"`
	// External is the campaign's model layout (model "external"), set when
	// the campaign's initial model is known (round 1).
	External *ExternalModel `json:"external_model,omitempty"`
}

// CampaignWorkflowOutput is the result of a finished (done or stopped)
// campaign: enough for `starter run --format json` without reading S3.
type CampaignWorkflowOutput struct {
	Campaign     string        `json:"campaign"`
	Method       learn.Method  `json:"method"`
	State        string        `json:"state"` // StateDone, StateStopped, or StatePaused at StopAfterRound
	RoundsDone   int           `json:"rounds_done"`
	AUCCurve     []float64     `json:"auc_curve"`
	AccCurve     []float64     `json:"acc_curve"`
	Clusters     []SiteCluster `json:"clusters,omitempty"`
	Flagged      []string      `json:"flagged,omitempty"`
	LastManifest *ArtifactRef  `json:"last_manifest,omitempty"`
	StopReason   string        `json:"stop_reason,omitempty"`
	// UpdateAccCurve is CampaignState.UpdateAccCurve.
	UpdateAccCurve []float64 `json:"update_acc_curve,omitempty"`
	// ValAUCCurve and ValAccCurve are CampaignState's.
	ValAUCCurve []float64 `json:"val_auc_curve,omitempty"`
	ValAccCurve []float64 `json:"val_acc_curve,omitempty"`
	// Privacy is the ε spent so far under dp record (the last charged
	// round's record); nil otherwise.
	Privacy *RoundPrivacy `json:"privacy,omitempty"`
	// Resume is, for a run that paused at its input's StopAfterRound, the
	// saved state a later run continues from (CampaignWorkflowInput's
	// ResumeFrom); nil otherwise.
	Resume *ArtifactRef `json:"resume,omitempty"`
}

// CampaignStatus answers the status query and acknowledges every update.
type CampaignStatus struct {
	Campaign      string        `json:"campaign"`
	State         string        `json:"state"`
	RoundsDone    int           `json:"rounds_done"`
	RoundsTotal   int           `json:"rounds_total"`
	CurrentRound  int           `json:"current_round,omitempty"` // running round, 0 between rounds
	LastMetrics   *RoundMetrics `json:"last_metrics,omitempty"`
	LastManifest  *ArtifactRef  `json:"last_manifest,omitempty"`
	LastDropped   []SiteDrop    `json:"last_dropped,omitempty"` // drops of the last finished round
	PauseReason   string        `json:"pause_reason,omitempty"`
	StopReason    string        `json:"stop_reason,omitempty"`
	FailureReason string        `json:"failure_reason,omitempty"`
	// Privacy is the ε spent so far under dp record; nil otherwise.
	Privacy *RoundPrivacy `json:"privacy,omitempty"`
	// Round is where the running round stands: for a round that runs as
	// a stage of the campaign workflow, from the campaign's own status
	// query; for a child round workflow, from that workflow's
	// QueryRoundProgress, filled by the client that asked for the status
	// (campaign.Service.Status). Nil between rounds or when the round did
	// not answer.
	Round *RoundProgress `json:"round,omitempty"`
}

// Steps of a round that run on the server, for RoundProgress.Phase besides
// the fan-out phases (PhaseInit, PhaseDescriptor, PhaseTrain,
// PhaseEvaluate).
const (
	StepStart     = "start"     // the round workflow has not reached its first step
	StepCluster   = "cluster"   // ClusterSites
	StepAggregate = "aggregate" // Aggregate
	StepCommit    = "commit"    // CommitRound (and pruning)
)

// RoundProgress answers a running RoundWorkflow's QueryRoundProgress: the
// step it is in and, in a fan-out to the sites, which have answered and
// which it still waits for. Sites are listed in spec order.
type RoundProgress struct {
	Round int    `json:"round"`
	Phase string `json:"phase"` // a fan-out phase (Phase*) or a server step (Step*)
	// Answered are the sites that returned this phase's result; Dropped
	// those whose activity failed (they left the round, see the manifest);
	// Awaited those still running or not yet picked up by their worker.
	// All three are empty in a server step.
	Answered []string `json:"answered"`
	Dropped  []string `json:"dropped,omitempty"`
	Awaited  []string `json:"awaited"`
	// Deadline is when the round deadline (CampaignSpec.RoundDeadline,
	// counted from the start of this phase) drops the awaited sites; zero
	// when none is awaited.
	Deadline time.Time `json:"deadline,omitzero"`
	// DeadlineInSeconds is Deadline less the time of the client's query
	// (never negative); the client that asked fills it.
	DeadlineInSeconds float64 `json:"deadline_in_seconds,omitempty"`
}

// ControlInput is the argument of the pause, resume and stop updates.
type ControlInput struct {
	Reason string `json:"reason,omitempty"`
}

// RoundWorkflowInput runs round Round of a campaign.
type RoundWorkflowInput struct {
	Spec  CampaignSpec `json:"spec"` // already defaulted and validated
	Round int          `json:"round"`
	Carry RoundCarry   `json:"carry"`
	// Attempt and Supersedes: see CampaignWorkflowInput.
	Attempt    int          `json:"attempt,omitempty"`
	Supersedes *ArtifactRef `json:"supersedes,omitempty"`
	// Privacy is what the campaign charged for the round before
	// dispatching it (dp record), which the manifest records.
	Privacy *RoundPrivacy `json:"privacy,omitempty"`
	// Protocol is the version of the round's steps the CampaignWorkflow
	// asked for: RoundProtocolLegacy (zero, what rounds started by an older
	// CampaignWorkflow carry, so their histories still replay) or
	// RoundProtocolCurrent.
	Protocol int `json:"protocol,omitempty"`
	// ColocatedQueue: see CampaignWorkflowInput; the round runs on it.
	// Honoured with RoundProtocolCurrent only.
	ColocatedQueue string `json:"colocated_queue,omitempty"`
}

// The values of RoundWorkflowInput.Protocol.
const (
	// RoundProtocolLegacy: a workflow timer of RoundDeadline bounds each
	// fan-out (cancelled when every site has answered), and every method
	// has an evaluation fan-out.
	RoundProtocolLegacy = 0
	// RoundProtocolCurrent: no timer; every site activity's ScheduleToClose
	// timeout is the round deadline, so the server ends each one that has
	// not answered by then (same deadline, two history events and a timer
	// task fewer per fan-out). Methods evaluated on the site's own update
	// (EvaluatesOwnUpdate: LocalOnly, pFedMe) score it in the training
	// activity, so their rounds have no evaluation fan-out.
	RoundProtocolCurrent = 1
)

// RoundWorkflowOutput is a committed round.
type RoundWorkflowOutput struct {
	Manifest     ArtifactRef  `json:"manifest"`
	Mean         RoundMetrics `json:"mean"`
	Participants []string     `json:"participants"`
	Dropped      []SiteDrop   `json:"dropped,omitempty"`
	Carry        RoundCarry   `json:"carry"`
}

// QuorumFailure is the detail of a round's ErrTypeQuorumNotMet error: the
// failed round's manifest, which says why.
type QuorumFailure struct {
	Round    int         `json:"round"`
	Phase    string      `json:"phase"`
	Reason   string      `json:"reason"`
	Manifest ArtifactRef `json:"manifest"`
	Dropped  []SiteDrop  `json:"dropped"`
}
