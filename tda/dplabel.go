package tda

import (
	"fmt"
	"math"
	"slices"
)

// The layout of DPLabelRaw's vector: pair counts by distance band, the
// bands cut by LabelMixingLen public radii, cross-label counts then
// same-label counts.
const (
	// DPLabelBands is the number of bands: [0, r_1], (r_1, r_2], …,
	// (r_9, r_10] and (r_10, ∞).
	DPLabelBands = LabelMixingLen + 1
	// DPLabelCrossOffset starts the DPLabelBands cross-label pair counts
	// and DPLabelSameOffset the same-label ones, band by band.
	DPLabelCrossOffset = 0
	DPLabelSameOffset  = DPLabelCrossOffset + DPLabelBands
	// DPLabelRawLen is the length of DPLabelRaw's vector.
	DPLabelRawLen = DPLabelSameOffset + DPLabelBands
)

// DefaultDPLabelRadii are the public radii of DPLabelRaw when
// DPLabelOptions.Radii is nil, in feature units. They suit features on the
// scale of the healthcare federations (eval.Healthcare, 20 raw features),
// whose within-site pairwise distances run from about 6 (1st percentile)
// over 11 (30th) to 14 (median) on seeds 1000–1003: the first radius, which
// the detector reads (DPLabelBlock), holds about a third of a site's
// pairs. r_1 = 11 was chosen among 8, 9, …, 14 (with r_j = r_1 + j − 1) on
// the healthcare federations of seeds 1000–1019, never on the seeds
// reported, as the radius whose noisy ratio detected 30 % label flips
// best at noise multiplier 0.6 ("tda dp-measure --first-seed 1000
// --label-radii …"). Data on another scale needs its own radii, fixed
// before the data is seen.
var DefaultDPLabelRadii = [LabelMixingLen]float64{11, 12, 13, 14, 15, 16, 17, 18, 19, 20}

// DPLabelOptions are the public settings of DPLabelRaw, fixed before the
// data is seen.
type DPLabelOptions struct {
	// M is the public subsample size m the counts are divided by; 0 means
	// len(rows). rows may hold fewer than M indices: the missing ones are
	// null records (zero-out). M < len(rows) and M < 2 are errors.
	M int
	// Radii are LabelMixingLen increasing positive radii r_1 < … < r_10 in
	// feature units; nil means DefaultDPLabelRadii.
	Radii []float64
}

// DPLabelSensitivity returns Δ = (m−1)/m², the L2 sensitivity of
// DPLabelRaw's vector under zero-out of one record for the public
// subsample size m ≥ 2 (see DPLabelRaw for the proof); it returns an error
// for m < 2.
func DPLabelSensitivity(m int) (float64, error) {
	if m < 2 {
		return 0, fmt.Errorf("tda: DP label sensitivity: m = %d, want at least 2", m)
	}
	fm := float64(m)
	return (fm - 1) / (fm * fm), nil
}

