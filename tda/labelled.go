package tda

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// The layout of the label-aware summary (LabelledSummary) and of the
// extended descriptor, which is the paper's 48 numbers followed by it.
const (
	// LabelMixingLen is the number of points of the label-mixing curve.
	LabelMixingLen = 10
	// LabelMixingOffset is where the label-mixing curve starts in the
	// summary.
	LabelMixingOffset = 0
	// LabelMSTOffset is the position of the cross-label H0 ratio (the
	// Friedman–Rafsky statistic) in the summary.
	LabelMSTOffset = LabelMixingOffset + LabelMixingLen
	// LabelledLen is the length of the label-aware summary.
	LabelledLen = LabelMSTOffset + 1

	// LabelledOffset is where the label-aware summary starts in an
	// extended descriptor: after the paper's DescriptorLen numbers, which
	// stay first and unchanged.
	LabelledOffset = DescriptorLen
	// ExtendedDescriptorLen is the length of the extended descriptor,
	// DescriptorLen + LabelledLen.
	ExtendedDescriptorLen = LabelledOffset + LabelledLen
)

// LabelMixingScales are the scales of the label-mixing curve, as fractions
// of a site's pairwise edges: point j of the curve looks at the
// Vietoris–Rips 1-skeleton at the length of the ⌈q_j·E⌉-th shortest of the
// E edges. Scales set by edge rank rather than by length make the curve
// independent of the site's size and of the spread of its features; the
// grid is dense at small scales, where label noise shows first.
var LabelMixingScales = [LabelMixingLen]float64{0.01, 0.02, 0.03, 0.05, 0.07, 0.10, 0.15, 0.20, 0.30, 0.50}

// ErrOneClass is returned (wrapped) by LabelledSummary when the rows it uses
// carry a single label: there is no label structure to summarise.
var ErrOneClass = errors.New("the rows used carry a single label")

// DefaultLabelledNSub is the subsample size of LabelledSummary when
// LabelledOptions.NSub is 0. It is larger than the descriptor's 80 because
// the label statistics count edges between classes, and a minority class
// of a few rows in an 80-row subsample makes them noisy: on the healthcare
// federations (eval.Healthcare, 8 sites of 30–199 training rows) using all
// rows instead of 80 raised the detection of 30 % label flips at a fixed
// false-positive rate (see aggregation.LabelScores). Cost is O(n² log n).
const DefaultLabelledNSub = 500

// LabelledOptions selects the rows of a label-aware summary. The fields
// mean what they mean in DescriptorOptions, except that NSub defaults to
// DefaultLabelledNSub; with Rows, or with NSub and Seed equal to the
// descriptor's, the summary uses the same rows as the site's descriptor.
type LabelledOptions struct {
	// NSub is the subsample size, DefaultLabelledNSub when 0; a site with
	// n ≤ NSub rows uses all of them. A negative NSub is an error.
	NSub int
	// Seed seeds the deterministic subsample (as in ComputeDescriptor).
	Seed uint64
	// Rows, when non-nil, lists the row indices to use and overrides NSub
	// and Seed.
	Rows []int
}

