package tda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// distTol is the relative tolerance between the assignment solver and brute
// force, which add the same p-th powers in different orders.
const distTol = 1e-12

func inf() float64 { return math.Inf(1) }

func TestDiagramDistancesHandComputed(t *testing.T) {
	for i, test := range []struct {
		a, b       []Pair
		bottleneck float64
		w1, w2     float64
	}{
		{ // 0: both empty.
			bottleneck: 0, w1: 0, w2: 0,
		},
		{ // 1: one bar [0,2) against nothing: it goes to the diagonal at (2−0)/2 = 1.
			a:          []Pair{{0, 2}},
			bottleneck: 1, w1: 1, w2: 1,
		},
		{ // 2: [0,2) vs [0,3): matched, L∞ = max(0, 1) = 1; diagonal costs 1 + 1.5 are worse.
			a:          []Pair{{0, 2}},
			b:          []Pair{{0, 3}},
			bottleneck: 1, w1: 1, w2: 1,
		},
		{ // 3: [0,1) vs [10,11): matched L∞ = 10; both to the diagonal cost 0.5 each.
			// Bottleneck max(0.5, 0.5) = 0.5; W1 = 0.5+0.5 = 1; W2 = sqrt(0.25+0.25) = sqrt(0.5).
			a:          []Pair{{0, 1}},
			b:          []Pair{{10, 11}},
			bottleneck: 0.5, w1: 1, w2: math.Sqrt(0.5),
		},
		{ // 4: two bars each. a = [0,4),[1,3); b = [0,5),[1,2).
			// Straight matching: L∞ 1 and 1 → W1 2, W2 √2, bottleneck 1.
			// Crossed: [0,4)-[1,2) is 2; diagonal options cost ≥ 2 for [0,4)/[0,5).
			// [1,2) to the diagonal (0.5) and [1,3) to the diagonal (1) with [0,4)-[0,5) (1):
			// W1 2.5, worse. So W1 = 2, W2 = √2, bottleneck = 1, all by hand.
			a:          []Pair{{0, 4}, {1, 3}},
			b:          []Pair{{0, 5}, {1, 2}},
			bottleneck: 1, w1: 2, w2: math.Sqrt2,
		},
		{ // 5: infinite bars match by birth: |0−0.5| = 0.5; finite parts equal.
			a:          []Pair{{0, 1}, {0, inf()}},
			b:          []Pair{{0, 1}, {0.5, inf()}},
			bottleneck: 0.5, w1: 0.5, w2: 0.5,
		},
		{ // 6: different numbers of infinite bars: +Inf.
			a:          []Pair{{0, inf()}},
			b:          nil,
			bottleneck: inf(), w1: inf(), w2: inf(),
		},
		{ // 7: sorted infinite births: {0,3} vs {2,4} → |0−2|, |3−4| = 2, 1 (crossing gives 4, 1).
			// W1 = 3, W2 = √5, bottleneck 2.
			a:          []Pair{{3, inf()}, {0, inf()}},
			b:          []Pair{{2, inf()}, {4, inf()}},
			bottleneck: 2, w1: 3, w2: math.Sqrt(5),
		},
		{ // 8: zero-length bars are on the diagonal and cost nothing.
			a:          []Pair{{1, 1}, {2, 2}},
			b:          []Pair{{5, 5}},
			bottleneck: 0, w1: 0, w2: 0,
		},
		{ // 9: the unit square's H1 bar [1, √2) against nothing: (√2−1)/2.
			a:          []Pair{{1, math.Sqrt2}},
			bottleneck: (math.Sqrt2 - 1) / 2, w1: (math.Sqrt2 - 1) / 2, w2: (math.Sqrt2 - 1) / 2,
		},
	} {
		for _, ab := range [][2][]Pair{{test.a, test.b}, {test.b, test.a}} {
			if got := Bottleneck(ab[0], ab[1]); !closeRel(got, test.bottleneck) {
				t.Errorf("case %d: Bottleneck = %v, want %v", i, got, test.bottleneck)
			}
			if got := Wasserstein(ab[0], ab[1], inf()); !closeRel(got, test.bottleneck) {
				t.Errorf("case %d: Wasserstein p=inf = %v, want %v", i, got, test.bottleneck)
			}
			if got := Wasserstein(ab[0], ab[1], 1); !closeRel(got, test.w1) {
				t.Errorf("case %d: W1 = %v, want %v", i, got, test.w1)
			}
			if got := Wasserstein(ab[0], ab[1], 2); !closeRel(got, test.w2) {
				t.Errorf("case %d: W2 = %v, want %v", i, got, test.w2)
			}
		}
	}
}

