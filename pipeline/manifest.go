package pipeline

import "github.com/ptopofl/ptopofl/learn"

// ManifestSchema is the version of the RoundManifest layout.
const ManifestSchema = 1

// Round outcomes.
const (
	// OutcomeCommitted: every phase reached the quorum; the round's
	// models, clusters and metrics are in the manifest.
	OutcomeCommitted = "committed"
	// OutcomeFailed: a phase fell below the quorum (min_sites);
	// failure_reason says which, dropped[] who left and why. The campaign
	// fails with QuorumNotMet: bring the sites back (or lower min_sites) and
	// run it again, which resumes from the last committed round.
	OutcomeFailed = "failed"
)

// Fan-out phases of a round, in order.
const (
	// PhaseInit is round 1's init task under model "external" (one site's
	// program makes the campaign's initial model).
	PhaseInit       = "init"
	PhaseDescriptor = "descriptor"
	PhaseTrain      = "train"
	PhaseEvaluate   = "evaluate"
)

// Drop reasons.
const (
	// DropTimeout: no answer before the round deadline (round_deadline).
	// Check that the site's worker runs and polls its queue
	// (ptopofl-site-<site>); give slow sites a longer round_deadline.
	DropTimeout = "timeout"
	// DropBadSiteData: the site's activity failed with ErrTypeBadSiteData:
	// its files do not match the campaign's schema or hold an unusable
	// cell (error names file, line, column and problem, never the value).
	// The site's operator fixes the file; the site rejoins next round.
	DropBadSiteData = "bad_site_data"
	// DropError: any other failure, at once for an error no retry can mend
	// (dropped[].kind names it: a site training program's output that
	// breaks the trainer protocol, a diverged model, ...), else after the
	// retry policy gave up (8 attempts over about two minutes, within the
	// round deadline; error has the text). A lasting problem at the site:
	// its disk, its credentials, its trainer program (model external), a
	// bug.
	DropError = "error"
	// DropNoModel: the aggregation gave the site no model to evaluate, so
	// it is left out of the round's evaluation.
	DropNoModel = "no_model"
	// DropPrivacyBudget: the site refused the task: its releases would
	// take its lifetime privacy loss, across every campaign on the same
	// data, beyond its operator's budget (worker --privacy-budget). Not
	// retried; the site will refuse every later release on that data too.
	DropPrivacyBudget = "privacy_budget_exhausted"
)

// SiteDrop records a site that left a round, the phase where it left and
// why. Every site missing from Participants has one.
type SiteDrop struct {
	Site   string `json:"site"`
	Phase  string `json:"phase"`
	Reason string `json:"reason"`
	// Kind is the failure's kind when the site's activity failed with a
	// named error (its error type: BadSiteData, Diverged, UnknownTrainer,
	// a site training program's fault such as TrainerNoResult or
	// UnsupportedDType, TrainerFailed once its retries gave up, …);
	// absent for a timeout.
	Kind  string `json:"kind,omitempty"`
	Error string `json:"error,omitempty"` // the activity's error text, if any
}

// SiteCluster is what clustering and the drift check say about a site.
type SiteCluster struct {
	Site    string  `json:"site"`
	Cluster int     `json:"cluster"`
	Trust   float64 `json:"trust"`
	Flagged bool    `json:"flagged"`
	// Drift is Δ_k of Eq. (9) as of this round: the mean distance of the
	// site's measured descriptors from its reference (the descriptor its
	// cluster was chosen by), 0 at the first measurement.
	Drift float64 `json:"drift"`
	// Reassigned reports that drift re-clustering moved the site to another
	// cluster this round (absent otherwise).
	Reassigned bool `json:"reassigned,omitempty"`
	// Reclustered reports that the site's drift passed drift_threshold
	// this round, so it was re-clustered (perhaps into the cluster it was
	// in) and its current descriptor became its new reference (absent
	// otherwise).
	Reclustered bool `json:"reclustered,omitempty"`
}

// SiteMetrics is one site's evaluation after a round.
type SiteMetrics struct {
	Site     string  `json:"site"`
	AUC      float64 `json:"auc"`
	Accuracy float64 `json:"accuracy"`
	NumTrain int     `json:"n_train"`
	NumTest  int     `json:"n_test"`
	// UpdateAccuracy is the top-1 accuracy on the site's test split of
	// the model the site trained this round, before the aggregation
	// (TrainLocalOutput.UpdateEvaluation); Accuracy scores the model the
	// site holds after it. Deep campaigns only; absent otherwise.
	UpdateAccuracy *float64 `json:"update_accuracy,omitempty"`
	// Missing names the scores the site's own program did not report
	// (model "external": "auc" or "accuracy"); those fields are 0 and
	// the round's means leave the site out of them.
	Missing []string `json:"missing,omitempty"`
	// ValAUC and ValAccuracy score the same model on the training rows
	// the site holds out (validation_fraction), NumVal of them; absent
	// when it holds out none.
	ValAUC      *float64 `json:"val_auc,omitempty"`
	ValAccuracy *float64 `json:"val_accuracy,omitempty"`
	NumVal      int      `json:"n_val,omitempty"`
}

