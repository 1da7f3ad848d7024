package eval

import (
	"fmt"
	"math"
)

// ScoreBins is the number of equal-width score bins of ScoreCounts. It is
// even, so that 0.5, the decision threshold of Accuracy, is a bin edge, and
// small, because every count carries its own noise: on a 40-record test
// split with 8 positives and count noise of standard deviation 2.3 (15
// releases at ε = 8), CountsAUC of 4 bins misses the true AUC (0.81) by
// 0.13 root-mean-square, of 6 bins by 0.15 and of 10 bins by 0.17, while
// binning alone costs 4 bins about 0.02 of AUC against 10 (simulated,
// 20,000 draws of logistic scores).
const ScoreBins = 4

// ScoreCounts returns the histogram of binary scores in [0, 1] by class:
// 2·ScoreBins counts, first the negatives' (labels 0) in bins
// [0, 0.25), [0.25, 0.5), [0.5, 0.75), [0.75, 1], then the positives'. A score s falls
// in bin ⌊s·ScoreBins⌋ (the last bin also holds s = 1). It is what a site
// releases about its test scores under differential privacy: removing (or
// zeroing) one test record lowers exactly one count by one, so the
// histogram's L2 sensitivity is 1, and CountsAUC and CountsAccuracy
// compute the metrics from it as post-processing.
func ScoreCounts(scores, labels []float64) ([]float64, error) {
	if len(scores) != len(labels) {
		return nil, fmt.Errorf("eval: score counts: %d scores and %d labels", len(scores), len(labels))
	}
	c := make([]float64, 2*ScoreBins)
	for i, s := range scores {
		if !(s >= 0 && s <= 1) {
			return nil, fmt.Errorf("eval: score counts: score %d is %v, want a number in [0, 1]", i, s)
		}
		b := min(int(s*ScoreBins), ScoreBins-1)
		switch labels[i] {
		case 0:
			c[b]++
		case 1:
			c[ScoreBins+b]++
		default:
			return nil, fmt.Errorf("eval: score counts: label %d is %v, want 0 or 1", i, labels[i])
		}
	}
	return c, nil
}

// clampCounts splits a (possibly noisy) histogram of ScoreCounts into
// negatives and positives, every count clamped at 0.
func clampCounts(c []float64) (neg, pos []float64) {
	if len(c) != 2*ScoreBins {
		panic("eval: counts have the wrong length")
	}
	neg, pos = make([]float64, ScoreBins), make([]float64, ScoreBins)
	for b := range ScoreBins {
		neg[b] = math.Max(c[b], 0)
		pos[b] = math.Max(c[ScoreBins+b], 0)
	}
	return neg, pos
}

// CountsAUC returns the ROC AUC of the binned scores whose histogram is c
// (ScoreCounts, perhaps with noise): the probability that a positive
// scores in a higher bin than a negative, ties within a bin counted one
// half (the Mann–Whitney statistic of the binned scores, which is sklearn's
// ROC AUC of scores rounded down to their bin). Counts below 0 count as 0;
// with no positive or no negative mass it returns 0.5.
func CountsAUC(c []float64) float64 {
	neg, pos := clampCounts(c)
	var p, n, wins, below float64
	for b := range ScoreBins {
		wins += pos[b] * (below + neg[b]/2)
		below += neg[b]
		p += pos[b]
		n += neg[b]
	}
	if p <= 0 || n <= 0 {
		return 0.5
	}
	return math.Min(math.Max(wins/(p*n), 0), 1)
}

// CountsAccuracy returns the accuracy at threshold 0.5 of the scores whose
// histogram is c, over n test records (n is public: the histogram's noise
// leaves it where it was): the negatives below 0.5 and the positives at or
// above it, over n, clamped to [0, 1].
func CountsAccuracy(c []float64, n int) float64 {
	if n < 1 {
		return 0
	}
	neg, pos := clampCounts(c)
	right := 0.0
	for b := range ScoreBins / 2 {
		right += neg[b] + pos[ScoreBins/2+b]
	}
	return math.Min(math.Max(right/float64(n), 0), 1)
}