func TestDiagramDistancesInvalid(t *testing.T) {
	for i, test := range []struct {
		a []Pair
		p float64
	}{
		{a: []Pair{{math.NaN(), 1}}, p: 2},   // 0: NaN birth
		{a: []Pair{{0, math.NaN()}}, p: 2},   // 1: NaN death
		{a: []Pair{{2, 1}}, p: 2},            // 2: death < birth
		{a: []Pair{{inf(), inf()}}, p: 2},    // 3: infinite birth
		{a: []Pair{{0, math.Inf(-1)}}, p: 2}, // 4: −Inf death
		{a: []Pair{{0, 1}}, p: 0.5},          // 5: p < 1
		{a: []Pair{{0, 1}}, p: math.NaN()},   // 6: NaN p
		{a: []Pair{{0, 1}}, p: math.Inf(-1)}, // 7: −Inf p
	} {
		if got := Wasserstein(test.a, nil, test.p); !math.IsNaN(got) {
			t.Errorf("case %d: Wasserstein = %v, want NaN", i, got)
		}
		if test.p == 2 {
			if got := Bottleneck(nil, test.a); !math.IsNaN(got) {
				t.Errorf("case %d: Bottleneck = %v, want NaN", i, got)
			}
		}
	}
}

// TestDiagramDistancesBruteForce compares both distances with an exhaustive
// search over every permutation of the textbook augmented matrix, in which
// point i may use only its own diagonal copy.
func TestDiagramDistancesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 400; trial++ {
		a := randomDiagram(rng, rng.IntN(5))
		b := randomDiagram(rng, rng.IntN(5))
		for _, p := range []float64{1, 1.5, 2, 3} {
			want := bruteWasserstein(a, b, p)
			if got := Wasserstein(a, b, p); !closeRel(got, want) {
				t.Fatalf("trial %d: Wasserstein(%v, %v, %v) = %v, brute force %v", trial, a, b, p, got, want)
			}
		}
		want := bruteBottleneck(a, b)
		if got := Bottleneck(a, b); got != want {
			t.Fatalf("trial %d: Bottleneck(%v, %v) = %v, brute force %v", trial, a, b, got, want)
		}
	}
}

// TestDiagramDistancesMetric checks d(a,a) = 0, symmetry and the triangle
// inequality on random diagrams that include infinite bars.
func TestDiagramDistancesMetric(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 200; trial++ {
		nInf := rng.IntN(3)
		a := append(randomDiagram(rng, rng.IntN(7)), randomInfinite(rng, nInf)...)
		b := append(randomDiagram(rng, rng.IntN(7)), randomInfinite(rng, nInf)...)
		c := append(randomDiagram(rng, rng.IntN(7)), randomInfinite(rng, nInf)...)
		for _, p := range []float64{1, 2, inf()} {
			d := func(x, y []Pair) float64 { return Wasserstein(x, y, p) }
			if got := d(a, a); got != 0 {
				t.Fatalf("trial %d p=%v: d(a,a) = %v", trial, p, got)
			}
			ab, ba := d(a, b), d(b, a)
			if !closeRel(ab, ba) {
				t.Fatalf("trial %d p=%v: d(a,b) = %v, d(b,a) = %v", trial, p, ab, ba)
			}
			if ac, cb := d(a, c), d(c, b); ab > (ac+cb)*(1+distTol) {
				t.Fatalf("trial %d p=%v: d(a,b) = %v > d(a,c) + d(c,b) = %v", trial, p, ab, ac+cb)
			}
		}
	}
}

