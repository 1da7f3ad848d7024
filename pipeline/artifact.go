package pipeline

import "fmt"

// ArtifactRef points at one immutable object in the store. It is what
// travels through Temporal instead of the object itself (a payload over
// 2 MiB fails the workflow), and its SHA256 is what the manifests chain.
type ArtifactRef struct {
	Bucket string `json:"bucket"`
	Key    string `json:"key"`
	SHA256 string `json:"sha256"` // lower-case hex of the object's bytes
	Size   int64  `json:"size"`
}

// IsZero reports whether r points at nothing.
func (r ArtifactRef) IsZero() bool { return r == ArtifactRef{} }

// String is "s3://bucket/key".
func (r ArtifactRef) String() string { return fmt.Sprintf("s3://%s/%s", r.Bucket, r.Key) }

// SiteArtifact is an artifact that belongs to one site (its descriptor, its
// model, its state). Lists of SiteArtifact are kept in spec order so that
// the workflow never depends on map iteration order.
type SiteArtifact struct {
	Site string      `json:"site"`
	Ref  ArtifactRef `json:"ref"`
}

// NamedArtifact is a server output that belongs to no single site, such as a
// cluster model ("cluster-0") or the global model ("global").
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
	RoleSiteModel   = "site_model" // the model a site holds after aggregation
	RoleServerState = "server_state"
)

// ArtifactRecord is one artifact read or written by a round, for the
// manifest. Site is empty for server artifacts; Name names a NamedArtifact.
type ArtifactRecord struct {
	Role string      `json:"role"`
	Site string      `json:"site,omitempty"`
	Name string      `json:"name,omitempty"`
	Ref  ArtifactRef `json:"ref"`
}
