package pipeline

import (
	"time"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
)

// Activity inputs and outputs. Each is a named struct so that fields can be
// added without breaking running histories (a new field decodes as its zero
// value from an old payload). They carry references and small numbers only.

// SiteCall is what every site activity is told about the call. It is
// embedded, so its fields appear at the top level of the JSON payload.
type SiteCall struct {
	Campaign        string                 `json:"campaign"`
	Round           int                    `json:"round"` // 1-based
	Site            string                 `json:"site"`
	SiteIndex       int                    `json:"site_index"` // position in CampaignSpec.Sites; the paper preset seeds by it
	Method          learn.Method           `json:"method"`
	Preset          string                 `json:"preset"`
	Hyperparameters method.Hyperparameters `json:"hyperparameters"`
	Bucket          string                 `json:"bucket"`
	CampaignSeed    uint64                 `json:"campaign_seed"`
	// Seed is DeriveSeed(CampaignSeed, Round, Site, purpose) with the
	// activity's purpose (PurposeDescriptor, PurposeTrain; evaluation draws
	// nothing and gets PurposeTrain's seed for reference only).
	Seed uint64 `json:"seed"`
	// Attempt is the campaign's attempt running the round (0 or 1: the
	// first); the activity writes under its keys (Keys).
	Attempt int `json:"attempt,omitempty"`
	// Schema is the campaign's DataSchema, which the site holds its data
	// against; nil checks nothing.
	Schema *DataSchema `json:"schema,omitempty"`
	// NTrain and NTest are the record counts the campaign's privacy plan
	// was made for (dp record only): a site whose data have other counts
	// refuses the call.
	NTrain int `json:"n_train,omitempty"`
	NTest  int `json:"n_test,omitempty"`
	// External is the campaign's model layout (model "external"): what a
	// site's program reads and writes; nil for our own models and for the
	// init task, which makes it.
	External *ExternalModel `json:"external_model,omitempty"`
}

// ExternalModel is what the sites of a campaign of model "external" need
// to know of its models: the tensor layout (names, dtypes, shapes; at
// artifact.ModelLayoutKey) that turns a flat parquet model into the
// safetensors file a site's program reads, and whether the models are
// stored as float32 (every tensor F32), as the server's aggregates must be.
type ExternalModel struct {
	Layout  ArtifactRef `json:"layout"`
	Float32 bool        `json:"float32,omitempty"`
}

// Keys builds the keys of the call's round and attempt.
func (c SiteCall) Keys() artifact.RoundKeys {
	return artifact.RoundKeys{Campaign: c.Campaign, Round: c.Round, Attempt: c.Attempt}
}

// ServerCall is what every server activity is told about the call.
type ServerCall struct {
	Campaign        string                 `json:"campaign"`
	Round           int                    `json:"round"`
	Method          learn.Method           `json:"method"`
	Preset          string                 `json:"preset"`
	Hyperparameters method.Hyperparameters `json:"hyperparameters"`
	Bucket          string                 `json:"bucket"`
	CampaignSeed    uint64                 `json:"campaign_seed"`
	Seed            uint64                 `json:"seed"` // DeriveSeed(CampaignSeed, Round, "", purpose)
	// Sites is the whole federation in spec order, so an activity can map a
	// site to its index.
	Sites []string `json:"sites"`
	// Attempt is the campaign's attempt running the round (0 or 1: the
	// first); the activity writes under its keys (Keys).
	Attempt int `json:"attempt,omitempty"`
}

// Keys builds the keys of the call's round and attempt.
func (c ServerCall) Keys() artifact.RoundKeys {
	return artifact.RoundKeys{Campaign: c.Campaign, Round: c.Round, Attempt: c.Attempt}
}

// ComputeDescriptorInput asks a site for the topological descriptor of its
// training data. Runs on SiteTaskQueue(Site) as ActivityComputeDescriptor.
type ComputeDescriptorInput struct {
	SiteCall
	// Rows, when not empty, are the training rows to use (exact
	// reproduction); otherwise the activity subsamples NSub rows with Seed.
	Rows []int `json:"rows,omitempty"`
	// Model is the model a deep site holds (the last aggregation's), whose
	// penultimate activations its descriptor summarises; nil in round 1
	// (the campaign's seeded initial model) and for tabular sites.
	Model *ArtifactRef `json:"model,omitempty"`
}

