package tda

import (
	"math"
	"slices"
)

// The filtration order. Every simplex enters at its diameter (longest edge);
// simplices of equal diameter are ordered by decreasing combinatorial index,
// exactly as in Ripser. Persistence values do not depend on this tie-break,
// but clearing, apparent pairs and emergent pairs are only correct when H0,
// the apparent-pair tests and the cohomology reduction all use the same one.
//
// Simplex indices come from the combinatorial number system: the edge
// {i > j} has index C(i,2) + j and the triangle {a > b > c} has index
// C(a,3) + C(b,2) + c. Coboundaries are enumerated implicitly from these
// indices; no boundary or coboundary matrix is stored.

// entry is a simplex of the working columns: its diameter and its index.
type entry struct {
	diam float64
	idx  int64
}

// before reports whether x comes before y in the filtration order.
func before(x, y entry) bool {
	return x.diam < y.diam || (x.diam == y.diam && x.idx > y.idx)
}

// column is an edge whose cocycle the H1 reduction must reduce.
type column struct {
	diam float64
	i, j int32 // i > j
}

// VietorisRips returns the persistence diagram of the Vietoris–Rips
// filtration of m in dimensions 0 and 1 over Z/2 (see Diagram for what is
// listed). The filtration is cut at the enclosing radius
// r = min_i max_j d(i,j), as Ripser does: the complex at r is a cone, so the
// full filtration has exactly the same diagram.
//
// H0 comes from a minimum spanning tree (Prim's algorithm, O(n²), with ties
// broken in the filtration order, which yields the same pairing as
// union-find over the sorted edges). H1 comes from persistent cohomology
// with clearing: the n−1 tree edges are cleared, edges in a zero-persistence
// apparent pair are skipped, and the remaining edges are reduced in reverse
// filtration order with the emergent-pair shortcut, following U. Bauer,
// "Ripser: efficient computation of Vietoris–Rips persistence barcodes",
// J. Appl. Comput. Topol. 5 (2021) 391–423.
//
// Zero points give an empty diagram; one point gives the single bar [0, ∞).
// Duplicate points are allowed; their zero-length merges are not listed.
func VietorisRips(m *DistanceMatrix) Diagram {
	n := m.n
	if n == 0 {
		return Diagram{}
	}
	if n > 1<<20 {
		panic("tda: more than 2^20 points overflow the simplex indices")
	}
	r := newRips(m)
	h0, tree := r.minimumSpanningTree()
	cols := r.columnsToReduce(tree)
	h1 := r.reduceH1(cols)
	h0 = append(h0, Pair{0, math.Inf(1)})
	SortPairs(h0)
	SortPairs(h1)
	return Diagram{H0: h0, H1: h1}
}

// rips holds the state of one persistence computation.
type rips struct {
	n      int
	d      []float64 // full n×n distances, row-major
	thr    float64   // enclosing radius
	binom2 []int64   // C(v,2)
	binom3 []int64   // C(v,3)
}

func newRips(m *DistanceMatrix) *rips {
	n := m.n
	r := &rips{n: n, d: m.d, binom2: make([]int64, n+1), binom3: make([]int64, n+1)}
	for v := int64(0); v <= int64(n); v++ {
		r.binom2[v] = v * (v - 1) / 2
		r.binom3[v] = v * (v - 1) * (v - 2) / 6
	}
	r.thr = math.Inf(1)
	for i := 0; i < n; i++ {
		row := r.d[i*n : (i+1)*n]
		mx := 0.0
		for _, v := range row {
			if v > mx {
				mx = v
			}
		}
		if mx < r.thr {
			r.thr = mx
		}
	}
	return r
}

func (r *rips) row(i int32) []float64 {
	return r.d[int(i)*r.n : (int(i)+1)*r.n : (int(i)+1)*r.n]
}

// edgeIndex is the index of the edge {i, j}, i > j.
func (r *rips) edgeIndex(i, j int32) int64 { return r.binom2[i] + int64(j) }