// LabelledSummary returns the label-aware topological summary of a site
// with feature rows x and labels y: LabelledLen numbers that describe how
// the labels sit on the Vietoris–Rips filtration of the standardised rows.
// It is an extension of the pTopoFL descriptor for label-flip detection:
// the paper's descriptor sees only x, so a site that flips labels has the
// same descriptor as an honest one. The summary holds statistics of the
// whole subsample, never a row or a per-row value.
//
// The rows are picked and standardised exactly as ComputeDescriptor does
// (same NSub, Seed and Rows give the same rows), and every labelled pair
// {i, j} is an edge of length ‖z_i − z_j‖. Labels are compared for
// equality, so any number of classes works; with n_c rows of class c
// among n, a uniformly random relabelling (a permutation of y) makes an
// edge cross-label with probability
//
//	p_null = 1 − Σ_c n_c(n_c − 1) / (n(n − 1)),
//
// which is 2·n0·n1/(n(n−1)) for two classes. Both parts divide by their
// p_null expectation, so that honest sites with different class balances
// and sizes are on the same scale: 1 means "the labels are as mixed as a
// random relabelling", 0 means "no two points of different labels meet".
//
//   - Label-mixing curve (LabelMixingLen numbers from LabelMixingOffset):
//     at scale t_j, the length of the ⌈q_j·E⌉-th shortest edge in (length,
//     i, j) order with q_j = LabelMixingScales[j], the fraction of the
//     edges of length ≤ t_j (ties included) that join different labels,
//     divided by p_null. Clean classes are locally pure, so at small scales
//     the 1-skeleton has few cross-label edges and the curve starts well
//     below 1 and rises towards 1 as t grows (at t = the longest edge it is
//     exactly 1). Flipping a fraction f of labels makes a point's label
//     disagree with its close neighbours' with probability about 2f(1 − f)
//     whatever the geometry, so cross-label edges appear at the smallest
//     scales and the whole curve is lifted towards 1 (for f = 0.3 most of
//     the gap to 1 goes: about (1−2f)² = 0.16 of it remains).
//   - Cross-label H0 ratio (at LabelMSTOffset): the number of H0 deaths —
//     the n−1 edges of the Kruskal minimum spanning tree, as in
//     ComputeDescriptor — that merge components through an edge joining
//     different labels, divided by its null expectation (n−1)·p_null. For
//     two classes this is the Friedman–Rafsky two-sample statistic
//     (J. H. Friedman, L. C. Rafsky, "Multivariate generalizations of the
//     Wald–Wolfowitz and Smirnov two-sample tests", Ann. Statist. 7 (1979)
//     697–717) over its permutation mean 2·n0·n1/n: the label-aware
//     version of the H0 barcode, scale-free because it counts merges
//     instead of measuring their lengths.
//
// LabelledSummary returns an error for mismatched lengths of x and y, a
// NaN or infinite label, any error ComputeDescriptor would return for x
// and the options, fewer than two rows, and (wrapping ErrOneClass) rows
// that carry a single label. The same inputs always give the same numbers.
func LabelledSummary(x [][]float64, y []float64, opt LabelledOptions) ([]float64, error) {
	if len(x) != len(y) {
		return nil, fmt.Errorf("tda: labelled summary: %d rows and %d labels", len(x), len(y))
	}
	for i, v := range y {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("tda: labelled summary: label %d is %v", i, v)
		}
	}
	if err := validateRows(x); err != nil {
		return nil, fmt.Errorf("tda: labelled summary: %w", err)
	}
	nsub := opt.NSub
	if nsub == 0 {
		nsub = DefaultLabelledNSub
	}
	rows, err := descriptorRows(len(x), DescriptorOptions{NSub: nsub, Seed: opt.Seed, Rows: opt.Rows})
	if err != nil {
		return nil, fmt.Errorf("tda: labelled summary: %w", err)
	}
	if len(rows) < 2 {
		return nil, fmt.Errorf("tda: labelled summary: %d row, want at least 2", len(rows))
	}
	labels := make([]float64, len(rows))
	for i, r := range rows {
		labels[i] = y[r]
	}
	pNull := nullCrossProbability(labels)
	if pNull == 0 {
		// Which class it is stays out of the message: a site's error
		// reaches the workflow history, which holds no data values.
		return nil, fmt.Errorf("tda: labelled summary: %w", ErrOneClass)
	}
	z, err := standardise(x, rows)
	if err != nil {
		return nil, fmt.Errorf("tda: labelled summary: %w", err)
	}
	dm, err := EuclideanDistances(z)
	if err != nil {
		return nil, fmt.Errorf("tda: labelled summary: %w", err)
	}
	edges := sortedEdges(dm)
	out := make([]float64, LabelledLen)
	mixingCurve(out[LabelMixingOffset:LabelMixingOffset+LabelMixingLen], edges, labels, pNull)
	n := len(labels)
	out[LabelMSTOffset] = float64(crossLabelTreeEdges(edges, labels)) / (float64(n-1) * pNull)
	return out, nil
}

// nullCrossProbability returns 1 − Σ_c n_c(n_c−1)/(n(n−1)), the chance that
// a pair of distinct rows carries different labels under a uniformly random
// permutation of the labels; 0 for a single class.
func nullCrossProbability(labels []float64) float64 {
	sorted := slices.Clone(labels)
	slices.Sort(sorted)
	n := float64(len(sorted))
	same := 0.0
	for i := 0; i < len(sorted); {
		j := i
		for j < len(sorted) && sorted[j] == sorted[i] {
			j++
		}
		c := float64(j - i)
		same += c * (c - 1)
		i = j
	}
	return 1 - same/(n*(n-1))
}

// mixingCurve fills out with the label-mixing curve (see LabelledSummary)
// of the sorted edges.
func mixingCurve(out []float64, edges []weightedEdge, labels []float64, pNull float64) {
	e := len(edges)
	// cross[m] counts the cross-label edges among the first m.
	cross := make([]int, e+1)
	for m, ed := range edges {
		cross[m+1] = cross[m]
		if labels[ed.i] != labels[ed.j] {
			cross[m+1]++
		}
	}
	for k, q := range LabelMixingScales {
		m := int(math.Ceil(q * float64(e)))
		m = min(max(m, 1), e)
		// Include every edge as long as the m-th: the complex at scale t
		// holds all edges of length ≤ t.
		t := edges[m-1].w
		for m < e && edges[m].w <= t {
			m++
		}
		out[k] = float64(cross[m]) / float64(m) / pNull
	}
}

// crossLabelTreeEdges returns how many edges of the Kruskal minimum
// spanning tree over the sorted edges join different labels.
func crossLabelTreeEdges(edges []weightedEdge, labels []float64) int {
	cross := 0
	for _, e := range kruskalTree(edges, len(labels)) {
		if labels[e.i] != labels[e.j] {
			cross++
		}
	}
	return cross
}
