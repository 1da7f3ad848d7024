// Package tda computes Vietoris–Rips persistent homology (H0 and H1 over
// Z/2), distances between persistence diagrams, the 48-number
// topological descriptor of the pTopoFL paper, and its label-aware
// extension (LabelledSummary), which lets a server see label noise that the
// feature-only descriptor cannot.
//
// It is pure Go and knows nothing of Temporal, S3 or files: callers hand it
// points or a distance matrix and get diagrams and vectors back. The
// persistence algorithm follows U. Bauer, "Ripser: efficient computation of
// Vietoris–Rips persistence barcodes", J. Appl. Comput. Topol. 5 (2021):
// H0 by union-find over sorted edges, H1 by persistent cohomology with
// clearing, an implicit coboundary enumerated through the combinatorial
// number system, and apparent/emergent zero-persistence pairs.
package tda