// RoundMetrics is the unweighted mean over the sites evaluated in a round
// (the paper's auc_r / acc_r).
type RoundMetrics struct {
	Round    int     `json:"round"`
	AUC      float64 `json:"auc"`
	Accuracy float64 `json:"accuracy"`
	Sites    int     `json:"sites"`
	// UpdateAccuracy is the unweighted mean of the sites' UpdateAccuracy
	// (deep campaigns; absent otherwise).
	UpdateAccuracy *float64 `json:"update_accuracy,omitempty"`
	// Missing names a score no evaluated site reported (model
	// "external"); its mean is 0 and means nothing. A score some sites
	// left out is the mean over the others.
	Missing []string `json:"missing,omitempty"`
	// ValAUC and ValAccuracy are the unweighted means of the sites'
	// validation scores (validation_fraction; absent without one).
	ValAUC      *float64 `json:"val_auc,omitempty"`
	ValAccuracy *float64 `json:"val_accuracy,omitempty"`
}

// SeedRecord is one derived seed used in a round.
type SeedRecord struct {
	Site    string `json:"site,omitempty"`
	Purpose string `json:"purpose"`
	Seed    uint64 `json:"seed"`
}

// RoundManifest is the audit record of one round (DESIGN §4), written by
// CommitRound to ManifestKey. PrevManifestSHA256 chains it to the previous
// round's manifest, so the history is tamper-evident. All per-site lists are in
// spec order (CampaignSpec.Sites) so that the same round always yields the
// same bytes.
type RoundManifest struct {
	Schema             int          `json:"schema"`
	Campaign           string       `json:"campaign"`
	Round              int          `json:"round"`
	Method             learn.Method `json:"method"`
	Preset             string       `json:"preset"`
	Outcome            string       `json:"outcome"`
	FailureReason      string       `json:"failure_reason,omitempty"`
	SpecHash           string       `json:"spec_hash"`
	CodeVersion        string       `json:"code_version,omitempty"`
	PrevManifestSHA256 string       `json:"prev_manifest_sha256"` // "" for round 1

	Sites                 []string         `json:"sites"`        // the whole federation, in spec order
	Participants          []string         `json:"participants"` // completed every phase, spec order
	Dropped               []SiteDrop       `json:"dropped"`
	DescriptorsRecomputed bool             `json:"descriptors_recomputed"`
	Seeds                 []SeedRecord     `json:"seeds"`
	Inputs                []ArtifactRecord `json:"inputs"`
	Outputs               []ArtifactRecord `json:"outputs"`
	Clusters              []SiteCluster    `json:"clusters"`
	Flagged               []string         `json:"flagged"`
	Metrics               []SiteMetrics    `json:"metrics"`
	Mean                  RoundMetrics     `json:"mean"`
	// SiteWeights records a robust aggregation's per-site selection
	// (AggregateOutput.SiteWeights); absent for the other methods.
	SiteWeights []SiteWeight `json:"site_weights,omitempty"`
	// Attempt is the campaign's attempt that ran the round: absent for the
	// first, 2, 3, … for a campaign restarted after a failure or a stop.
	// A later attempt's manifests are at artifact.RoundKeys{…, Attempt}.Manifest.
	Attempt int `json:"attempt,omitempty"`
	// Supersedes is the manifest of an earlier attempt at the same round
	// that this one replaces (a round that failed below quorum, say), so
	// the chain protects that record too; absent when none.
	Supersedes *ArtifactRef `json:"supersedes,omitempty"`
	// Released lists, per site in spec order, what each site released in
	// the round (the sites that released nothing are left out).
	Released []SiteReleases `json:"released"`
	// Privacy is the round's privacy record under dp record: the ε each
	// site spent in the round and in all; absent otherwise.
	Privacy *RoundPrivacy `json:"privacy,omitempty"`
	// Pruned says which earlier round's site uploads the retention policy
	// deletes once this manifest is committed (PruningAt); absent when the
	// policy deletes nothing. The manifest that listed them keeps their
	// sha256.
	Pruned *Pruning `json:"pruned,omitempty"`
	// SecAgg is the round's secure aggregation (secure_aggregation
	// "secagg+"): per group, its members, survivors, dropped and
	// threshold; absent otherwise.
	SecAgg *RoundSecAgg `json:"secure_aggregation,omitempty"`
}

// SiteWeight is the weight a robust aggregation gave a site's update.
type SiteWeight struct {
	Site   string  `json:"site"`
	Weight float64 `json:"weight"`
}