// ComputeDescriptorOutput: the descriptor is written to
// DescriptorKey(Campaign, Round, Site).
type ComputeDescriptorOutput struct {
	Descriptor ArtifactRef `json:"descriptor"`
	NumTrain   int         `json:"n_train"`
	Spent
	Released
}

// Spent is the wall time an activity spent in the store (S3 requests and
// parquet decoding and encoding, store.Timer), part of every activity's
// output so that `starter timings` can tell storage from computation in
// the history. Workflows never read it: it differs between two runs of the
// same activity and must shape no manifest.
//
// Started and Seconds are when the activity started and how long it ran,
// by the worker's clock: the history records them for an ordinary
// activity (its started and completed events) but not for a local one,
// whose marker is written with the workflow task that follows it.
type Spent struct {
	StoreSeconds float64   `json:"store_seconds,omitempty"`
	Started      time.Time `json:"started,omitzero"`
	Seconds      float64   `json:"seconds,omitempty"`
}

// Spend records seconds spent in the store by an activity that started at
// started and ran for ran seconds.
func (s *Spent) Spend(store float64, started time.Time, ran float64) {
	s.StoreSeconds, s.Started, s.Seconds = store, started, ran
}

// TrainLocalInput asks a site to train its local model for one round. Runs
// on SiteTaskQueue(Site) as ActivityTrainLocal; it must heartbeat at least
// every CampaignSpec.TrainHeartbeat.
type TrainLocalInput struct {
	SiteCall
	// StartModel is the model the site received from the last aggregation;
	// nil in round 1 or when the site had none (it starts from its own
	// initialisation).
	StartModel *ArtifactRef `json:"start_model,omitempty"`
	// SiteState is the site's own state from its last training (pFedMe's
	// personal model, SCAFFOLD's client control variate); nil at first.
	SiteState *ArtifactRef `json:"site_state,omitempty"`
	// ServerState is the server state the site reads: the shared state
	// (artifact.RoundKeys.SharedState, SCAFFOLD's server control variate);
	// nil when the method has none. (Rounds begun before the shared state
	// existed name the server's whole state here.)
	ServerState *ArtifactRef `json:"server_state,omitempty"`
	// Cluster is the site's cluster (pTopoFL); nil for other methods.
	// Clustering, the whole clustering artifact, which the site may not
	// read, is named only by rounds begun before sites read only their own
	// objects.
	Clustering *ArtifactRef `json:"clustering,omitempty"`
	Cluster    *SiteCluster `json:"cluster,omitempty"`
	Descriptor *ArtifactRef `json:"descriptor,omitempty"` // the site's latest descriptor, if any
	// Evaluate asks the site to score, in this activity, the model it will
	// be evaluated with after this round (only for methods where that is
	// its own update: EvaluatesOwnUpdate), sparing the round an evaluation
	// fan-out.
	Evaluate bool `json:"evaluate,omitempty"`
	// SecAgg, under secure aggregation, names the site's group: it keeps
	// what it trains and advertises its keys (nil otherwise).
	SecAgg *SecAggTrain `json:"secagg,omitempty"`
}

// TrainLocalOutput: the local model is written to ModelKey(Campaign, Round, Site).
type TrainLocalOutput struct {
	Model     ArtifactRef  `json:"model"`
	Control   *ArtifactRef `json:"control,omitempty"`    // control-variate update sent to the server (SCAFFOLD)
	SiteState *ArtifactRef `json:"site_state,omitempty"` // new site state; nil keeps the previous one
	NumTrain  int          `json:"n_train"`
	Loss      float64      `json:"loss"`
	// Evaluation is the site's score when TrainLocalInput.Evaluate asked.
	Evaluation *EvaluateOutput `json:"evaluation,omitempty"`
	// UpdateEvaluation is the score on the site's test split of the model
	// this activity trained, before any aggregation: the "local"
	// accuracy that PyTorch federated-learning loops commonly report
	// (issue 13's anchor). Deep sites fill it; tabular sites leave it nil.
	UpdateEvaluation *EvaluateOutput `json:"update_evaluation,omitempty"`
	// SecAgg is the site's advertised keys and what it keeps, under
	// secure aggregation; Model is then zero.
	SecAgg *SecAggAdvert `json:"secagg,omitempty"`
	Spent
	Released
}

