package aggregation

import (
	"fmt"
	"math"
	"slices"
	"sort"
)

// checkModels verifies that models is non-empty, rectangular and finite,
// and returns the common length. Models come from sites, so a bad one is
// reported as an error naming the site index rather than a panic.
func checkModels(op string, models [][]float64) (int, error) {
	if len(models) == 0 {
		return 0, fmt.Errorf("%s: no models", op)
	}
	p := len(models[0])
	for k, m := range models {
		if len(m) != p {
			return 0, fmt.Errorf("%s: model %d has %d parameters, model 0 has %d", op, k, len(m), p)
		}
		for j, v := range m {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return 0, fmt.Errorf("%s: model %d parameter %d is %v; robust aggregation needs finite parameters", op, k, j, v)
			}
		}
	}
	return p, nil
}

// CoordinateMedian returns the coordinate-wise median of the models (D. Yin,
// Y. Chen, K. Ramchandran, P. Bartlett, "Byzantine-robust distributed
// learning: towards optimal statistical rates", ICML 2018): coordinate j of
// the result is the median of the models' coordinate j. For an even number
// of models it is the mean of the two middle values, as numpy.median.
//
// It returns an error if models is empty, the models differ in length, or
// a parameter is NaN or infinite. The inputs are not modified.
func CoordinateMedian(models [][]float64) ([]float64, error) {
	p, err := checkModels("coordinate median", models)
	if err != nil {
		return nil, err
	}
	n := len(models)
	out := make([]float64, p)
	col := make([]float64, n)
	for j := range out {
		for k, m := range models {
			col[k] = m[j]
		}
		// Selection instead of a full sort keeps the median O(n) per
		// coordinate; selectSmallest leaves col[:n/2] ≤ col[n/2].
		selectSmallest(col, n/2)
		if n%2 == 1 {
			out[j] = col[n/2]
		} else {
			out[j] = (slices.Max(col[:n/2]) + col[n/2]) / 2
		}
	}
	return out, nil
}

// TrimCount is the number of values TrimmedMean drops at each end of a
// coordinate of n models: ⌊trim·n⌋. Zero means the trimmed mean is the
// plain mean, which a trim in (0, 0.5) gives for every n < 1/trim.
func TrimCount(trim float64, n int) int {
	return int(math.Floor(trim * float64(n)))
}

// KrumMinModels is the fewest models Krum accepts with f Byzantine models
// tolerated: 2f + 3, the paper's condition n > 2f + 2.
func KrumMinModels(f int) int {
	return 2*f + 3
}

// TrimmedMean returns the coordinate-wise trimmed mean of the models (Yin et
// al., ICML 2018): for each coordinate the values are sorted, the
// k = ⌊trim·n⌋ smallest and k largest are dropped, and the remaining n − 2k
// are averaged. The count is rounded down, as scipy.stats.trim_mean does,
// so trim = 0.1 with n = 8 models drops nothing and trim = 0 is the plain
// mean.
//
// trim must be in [0, 0.5), which always leaves at least one value. It
// returns an error for a trim outside that range, an empty or ragged set of
// models, or a non-finite parameter. The inputs are not modified.
func TrimmedMean(models [][]float64, trim float64) ([]float64, error) {
	if !(trim >= 0 && trim < 0.5) {
		return nil, fmt.Errorf("trimmed mean: trim = %v, want a fraction in [0, 0.5)", trim)
	}
	p, err := checkModels("trimmed mean", models)
	if err != nil {
		return nil, err
	}
	n := len(models)
	k := TrimCount(trim, n)
	out := make([]float64, p)
	col := make([]float64, n)
	for j := range out {
		for i, m := range models {
			col[i] = m[j]
		}
		// Two selections leave the k smallest in col[:k] and the k largest
		// in col[n-k:], so the kept values are col[k:n-k] in some order.
		if k > 0 {
			selectSmallest(col, k)
			selectSmallest(col[k:], n-2*k-1)
		}
		s := 0.0
		for _, v := range col[k : n-k] {
			s += v
		}
		out[j] = s / float64(n-2*k)
	}
	return out, nil
}

// selectSmallest reorders v so that v[k] holds the value it would hold if v
// were sorted, every element before it is ≤ v[k] and every element after is
// ≥ v[k] (Hoare's selection with a median-of-three pivot). It needs
// 0 ≤ k < len(v) and values that are not NaN.
func selectSmallest(v []float64, k int) {
	lo, hi := 0, len(v)-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		if v[mid] < v[lo] {
			v[mid], v[lo] = v[lo], v[mid]
		}
		if v[hi] < v[lo] {
			v[hi], v[lo] = v[lo], v[hi]
		}
		if v[hi] < v[mid] {
			v[hi], v[mid] = v[mid], v[hi]
		}
		pivot := v[mid]
		i, j := lo, hi
		for i <= j {
			for v[i] < pivot {
				i++
			}
			for v[j] > pivot {
				j--
			}
			if i <= j {
				v[i], v[j] = v[j], v[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return
		}
	}
}

// KrumScores returns the Krum score of every model (P. Blanchard,
// E. M. El Mhamdi, R. Guerraoui, J. Stainer, "Machine learning with
// adversaries: Byzantine tolerant gradient descent", NeurIPS 2017, §4):
// the sum of squared Euclidean distances from model i to its n − f − 2
// nearest other models, where f is the number of Byzantine models
// tolerated.
//
// It needs n > 2f + 2 models (the paper's condition 2f + 2 < n) and
// f ≥ 0; otherwise, and for an empty, ragged or non-finite set of models,
// it returns an error.
func KrumScores(models [][]float64, f int) ([]float64, error) {
	if f < 0 {
		return nil, fmt.Errorf("krum: f = %d Byzantine models, want f ≥ 0", f)
	}
	if _, err := checkModels("krum", models); err != nil {
		return nil, err
	}
	n := len(models)
	if n < KrumMinModels(f) {
		return nil, fmt.Errorf("krum: %d models with f = %d, want more than 2f + 2 = %d models; lower f or add sites", n, f, 2*f+2)
	}
	dist := make([][]float64, n)
	for i := range dist {
		dist[i] = make([]float64, n)
	}
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			s := 0.0
			for c, v := range models[i] {
				d := v - models[j][c]
				s += d * d
			}
			dist[i][j], dist[j][i] = s, s
		}
	}
	closest := n - f - 2
	scores := make([]float64, n)
	others := make([]float64, 0, n-1)
	for i := range models {
		others = others[:0]
		for j := range models {
			if j != i {
				others = append(others, dist[i][j])
			}
		}
		sort.Float64s(others)
		s := 0.0
		for _, d := range others[:closest] {
			s += d
		}
		scores[i] = s
	}
	return scores, nil
}

// KrumSelect returns the index of the model Krum selects: the one with the
// smallest KrumScores score, the lowest index among equal scores. Errors are
// KrumScores'.
func KrumSelect(models [][]float64, f int) (int, error) {
	scores, err := KrumScores(models, f)
	if err != nil {
		return 0, err
	}
	best := 0
	for i, s := range scores {
		if s < scores[best] {
			best = i
		}
	}
	return best, nil
}

// Krum returns a copy of the model Krum selects (Blanchard et al., NeurIPS
// 2017): the model whose summed squared distance to its n − f − 2 nearest
// neighbours is smallest, ties going to the lowest index. It needs
// n > 2f + 2 models; errors are KrumScores'.
func Krum(models [][]float64, f int) ([]float64, error) {
	i, err := KrumSelect(models, f)
	if err != nil {
		return nil, err
	}
	return append([]float64(nil), models[i]...), nil
}
