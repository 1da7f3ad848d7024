package artifact

import "fmt"

// Ref points at one immutable object in the store: where it is and what its
// bytes hash to. It is what travels through Temporal instead of the object
// itself (a payload over 2 MiB fails the workflow), and its SHA256 is what
// the round manifests chain.
//
// Its JSON encoding (field names and their order) is part of every
// workflow history and every manifest, whose hashes chain: it must never
// change.
type Ref struct {
	Bucket string `json:"bucket"`
	Key    string `json:"key"`
	SHA256 string `json:"sha256"` // lower-case hex of the object's bytes
	Size   int64  `json:"size"`
}

// IsZero reports whether r points at nothing.
func (r Ref) IsZero() bool { return r == Ref{} }

// String is "s3://bucket/key". Workflows put it in error messages that are
// recorded in their histories, so its form must not change either.
func (r Ref) String() string { return fmt.Sprintf("s3://%s/%s", r.Bucket, r.Key) }
