package tda

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
)

// labelledTol bounds the difference between LabelledSummary and the brute
// force below: both divide the same integer counts, so only the last ulp
// of p_null's arithmetic can differ.
const labelledTol = 1e-12

// bruteLabelled recomputes the label-aware summary of the rows of x by the
// definitions in LabelledSummary's doc comment, with nothing shared with
// the implementation: its own standardisation and distances, an O(n²)
// enumeration of the pairs at each scale, and Prim's minimum spanning tree.
// It assumes distinct pairwise distances (random points), so the tree is
// unique.
func bruteLabelled(x [][]float64, y []float64) []float64 {
	n, d := len(x), len(x[0])
	z := make([][]float64, n)
	for i := range z {
		z[i] = make([]float64, d)
	}
	for k := 0; k < d; k++ {
		mean, ss := 0.0, 0.0
		for i := range x {
			mean += x[i][k]
		}
		mean /= float64(n)
		for i := range x {
			ss += (x[i][k] - mean) * (x[i][k] - mean)
		}
		sd := math.Sqrt(ss/float64(n)) + 1e-8
		for i := range x {
			z[i][k] = (x[i][k] - mean) / sd
		}
	}
	dist := func(i, j int) float64 {
		s := 0.0
		for k := range z[i] {
			s += (z[i][k] - z[j][k]) * (z[i][k] - z[j][k])
		}
		return math.Sqrt(s)
	}
	var all []float64
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			all = append(all, dist(i, j))
		}
	}
	sort.Float64s(all)
	diff, pairs := 0, 0
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			pairs++
			if y[i] != y[j] {
				diff++
			}
		}
	}
	// Under a random permutation every pair is equally likely to carry any
	// two of the n labels, so p_null is the fraction of cross-label pairs
	// of the labels themselves.
	pNull := float64(diff) / float64(pairs)
	out := make([]float64, LabelledLen)
	for s, q := range LabelMixingScales {
		t := all[int(math.Ceil(q*float64(len(all))))-1]
		in, cross := 0, 0
		for i := 0; i < n; i++ {
			for j := i + 1; j < n; j++ {
				if dist(i, j) <= t {
					in++
					if y[i] != y[j] {
						cross++
					}
				}
			}
		}
		out[LabelMixingOffset+s] = float64(cross) / float64(in) / pNull
	}
	// Prim.
	inTree := make([]bool, n)
	inTree[0] = true
	cross := 0
	for step := 1; step < n; step++ {
		bi, bj, bw := -1, -1, math.Inf(1)
		for i := 0; i < n; i++ {
			if !inTree[i] {
				continue
			}
			for j := 0; j < n; j++ {
				if !inTree[j] && dist(i, j) < bw {
					bi, bj, bw = i, j, dist(i, j)
				}
			}
		}
		inTree[bj] = true
		if y[bi] != y[bj] {
			cross++
		}
	}
	out[LabelMSTOffset] = float64(cross) / (float64(n-1) * pNull)
	return out
}

func TestLabelledSummaryBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for c := 0; c < 40; c++ {
		n := 5 + r.IntN(20)
		d := 1 + r.IntN(4)
		classes := 2 + r.IntN(2)
		x := make([][]float64, n)
		y := make([]float64, n)
		for i := range x {
			x[i] = make([]float64, d)
			for k := range x[i] {
				x[i][k] = r.NormFloat64() * float64(k+1)
			}
			y[i] = float64(i % classes) // every class present
		}
		r.Shuffle(n, func(i, j int) { y[i], y[j] = y[j], y[i] })
		got, err := LabelledSummary(x, y, LabelledOptions{})
		if err != nil {
			t.Fatalf("case %d: %v", c, err)
		}
		want := bruteLabelled(x, y)
		for j := range want {
			if math.Abs(got[j]-want[j]) > labelledTol {
				t.Errorf("case %d (n=%d, d=%d, %d classes): entry %d = %v, brute force %v", c, n, d, classes, j, got[j], want[j])
			}
		}
	}
}

