// Package pipeline holds the domain types that the durable campaign pipeline
// shares between its workflows and its activities: the campaign
// specification, the hyper-parameters, artifact references (ArtifactRef, an
// alias of artifact.Ref), the round manifest, task-queue and activity names, every activity's input and output
// struct, and the seed derivation.
//
// It is deliberately free of behaviour that touches the outside world: no
// S3, no files, no clocks, no random numbers. Workflows import it (and only
// it) so that their code stays replay-safe; activities import it to know
// what they receive and what they must return. Everything here is
// JSON-serialisable and small, because every value travels through the
// Temporal history, where a payload over 2 MiB fails the workflow: models
// and descriptors travel as ArtifactRef, never inline.
//
// What it is not: it does not implement any part of the pTopoFL method
// (see tda/, learn/, aggregation/), it does not decide how a site's data
// is read (see dataset/), and it does not name objects in the store: keys
// and the name rule are package artifact's.
package pipeline