// edgeVertices inverts edgeIndex.
func (r *rips) edgeVertices(idx int64) (int32, int32) {
	// i is the largest v with C(v,2) <= idx; start from the real root and fix
	// the rounding.
	i := int64((1 + math.Sqrt(1+8*float64(idx))) / 2)
	for i > 1 && r.binom2[i] > idx {
		i--
	}
	for i+1 <= int64(r.n) && r.binom2[i+1] <= idx {
		i++
	}
	return int32(i), int32(idx - r.binom2[i])
}

// triangleVertices inverts the triangle index C(a,3)+C(b,2)+c.
func (r *rips) triangleVertices(idx int64) (a, b, c int32) {
	lo, hi := 2, r.n // binom3[lo] <= idx < binom3[hi]
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if r.binom3[mid] <= idx {
			lo = mid
		} else {
			hi = mid
		}
	}
	a = int32(lo)
	rest := idx - r.binom3[lo]
	b, c = r.edgeVertices(rest)
	return a, b, c
}

// triangle returns the index of the triangle {v, i, j}, i > j, v ∉ {i, j}.
func (r *rips) triangle(v, i, j int32) int64 {
	switch {
	case v > i:
		return r.binom3[v] + r.binom2[i] + int64(j)
	case v > j:
		return r.binom3[i] + r.binom2[v] + int64(j)
	default:
		return r.binom3[i] + r.binom2[j] + int64(v)
	}
}

// minimumSpanningTree returns the finite H0 pairs (zero-length ones omitted)
// and the set of tree edges, which clearing removes from the H1 columns.
func (r *rips) minimumSpanningTree() ([]Pair, []bool) {
	n := r.n
	tree := make([]bool, r.binom2[n])
	pairs := make([]Pair, 0, n-1)
	in := make([]bool, n)
	best := make([]entry, n) // best edge from the tree to each vertex
	in[0] = true
	row0 := r.row(0)
	for v := 1; v < n; v++ {
		best[v] = entry{row0[v], r.edgeIndex(int32(v), 0)}
	}
	for step := 1; step < n; step++ {
		u := -1
		for v := 1; v < n; v++ {
			if !in[v] && (u < 0 || before(best[v], best[u])) {
				u = v
			}
		}
		in[u] = true
		e := best[u]
		tree[e.idx] = true
		if e.diam > 0 {
			pairs = append(pairs, Pair{0, e.diam})
		}
		rowU := r.row(int32(u))
		for v := 1; v < n; v++ {
			if in[v] {
				continue
			}
			var c entry
			if v > u {
				c = entry{rowU[v], r.edgeIndex(int32(v), int32(u))}
			} else {
				c = entry{rowU[v], r.edgeIndex(int32(u), int32(v))}
			}
			if before(c, best[v]) {
				best[v] = c
			}
		}
	}
	return pairs, tree
}

// zeroPivotCofacet returns the earliest cofacet {v,i,j} of the edge
// {i > j} with the edge's own diameter d, or v = -1 if there is none. The
// cofacets are enumerated by decreasing index, so the first one found with
// diameter d is the earliest in the filtration.
func zeroPivotCofacet(ri, rj []float64, i, j int32, d float64) int32 {
	for v := int32(len(ri)) - 1; v >= 0; v-- {
		if ri[v] <= d && rj[v] <= d && v != i && v != j {
			return v
		}
	}
	return -1
}

// zeroPivotFacetIs reports whether the latest facet of the triangle
// {v, i, j} with the triangle's diameter d is the edge {i, j}. Facets are
// enumerated by increasing index ({b,c}, {a,c}, {a,b} for a > b > c), so
// {i, j} is the latest such facet iff no facet before it has diameter d.
func (r *rips) zeroPivotFacetIs(v, i, j int32, d float64) bool {
	switch {
	case v > i: // a=v, b=i, c=j: {i,j} comes first
		return true
	case v > j: // a=i, b=v, c=j: {v,j} comes first
		return r.d[int(v)*r.n+int(j)] != d
	default: // a=i, b=j, c=v: {j,v} then {i,v} come first
		return r.d[int(j)*r.n+int(v)] != d && r.d[int(i)*r.n+int(v)] != d
	}
}

