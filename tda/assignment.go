package tda

import "math"

// minCostAssignment solves the square linear assignment problem exactly: it
// returns assign with assign[i] the column given to row i, such that the sum
// of cost[i][assign[i]] is minimal over all permutations.
//
// cost must be square with finite entries; a NaN or infinite entry, or a
// ragged matrix, is a programming error of this package and panics. The
// algorithm is the shortest-augmenting-path form of the Hungarian method with
// row and column potentials (R. Jonker and A. Volgenant, "A shortest
// augmenting path algorithm for dense and sparse linear assignment
// problems", Computing 38 (1987); the O(n³) formulation follows
// H. W. Kuhn, "The Hungarian method for the assignment problem", Naval Res.
// Logist. Q. 2 (1955) with potentials as in Edmonds–Karp). Each phase adds
// one row and scans every column at most once, so it terminates in n phases
// of O(n²) work whatever the rounding of the potentials.
func minCostAssignment(cost [][]float64) []int {
	n := len(cost)
	for _, row := range cost {
		if len(row) != n {
			panic("tda: assignment cost matrix is not square")
		}
		for _, c := range row {
			if math.IsNaN(c) || math.IsInf(c, 0) {
				panic("tda: assignment cost is not finite")
			}
		}
	}
	// Index 0 of the column arrays is a virtual column that holds the row
	// being inserted in the current phase; real columns are 1..n.
	u := make([]float64, n+1) // row potentials, indexed by row+1
	v := make([]float64, n+1) // column potentials
	p := make([]int, n+1)     // p[j]: row+1 assigned to column j, 0 if none
	way := make([]int, n+1)   // previous column on the shortest path
	minv := make([]float64, n+1)
	used := make([]bool, n+1)
	for i := 1; i <= n; i++ {
		p[0] = i
		j0 := 0
		for j := range minv {
			minv[j] = math.Inf(1)
			used[j] = false
		}
		for {
			used[j0] = true
			i0 := p[j0]
			delta := math.Inf(1)
			j1 := -1
			for j := 1; j <= n; j++ {
				if used[j] {
					continue
				}
				cur := cost[i0-1][j-1] - u[i0] - v[j]
				if cur < minv[j] {
					minv[j] = cur
					way[j] = j0
				}
				if j1 < 0 || minv[j] < delta {
					delta = minv[j]
					j1 = j
				}
			}
			for j := 0; j <= n; j++ {
				if used[j] {
					u[p[j]] += delta
					v[j] -= delta
				} else {
					minv[j] -= delta
				}
			}
			j0 = j1
			if p[j0] == 0 {
				break
			}
		}
		// Flip the augmenting path back to the virtual column.
		for j0 != 0 {
			j1 := way[j0]
			p[j0] = p[j1]
			j0 = j1
		}
	}
	assign := make([]int, n)
	for j := 1; j <= n; j++ {
		assign[p[j]-1] = j - 1
	}
	return assign
}

// hasPerfectMatching reports whether the bipartite graph with n left and n
// right vertices, where left vertex i is adjacent to the right vertices
// adj[i], has a perfect matching. It runs Hopcroft–Karp (J. E. Hopcroft and
// R. M. Karp, "An n^{5/2} algorithm for maximum matchings in bipartite
// graphs", SIAM J. Comput. 2 (1973)) in O(E√V).
func hasPerfectMatching(n int, adj [][]int) bool {
	const free = -1
	matchL := make([]int, n)
	matchR := make([]int, n)
	for i := range matchL {
		matchL[i] = free
		matchR[i] = free
	}
	dist := make([]int, n)
	queue := make([]int, 0, n)
	// it[i] is the next adjacency index the DFS tries from left vertex i.
	it := make([]int, n)
	stack := make([]int, 0, n)
	matched := 0
	for {
		// BFS from all free left vertices builds the layered graph.
		queue = queue[:0]
		for i := 0; i < n; i++ {
			if matchL[i] == free {
				dist[i] = 0
				queue = append(queue, i)
			} else {
				dist[i] = -1
			}
		}
		found := false
		for q := 0; q < len(queue); q++ {
			i := queue[q]
			for _, j := range adj[i] {
				k := matchR[j]
				if k == free {
					found = true
				} else if dist[k] < 0 {
					dist[k] = dist[i] + 1
					queue = append(queue, k)
				}
			}
		}
		if !found {
			return matched == n
		}
		// Iterative DFS along the layers finds a maximal set of disjoint
		// shortest augmenting paths.
		for i := range it {
			it[i] = 0
		}
		for s := 0; s < n; s++ {
			if matchL[s] != free {
				continue
			}
			stack = append(stack[:0], s)
			for len(stack) > 0 {
				i := stack[len(stack)-1]
				if it[i] == len(adj[i]) {
					dist[i] = -1 // dead end: never revisit in this phase
					stack = stack[:len(stack)-1]
					continue
				}
				j := adj[i][it[i]]
				k := matchR[j]
				if k == free {
					// Augment along the stack: each left vertex on it takes
					// the right vertex its iterator points at.
					for _, l := range stack {
						r := adj[l][it[l]]
						matchL[l] = r
						matchR[r] = l
					}
					for _, l := range stack {
						dist[l] = -1
					}
					matched++
					break
				}
				if dist[k] == dist[i]+1 {
					stack = append(stack, k)
					continue
				}
				it[i]++
			}
		}
	}
}