func TestLabelledSummaryShapes(t *testing.T) {
	// Two clean classes of 5 points on a line, at offsets
	// {0, 0.1, 0.3, 0.7, 1.5} from 0 and from 100 (all pairwise offset
	// differences distinct, so no ties). The 20 within-class edges are all
	// shorter than the 25 cross-label ones, so while at most 20 of the 45
	// edges are in, the complex has no cross-label edge: every scale up to
	// q = 0.3 (⌈13.5⌉ = 14 edges) reads 0. At q = 0.5 (⌈22.5⌉ = 23 edges)
	// it holds the 20 within-class edges and the 3 shortest cross ones:
	// 3/23 over p_null = 2·5·5/(10·9) = 5/9, i.e. 27/115. The spanning tree
	// has one cross edge (the bridge) out of 9, against a null mean of
	// 9·5/9 = 5: 1/5, the Friedman–Rafsky count of two separated samples.
	offsets := []float64{0, 0.1, 0.3, 0.7, 1.5}
	var x [][]float64
	var y []float64
	for c := 0; c < 2; c++ {
		for _, o := range offsets {
			x = append(x, []float64{100*float64(c) + o})
			y = append(y, float64(c))
		}
	}
	got, err := LabelledSummary(x, y, LabelledOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, LabelledLen)
	want[LabelMixingOffset+LabelMixingLen-1] = 27.0 / 115
	want[LabelMSTOffset] = 0.2
	for j := range want {
		if math.Abs(got[j]-want[j]) > labelledTol {
			t.Errorf("entry %d = %v, want %v", j, got[j], want[j])
		}
	}

	// The same points with labels alternating along the line (0 1 0 1 0 |
	// 1 0 1 0 1): in one dimension the tree is the chain of consecutive
	// points, and all 9 of its edges, the bridge (offset 1.5, label 0, to
	// offset 0, label 1) included, cross: 9/5 = 1.8. The first scale
	// (⌈0.45⌉ = 1 edge, offsets 0–0.1 in either cluster) crosses too:
	// 1/(5/9) = 1.8.
	for i := range y {
		y[i] = float64(i % 2)
	}
	got, err = LabelledSummary(x, y, LabelledOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got[LabelMSTOffset]-1.8) > labelledTol {
		t.Errorf("alternating labels: cross-label H0 ratio %v, want 1.8", got[LabelMSTOffset])
	}
	if math.Abs(got[LabelMixingOffset]-1.8) > labelledTol {
		t.Errorf("alternating labels: mixing at the first scale %v, want 1.8", got[LabelMixingOffset])
	}
}

func TestLabelledSummaryTiesAndClasses(t *testing.T) {
	// Three pairs of duplicate rows at 0, 1 and 2, three classes with
	// labels [0 1 | 1 1 | 2 0]: class sizes 2, 3, 1, so p_null =
	// 1 − (2·1 + 3·2)/30 = 11/15. The first scale takes ⌈0.15⌉ = 1 edge of
	// length 0, and the tie pulls in all three zero-length edges, of which
	// two cross: (2/3)/(11/15) = 10/11. Kruskal in (length, i, j) order
	// takes the three zero edges (2 cross), then of the tied unit edges
	// (0,2) (labels 0–1, cross) and (2,4) (labels 1–2, cross): 4 of 5 tree
	// edges cross, over 5·11/15: 12/11. Standardisation maps 0, 1, 2 to
	// −a, 0, a exactly, so the unit edges tie exactly.
	x := [][]float64{{0}, {0}, {1}, {1}, {2}, {2}}
	y := []float64{0, 1, 1, 1, 2, 0}
	got, err := LabelledSummary(x, y, LabelledOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got[LabelMixingOffset]-10.0/11) > labelledTol {
		t.Errorf("mixing at the first scale %v, want 10/11", got[LabelMixingOffset])
	}
	if math.Abs(got[LabelMSTOffset]-12.0/11) > labelledTol {
		t.Errorf("cross-label H0 ratio %v, want 12/11", got[LabelMSTOffset])
	}
}

