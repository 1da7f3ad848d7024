package eval

import (
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/stat/distuv"
)

// MeanStd returns the mean and the sample standard deviation (ddof = 1,
// i.e. divided by n−1, like numpy.std(x, ddof=1) and pandas' std) of x.
// For an empty x both are NaN; for a single value the mean is that value
// and the standard deviation is NaN, since one sample says nothing about
// spread. NaN values propagate.
func MeanStd(x []float64) (mean, std float64) {
	if len(x) == 0 {
		return math.NaN(), math.NaN()
	}
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	if len(x) < 2 {
		return mean, math.NaN()
	}
	var ss float64
	for _, v := range x {
		ss += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(ss / float64(len(x)-1))
}

// PairedTest is the result of a paired t-test of a against b.
type PairedTest struct {
	// N is the number of pairs.
	N int
	// MeanDiff and StdDiff are the mean and the sample standard deviation
	// (ddof = 1) of the differences a[i] − b[i].
	MeanDiff, StdDiff float64
	// T is the t statistic MeanDiff / (StdDiff / √N) and DF = N − 1 its
	// degrees of freedom.
	T  float64
	DF int
	// P is the two-sided p-value under the Student t distribution.
	P float64
}

// PairedTTest performs a two-sided paired t-test of the null hypothesis
// that the differences a[i] − b[i] have mean zero, as
// scipy.stats.ttest_rel(a, b) does. The p-value is 2·S(|t|) with S the
// survival function of Student's t with N−1 degrees of freedom
// (distuv.StudentsT).
//
// It returns an error when there are fewer than two pairs, since the
// standard deviation of one difference is undefined, or when a value is
// NaN or infinite. When all differences are equal the variance is zero:
// if they are all zero, T and P are NaN (there is nothing to test, as in
// scipy); otherwise T is ±Inf and P is 0. a and b must have the same
// length; PairedTTest panics otherwise.
func PairedTTest(a, b []float64) (PairedTest, error) {
	if len(a) != len(b) {
		panic("eval: paired samples of different lengths")
	}
	n := len(a)
	if n < 2 {
		return PairedTest{N: n}, fmt.Errorf("paired t-test: %d pairs, need at least 2", n)
	}
	d := make([]float64, n)
	for i := range a {
		d[i] = a[i] - b[i]
		if math.IsNaN(d[i]) || math.IsInf(d[i], 0) {
			return PairedTest{N: n}, fmt.Errorf("paired t-test: pair %d is (%v, %v), want finite values", i, a[i], b[i])
		}
	}
	r := PairedTest{N: n, DF: n - 1}
	r.MeanDiff, r.StdDiff = MeanStd(d)
	if r.StdDiff == 0 {
		if r.MeanDiff == 0 {
			r.T, r.P = math.NaN(), math.NaN()
		} else {
			r.T, r.P = math.Inf(int(math.Copysign(1, r.MeanDiff))), 0
		}
		return r, nil
	}
	r.T = r.MeanDiff / (r.StdDiff / math.Sqrt(float64(n)))
	st := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(r.DF)}
	r.P = math.Min(1, 2*st.Survival(math.Abs(r.T)))
	return r, nil
}

// ExactSignedRankMax is the largest number of non-zero differences for
// which WilcoxonSignedRank computes the exact null distribution; above it
// the normal approximation is used.
const ExactSignedRankMax = 25

// SignedRankTest is the result of a Wilcoxon signed-rank test.
type SignedRankTest struct {
	// N is the number of non-zero differences used; Zeros is the number of
	// zero differences dropped.
	N, Zeros int
	// WPlus and WMinus are the sums of the ranks of |d| of the positive and
	// the negative differences; ties get average ranks.
	WPlus, WMinus float64
	// Statistic is min(WPlus, WMinus), scipy's two-sided statistic.
	Statistic float64
	// P is the two-sided p-value.
	P float64
	// Exact reports whether P comes from the exact null distribution
	// (N ≤ ExactSignedRankMax) rather than the normal approximation.
	Exact bool
}

