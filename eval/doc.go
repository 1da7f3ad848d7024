// Package eval measures federated runs and generates the data they run on.
//
// It holds the scenario generators of the pTopoFL paper (§4.1): a Go
// re-implementation of scikit-learn's make_classification algorithm
// (MakeClassification), the healthcare scenario with adversarial label-flip
// sites (Healthcare) and the pathological label-skew benchmark (Benchmark).
// The generators return data only; dataset.WriteFederation writes them in
// the layout the sites read. It also computes the paper's privacy figures (§3.6, Eqs.
// 10–11, Fig. 6) from actual site sizes (Privacy), and the evaluation
// metrics of a run.
//
// Every random draw comes from a seeded math/rand/v2 PCG source owned by
// the caller or derived from an options seed; nothing reads a global
// generator or the clock, so a seed always yields the same bytes.
//
// It is not a data loader or a training loop: reading site files and
// validating them belongs to dataset/, training to learn/, and aggregation
// to aggregation/. It does no file I/O and knows nothing of Temporal or S3.
package eval