// columnsToReduce returns the edges that need a cohomology reduction, in
// reverse filtration order: edges within the threshold that are neither
// tree edges (cleared: they are paired in H0) nor the lower half of a
// zero-persistence apparent pair.
func (r *rips) columnsToReduce(tree []bool) []column {
	n := r.n
	var cols []column
	for i := int32(1); i < int32(n); i++ {
		ri := r.row(i)
		base := r.binom2[i]
		for j := int32(0); j < i; j++ {
			d := ri[j]
			if d > r.thr || tree[base+int64(j)] {
				continue
			}
			rj := r.row(j)
			if v := zeroPivotCofacet(ri, rj, i, j, d); v >= 0 && r.zeroPivotFacetIs(v, i, j, d) {
				continue // apparent pair (edge, triangle) of persistence zero
			}
			cols = append(cols, column{d, i, j})
		}
	}
	// Reverse filtration order: decreasing diameter, then increasing index.
	slices.SortFunc(cols, func(x, y column) int {
		if x.diam != y.diam {
			if x.diam > y.diam {
				return -1
			}
			return 1
		}
		xi, yi := r.edgeIndex(x.i, x.j), r.edgeIndex(y.i, y.j)
		if xi < yi {
			return -1
		}
		if xi > yi {
			return 1
		}
		return 0
	})
	return cols
}

// zeroApparentFacet returns the edge that forms a zero-persistence apparent
// pair with the triangle t, or ok = false.
func (r *rips) zeroApparentFacet(t entry) (e entry, ok bool) {
	a, b, c := r.triangleVertices(t.idx)
	n := r.n
	// Latest facet with the triangle's diameter: {b,c}, {a,c}, {a,b} by
	// increasing index.
	var fi, fj int32
	switch {
	case r.d[int(b)*n+int(c)] == t.diam:
		fi, fj = b, c
	case r.d[int(a)*n+int(c)] == t.diam:
		fi, fj = a, c
	default:
		fi, fj = a, b
	}
	// The pair is apparent iff t is that facet's earliest cofacet of equal
	// diameter.
	v := zeroPivotCofacet(r.row(fi), r.row(fj), fi, fj, t.diam)
	if v < 0 || r.triangle(v, fi, fj) != t.idx {
		return entry{}, false
	}
	return entry{t.diam, r.edgeIndex(fi, fj)}, true
}

// reduceH1 runs the cohomology reduction over cols and returns the H1 pairs
// with death > birth.
func (r *rips) reduceH1(cols []column) []Pair {
	var pairs []Pair
	pivotOf := make(map[int64]int32, len(cols)) // pivot triangle -> column
	// reduction holds, per reduced column, the other edges of its cocycle
	// (Ripser's reduction matrix V without the diagonal), flattened.
	var reduction []int64
	start := make([]int32, 0, len(cols)+1)
	start = append(start, 0)
	var cob, red entryHeap
	for ci, col := range cols {
		cob.clear()
		red.clear()
		pivot, ok := r.initCoboundary(col, &cob, pivotOf)
		for {
			if !ok {
				// A cocycle that never dies. The full filtration, cut at the
				// enclosing radius, is a cone and has none; keep the class
				// rather than lose it if that invariant is ever broken.
				pairs = append(pairs, Pair{col.diam, math.Inf(1)})
				break
			}
			if other, found := pivotOf[pivot.idx]; found {
				r.addColumn(cols[other], reduction[start[other]:start[other+1]], &red, &cob)
				pivot, ok = cob.pivot()
				continue
			}
			if e, apparent := r.zeroApparentFacet(pivot); apparent {
				r.addEdge(e, &red, &cob)
				pivot, ok = cob.pivot()
				continue
			}
			if pivot.diam > col.diam {
				pairs = append(pairs, Pair{col.diam, pivot.diam})
			}
			pivotOf[pivot.idx] = int32(ci)
			for {
				e, ok := red.pop()
				if !ok {
					break
				}
				reduction = append(reduction, e.idx)
			}
			break
		}
		start = append(start, int32(len(reduction)))
	}
	return pairs
}

