package tda

import (
	"math"
	"sort"
)

// Bottleneck returns the bottleneck distance between the persistence
// diagrams a and b: the least ε such that some partial matching of a with b
// moves every matched point by at most ε in the L∞ norm and every unmatched
// point (b, d) to the diagonal, at cost (d−b)/2, by at most ε.
//
// Infinite bars (Death = +Inf) are matched only with infinite bars, at cost
// |Δbirth|; if a and b hold different numbers of infinite bars the distance
// is +Inf. The result is exact: it is one of the candidate costs, found by a
// binary search over them with a Hopcroft–Karp perfect-matching test on the
// diagonal-augmented bipartite graph (as in D. Cohen-Steiner, H. Edelsbrunner
// and J. Harer, "Stability of persistence diagrams", Discrete Comput. Geom.
// 37 (2007)). Every pair must have a finite Birth and Death ≥ Birth; if any
// pair does not, Bottleneck returns NaN. Both diagrams empty gives 0.
func Bottleneck(a, b []Pair) float64 {
	fa, ia, ok := splitDiagram(a)
	if !ok {
		return math.NaN()
	}
	fb, ib, ok := splitDiagram(b)
	if !ok {
		return math.NaN()
	}
	if len(ia) != len(ib) {
		return math.Inf(1)
	}
	worst := 0.0
	for k := range ia {
		worst = math.Max(worst, math.Abs(ia[k]-ib[k]))
	}
	return math.Max(worst, finiteBottleneck(fa, fb))
}

// Wasserstein returns the p-Wasserstein distance between the persistence
// diagrams a and b with the L∞ ground metric: the p-th root of the least sum,
// over partial matchings, of the p-th powers of the L∞ distances between
// matched points and of the distances (d−b)/2 of unmatched points to the
// diagonal. p must be ≥ 1; p = +Inf gives the Bottleneck distance, and any
// other p < 1 or NaN gives NaN.
//
// Infinite bars are matched only among themselves, by sorted birth, at cost
// |Δbirth| (sorted order is optimal for a convex cost on a line); different
// counts of infinite bars give +Inf. Invalid pairs give NaN, as for
// Bottleneck.
//
// The finite part is solved exactly by minCostAssignment on the standard
// (|A|+|B|)×(|A|+|B|) cost matrix in which each point has a diagonal copy
// (Cohen-Steiner et al.; M. Kerber, D. Morozov and A. Nigmetov, "Geometry
// helps to compare persistence diagrams", ACM J. Exp. Algorithmics 22
// (2017)), in O((|A|+|B|)³) time. Distances are divided by a power of two
// before they are raised to the power p, which is exact and keeps the powers
// from overflowing; for very large p, powers of distances much smaller than
// the largest one may still underflow to 0, so use p = +Inf for the
// bottleneck distance rather than a huge p.
func Wasserstein(a, b []Pair, p float64) float64 {
	if math.IsInf(p, 1) {
		return Bottleneck(a, b)
	}
	if math.IsNaN(p) || p < 1 {
		return math.NaN()
	}
	fa, ia, ok := splitDiagram(a)
	if !ok {
		return math.NaN()
	}
	fb, ib, ok := splitDiagram(b)
	if !ok {
		return math.NaN()
	}
	if len(ia) != len(ib) {
		return math.Inf(1)
	}
	cost := augmentedCosts(fa, fb)
	// scale is the power of two at or above the largest ground distance, so
	// every scaled distance lies in [0, 1] and dividing by it is exact.
	largest := 0.0
	for _, row := range cost {
		for _, c := range row {
			largest = math.Max(largest, c)
		}
	}
	for k := range ia {
		largest = math.Max(largest, math.Abs(ia[k]-ib[k]))
	}
	if largest == 0 {
		return 0
	}
	_, exp := math.Frexp(largest)
	scale := math.Ldexp(1, exp)
	pow := func(x float64) float64 {
		if p == 1 {
			return x / scale
		}
		return math.Pow(x/scale, p)
	}
	for _, row := range cost {
		for j, c := range row {
			row[j] = pow(c)
		}
	}
	sum := 0.0
	for i, j := range minCostAssignment(cost) {
		sum += cost[i][j]
	}
	for k := range ia {
		sum += pow(math.Abs(ia[k] - ib[k]))
	}
	if p == 1 {
		return scale * sum
	}
	return scale * math.Pow(sum, 1/p)
}

