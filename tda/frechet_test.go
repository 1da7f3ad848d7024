package tda

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestFrechetMeanHandComputed: cases worked by hand with Turner et al.'s
// update (a point moves to the mean of its matches, a diagonal match
// counting as its own projection ((b+d)/2, (b+d)/2)).
func TestFrechetMeanHandComputed(t *testing.T) {
	cases := []struct {
		in   [][]Pair
		want []Pair
		f    float64 // F(mean) = Σ W2²
	}{
		// 0: equal diagrams are their own mean.
		0: {[][]Pair{{{0, 1}, {0.5, 2}}, {{0, 1}, {0.5, 2}}}, []Pair{{0, 1}, {0.5, 2}}, 0},
		// 1: (0,2) and (0,4) match each other (cost 4 < 2 + 8 to the
		// diagonal); the mean point is (0,3), at squared distance 1 from each.
		1: {[][]Pair{{{0, 2}}, {{0, 4}}}, []Pair{{0, 3}}, 2},
		// 2: {(0,4)} and {}: start at {(0,4)} (F = 8 for both, the lower
		// index wins); its point averages (0,4) with its projection (2,2)
		// to (1,3), which still matches (0,4) (cost 2 < 2 + 8): F = 2 + 2.
		2: {[][]Pair{{{0, 4}}, {}}, []Pair{{1, 3}}, 4},
	}
	for i, c := range cases {
		got, err := FrechetMean(c.in)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if len(got) != len(c.want) {
			t.Fatalf("case %d: mean %v; want %v", i, got, c.want)
		}
		for j := range got {
			if math.Abs(got[j].Birth-c.want[j].Birth) > 1e-12 || math.Abs(got[j].Death-c.want[j].Death) > 1e-12 {
				t.Errorf("case %d: mean %v; want %v", i, got, c.want)
			}
		}
		if f, _ := FrechetFunction(got, c.in); math.Abs(f-c.f) > 1e-12 {
			t.Errorf("case %d: F = %v; want %v", i, f, c.f)
		}
	}
	if _, err := FrechetMean(nil); err == nil {
		t.Error("no diagrams: no error")
	}
	if _, err := FrechetMean([][]Pair{{{0, math.Inf(1)}}}); err == nil {
		t.Error("an infinite pair: no error")
	}
}

// bruteW2Euclid is the squared W2Euclid by trying every partial matching
// of a to b.
func bruteW2Euclid(a, b []Pair) float64 {
	diag := func(p Pair) float64 { d := (p.Death - p.Birth) / 2; return 2 * d * d }
	used := make([]bool, len(b))
	best := math.Inf(1)
	var rec func(i int, acc float64)
	rec = func(i int, acc float64) {
		if i == len(a) {
			for j, q := range b {
				if !used[j] {
					acc += diag(q)
				}
			}
			best = math.Min(best, acc)
			return
		}
		rec(i+1, acc+diag(a[i]))
		for j, q := range b {
			if !used[j] {
				used[j] = true
				db, dd := a[i].Birth-q.Birth, a[i].Death-q.Death
				rec(i+1, acc+db*db+dd*dd)
				used[j] = false
			}
		}
	}
	rec(0, 0)
	return best
}

func smallDiagram(r *rand.Rand, n int) []Pair {
	d := make([]Pair, n)
	for i := range d {
		b := r.Float64()
		d[i] = Pair{Birth: b, Death: b + r.Float64()}
	}
	return d
}

// TestFrechetMeanRandom: on random small diagrams W2Euclid equals brute
// force, and the mean is no worse than any input and a local minimum of F
// (moving any coordinate of any point by ±1e-4 does not lower F).
func TestFrechetMeanRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for c := range 40 {
		a, b := smallDiagram(r, r.IntN(4)), smallDiagram(r, r.IntN(4))
		got, err := W2Euclid(a, b)
		if err != nil {
			t.Fatal(err)
		}
		if want := math.Sqrt(bruteW2Euclid(a, b)); math.Abs(got-want) > 1e-12 {
			t.Errorf("case %d: W2 %v, brute force %v (%v vs %v)", c, got, want, a, b)
		}
		ds := [][]Pair{smallDiagram(r, 1+r.IntN(3)), smallDiagram(r, 1+r.IntN(3)), smallDiagram(r, r.IntN(3))}
		y, err := FrechetMean(ds)
		if err != nil {
			t.Fatal(err)
		}
		f := frechetFunction(y, ds)
		for i, d := range ds {
			if fi := frechetFunction(d, ds); f > fi+1e-12 {
				t.Errorf("case %d: F(mean) = %v above F(input %d) = %v", c, f, i, fi)
			}
		}
		for j := range y {
			for _, step := range []Pair{{1e-4, 0}, {-1e-4, 0}, {0, 1e-4}, {0, -1e-4}} {
				z := append([]Pair(nil), y...)
				z[j].Birth += step.Birth
				z[j].Death += step.Death
				if z[j].Death < z[j].Birth {
					continue
				}
				if fz := frechetFunction(z, ds); fz < f-1e-12 {
					t.Errorf("case %d: moving point %d by %v lowers F from %v to %v: not a local minimum", c, j, step, f, fz)
				}
			}
		}
	}
}
