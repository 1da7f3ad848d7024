// Package activities holds the Temporal activities of a campaign: thin
// adapters that read their inputs from the store (or, at a site, from the
// site's own data directory), call the core (tda, learn, aggregation,
// simulate's site helpers), write their outputs to deterministic keys and
// return references.
//
// Site activities (Site: ComputeDescriptor, TrainLocal, Evaluate) run on the
// site's own task queue and read only that site's data; what they write is
// derived (a descriptor, a model, a state of model-sized vectors), never a
// data row. Server activities (Server: ClusterSites, Aggregate, CommitRound)
// read only what sites wrote.
//
// Every activity is idempotent: a retry recomputes the same bytes from the
// same inputs (every random draw is seeded from the input) and overwrites
// its own earlier attempt. Bad site data fails with a non-retryable
// pipeline.ErrTypeBadSiteData error naming the site, the file and the line.
//
// There is no method logic here: that lives in the core packages, and the
// composition of a round lives in package workflows.
package activities