// splitDiagram separates the finite pairs from the births of the infinite
// ones, which it returns sorted. ok is false if a pair has a NaN or infinite
// Birth, a NaN or −Inf Death, or Death < Birth.
func splitDiagram(pairs []Pair) (finite []Pair, infBirths []float64, ok bool) {
	for _, q := range pairs {
		if math.IsNaN(q.Birth) || math.IsInf(q.Birth, 0) || math.IsNaN(q.Death) || q.Death < q.Birth {
			return nil, nil, false
		}
		if math.IsInf(q.Death, 1) {
			infBirths = append(infBirths, q.Birth)
		} else {
			finite = append(finite, q)
		}
	}
	sort.Float64s(infBirths)
	return finite, infBirths, true
}

// linfDistance is the L∞ distance between two finite pairs as points of the
// plane.
func linfDistance(x, y Pair) float64 {
	return math.Max(math.Abs(x.Birth-y.Birth), math.Abs(x.Death-y.Death))
}

// diagonalDistance is the L∞ distance from a finite pair to the diagonal.
func diagonalDistance(x Pair) float64 { return (x.Death - x.Birth) / 2 }

// augmentedCosts returns the (m+n)×(m+n) matrix of ground distances for
// finite diagrams a (m points) and b (n points). Rows are the points of a
// followed by n diagonal slots; columns are the points of b followed by m
// diagonal slots. A point of a may take any of the m slots of its side at
// its diagonal distance, a point of b any of the n slots of its side, and
// slot meets slot at 0. Because the slots of one side are interchangeable,
// this has the same optimum as the textbook matrix in which point i may use
// only its own diagonal copy (the others costing +Inf), without the
// infinities that would upset the potentials of the assignment solver.
func augmentedCosts(a, b []Pair) [][]float64 {
	m, n := len(a), len(b)
	size := m + n
	cost := make([][]float64, size)
	for i := range cost {
		cost[i] = make([]float64, size)
	}
	for i, x := range a {
		dx := diagonalDistance(x)
		for j, y := range b {
			cost[i][j] = linfDistance(x, y)
		}
		for k := 0; k < m; k++ {
			cost[i][n+k] = dx
		}
	}
	for j, y := range b {
		dy := diagonalDistance(y)
		for k := 0; k < n; k++ {
			cost[m+k][j] = dy
		}
	}
	return cost
}

// finiteBottleneck is the bottleneck distance between two diagrams of finite
// pairs: the smallest candidate cost t at which the augmented graph of the
// edges of cost ≤ t has a perfect matching.
func finiteBottleneck(a, b []Pair) float64 {
	m, n := len(a), len(b)
	if m+n == 0 {
		return 0
	}
	cost := augmentedCosts(a, b)
	size := m + n
	candidates := make([]float64, 0, size*size)
	for i := 0; i < size; i++ {
		candidates = append(candidates, cost[i]...)
	}
	sort.Float64s(candidates)
	uniq := candidates[:1]
	for _, c := range candidates[1:] {
		if c != uniq[len(uniq)-1] {
			uniq = append(uniq, c)
		}
	}
	adj := make([][]int, size)
	feasible := func(t float64) bool {
		for i := range adj {
			adj[i] = adj[i][:0]
			for j, c := range cost[i] {
				if c <= t {
					adj[i] = append(adj[i], j)
				}
			}
		}
		return hasPerfectMatching(size, adj)
	}
	// The largest candidate is always feasible: every point can go to the
	// diagonal. Find the first feasible one.
	k := sort.Search(len(uniq)-1, func(k int) bool { return feasible(uniq[k]) })
	return uniq[k]
}