// EvaluateInput asks a site to score the model it holds after this round's
// aggregation on its test split. Runs on SiteTaskQueue(Site) as ActivityEvaluate.
type EvaluateInput struct {
	SiteCall
	Model     ArtifactRef  `json:"model"`
	SiteState *ArtifactRef `json:"site_state,omitempty"` // pFedMe evaluates its personal model
	// Descriptor is the site's descriptor of the round, under
	// topo_features "augment" or "both" (its test rows get the same
	// topological columns as its training rows); nil otherwise.
	Descriptor *ArtifactRef `json:"descriptor,omitempty"`
}

// EvaluateOutput is the site's score (sklearn definitions: ROC AUC with ties
// averaged, 0.5 when the test split has one class; accuracy at score >= 0.5).
type EvaluateOutput struct {
	AUC      float64 `json:"auc"`
	Accuracy float64 `json:"accuracy"`
	NumTest  int     `json:"n_test"`
	// ValAUC and ValAccuracy are the same scores on the training rows the
	// site holds out (validation_fraction), NumVal their count; absent
	// when it holds out none.
	ValAUC      *float64 `json:"val_auc,omitempty"`
	ValAccuracy *float64 `json:"val_accuracy,omitempty"`
	NumVal      int      `json:"n_val,omitempty"`
	// Missing names the scores a site's own program (model "external")
	// did not report ("auc" or "accuracy"); their fields are 0 and mean
	// nothing, and the round's means leave them out.
	Missing []string `json:"missing,omitempty"`
	Spent
	Released
}

// InitModelInput asks a site's own program (model "external") for the
// campaign's initial model. Runs on SiteTaskQueue(Site) as
// ActivityInitModel, in round 1, at the first site in sorted order (the
// next one if it drops out) when the spec names no initial_model.
type InitModelInput struct {
	SiteCall
}

// InitModelOutput: the model is written to RoundKeys.Init(Site) and its
// layout to RoundKeys.InitLayout(Site).
type InitModelOutput struct {
	Model  ArtifactRef `json:"model"`
	Layout ArtifactRef `json:"layout"`
	Spent
}

// AdoptInitialModelInput asks the server to make an initial model the
// campaign's, at artifact.InitialModelKey with its layout at
// artifact.ModelLayoutKey, which every site may read: the one Site's
// program made (Model, Layout), or the safetensors file the spec names
// (File, InitialModel.File). Runs on the server as
// ActivityAdoptInitialModel.
type AdoptInitialModelInput struct {
	ServerCall
	Site   string       `json:"site,omitempty"`
	Model  ArtifactRef  `json:"model"`
	Layout ArtifactRef  `json:"layout"`
	File   *ArtifactRef `json:"file,omitempty"`
}

// AdoptInitialModelOutput is the campaign's initial model and what its
// sites need to know of its models.
type AdoptInitialModelOutput struct {
	Model    ArtifactRef   `json:"model"`
	External ExternalModel `json:"external"`
	Spent
}

// ClusterSitesInput asks the server to cluster sites by descriptor, score
// their trust and measure drift. Runs on ServerTaskQueue as ActivityClusterSites.
type ClusterSitesInput struct {
	ServerCall
	// Descriptors is the latest descriptor of every site that has one,
	// in spec order.
	Descriptors []SiteArtifact `json:"descriptors"`
	// Fresh lists the sites whose descriptor was computed in this round, in spec order.
	Fresh []string `json:"fresh"`
	// Previous is the previous clustering, nil the first time.
	Previous *ArtifactRef `json:"previous,omitempty"`
	// PreviousDescriptors are the descriptors the previous clustering used,
	// for the drift check; in spec order.
	PreviousDescriptors []SiteArtifact `json:"previous_descriptors,omitempty"`
}

// ClusterSitesOutput: the clustering artifact plus its small numbers.
type ClusterSitesOutput struct {
	Clustering ArtifactRef   `json:"clustering"`
	Sites      []SiteCluster `json:"sites"` // one per clustered site, in spec order
	// RecheckDescriptors asks the next round to recompute every site's
	// descriptor (the drift check saw something it wants to confirm).
	RecheckDescriptors bool `json:"recheck_descriptors"`
	Spent
}

// SiteUpdate is one site's contribution to an aggregation.
type SiteUpdate struct {
	Site     string       `json:"site"`
	Model    ArtifactRef  `json:"model"`
	Control  *ArtifactRef `json:"control,omitempty"`
	NumTrain int          `json:"n_train"`
}

