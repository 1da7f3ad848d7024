package tda

import (
	"cmp"
	"math"
	"slices"
)

// This file holds the persistence machinery of DPDescriptor: the
// superlevel-set filtration of a function on the vertices of a fixed
// triangulated grid, its H0 and H1 barcodes, and persistence landscapes.
// Nothing here looks at data: the grid and its triangulation depend only
// on the grid size G.

// gridComplex is the Freudenthal triangulation of a G×G grid of vertices:
// vertex (i, j) (row i, column j) has index i·G + j; the edges are the
// horizontal {(i,j),(i,j+1)}, vertical {(i,j),(i+1,j)} and diagonal
// {(i,j),(i+1,j+1)} pairs; each square {(i,j),(i+1,j+1)} is cut along its
// diagonal into the triangles {(i,j),(i,j+1),(i+1,j+1)} and
// {(i,j),(i+1,j),(i+1,j+1)}. It is a triangulated square, so it is
// connected and contractible (V − E + T = 1).
type gridComplex struct {
	g     int
	edges [][2]int32 // vertex pairs
	tris  [][3]int32 // edge indices
}

// newGridComplex returns the triangulation of the g×g grid, g ≥ 1.
func newGridComplex(g int) *gridComplex {
	c := &gridComplex{g: g}
	vid := func(i, j int) int32 { return int32(i*g + j) }
	// Edge indices by kind, so that triangles can name their edges.
	hor := make([]int32, g*g)
	ver := make([]int32, g*g)
	dia := make([]int32, g*g)
	add := func(a, b int32) int32 {
		c.edges = append(c.edges, [2]int32{a, b})
		return int32(len(c.edges) - 1)
	}
	for i := 0; i < g; i++ {
		for j := 0; j < g; j++ {
			if j+1 < g {
				hor[i*g+j] = add(vid(i, j), vid(i, j+1))
			}
			if i+1 < g {
				ver[i*g+j] = add(vid(i, j), vid(i+1, j))
			}
			if i+1 < g && j+1 < g {
				dia[i*g+j] = add(vid(i, j), vid(i+1, j+1))
			}
		}
	}
	for i := 0; i+1 < g; i++ {
		for j := 0; j+1 < g; j++ {
			// Lower: (i,j),(i,j+1),(i+1,j+1); upper: (i,j),(i+1,j),(i+1,j+1).
			c.tris = append(c.tris,
				[3]int32{hor[i*g+j], ver[i*g+j+1], dia[i*g+j]},
				[3]int32{ver[i*g+j], hor[(i+1)*g+j], dia[i*g+j]})
		}
	}
	return c
}

// triangleVertices returns the three vertices of triangle t.
func (c *gridComplex) triangleVertices(t int) [3]int32 {
	e := c.tris[t]
	a, b := c.edges[e[0]], c.edges[e[1]]
	third := b[0]
	if third == a[0] || third == a[1] {
		third = b[1]
	}
	return [3]int32{a[0], a[1], third}
}

// levelBar is a bar of a superlevel-set barcode in function units: a class
// born when the level s comes down to Hi and dead once it reaches Lo, so it
// is alive for Lo < s ≤ Hi. Lo < Hi for every listed bar.
type levelBar struct {
	Lo, Hi float64
}

// superlevelBarcode holds the barcode of the superlevel-set filtration
// {f ≥ s}, s going down, of a function f on a gridComplex.
type superlevelBarcode struct {
	// H0 holds the finite H0 bars; H1 the H1 bars. Zero-length pairs are
	// left out.
	H0, H1 []levelBar
	// Top is max f, where the one essential H0 class (the grid is
	// connected) is born; it never dies. The complex is contractible, so
	// there is no essential H1 class.
	Top float64
}

// withEssential returns the H0 bars with the essential class capped at the
// level cap, as the bar [cap, Top], appended; it is left out if it would
// be empty (Top ≤ cap).
func (b superlevelBarcode) withEssential(capLevel float64) []levelBar {
	out := slices.Clone(b.H0)
	if b.Top > capLevel {
		out = append(out, levelBar{Lo: capLevel, Hi: b.Top})
	}
	return out
}

