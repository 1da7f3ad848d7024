package tda

import (
	"fmt"
	"math"
)

// FrechetMaxIter bounds the iterations of FrechetMean; Turner et al.'s
// algorithm stops earlier, when no matching changes.
const FrechetMaxIter = 100

// W2Euclid returns the 2-Wasserstein distance between the finite
// persistence diagrams a and b with the Euclidean ground metric of the
// (birth, death) plane: the square root of the least sum, over partial
// matchings, of squared Euclidean distances between matched points and of
// squared distances (d − b)/√2 of unmatched points to the diagonal. This
// is the metric of the space of diagrams in which Turner et al. define the
// Fréchet mean (K. Turner, Y. Mileyko, S. Mukherjee and J. Harer, "Fréchet
// means for distributions of persistence diagrams", Discrete Comput. Geom.
// 52 (2014)); Wasserstein uses the L∞ ground metric instead. It returns an
// error for an infinite or invalid pair.
func W2Euclid(a, b []Pair) (float64, error) {
	if err := finiteDiagram(a); err != nil {
		return 0, err
	}
	if err := finiteDiagram(b); err != nil {
		return 0, err
	}
	_, cost := euclidMatching(a, b)
	return math.Sqrt(cost), nil
}

// FrechetMean returns a Fréchet mean of the finite diagrams ds under
// W2Euclid: a diagram Y that is a local minimum of F(Y) = Σ_i W2(Y, X_i)²,
// by Turner et al.'s algorithm (2014, Algorithm 1): start from the input
// diagram with the least F, then repeat — match Y optimally to every X_i
// (a point of Y may go to the diagonal), move every point of Y to where
// its part of F is least for those matchings — until no matching changes
// (or FrechetMaxIter iterations). Turner et al. move a point to the mean
// of its matches with a diagonal match counted as the point's current
// projection, whose fixed point for a fixed matching is the minimiser
// solved here in closed form: along the diagonal the mean of its
// off-diagonal matches, across it their total persistence divided by the
// number of diagrams. Neither step increases F, and at the end Y is the
// minimiser for matchings that are optimal for Y: a local minimum. A
// point every diagram sends to the diagonal is dropped.
// The result is deterministic: ties go to the lower index. It returns an
// error for no diagrams or an infinite or invalid pair; empty diagrams
// are fine (their mean with others pulls points towards the diagonal).
func FrechetMean(ds [][]Pair) ([]Pair, error) {
	if len(ds) == 0 {
		return nil, fmt.Errorf("tda: Fréchet mean of no diagrams")
	}
	for i, d := range ds {
		if err := finiteDiagram(d); err != nil {
			return nil, fmt.Errorf("tda: Fréchet mean: diagram %d: %w", i, err)
		}
	}
	// Start at the input with the least Fréchet function.
	var y []Pair
	best := math.Inf(1)
	for _, d := range ds {
		if f := frechetFunction(d, ds); f < best {
			best, y = f, append([]Pair(nil), d...)
		}
	}
	var prev [][]int
	for range FrechetMaxIter {
		match := make([][]int, len(ds))
		for i, d := range ds {
			match[i], _ = euclidMatching(y, d)
		}
		if prev != nil && sameMatchings(prev, match) {
			break
		}
		prev = match
		next := make([]Pair, 0, len(y))
		for j := range y {
			// The minimiser of Σ_i ‖y − x_i‖² over the off-diagonal
			// matches x_i plus k·dist(y, diagonal)² for the k diagonal
			// ones: in u = b + d (along the diagonal) the mean of the
			// matches' u; in v = d − b (across it) their Σ v over all n
			// diagrams, the diagonal ones counting 0.
			var su, sv float64
			m := 0
			for i, d := range ds {
				if k := match[i][j]; k >= 0 {
					su += d[k].Birth + d[k].Death
					sv += d[k].Death - d[k].Birth
					m++
				}
			}
			if m == 0 {
				continue // every diagram sends it to the diagonal
			}
			u, v := su/float64(m), sv/float64(len(ds))
			next = append(next, Pair{Birth: (u - v) / 2, Death: (u + v) / 2})
		}
		y = next
	}
	out := y[:0]
	for _, p := range y {
		if p.Death > p.Birth {
			out = append(out, p)
		}
	}
	return out, nil
}

// FrechetFunction returns F(y) = Σ_i W2Euclid(y, ds_i)², the objective
// FrechetMean decreases.
func FrechetFunction(y []Pair, ds [][]Pair) (float64, error) {
	if err := finiteDiagram(y); err != nil {
		return 0, err
	}
	for i, d := range ds {
		if err := finiteDiagram(d); err != nil {
			return 0, fmt.Errorf("diagram %d: %w", i, err)
		}
	}
	return frechetFunction(y, ds), nil
}

func frechetFunction(y []Pair, ds [][]Pair) float64 {
	f := 0.0
	for _, d := range ds {
		_, c := euclidMatching(y, d)
		f += c
	}
	return f
}

// euclidMatching returns an optimal partial matching of a to b under
// squared Euclidean costs (match[i] is the index in b of a's point i, or
// −1 for the diagonal) and its cost, the squared W2Euclid.
func euclidMatching(a, b []Pair) ([]int, float64) {
	m, n := len(a), len(b)
	if m+n == 0 {
		return nil, 0
	}
	diag := func(p Pair) float64 { d := (p.Death - p.Birth) / 2; return 2 * d * d } // ((d−b)/√2)²
	size := m + n
	cost := make([][]float64, size)
	for i := range cost {
		cost[i] = make([]float64, size)
	}
	// Rows: a's points, then n diagonal slots; columns: b's points, then
	// m diagonal slots (augmentedCosts' layout).
	for i, x := range a {
		for j, q := range b {
			db, dd := x.Birth-q.Birth, x.Death-q.Death
			cost[i][j] = db*db + dd*dd
		}
		for k := range m {
			cost[i][n+k] = diag(x)
		}
	}
	for j, q := range b {
		for k := range n {
			cost[m+k][j] = diag(q)
		}
	}
	assign := minCostAssignment(cost)
	match := make([]int, m)
	total := 0.0
	for i, j := range assign {
		total += cost[i][j]
		if i < m {
			match[i] = -1
			if j < n {
				match[i] = j
			}
		}
	}
	return match, total
}

func sameMatchings(a, b [][]int) bool {
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if a[i][j] != b[i][j] {
				return false
			}
		}
	}
	return true
}

// finiteDiagram reports an infinite, NaN or reversed pair.
func finiteDiagram(d []Pair) error {
	for k, p := range d {
		if math.IsNaN(p.Birth) || math.IsInf(p.Birth, 0) || math.IsNaN(p.Death) || math.IsInf(p.Death, 0) || p.Death < p.Birth {
			return fmt.Errorf("pair %d (%v, %v): want finite birth ≤ death", k, p.Birth, p.Death)
		}
	}
	return nil
}