// AggregateInput asks the server to combine this round's local models.
// Runs on ServerTaskQueue as ActivityAggregate.
type AggregateInput struct {
	ServerCall
	Updates     []SiteUpdate   `json:"updates"` // spec order; only sites that trained this round
	Clustering  *ArtifactRef   `json:"clustering,omitempty"`
	Clusters    []SiteCluster  `json:"clusters,omitempty"`
	Descriptors []SiteArtifact `json:"descriptors,omitempty"`
	ServerState *ArtifactRef   `json:"server_state,omitempty"`
	// Float32 stores the aggregates as float32 (a campaign of model
	// "external" whose tensors are all F32; a deep model's always are).
	Float32 bool `json:"float32,omitempty"`
}

// AggregateOutput: Models says which model each site now holds (it must
// cover every site in Updates; it may cover others), each at a key the site
// may read: "global", or an aggregate under the site's own name.
// Aggregates lists every object written (AggregateKey), for the manifest.
// ServerState is the server's own state, which only the server reads;
// SharedState the part every site reads (SCAFFOLD's control variate).
type AggregateOutput struct {
	Models      []SiteArtifact  `json:"models"`
	Aggregates  []NamedArtifact `json:"aggregates"`
	ServerState *ArtifactRef    `json:"server_state,omitempty"`
	SharedState *ArtifactRef    `json:"shared_state,omitempty"`
	// Flagged lists the sites a robust aggregation excluded (FoolsGold's
	// weights below its flag threshold), in update order; pTopoFL's flags
	// come from ClusterSites instead.
	Flagged []string `json:"flagged,omitempty"`
	// SiteWeights is a robust aggregation's implicit selection, in update
	// order: FoolsGold's weights, norm clipping's clip factors, Krum's 1 for
	// the chosen site and 0 for the others.
	SiteWeights []SiteWeight `json:"site_weights,omitempty"`
	Spent
}

// ReissueInput asks the server to give sites of a campaign written before
// sites read only their own objects what they start a round from, at keys
// they may read. Runs on the server (a local activity) as ActivityReissue,
// at most once per campaign and attempt: in the first round that begins
// with such references.
type ReissueInput struct {
	ServerCall
	// Models are the sites whose model is a pTopoFL cluster model
	// (artifact.RoundKeys.Aggregate "cluster-<c>"), each with that model.
	Models []SiteArtifact `json:"models,omitempty"`
	// ServerState is the campaign's server state when the sites read a
	// part of it (SCAFFOLD's control variate) and there is no shared state
	// yet; nil otherwise.
	ServerState *ArtifactRef `json:"server_state,omitempty"`
}

// ReissueOutput: Models has each site of ReissueInput.Models with a copy
// of its model under its own name in the same round folder
// (artifact.ParseRoundKeys(…).Aggregate(site)); SharedState is the shared
// part of ReissueInput.ServerState, beside it (RoundKeys.SharedState).
type ReissueOutput struct {
	Models      []SiteArtifact `json:"models,omitempty"`
	SharedState *ArtifactRef   `json:"shared_state,omitempty"`
	Spent
}

// CommitRoundInput asks the server to write the round's manifest to
// ManifestKey(Manifest.Campaign, Manifest.Round) in Bucket. The activity
// writes the JSON encoding of Manifest as is (deterministic bytes) and must
// be idempotent.
type CommitRoundInput struct {
	Bucket   string        `json:"bucket"`
	Manifest RoundManifest `json:"manifest"`
}

// CommitRoundOutput: Manifest.SHA256 becomes the next round's PrevManifestSHA256.
type CommitRoundOutput struct {
	Manifest ArtifactRef `json:"manifest"`
	Spent
}

// PruneRoundInput asks the server to delete the site uploads that Pruning
// names, for campaign Campaign in Bucket. It runs after the manifest that
// records Pruning is committed; deleting what is already gone is not an
// error, so it may run any number of times.
type PruneRoundInput struct {
	Bucket   string  `json:"bucket"`
	Campaign string  `json:"campaign"`
	Pruning  Pruning `json:"pruning"`
}

// PruneRoundOutput counts what this run of the activity deleted (a
// repeated run finds fewer or none).
type PruneRoundOutput struct {
	Deleted int   `json:"deleted"`
	Bytes   int64 `json:"bytes"`
}