// initCoboundary fills cob with the coboundary of col and returns its
// pivot. When the earliest cofacet has the column's own diameter, is not yet
// a pivot and is not in an apparent pair, it is the pivot of an emergent
// pair and is returned at once, with cob left empty: the column needs no
// reduction and its coboundary is never materialised.
func (r *rips) initCoboundary(col column, cob *entryHeap, pivotOf map[int64]int32) (entry, bool) {
	ri, rj := r.row(col.i), r.row(col.j)
	d, thr := col.diam, r.thr
	checkEmergent := true
	for v := int32(r.n) - 1; v >= 0; v-- {
		if v == col.i || v == col.j {
			continue
		}
		t := max(d, ri[v], rj[v])
		if t > thr {
			continue
		}
		e := entry{t, r.triangle(v, col.i, col.j)}
		if checkEmergent && t == d {
			if _, taken := pivotOf[e.idx]; !taken {
				if _, apparent := r.zeroApparentFacet(e); !apparent {
					return e, true
				}
			}
			checkEmergent = false
		}
		cob.items = append(cob.items, e)
	}
	cob.heapify()
	return cob.pivot()
}

// addColumn adds the cocycle of a reduced column (its edge plus the edges
// of its reduction) to the working columns.
func (r *rips) addColumn(col column, others []int64, red, cob *entryHeap) {
	r.addEdge(entry{col.diam, r.edgeIndex(col.i, col.j)}, red, cob)
	for _, idx := range others {
		i, j := r.edgeVertices(idx)
		r.addEdge(entry{r.d[int(i)*r.n+int(j)], idx}, red, cob)
	}
}

// addEdge adds one edge to the working reduction column and its
// coboundary to the working coboundary.
func (r *rips) addEdge(e entry, red, cob *entryHeap) {
	red.push(e)
	i, j := r.edgeVertices(e.idx)
	ri, rj := r.row(i), r.row(j)
	d, thr := e.diam, r.thr
	for v := int32(r.n) - 1; v >= 0; v-- {
		if v == i || v == j {
			continue
		}
		t := max(d, ri[v], rj[v])
		if t <= thr {
			cob.push(entry{t, r.triangle(v, i, j)})
		}
	}
}

// entryHeap is a binary heap whose top is the earliest entry in the
// filtration order. Over Z/2 a column is a set: equal entries cancel in
// pairs when the pivot is taken.
type entryHeap struct {
	items []entry
}

func (h *entryHeap) clear() { h.items = h.items[:0] }

func (h *entryHeap) push(e entry) {
	h.items = append(h.items, e)
	it := h.items
	k := len(it) - 1
	for k > 0 {
		p := (k - 1) / 2
		if !before(e, it[p]) {
			break
		}
		it[k] = it[p]
		k = p
	}
	it[k] = e
}

func (h *entryHeap) heapify() {
	for k := len(h.items)/2 - 1; k >= 0; k-- {
		h.down(k)
	}
}

func (h *entryHeap) down(k int) {
	it := h.items
	n := len(it)
	e := it[k]
	for {
		c := 2*k + 1
		if c >= n {
			break
		}
		if c+1 < n && before(it[c+1], it[c]) {
			c++
		}
		if !before(it[c], e) {
			break
		}
		it[k] = it[c]
		k = c
	}
	it[k] = e
}

func (h *entryHeap) popTop() entry {
	it := h.items
	top := it[0]
	last := len(it) - 1
	it[0] = it[last]
	h.items = it[:last]
	if last > 0 {
		h.down(0)
	}
	return top
}

// pop removes and returns the earliest entry that survives cancellation
// over Z/2, or ok = false when the column is zero.
func (h *entryHeap) pop() (entry, bool) {
	for len(h.items) > 0 {
		top := h.popTop()
		odd := true
		for len(h.items) > 0 && h.items[0].idx == top.idx {
			h.popTop()
			odd = !odd
		}
		if odd {
			return top, true
		}
	}
	return entry{}, false
}

// pivot returns the earliest surviving entry without removing it.
func (h *entryHeap) pivot() (entry, bool) {
	e, ok := h.pop()
	if ok {
		h.push(e)
	}
	return e, ok
}