// TestDiagramDistancesLargeValues checks that p-th powers of huge distances
// do not overflow: W2 is homogeneous, so scaling case 4 of the hand-computed
// table by 2^1000 scales its W2 of √2 by the same factor.
func TestDiagramDistancesLargeValues(t *testing.T) {
	s := math.Ldexp(1, 1000)
	a := []Pair{{0, 4 * s}, {1 * s, 3 * s}}
	b := []Pair{{0, 5 * s}, {1 * s, 2 * s}}
	if got, want := Wasserstein(a, b, 2), math.Sqrt2*s; !closeRel(got, want) {
		t.Errorf("W2 = %v, want %v", got, want)
	}
}

func TestMinCostAssignment(t *testing.T) {
	for i, test := range []struct {
		cost [][]float64
		want float64
	}{
		{cost: nil, want: 0},              // 0: empty
		{cost: [][]float64{{7}}, want: 7}, // 1: one entry
		{cost: [][]float64{{4, 1, 3}, {2, 0, 5}, {3, 2, 2}}, // 2: textbook example, optimum 1+2+2 = 5 (rows → cols 1,0,2)
			want: 5},
		{cost: [][]float64{{-1, 0}, {0, -1}}, want: -2}, // 3: negative costs: the diagonal, −1 + −1
	} {
		assign := minCostAssignment(test.cost)
		sum := 0.0
		seen := make(map[int]bool)
		for r, c := range assign {
			sum += test.cost[r][c]
			seen[c] = true
		}
		if len(seen) != len(test.cost) {
			t.Errorf("case %d: assignment %v is not a permutation", i, assign)
		}
		if sum != test.want {
			t.Errorf("case %d: cost %v, want %v", i, sum, test.want)
		}
	}
}

func TestMinCostAssignmentBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 300; trial++ {
		n := 1 + rng.IntN(7)
		cost := make([][]float64, n)
		for i := range cost {
			cost[i] = make([]float64, n)
			for j := range cost[i] {
				// Small integers force many ties, the hard case for potentials.
				cost[i][j] = float64(rng.IntN(5))
			}
		}
		want := inf()
		permute(n, func(perm []int) {
			s := 0.0
			for r, c := range perm {
				s += cost[r][c]
			}
			want = math.Min(want, s)
		})
		got := 0.0
		for r, c := range minCostAssignment(cost) {
			got += cost[r][c]
		}
		if got != want {
			t.Fatalf("trial %d: cost %v, brute force %v for %v", trial, got, want, cost)
		}
	}
}

func FuzzWasserstein(f *testing.F) {
	f.Add([]byte{0, 4, 1, 3}, []byte{0, 5, 1, 2}, uint8(2))
	f.Add([]byte{}, []byte{9, 9}, uint8(1))
	f.Add([]byte{3, 255}, []byte{2, 255}, uint8(0))
	f.Fuzz(func(t *testing.T, ra, rb []byte, praw uint8) {
		a, b := fuzzDiagram(ra), fuzzDiagram(rb)
		p := 1 + float64(praw%8)/2
		if praw%9 == 0 {
			p = inf()
		}
		ab, ba := Wasserstein(a, b, p), Wasserstein(b, a, p)
		if math.IsNaN(ab) || ab < 0 {
			t.Fatalf("d(a,b) = %v", ab)
		}
		if !closeRel(ab, ba) {
			t.Fatalf("d(a,b) = %v, d(b,a) = %v", ab, ba)
		}
		if aa := Wasserstein(a, a, p); aa != 0 {
			t.Fatalf("d(a,a) = %v", aa)
		}
		// Triangle inequality through the empty diagram, where the finite
		// parts are all the infinite bars allow.
		empty := infinitePart(a)
		if !math.IsInf(ab, 1) {
			ae, eb := Wasserstein(a, empty, p), Wasserstein(empty, b, p)
			if ab > (ae+eb)*(1+distTol) {
				t.Fatalf("d(a,b) = %v > d(a,∅) + d(∅,b) = %v", ab, ae+eb)
			}
		}
	})
}