// superlevelPersistence returns the H0 and H1 barcodes of the superlevel
// filtration of f (one value per vertex of c): each simplex enters at the
// minimum of f over its vertices (the lower-star filtration of −f), and
// simplices of equal value enter vertices first, then edges, then
// triangles, each kind by index. The barcode does not depend on this
// tie-break.
//
// H0 follows the elder rule with union-find: an edge that joins two
// components kills the younger one (lower birth value; on equal values the
// later vertex in the order), giving the bar [edge value, birth]. H1 comes
// from the standard column reduction of the boundary matrix ∂2 over Z/2
// (Edelsbrunner, Letscher, Zomorodian 2002; Edelsbrunner and Harer,
// "Computational Topology", 2010, ch. VII): the lowest edge of a reduced
// triangle column is the edge whose cycle the triangle kills.
func superlevelPersistence(c *gridComplex, f []float64) superlevelBarcode {
	nv := len(f)
	if nv != c.g*c.g {
		panic("tda: function and grid sizes differ")
	}
	var out superlevelBarcode
	if nv == 0 {
		return out
	}
	// Vertex order: f descending, then index.
	vorder := make([]int32, nv)
	for i := range vorder {
		vorder[i] = int32(i)
	}
	slices.SortFunc(vorder, func(a, b int32) int {
		if c := cmp.Compare(f[b], f[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	vrank := make([]int32, nv)
	for r, v := range vorder {
		vrank[v] = int32(r)
	}
	out.Top = f[vorder[0]]

	edgeVal := make([]float64, len(c.edges))
	for e, uv := range c.edges {
		edgeVal[e] = math.Min(f[uv[0]], f[uv[1]])
	}
	eorder := make([]int32, len(c.edges))
	for i := range eorder {
		eorder[i] = int32(i)
	}
	slices.SortFunc(eorder, func(a, b int32) int {
		if c := cmp.Compare(edgeVal[b], edgeVal[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})

	// H0: union-find whose roots are the eldest vertex of their component.
	parent := make([]int32, nv)
	for i := range parent {
		parent[i] = int32(i)
	}
	find := func(v int32) int32 {
		for parent[v] != v {
			parent[v] = parent[parent[v]]
			v = parent[v]
		}
		return v
	}
	for _, e := range eorder {
		a, b := find(c.edges[e][0]), find(c.edges[e][1])
		if a == b {
			continue
		}
		elder, younger := a, b
		if vrank[b] < vrank[a] {
			elder, younger = b, a
		}
		parent[younger] = elder
		if hi := f[younger]; hi > edgeVal[e] {
			out.H0 = append(out.H0, levelBar{Lo: edgeVal[e], Hi: hi})
		}
	}

	// H1: reduce the triangle columns, rows being edges in filtration
	// order (erank).
	erank := make([]int32, len(c.edges))
	for r, e := range eorder {
		erank[e] = int32(r)
	}
	triVal := make([]float64, len(c.tris))
	torder := make([]int32, len(c.tris))
	for t := range c.tris {
		vs := c.triangleVertices(t)
		triVal[t] = math.Min(f[vs[0]], math.Min(f[vs[1]], f[vs[2]]))
		torder[t] = int32(t)
	}
	slices.SortFunc(torder, func(a, b int32) int {
		if c := cmp.Compare(triVal[b], triVal[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	// pivotCol[r] is the reduced column whose lowest row is edge rank r.
	pivotCol := make([]int32, len(c.edges))
	for i := range pivotCol {
		pivotCol[i] = -1
	}
	reduced := make([][]int32, len(c.tris)) // by position in torder
	var work, tmp []int32
	for pos, t := range torder {
		work = work[:0]
		for _, e := range c.tris[t] {
			work = append(work, erank[e])
		}
		slices.Sort(work)
		for len(work) > 0 {
			low := work[len(work)-1]
			other := pivotCol[low]
			if other < 0 {
				break
			}
			tmp = symmetricDifference(tmp[:0], work, reduced[other])
			work, tmp = tmp, work
		}
		if len(work) == 0 {
			// A 2-cycle; the planar grid has none.
			continue
		}
		low := work[len(work)-1]
		pivotCol[low] = int32(pos)
		reduced[pos] = slices.Clone(work)
		if hi := edgeVal[eorder[low]]; hi > triVal[t] {
			out.H1 = append(out.H1, levelBar{Lo: triVal[t], Hi: hi})
		}
	}
	return out
}

// symmetricDifference appends to dst the sorted symmetric difference of the
// sorted sets a and b (their sum over Z/2) and returns it.
func symmetricDifference(dst, a, b []int32) []int32 {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			dst = append(dst, a[i])
			i++
		case a[i] > b[j]:
			dst = append(dst, b[j])
			j++
		default:
			i++
			j++
		}
	}
	dst = append(dst, a[i:]...)
	return append(dst, b[j:]...)
}

// landscapeTop2 returns λ1(t) and λ2(t), the largest and second largest
// values at t of the tent functions max(0, min(t − Lo, Hi − t)) of the
// bars (Bubenik, "Statistical topological data analysis using persistence
// landscapes", JMLR 16 (2015), where λ_k is defined this way); a missing
// tent counts as 0.
func landscapeTop2(bars []levelBar, t float64) (l1, l2 float64) {
	for _, b := range bars {
		v := math.Min(t-b.Lo, b.Hi-t)
		switch {
		case v > l1:
			l1, l2 = v, l1
		case v > l2:
			l2 = v
		}
	}
	return l1, l2
}
