// Package simulate runs a federated campaign in memory: R rounds of one
// method over K sites, calling the site-side update of package learn for
// every site and the server-side aggregation of package aggregation, and
// evaluating every site after every round exactly as the reference does
// (../shared/golden/paper/expected.json `semantics`).
//
// It is the reference implementation of a round. The durable pipeline
// performs the same calls in the same order on the same vectors — per site
// learn.UpdateSite, then aggregation.AggregateRound, then EvaluateSite on
// learn.EvaluationParams — so its results must equal Run's bit for bit. Run
// is deterministic: no clocks, no global random source, no map iteration
// in anything that shapes a result.
//
// It is not a data loader (site data arrive as matrices) and it does not
// compute descriptors: Site.Descriptor (and, for the Wasserstein distance,
// the persistence pairs) come from package tda, computed with the variant
// the Config names.
package simulate