// DPLabelRaw returns the raw statistics of a differentially private
// label-aware summary of the site with feature rows x and 0/1 labels y,
// computed on the rows listed in rows, and Δ, their L2 sensitivity under
// zero-out of one record. The caller adds N(0, (zΔ)²·I) noise and the
// server (or the site) turns the noisy vector into the LabelledLen-number
// block of tda.LabelledSummary's layout with DPLabelBlock.
//
// With m = opt.M (len(rows) when 0) and the public radii r_1 < … < r_10,
// every unordered pair {i, j} of the listed rows falls in exactly one of
// the DPLabelBands bands [0, r_1], (r_1, r_2], …, (r_9, r_10], (r_10, ∞)
// by its distance ‖x_i − x_j‖ (raw features, Euclidean). The vector holds,
// for band b = 0..10, the number of pairs in band b whose labels differ
// (at DPLabelCrossOffset + b) and agree (at DPLabelSameOffset + b), over
// m².
//
// Disjoint bands are what makes the bound small. A record's pairs are
// split among the bands, so the whole vector moves at most as much as one
// count of all pairs would; the 10 cumulative counts within r_j (prefix
// sums, which DPLabelBlock computes as post-processing) would have a
// sensitivity √10 times larger as a release of their own. The last,
// unbounded band makes the total of cross-label pairs, and with it the
// class balance, a free by-product: no class count has to be released.
//
// Sensitivity. Let D′ be D with record r zeroed out. If r is not among
// rows, nothing changes. Otherwise the only pairs that change are the
// pairs {r, q}, q another listed row: at most m − 1 of them, each in
// exactly one band and either cross- or same-label. So the counts of band
// b drop by non-negative integers a_b (cross) and c_b (same) with
// Σ_b (a_b + c_b) ≤ m − 1, and
//
//	‖v(D) − v(D′)‖₂² = Σ_b (a_b² + c_b²)/m⁴
//	                 ≤ (Σ_b (a_b + c_b))²/m⁴   (squares of non-negatives sum to at most the square of their sum)
//	                 ≤ (m − 1)²/m⁴,
//
// so Δ = (m − 1)/m² (DPLabelSensitivity). The bound is attained (all rows
// at one point, r the only positive: its m − 1 pairs are all cross-label
// and in band 0), so it cannot be improved for this vector. No clipping is
// needed: the geometry only decides which band a pair is in, never how
// much it counts, so outliers and any feature scale are harmless to the
// proof.
//
// DPLabelRaw returns an error for invalid options (naming the field), a
// length of y other than len(x), a label other than 0 or 1 (naming its
// row), any error DPDescriptor would return for x and rows, and M < 2.
// The same inputs always give the same numbers.
func DPLabelRaw(x [][]float64, y []float64, rows []int, opt DPLabelOptions) (raw []float64, sensitivity float64, err error) {
	raw, sensitivity, err = dpLabelRaw(x, y, rows, opt)
	if err != nil {
		return nil, 0, fmt.Errorf("tda: DP label summary: %w", err)
	}
	return raw, sensitivity, nil
}

func dpLabelRaw(x [][]float64, y []float64, rows []int, opt DPLabelOptions) ([]float64, float64, error) {
	radii := DefaultDPLabelRadii[:]
	if opt.Radii != nil {
		radii = opt.Radii
	}
	if len(radii) != LabelMixingLen {
		return nil, 0, fmt.Errorf("Radii has %d values, want %d", len(radii), LabelMixingLen)
	}
	for k, r := range radii {
		if !(r > 0) || math.IsInf(r, 0) || (k > 0 && !(r > radii[k-1])) {
			return nil, 0, fmt.Errorf("Radii[%d] = %v, want positive finite radii in increasing order", k, r)
		}
	}
	if opt.M < 0 {
		return nil, 0, fmt.Errorf("M = %d is negative; use 0 for len(rows)", opt.M)
	}
	if len(y) != len(x) {
		return nil, 0, fmt.Errorf("%d rows and %d labels", len(x), len(y))
	}
	for i, v := range y {
		if v != 0 && v != 1 {
			return nil, 0, fmt.Errorf("label %d is %v; the DP label summary needs labels 0 and 1", i, v)
		}
	}
	if err := validateRows(x); err != nil {
		return nil, 0, err
	}
	if err := checkSubsampleRows(rows, len(x)); err != nil {
		return nil, 0, err
	}
	m := opt.M
	if m == 0 {
		m = len(rows)
	}
	if m < 2 {
		return nil, 0, fmt.Errorf("M = %d, want a subsample of at least 2 rows", m)
	}
	if len(rows) > m {
		return nil, 0, fmt.Errorf("%d rows for a subsample of M = %d", len(rows), m)
	}
	r2 := make([]float64, len(radii))
	for k, r := range radii {
		r2[k] = r * r
	}
	cross := make([]int, DPLabelBands)
	same := make([]int, DPLabelBands)
	for a, i := range rows {
		for _, j := range rows[a+1:] {
			d2 := 0.0
			for k, v := range x[i] {
				t := v - x[j][k]
				d2 += t * t
			}
			// The first band whose radius is at least the distance; an
			// overflowing distance (+Inf) lands in the unbounded band.
			b, _ := slices.BinarySearch(r2, d2)
			if y[i] != y[j] {
				cross[b]++
			} else {
				same[b]++
			}
		}
	}
	fm := float64(m)
	raw := make([]float64, DPLabelRawLen)
	for b := range cross {
		raw[DPLabelCrossOffset+b] = float64(cross[b]) / (fm * fm)
		raw[DPLabelSameOffset+b] = float64(same[b]) / (fm * fm)
	}
	return raw, (fm - 1) / (fm * fm), nil
}

