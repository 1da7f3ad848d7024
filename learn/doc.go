// Package learn is what a federated site computes: a binary classifier whose
// parameters are one flat vector, the solvers that fit it (L-BFGS to a tight
// tolerance and full-batch gradient descent), a per-site standard scaler, the
// topology-guided sample weights of pTopoFL, and the site-side update of every
// federated method (LocalOnly, FedAvg, FedProx, SCAFFOLD, pFedMe, pTopoFL and
// the FedAvg-style robust baselines).
//
// The package is pure computation: it reads no files, talks to no server and
// keeps no global state. A site update is a function of its named input
// (site data, the vectors the server pushed, the site's own persistent
// vectors, hyper-parameters, round and seed) and returns a named output made
// of flat float64 vectors and small scalars, so that a durable pipeline can
// store every input and output and replay a round bit for bit.
//
// The reference semantics are those of the pTopoFL paper (§3 and §4) as its
// authors' code computes them; ../shared/golden/paper/README.md and the
// `notes` of its expected.json spell them out and the parity tests in
// package simulate check them.
package learn