func FuzzBottleneck(f *testing.F) {
	f.Add([]byte{0, 4, 1, 3}, []byte{0, 5, 1, 2})
	f.Add([]byte{7, 255}, []byte{})
	f.Fuzz(func(t *testing.T, ra, rb []byte) {
		a, b := fuzzDiagram(ra), fuzzDiagram(rb)
		ab, ba := Bottleneck(a, b), Bottleneck(b, a)
		if math.IsNaN(ab) || ab < 0 || ab != ba {
			t.Fatalf("d(a,b) = %v, d(b,a) = %v", ab, ba)
		}
		if aa := Bottleneck(a, a); aa != 0 {
			t.Fatalf("d(a,a) = %v", aa)
		}
		// The bottleneck distance never exceeds any Wasserstein distance.
		if w := Wasserstein(a, b, 1); ab > w*(1+distTol) {
			t.Fatalf("bottleneck %v > W1 %v", ab, w)
		}
	})
}

// fuzzDiagram reads pairs of bytes as (birth, birth+length) with small
// integer coordinates; a length byte of 255 makes the bar infinite. At most
// 6 pairs are read so that each run stays fast.
func fuzzDiagram(raw []byte) []Pair {
	var out []Pair
	for k := 0; k+1 < len(raw) && len(out) < 6; k += 2 {
		b := float64(raw[k]) / 4
		if raw[k+1] == 255 {
			out = append(out, Pair{b, inf()})
			continue
		}
		out = append(out, Pair{b, b + float64(raw[k+1])/8})
	}
	return out
}

func infinitePart(d []Pair) []Pair {
	var out []Pair
	for _, q := range d {
		if math.IsInf(q.Death, 1) {
			out = append(out, q)
		}
	}
	return out
}

func randomDiagram(rng *rand.Rand, n int) []Pair {
	out := make([]Pair, n)
	for i := range out {
		b := rng.Float64() * 3
		// A quarter of the coordinates are rounded to quarters to create ties.
		if rng.IntN(4) == 0 {
			b = math.Round(b*4) / 4
		}
		out[i] = Pair{b, b + rng.Float64()*2}
	}
	return out
}

func randomInfinite(rng *rand.Rand, n int) []Pair {
	out := make([]Pair, n)
	for i := range out {
		out[i] = Pair{rng.Float64(), inf()}
	}
	return out
}

// textbookCosts is the augmented matrix in which a's point i may use only
// diagonal slot i and b's point j only slot j, every other slot +Inf.
func textbookCosts(a, b []Pair) [][]float64 {
	m, n := len(a), len(b)
	cost := make([][]float64, m+n)
	for i := range cost {
		cost[i] = make([]float64, m+n)
	}
	for i := 0; i < m+n; i++ {
		for j := 0; j < m+n; j++ {
			switch {
			case i < m && j < n:
				cost[i][j] = linfDistance(a[i], b[j])
			case i < m:
				cost[i][j] = inf()
				if j-n == i {
					cost[i][j] = diagonalDistance(a[i])
				}
			case j < n:
				cost[i][j] = inf()
				if i-m == j {
					cost[i][j] = diagonalDistance(b[j])
				}
			}
		}
	}
	return cost
}

func bruteWasserstein(a, b []Pair, p float64) float64 {
	cost := textbookCosts(a, b)
	best := inf()
	permute(len(cost), func(perm []int) {
		s := 0.0
		for r, c := range perm {
			s += math.Pow(cost[r][c], p)
		}
		best = math.Min(best, s)
	})
	if len(cost) == 0 {
		return 0
	}
	return math.Pow(best, 1/p)
}

func bruteBottleneck(a, b []Pair) float64 {
	cost := textbookCosts(a, b)
	best := inf()
	permute(len(cost), func(perm []int) {
		s := 0.0
		for r, c := range perm {
			s = math.Max(s, cost[r][c])
		}
		best = math.Min(best, s)
	})
	if len(cost) == 0 {
		return 0
	}
	return best
}