// dpLabelRatioMax bounds the ratios of DPLabelBlock: a ratio above 2 means
// twice as many cross-label pairs as a random relabelling gives, which
// clean data does not produce and noise easily does.
const dpLabelRatioMax = 2

// DPLabelBlock post-processes the noisy raw statistics of DPLabelRaw (its
// vector plus Gaussian noise) for the public subsample size m into a
// LabelledLen-number block with tda.LabelledSummary's layout, so that
// aggregation.LabelScores reads it unchanged; post-processing costs no
// privacy. With c_b, s_b the noisy cross- and same-label counts of band b
// (over m²):
//
//   - the null cross probability of a random relabelling is estimated as
//     p_null = Σ_b c_b / ((m−1)/(2m)): all pairs of m rows, over m², number
//     (m−1)/(2m), which is public, and the cross-label ones n0·n1/m², so
//     without noise this is 2·n0·n1/(m(m−1)), LabelledSummary's p_null. It
//     is clamped to [2/m, m/(2(m−1))], its range when both classes occur
//     (a one-class site, which LabelledSummary rejects, cannot be told
//     apart privately and gets 2/m);
//   - for radius r_j, C_j = Σ_{b<j} c_b and T_j = Σ_{b<j} (c_b + s_b) count
//     the cross-label and all pairs within r_j, and the cross-label
//     fraction is F_j = C_j / max(T_j, 1/m²) clamped to [0, 1]: the floor
//     of one pair keeps a noisy T_j near or below 0 from dividing by ~0,
//     and noiseless counts give the exact fraction whenever a pair lies
//     within r_j;
//   - label-mixing point j (LabelMixingOffset + j − 1, j = 1..10) is
//     F_j/p_null clamped to [0, 2]: 1 when the pairs within r_j are as
//     mixed as a random relabelling makes them, lower with more label
//     structure, like LabelledSummary's curve but at public radii instead
//     of edge ranks;
//   - at LabelMSTOffset, the ratio within the first radius, F_1/p_null
//     (the same number as mixing point 1). It plays the role of
//     LabelledSummary's Friedman–Rafsky ratio: 1 for random labels, lower
//     for label structure, and flipping a fraction f of the labels of a
//     balanced site maps 1 − ratio to (1−2f)²(1 − ratio) in expectation,
//     because a pair's labels still differ with probability 1 − 2f(1−f)
//     if they did and come to differ with probability 2f(1−f) if they did
//     not. It reads one band, so it carries the noise of one count rather
//     than of a sum of several; choose r_1 so that the band holds enough
//     pairs (about a third of them with DefaultDPLabelRadii).
//
// DPLabelBlock returns an error for a length other than DPLabelRawLen, a
// non-finite entry (naming it) or m < 2.
func DPLabelBlock(noisyRaw []float64, m int) ([]float64, error) {
	if len(noisyRaw) != DPLabelRawLen {
		return nil, fmt.Errorf("tda: DP label block: %d numbers, want %d", len(noisyRaw), DPLabelRawLen)
	}
	if m < 2 {
		return nil, fmt.Errorf("tda: DP label block: m = %d, want at least 2", m)
	}
	for k, x := range noisyRaw {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("tda: DP label block: entry %d is %v", k, x)
		}
	}
	fm := float64(m)
	allCross := 0.0
	for b := 0; b < DPLabelBands; b++ {
		allCross += noisyRaw[DPLabelCrossOffset+b]
	}
	pNull := dpClamp(allCross/((fm-1)/(2*fm)), 2/fm, fm/(2*(fm-1)))
	out := make([]float64, LabelledLen)
	cum, tot := 0.0, 0.0
	for b := 0; b < LabelMixingLen; b++ {
		cum += noisyRaw[DPLabelCrossOffset+b]
		tot += noisyRaw[DPLabelCrossOffset+b] + noisyRaw[DPLabelSameOffset+b]
		frac := dpClamp(cum/math.Max(tot, 1/(fm*fm)), 0, 1)
		out[LabelMixingOffset+b] = dpClamp(frac/pNull, 0, dpLabelRatioMax)
	}
	out[LabelMSTOffset] = out[LabelMixingOffset]
	return out, nil
}