func TestLabelledSummaryDeterministicAndRows(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	x := make([][]float64, 300)
	y := make([]float64, 300)
	for i := range x {
		x[i] = []float64{r.NormFloat64(), r.NormFloat64(), r.NormFloat64()}
		if x[i][0]+0.3*r.NormFloat64() > 0 {
			y[i] = 1
		}
	}
	opt := LabelledOptions{NSub: 120, Seed: 9}
	a, err := LabelledSummary(x, y, opt)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := LabelledSummary(x, y, opt)
	if !slices.Equal(a, b) {
		t.Errorf("same input, different summaries:\n%v\n%v", a, b)
	}
	// Seed and NSub pick the same rows as the descriptor's: passing those
	// rows explicitly gives the same numbers.
	d, err := ComputeDescriptor(x, DescriptorOptions{NSub: 120, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	c, err := LabelledSummary(x, y, LabelledOptions{Rows: d.Rows})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a, c) {
		t.Errorf("explicit rows differ from NSub/Seed:\n%v\n%v", a, c)
	}
	// A separating feature: labels follow x0 up to noise, so small scales
	// are far purer than a random relabelling.
	if a[LabelMixingOffset] > 0.6 || a[LabelMSTOffset] > 0.6 {
		t.Errorf("labels that follow a feature look mixed: %v", a)
	}
}

func TestLabelledSummaryErrors(t *testing.T) {
	good := [][]float64{{0, 1}, {1, 0}, {2, 2}}
	for i, tc := range []struct {
		x    [][]float64
		y    []float64
		opt  LabelledOptions
		want string
	}{
		{good, []float64{0, 1}, LabelledOptions{}, "3 rows and 2 labels"},          // 0
		{good, []float64{0, math.NaN(), 1}, LabelledOptions{}, "label 1 is NaN"},   // 1
		{good, []float64{0, math.Inf(1), 1}, LabelledOptions{}, "label 1 is +Inf"}, // 2
		{[][]float64{{0, 1}, {math.NaN(), 0}, {2, 2}}, []float64{0, 1, 1}, LabelledOptions{}, "row 1 feature 0 is NaN"},
		{good, []float64{1, 1, 1}, LabelledOptions{}, "single label"},                            // 4
		{nil, nil, LabelledOptions{}, "no rows"},                                                 // 5
		{[][]float64{{1}}, []float64{0}, LabelledOptions{}, "1 row"},                             // 6
		{good, []float64{0, 1, 1}, LabelledOptions{NSub: -1}, "negative"},                        // 7
		{good, []float64{0, 1, 1}, LabelledOptions{Rows: []int{0, 3}}, "out of range"},           // 8
		{good, []float64{0, 1, 1}, LabelledOptions{Rows: []int{1, 2}}, "single label"},           // 9
		{[][]float64{{0, 1}, {1}, {2, 2}}, []float64{0, 1, 1}, LabelledOptions{}, "row 1 has 1"}, // 10
	} {
		_, err := LabelledSummary(tc.x, tc.y, tc.opt)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%d: error %v, want one containing %q", i, err, tc.want)
		}
	}
	_, err := LabelledSummary(good, []float64{2, 2, 2}, LabelledOptions{})
	if !errors.Is(err, ErrOneClass) {
		t.Errorf("single class: %v does not wrap ErrOneClass", err)
	}
}

func BenchmarkLabelledSummary(b *testing.B) {
	for _, n := range []int{80, 200, 500} {
		r := rand.New(rand.NewPCG(1, 2))
		x := make([][]float64, n)
		y := make([]float64, n)
		for i := range x {
			x[i] = make([]float64, 20)
			for k := range x[i] {
				x[i][k] = r.NormFloat64()
			}
			y[i] = float64(r.IntN(2))
		}
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := LabelledSummary(x, y, LabelledOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
