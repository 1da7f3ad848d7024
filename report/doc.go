// Package report turns the results of the pTopoFL paper's experiments into
// reports a reader can check: Markdown and one self-contained HTML page
// with tables and gonum/plot figures (PNG and SVG).
//
// There is one builder per experiment of the paper — Table1 (Table 1 and
// Figs. 2–3), Adversarial (Fig. 4), Stability (Fig. 5), Privacy (Fig. 6),
// Ablation (Fig. 7) and Deep (Table 2) — and Theory, the check of its
// theorems, each taking a plain input (Theory takes package theory's
// judged Report) and returning a *Report. The inputs hold numbers only;
// another package fills them from the artifacts of finished campaigns.
//
// The package is pure presentation: it does no I/O, knows nothing of
// Temporal, S3 or the file system, and returns bytes. The same input
// always yields the same bytes: figures use gonum/plot's embedded
// Liberation fonts, a fixed size and a fixed resolution, and nothing reads
// the clock or a random generator. Significance tests come from package
// eval (PairedTTest, WilcoxonSignedRank).
package report
