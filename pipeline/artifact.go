package pipeline

import "github.com/ptopofl/ptopofl/artifact"

// ArtifactRef is artifact.Ref, the one reference type (bucket, key, sha256,
// size), under the name the payload types have always used. It is an alias,
// not a new type, so the JSON inside histories and manifests is the same
// bytes and values pass between pipeline and store without conversion.
type ArtifactRef = artifact.Ref

// SiteArtifact is an artifact that belongs to one site (its descriptor, its
// model, its state). Lists of SiteArtifact are kept in spec order so that
// the workflow never depends on map iteration order.
type SiteArtifact struct {
	Site string      `json:"site"`
	Ref  ArtifactRef `json:"ref"`
}

// NamedArtifact is a server output named by its aggregate target
// (artifact.RoundKeys.Aggregate): the global model ("global"), a model
// written for one site (the site's name), or, in campaigns written before
// sites read only their own aggregates, a cluster model ("cluster-0").
type NamedArtifact struct {
	Name string      `json:"name"`
	Ref  ArtifactRef `json:"ref"`
}

// Artifact roles in a RoundManifest.
const (
	RoleDescriptor  = "descriptor"
	RoleClustering  = "clustering"
	RoleStartModel  = "start_model" // the model a site held when the round began
	RoleLocalModel  = "local_model"
	RoleControl     = "control" // SCAFFOLD control-variate update
	RoleSiteState   = "site_state"
	RoleAggregate   = "aggregate"
	RoleSiteModel   = "site_model"   // the model a site holds after aggregation
	RoleServerState = "server_state" // the server's own state (artifact.RoundKeys.ServerState)
	// RoleSharedState is the part of the server state every site reads
	// (artifact.RoundKeys.SharedState: SCAFFOLD's control variate).
	RoleSharedState = "shared_state"
	// Model "external": the model every site starts from (round 1) and
	// the tensor layout of every model of the campaign; the site whose
	// program made the initial model is the record's Site.
	RoleInitialModel = "initial_model"
	RoleModelLayout  = "model_layout"
)

// ArtifactRecord is one artifact read or written by a round, for the
// manifest. Site is empty for server artifacts; Name names a NamedArtifact.
type ArtifactRecord struct {
	// Role is what the artifact is to the round: descriptor, clustering,
	// start_model (as an output: a model reissued under the site's own
	// name), local_model, control, site_state, aggregate, site_model,
	// server_state (the server's own), shared_state (what every site
	// reads of it), initial_model, model_layout.
	Role string      `json:"role"`
	Site string      `json:"site,omitempty"`
	Name string      `json:"name,omitempty"`
	Ref  ArtifactRef `json:"ref"`
}
