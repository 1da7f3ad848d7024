// Package store keeps the artifacts of campaigns and sweeps in S3-compatible
// object storage: descriptors, models and metrics as parquet, manifests and
// specs as JSON, each addressed by an artifact.Ref that carries its sha256.
//
// Keys are deterministic (DESIGN §4), so a retried activity writes the same
// object at the same key; Put of identical bytes is harmless, and
// PutIfAbsentOrSame refuses to replace committed content with different
// bytes. Parquet encoding is deterministic too: the same records give the
// same bytes and therefore the same sha256, whatever the machine or run.
//
// Every read through a ref verifies size and sha256 and fails naming the key.
//
// store talks S3 through minio-go (path-style, SigV4, us-east-1) and knows
// nothing about Temporal, workflows or the method.
package store
