package aggregation

import (
	"fmt"
	"math"
	"slices"

	"github.com/ptopofl/ptopofl/tda"
)

// Detector selects how pTopoFL scores sites for anomaly flags and trust.
type Detector string

const (
	// DescriptorDetector is the paper's detector (§3.4, Eq. 8): z-scores of
	// the mean distance between a site's descriptor and the others'
	// (TrustScores). It sees only the features, so label flips are
	// invisible to it.
	DescriptorDetector Detector = "descriptor"
	// LabelledDetector reads extended descriptors (tda.ExtendedDescriptorLen
	// numbers: the paper's 48, then tda.LabelledSummary). Clustering, drift
	// and the centre distances use the first tda.DescriptorLen numbers
	// exactly as DescriptorDetector does; the anomaly score of a site is
	// its label z-score (LabelScores, LabelZScores) and its trust follows
	// from it by the paper's rule (TrustFromZ).
	LabelledDetector Detector = "labelled"
	// CombinedDetector is LabelledDetector with the anomaly score
	// max(paper z-score, label z-score): a site is flagged when either
	// detector flags it. It keeps the paper's detector of feature-space
	// anomalies, and with it that detector's false positives (about 9 % of
	// honest healthcare sites at τ = 2 with no adversary, seeds 1000–1009).
	CombinedDetector Detector = "combined"
)

// labelGapFloor is the smallest denominator 1 − median(r) LabelScores
// uses, so a federation whose typical site has no label structure left
// (median ratio ≥ 0.95) does not divide by ~0.
const labelGapFloor = 0.05

// LabelScores returns each site's loss of label structure relative to the
// federation,
//
//	g_k = (r_k − median(r)) / max(1 − median(r), 0.05),
//
// where r_k is the cross-label H0 ratio of site k's label-aware summary
// (block[tda.LabelMSTOffset], the Friedman–Rafsky statistic over its
// random-relabelling mean, see tda.LabelledSummary) and the median is
// numpy's (mean of the two middle values for an even count).
//
// Why this form: r = 1 means "labels as mixed as a random relabelling",
// which is where label noise drives a site (flipping a fraction f of the
// labels leaves about (1−2f)² of the gap 1 − r). Honest sites differ in how
// separable their classes are, so r is compared with the federation's
// typical site (the median, which stays an honest site's value while fewer
// than half the sites are adversarial) and measured in units of that
// site's own gap to 1: g_k is the fraction of the typical label structure
// site k has lost, 0 for a typical site, about 1 − (1−2f)² = 0.84 for a
// typical site with 30 % of its labels flipped, and negative for sites
// with cleaner classes than typical. (Flipping each label with probability
// f keeps an edge's labels different with probability 1 − 2f(1−f) and
// makes equal ones differ with probability 2f(1−f); for balanced classes
// this maps 1 − r to exactly (1−2f)²(1 − r), and the spanning tree, built
// from the features, does not change.) The default γ = 0.5 therefore
// flags a typical site from a flip rate of about 15 % ((1−2f)² = 0.5). Unlike a z-score it needs no spread
// estimate, which two outliers among eight sites inflate (a population
// z-score cannot exceed √((K−m)/m) for m equal outliers among K, 1.73 for
// 2 of 8, below the paper's τ = 2).
//
// Each block must have tda.LabelledLen finite numbers; LabelScores returns
// an error naming the site otherwise, and for no sites.
func LabelScores(blocks [][]float64) ([]float64, error) {
	if len(blocks) == 0 {
		return nil, fmt.Errorf("label scores: no sites")
	}
	r := make([]float64, len(blocks))
	for k, b := range blocks {
		if err := finiteVector(b, tda.LabelledLen); err != nil {
			return nil, fmt.Errorf("label scores: site %d label block: %w", k, err)
		}
		r[k] = b[tda.LabelMSTOffset]
	}
	med := median(r)
	den := math.Max(1-med, labelGapFloor)
	g := make([]float64, len(r))
	for k, v := range r {
		g[k] = (v - med) / den
	}
	return g, nil
}

// median returns numpy's median of v (not modified); v must be non-empty.
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// LabelZScores puts the label scores g (LabelScores) on the scale of the
// paper's anomaly z-scores: z_k = τ·g_k/γ, so that a site that lost the
// fraction γ of the typical label structure sits exactly at the flag
// threshold τ and Flags(z, trust, τ, 0) flags it when g_k > γ. gap (γ)
// must be positive (a programmer error panics).
func LabelZScores(g []float64, tau, gap float64) []float64 {
	if !(gap > 0) {
		panic("aggregation: LabelZScores: gap must be positive")
	}
	z := make([]float64, len(g))
	for k, v := range g {
		z[k] = tau * v / gap
	}
	return z
}

// TrustFromZ returns the paper's trust weights for anomaly scores on the
// z scale (Eq. 8): t_k = clip(exp(−max(z_k − 1, 0)), lo, hi). Under
// LabelZScores with the default τ = 2 and γ = 0.5, a site at g_k = γ keeps
// e^{−1} ≈ 0.37 of its weight and one at g_k = 0.84 (a typical site with 30
// % of its labels flipped) keeps e^{−2.36} ≈ 0.09.
func TrustFromZ(z []float64, lo, hi float64) []float64 {
	trust := make([]float64, len(z))
	for k, v := range z {
		trust[k] = math.Min(math.Max(math.Exp(-math.Max(v-1, 0)), lo), hi)
	}
	return trust
}

// SplitExtendedDescriptor returns the paper's part (the first
// tda.DescriptorLen numbers) and the label block of an extended descriptor
// (tda.ExtendedDescriptorLen numbers), both aliasing v. It returns an error
// for any other length.
func SplitExtendedDescriptor(v []float64) (paper, label []float64, err error) {
	if len(v) != tda.ExtendedDescriptorLen {
		return nil, nil, fmt.Errorf("has %d numbers, an extended descriptor has %d (%d + %d label-aware)",
			len(v), tda.ExtendedDescriptorLen, tda.DescriptorLen, tda.LabelledLen)
	}
	return v[:tda.LabelledOffset:tda.LabelledOffset], v[tda.LabelledOffset:], nil
}
