package eval

import (
	"fmt"
	"math"
	"sort"
)

// ROCAUC returns the area under the ROC curve of scores against binary
// labels (1 is positive), with tied scores counted half, which is
// scikit-learn's roc_auc_score: AUC = (Σ_{i∈pos} rank_i − n₊(n₊+1)/2)/(n₊n₋)
// with mid-ranks for ties (the Mann–Whitney U statistic, Hanley & McNeil
// 1982, Eq. 2). If the labels hold only one class the AUC is undefined and
// ROCAUC returns 0.5, as the reference's evaluation does (expected.json
// `semantics`: "AUC := 0.5 when a client's test split has one class").
//
// It returns an error if the lengths differ, there are no samples, a label
// is not 0 or 1, or a score is NaN.
func ROCAUC(scores, labels []float64) (float64, error) {
	if err := checkScored(scores, labels); err != nil {
		return 0, fmt.Errorf("roc auc: %w", err)
	}
	idx := make([]int, len(scores))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return scores[idx[a]] < scores[idx[b]] })
	var rankSum, nPos float64
	for i := 0; i < len(idx); {
		j := i
		for j < len(idx) && scores[idx[j]] == scores[idx[i]] {
			j++
		}
		// Ranks i+1..j share the mid-rank (i+1+j)/2.
		mid := float64(i+1+j) / 2
		for k := i; k < j; k++ {
			if labels[idx[k]] == 1 {
				rankSum += mid
				nPos++
			}
		}
		i = j
	}
	nNeg := float64(len(scores)) - nPos
	if nPos == 0 || nNeg == 0 {
		return 0.5, nil
	}
	return (rankSum - nPos*(nPos+1)/2) / (nPos * nNeg), nil
}

// Accuracy returns the fraction of samples whose prediction, 1 if the
// score is at least 0.5 and 0 otherwise (expected.json `semantics`), equals
// the label. It returns an error as ROCAUC does.
func Accuracy(scores, labels []float64) (float64, error) {
	if err := checkScored(scores, labels); err != nil {
		return 0, fmt.Errorf("accuracy: %w", err)
	}
	correct := 0
	for i, s := range scores {
		pred := 0.0
		if s >= 0.5 {
			pred = 1
		}
		if pred == labels[i] {
			correct++
		}
	}
	return float64(correct) / float64(len(scores)), nil
}

func checkScored(scores, labels []float64) error {
	if len(scores) != len(labels) {
		return fmt.Errorf("%d scores and %d labels", len(scores), len(labels))
	}
	if len(scores) == 0 {
		return fmt.Errorf("no samples")
	}
	for i, y := range labels {
		if y != 0 && y != 1 {
			return fmt.Errorf("label %d is %v, want 0 or 1", i, y)
		}
		if math.IsNaN(scores[i]) {
			return fmt.Errorf("score %d is NaN", i)
		}
	}
	return nil
}

// SiteMean returns the unweighted mean of per-site values, the reference's
// round metric auc_r = mean_k AUC_k (expected.json `semantics`: "unweighted
// mean over clients"). It returns NaN for no sites.
func SiteMean(values []float64) float64 {
	if len(values) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, v := range values {
		s += v
	}
	return s / float64(len(values))
}

// ConvergenceRound returns the first round r (1-based) with
// curve[r−1] ≥ 0.95·curve[R−1], R = len(curve) (expected.json `semantics`:
// "conv_round = first round r (1-based) with auc_r >= 0.95*auc_15"). It
// returns 0 for an empty curve.
func ConvergenceRound(curve []float64) int {
	if len(curve) == 0 {
		return 0
	}
	target := 0.95 * curve[len(curve)-1]
	for r, v := range curve {
		if v >= target {
			return r + 1
		}
	}
	return len(curve)
}

// SettlingTolerance is the AUC band SettlingRound uses in the reports:
// half a point of AUC, about the spread of a method's final AUC between
// neighbouring rounds once it has converged on the paper's scenarios.
const SettlingTolerance = 0.005

// SettlingRound returns the first round r (1-based) from which the curve
// stays within tol of its final value: |curve[s−1] − curve[R−1]| ≤ tol for
// every s ≥ r. Unlike ConvergenceRound, whose 95 % of the final AUC is met
// in round 1 by any method that starts above 0.95·final (every method on
// the paper's scenarios), it measures how long a method is still moving.
// It returns 0 for an empty curve.
func SettlingRound(curve []float64, tol float64) int {
	if len(curve) == 0 {
		return 0
	}
	final := curve[len(curve)-1]
	r := len(curve)
	for r > 1 && math.Abs(curve[r-2]-final) <= tol {
		r--
	}
	return r
}
