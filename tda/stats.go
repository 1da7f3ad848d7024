package tda

import "math"

// This file holds the few order statistics and sums of the descriptor,
// written to reproduce numpy 1.24 bit for bit rather than to be short: the
// descriptor's Betti counts depend on the exact float64 value of t_max, and
// the golden files of ../shared/golden/paper were made with numpy.

// percentileSorted returns numpy's default ("linear") percentile q (in
// percent, 0 ≤ q ≤ 100) of the ascending values v, as numpy 1.24's
// np.percentile(v, q) computes it:
//
//	h = (N−1)·(q/100), i = ⌊h⌋, g = h − i, a = v[i], b = v[min(i+1, N−1)]
//	result = a + (b−a)·g    if g < 0.5
//	result = b − (b−a)·(1−g) otherwise
//
// The two-sided form is numpy's _lerp. It is not the same as (1−g)·a + g·b:
// when a == b that form can be one ulp away from a, which moves a threshold
// onto or off a death value and changes a Betti count. v must be sorted and
// non-empty and hold no NaN; the function panics on an empty v, because its
// callers in this package check for that.
func percentileSorted(v []float64, q float64) float64 {
	return percentileAt(len(v), func(k int) float64 { return v[k] }, q)
}

// percentileAt is percentileSorted of the n ascending values at(0), …,
// at(n−1), for sorted sequences that are cheaper to index than to build.
func percentileAt(n int, at func(int) float64, q float64) float64 {
	if n == 0 {
		panic("tda: percentile of no values")
	}
	h := float64(n-1) * (q / 100)
	fi := math.Floor(h)
	i := int(fi)
	if i >= n-1 {
		// numpy clamps both neighbours to the last value here.
		return at(n - 1)
	}
	if i < 0 {
		return at(0)
	}
	g := h - fi
	a, b := at(i), at(i+1)
	d := b - a
	// The float64 conversions forbid fusing the product and the sum into
	// an FMA, which numpy does not do either.
	if g < 0.5 {
		return a + float64(d*g)
	}
	return b - float64(d*(1-g))
}

// medianSorted returns numpy's median of the ascending values v: the middle
// value for an odd count and (v[k−1] + v[k]) / 2 for an even count 2k, which
// is how np.mean averages the two middle values. v must be non-empty.
func medianSorted(v []float64) float64 {
	n := len(v)
	if n == 0 {
		panic("tda: median of no values")
	}
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// pairwiseSum returns the sum of v in the order numpy's np.sum uses for a
// contiguous float64 array (pairwise_sum in numpy/core/src/umath/
// loops_utils.h.src): fewer than 8 values are added left to right; up to
// 128 values are added in 8 interleaved accumulators that are combined as
// ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)) before the remaining values are
// added; longer inputs are split in two at a multiple of 8 near the middle.
// The empty sum is 0.
func pairwiseSum(v []float64) float64 {
	n := len(v)
	switch {
	case n < 8:
		s := 0.0
		for _, x := range v {
			s += x
		}
		return s
	case n <= 128:
		var r [8]float64
		copy(r[:], v[:8])
		i := 8
		for ; i < n-n%8; i += 8 {
			for k := range r {
				r[k] += v[i+k]
			}
		}
		s := ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
		for ; i < n; i++ {
			s += v[i]
		}
		return s
	default:
		n2 := n / 2
		n2 -= n2 % 8
		return pairwiseSum(v[:n2]) + pairwiseSum(v[n2:])
	}
}

// sequentialSum returns the sum of v added left to right from 0, as a
// Python loop or builtin sum computes it.
func sequentialSum(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s
}