// WilcoxonSignedRank performs a two-sided Wilcoxon signed-rank test of the
// null hypothesis that the differences a[i] − b[i] are symmetric about
// zero.
//
// Zero differences are dropped before ranking, as scipy.stats.wilcoxon's
// default zero_method="wilcox" does; tied |d| get the average of the ranks
// they span. For N ≤ ExactSignedRankMax non-zero differences the p-value
// is exact: P = min(1, 2·Pr(W ≤ Statistic)), with the null distribution of
// W+ enumerated over all 2^N sign assignments of the observed ranks (by
// dynamic programming over doubled ranks, which are integers). Without
// ties this is the classical exact distribution and matches scipy's
// method="exact"; with ties it is the exact permutation distribution
// conditional on the observed average ranks, which scipy does not offer
// (it falls back to the normal approximation when there are ties). For
// larger N the p-value uses the normal approximation with the tie
// correction of the variance and no continuity correction (scipy's
// default correction=False).
//
// It returns an error when every difference is zero (nothing to rank) or a
// value is NaN or infinite. a and b must have the same length;
// WilcoxonSignedRank panics otherwise.
func WilcoxonSignedRank(a, b []float64) (SignedRankTest, error) {
	if len(a) != len(b) {
		panic("eval: paired samples of different lengths")
	}
	var d []float64
	var r SignedRankTest
	for i := range a {
		v := a[i] - b[i]
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return r, fmt.Errorf("signed-rank test: pair %d is (%v, %v), want finite values", i, a[i], b[i])
		}
		if v == 0 {
			r.Zeros++
			continue
		}
		d = append(d, v)
	}
	r.N = len(d)
	if r.N == 0 {
		return r, fmt.Errorf("signed-rank test: all %d differences are zero", len(a))
	}
	idx := make([]int, r.N)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool { return math.Abs(d[idx[i]]) < math.Abs(d[idx[j]]) })
	// rank2 holds twice the average rank, an integer even with ties.
	rank2 := make([]int, r.N)
	var tieTerm float64 // Σ (t³ − t) over tie groups, for the normal variance
	for i := 0; i < r.N; {
		j := i
		for j+1 < r.N && math.Abs(d[idx[j+1]]) == math.Abs(d[idx[i]]) {
			j++
		}
		// Ranks i+1 … j+1 average to (i+j+2)/2.
		for k := i; k <= j; k++ {
			rank2[idx[k]] = i + j + 2
		}
		t := float64(j - i + 1)
		tieTerm += t*t*t - t
		i = j + 1
	}
	for i, v := range d {
		if v > 0 {
			r.WPlus += float64(rank2[i]) / 2
		} else {
			r.WMinus += float64(rank2[i]) / 2
		}
	}
	r.Statistic = math.Min(r.WPlus, r.WMinus)
	n := float64(r.N)
	if r.N <= ExactSignedRankMax {
		r.Exact = true
		// count[s] is the number of sign assignments with 2·W+ = s.
		total := 0
		for _, v := range rank2 {
			total += v
		}
		count := make([]float64, total+1)
		count[0] = 1
		hi := 0
		for _, v := range rank2 {
			for s := hi; s >= 0; s-- {
				if count[s] != 0 {
					count[s+v] += count[s]
				}
			}
			hi += v
		}
		lim := int(math.Round(2 * r.Statistic))
		var le float64
		for s := 0; s <= lim; s++ {
			le += count[s]
		}
		r.P = math.Min(1, 2*le/math.Exp2(n))
		return r, nil
	}
	mean := n * (n + 1) / 4
	variance := n*(n+1)*(2*n+1)/24 - tieTerm/48
	z := (r.Statistic - mean) / math.Sqrt(variance)
	r.P = math.Min(1, 2*distuv.UnitNormal.CDF(-math.Abs(z)))
	return r, nil
}