// permute calls visit with every permutation of 0..n-1 (Heap's algorithm).
func permute(n int, visit func([]int)) {
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	var gen func(k int)
	gen = func(k int) {
		if k <= 1 {
			visit(perm)
			return
		}
		for i := 0; i < k-1; i++ {
			gen(k - 1)
			if k%2 == 0 {
				perm[i], perm[k-1] = perm[k-1], perm[i]
			} else {
				perm[0], perm[k-1] = perm[k-1], perm[0]
			}
		}
		gen(k - 1)
	}
	gen(n)
}

func closeRel(got, want float64) bool {
	if math.IsInf(want, 0) || math.IsNaN(want) {
		return got == want || (math.IsNaN(got) && math.IsNaN(want))
	}
	return math.Abs(got-want) <= distTol*math.Max(1, math.Abs(want))
}

func ExampleWasserstein() {
	// The H1 bar of the unit square against a slightly shorter one: matching
	// them costs max(|1−1|, |√2−1.4|) ≈ 0.0142; sending both to the diagonal
	// would cost about 0.207 and 0.2.
	a := []Pair{{0, 1}, {0, math.Inf(1)}}
	b := []Pair{{0, 1}, {0, math.Inf(1)}, {1, math.Sqrt2}}
	c := []Pair{{0, 1}, {0, math.Inf(1)}, {1, 1.4}}
	fmt.Printf("W2(a, b) = %.6f\n", Wasserstein(a, b, 2))
	fmt.Printf("W2(b, c) = %.6f\n", Wasserstein(b, c, 2))
	fmt.Printf("bottleneck(b, c) = %.6f\n", Bottleneck(b, c))
	// Output:
	// W2(a, b) = 0.207107
	// W2(b, c) = 0.014214
	// bottleneck(b, c) = 0.014214
}

func BenchmarkWasserstein(b *testing.B) {
	for _, n := range []int{50, 200} {
		rng := rand.New(rand.NewPCG(7, uint64(n)))
		x, y := randomDiagram(rng, n), randomDiagram(rng, n)
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			for b.Loop() {
				Wasserstein(x, y, 2)
			}
		})
	}
}

func BenchmarkBottleneck(b *testing.B) {
	for _, n := range []int{50, 200} {
		rng := rand.New(rand.NewPCG(8, uint64(n)))
		x, y := randomDiagram(rng, n), randomDiagram(rng, n)
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			for b.Loop() {
				Bottleneck(x, y)
			}
		})
	}
}

// TestDiagramDistancesLarger checks, on diagrams too large for brute force,
// two consequences of the definitions: for a fixed matching the p-norm of
// its costs does not increase with p, so W1 ≥ W2 ≥ W3 ≥ bottleneck; and
// moving every point by at most δ (in L∞, staying above the diagonal) moves
// the diagram by at most δ in the bottleneck distance.
func TestDiagramDistancesLarger(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for trial := 0; trial < 20; trial++ {
		a := randomDiagram(rng, 10+rng.IntN(20))
		b := randomDiagram(rng, 10+rng.IntN(20))
		w1, w2, w3, bn := Wasserstein(a, b, 1), Wasserstein(a, b, 2), Wasserstein(a, b, 3), Bottleneck(a, b)
		if w1 < w2*(1-distTol) || w2 < w3*(1-distTol) || w3 < bn*(1-distTol) {
			t.Fatalf("trial %d: W1 %v, W2 %v, W3 %v, bottleneck %v not non-increasing", trial, w1, w2, w3, bn)
		}
		const delta = 0.01
		moved := make([]Pair, len(a))
		for i, q := range a {
			nb := q.Birth + delta*(2*rng.Float64()-1)
			nd := math.Max(nb, q.Death+delta*(2*rng.Float64()-1))
			moved[i] = Pair{nb, nd}
		}
		if d := Bottleneck(a, moved); d > delta {
			t.Fatalf("trial %d: bottleneck after a move of at most %v is %v", trial, delta, d)
		}
	}
}
