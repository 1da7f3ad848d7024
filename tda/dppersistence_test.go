package tda

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// dpTol bounds floating-point differences in the DP tests: the numbers
// are sums of at most a few hundred terms of size ≤ 1.
const dpTol = 1e-12

func TestGridComplexCounts(t *testing.T) {
	for i, g := range []int{1, 2, 3, 5, 32} {
		c := newGridComplex(g)
		// By hand: G(G−1) horizontal + G(G−1) vertical + (G−1)² diagonal
		// edges; 2(G−1)² triangles; a triangulated square has χ = 1.
		wantE, wantT := 2*g*(g-1)+(g-1)*(g-1), 2*(g-1)*(g-1)
		if len(c.edges) != wantE || len(c.tris) != wantT {
			t.Errorf("%d: G=%d: %d edges, %d triangles, want %d, %d", i, g, len(c.edges), len(c.tris), wantE, wantT)
		}
		if chi := g*g - len(c.edges) + len(c.tris); chi != 1 {
			t.Errorf("%d: G=%d: χ = %d, want 1", i, g, chi)
		}
		for tr := range c.tris {
			vs := c.triangleVertices(tr)
			if vs[0] == vs[1] || vs[1] == vs[2] || vs[0] == vs[2] {
				t.Fatalf("%d: triangle %d has vertices %v", i, tr, vs)
			}
		}
	}
}

// bruteBetti returns β0 and β1 of the subcomplex {simplices whose
// vertices all have f ≥ s}: β0 by counting components with a flood fill,
// β1 from the Euler characteristic χ = V − E + T = β0 − β1 (β2 = 0 in the
// plane). It shares no code with superlevelPersistence.
func bruteBetti(c *gridComplex, f []float64, s float64) (b0, b1 int) {
	in := func(v int32) bool { return f[v] >= s }
	adj := make([][]int32, len(f))
	v, e, tr := 0, 0, 0
	for x := range f {
		if in(int32(x)) {
			v++
		}
	}
	for _, uv := range c.edges {
		if in(uv[0]) && in(uv[1]) {
			e++
			adj[uv[0]] = append(adj[uv[0]], uv[1])
			adj[uv[1]] = append(adj[uv[1]], uv[0])
		}
	}
	for k := range c.tris {
		vs := c.triangleVertices(k)
		if in(vs[0]) && in(vs[1]) && in(vs[2]) {
			tr++
		}
	}
	seen := make([]bool, len(f))
	for x := range f {
		if !in(int32(x)) || seen[x] {
			continue
		}
		b0++
		stack := []int32{int32(x)}
		seen[x] = true
		for len(stack) > 0 {
			u := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, w := range adj[u] {
				if !seen[w] {
					seen[w] = true
					stack = append(stack, w)
				}
			}
		}
	}
	return b0, b0 - (v - e + tr)
}

// aliveAt counts the bars alive at level s (Lo < s ≤ Hi).
func aliveAt(bars []levelBar, s float64) int {
	n := 0
	for _, b := range bars {
		if b.Lo < s && s <= b.Hi {
			n++
		}
	}
	return n
}

// aliveOver counts the bars alive at every level from hi down to lo
// (Hi ≥ hi and Lo < lo).
func aliveOver(bars []levelBar, hi, lo float64) int {
	n := 0
	for _, b := range bars {
		if b.Lo < lo && hi <= b.Hi {
			n++
		}
	}
	return n
}

// bruteComponentsReaching counts the components of the level-lo complex
// that contain a vertex with f ≥ hi: the rank of H0 at hi → H0 at lo.
func bruteComponentsReaching(c *gridComplex, f []float64, lo, hi float64) int {
	parent := make([]int, len(f))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(v int) int {
		if parent[v] != v {
			parent[v] = find(parent[v])
		}
		return parent[v]
	}
	for _, uv := range c.edges {
		if f[uv[0]] >= lo && f[uv[1]] >= lo {
			parent[find(int(uv[0]))] = find(int(uv[1]))
		}
	}
	roots := map[int]bool{}
	for v, x := range f {
		if x >= hi {
			roots[find(v)] = true
		}
	}
	return len(roots)
}

