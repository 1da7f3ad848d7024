// Package artifact is the vocabulary every part of ptopofl uses to name what
// it stores: the reference to one stored object (Ref: bucket, key, sha256,
// size), every object key of a campaign and a sweep (DESIGN §4), and the one
// rule for the names that become part of those keys, of task queues and of
// workflow IDs (ValidateName).
//
// It is a leaf: it imports nothing of ours, so the store (S3 and parquet),
// the pipeline's payload types, the activities and the commands all agree
// on one definition without importing each other. It does no I/O: building
// a key or checking a name never touches S3, files or Temporal.
//
// A key function panics on a name that ValidateName rejects or on a
// negative round: names come from users and are checked where they enter
// (CampaignSpec.Validate, SweepSpec.Validate, the commands), so an invalid
// name reaching a key function is a programming error.
package artifact
