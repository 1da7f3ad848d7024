// Package aggregation is what the federated server computes in a round:
// FedAvg's n-weighted average, SCAFFOLD's server control variate, pFedMe's
// outer averaging, the robust baselines (coordinate-wise median, trimmed
// mean, Krum, FoolsGold, norm-clipped FedAvg, with their implicit per-site
// selections for reporting), and pTopoFL's topology-aware personalised
// aggregation — clustering of sites by their topological descriptors (or
// by the Wasserstein distance between their persistence diagrams), trust
// scores and flags from descriptor z-scores or, with extended descriptors,
// from the label-aware summary (Detector), topology-weighted intra-cluster
// averages blended with a global consensus, and per-site topological drift
// with re-clustering (paper §3.3–§3.5).
//
// AggregateRound is the single server-side entry point. Its input and
// output are named structs of flat float64 vectors and small scalars, and
// the server's memory between rounds is the explicit ServerState, so a
// durable pipeline can persist every round and replay it bit for bit. The
// package is pure computation: no files, no network, no global state, no
// randomness.
package aggregation