// TestSuperlevelPersistenceBrute checks the barcodes against bruteBetti at
// every level where the complex changes and just below it, on random
// functions with many ties (values from a small set) and without.
func TestSuperlevelPersistenceBrute(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 0))
	for trial := 0; trial < 400; trial++ {
		g := 2 + trial%7
		c := newGridComplex(g)
		f := make([]float64, g*g)
		levels := 1 + rng.IntN(6)
		for i := range f {
			if trial%2 == 0 {
				f[i] = float64(rng.IntN(levels)) / float64(levels)
			} else {
				f[i] = rng.Float64()
			}
		}
		bc := superlevelPersistence(c, f)
		h0 := bc.withEssential(math.Inf(-1))
		for _, b := range append(slices.Clone(h0), bc.H1...) {
			if !(b.Lo < b.Hi) {
				t.Fatalf("trial %d: bar %+v has no length", trial, b)
			}
		}
		vals := slices.Clone(f)
		slices.Sort(vals)
		vals = slices.Compact(vals)
		for _, v := range vals {
			for _, s := range []float64{v, math.Nextafter(v, math.Inf(-1))} {
				b0, b1 := bruteBetti(c, f, s)
				if got := aliveAt(h0, s); got != b0 {
					t.Fatalf("trial %d (G=%d) level %v: %d H0 bars alive, β0 = %d\nf=%v\nH0=%v", trial, g, s, got, b0, f, h0)
				}
				// Persistent β0 from t = s' down to s: the components of
				// the level-s complex that hold a vertex of level ≥ s'
				// are the classes alive over the whole range.
				for _, s2 := range vals {
					if s2 < s {
						continue
					}
					if got, want := aliveOver(h0, s2, s), bruteComponentsReaching(c, f, s, s2); got != want {
						t.Fatalf("trial %d (G=%d) levels %v..%v: %d H0 bars span them, %d components", trial, g, s2, s, got, want)
					}
				}
				if got := aliveAt(bc.H1, s); got != b1 {
					t.Fatalf("trial %d (G=%d) level %v: %d H1 bars alive, β1 = %d\nf=%v\nH1=%v", trial, g, s, got, b1, f, bc.H1)
				}
			}
		}
	}
}

// TestSuperlevelPersistenceHand checks small grids whose barcodes follow
// from the picture.
func TestSuperlevelPersistenceHand(t *testing.T) {
	for i, tc := range []struct {
		g      int
		f      []float64
		top    float64
		h0, h1 []levelBar
	}{
		// 0: one peak in the middle of a 3×3 grid: only the essential
		// class; the other vertices merge as they enter at 0.
		{3, []float64{0, 0, 0, 0, 1, 0, 0, 0, 0}, 1, nil, nil},
		// 1: a ring of 1s around a 0: the boundary 8-cycle is born at 1
		// (its two diagonal chords (0,1)–(1,2) and (1,0)–(2,1) enter with
		// it, but the corner triangles they bound are filled at once, so
		// one loop remains: V − E + T = 8 − 10 + 2 = 0 = β0 − β1 with
		// β0 = 1) and dies at 0 when the centre fills it.
		{3, []float64{1, 1, 1, 1, 0, 1, 1, 1, 1}, 1, nil, []levelBar{{0, 1}}},
		// 2: two peaks 0.9 and 0.6 on a 2×2 grid, joined along the edge
		// (0,0)–(0,1) at min(0.9, 0.6) = 0.6: the younger peak dies at once
		// (zero length); the other two vertices are 0. Row-major values.
		{2, []float64{0.9, 0.6, 0, 0}, 0.9, nil, nil},
		// 3: two peaks on opposite corners of a 2×2 grid, 0.8 at (0,1) and
		// 0.5 at (1,0), the diagonal (0,0)–(1,1) at 0.2 and 0.3: the peaks
		// meet through (1,1) when the level reaches 0.3, so the younger
		// one gives the bar [0.3, 0.5].
		{2, []float64{0.2, 0.8, 0.5, 0.3}, 0.8, []levelBar{{0.3, 0.5}}, nil},
	} {
		bc := superlevelPersistence(newGridComplex(tc.g), tc.f)
		if bc.Top != tc.top || !slices.Equal(bc.H0, tc.h0) || !slices.Equal(bc.H1, tc.h1) {
			t.Errorf("%d: got top %v H0 %v H1 %v, want %v %v %v", i, bc.Top, bc.H0, bc.H1, tc.top, tc.h0, tc.h1)
		}
	}
}

func TestLandscapeTop2(t *testing.T) {
	// Bars [0,4], [1,3], [2,6]; tents min(t − lo, hi − t), by hand:
	//   t=1: 1, 0, −1 → (1, 0)     t=2: 2, 1, 0 → (2, 1)
	//   t=3: 1, 0, 1 → (1, 1)      t=4: 0, −1, 2 → (2, 0)
	//   t=5: −1, −2, 1 → (1, 0)    t=7: none → (0, 0)
	bars := []levelBar{{0, 4}, {1, 3}, {2, 6}}
	for i, tc := range []struct{ t, l1, l2 float64 }{
		{1, 1, 0}, {2, 2, 1}, {3, 1, 1}, {4, 2, 0}, {5, 1, 0}, {7, 0, 0}, // 0–5
		{2.5, 1.5, 0.5}, // 6: 1.5, 0.5, 0.5
	} {
		l1, l2 := landscapeTop2(bars, tc.t)
		if math.Abs(l1-tc.l1) > dpTol || math.Abs(l2-tc.l2) > dpTol {
			t.Errorf("%d: t=%v: (%v, %v), want (%v, %v)", i, tc.t, l1, l2, tc.l1, tc.l2)
		}
	}
	if l1, l2 := landscapeTop2(nil, 0.3); l1 != 0 || l2 != 0 {
		t.Errorf("no bars: (%v, %v), want (0, 0)", l1, l2)
	}
}

func TestSymmetricDifference(t *testing.T) {
	got := symmetricDifference(nil, []int32{1, 3, 5, 7}, []int32{2, 3, 7, 9})
	if want := []int32{1, 2, 5, 9}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
