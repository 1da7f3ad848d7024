package eval

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func newRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0)) }

func TestMakeClassificationValidation(t *testing.T) {
	for i, test := range []struct {
		edit func(*ClassificationOptions)
		want string
	}{
		{func(o *ClassificationOptions) { o.Samples = 0 }, "Samples = 0"},                                              // 0
		{func(o *ClassificationOptions) { o.Informative = 0 }, "Informative = 0"},                                      // 1
		{func(o *ClassificationOptions) { o.Redundant = 19 }, "exceeds Features = 20"},                                 // 2
		{func(o *ClassificationOptions) { o.Classes = 3 }, "Classes × ClustersPerClass = 6 exceeds 2^Informative = 4"}, // 3
		{func(o *ClassificationOptions) { o.FlipY = 1.5 }, "FlipY = 1.5"},                                              // 4
		{func(o *ClassificationOptions) { o.Weights = []float64{0.1, 0.2, 0.7} }, "3 Weights for 2 Classes"},           // 5
		{func(o *ClassificationOptions) { o.Weights = []float64{1.5} }, "Weights sum to more than 1"},                  // 6
		{func(o *ClassificationOptions) { o.Weights = []float64{math.NaN()} }, "Weights[0] = NaN"},                     // 7
		{func(o *ClassificationOptions) { o.ClassSep = math.Inf(1) }, "ClassSep = +Inf"},                               // 8
		{func(o *ClassificationOptions) { o.ClustersPerClass = 0 }, "ClustersPerClass = 0"},                            // 9
	} {
		opt := DefaultClassificationOptions()
		test.edit(&opt)
		_, _, err := MakeClassification(opt, newRNG(1))
		if err == nil || !strings.Contains(err.Error(), test.want) {
			t.Errorf("case %d: error %v, want one containing %q", i, err, test.want)
		}
	}
	if _, _, err := MakeClassification(DefaultClassificationOptions(), nil); err == nil {
		t.Error("nil random source: no error")
	}
}

// TestMakeClassificationStructure checks scikit-learn's construction on an
// unshuffled draw, where the column blocks and cluster blocks are in order.
func TestMakeClassificationStructure(t *testing.T) {
	opt := ClassificationOptions{
		Samples: 4000, Features: 12, Informative: 3, Redundant: 2, Repeated: 2,
		Classes: 2, ClustersPerClass: 2, Weights: []float64{0.3},
		ClassSep: 10, Hypercube: true, Scale: 1,
	}
	X, y, err := MakeClassification(opt, newRNG(5))
	if err != nil {
		t.Fatal(err)
	}
	if len(X) != 4000 || len(X[0]) != 12 || len(y) != 4000 {
		t.Fatalf("shape %d×%d, %d labels; want 4000×12, 4000", len(X), len(X[0]), len(y))
	}

	// Cluster sizes, by scikit-learn's rule: int(4000·0.3/2) = 600 for the
	// class-0 clusters, int(4000·0.7/2) = 1400 for class 1; no remainder.
	// Labels alternate by cluster: 0, 1, 0, 1.
	wantLabel := func(i int) int {
		switch {
		case i < 600:
			return 0
		case i < 2000:
			return 1
		case i < 2600:
			return 0
		}
		return 1
	}
	for i := range y {
		if y[i] != wantLabel(i) {
			t.Fatalf("row %d: label %d, want %d (no flips)", i, y[i], wantLabel(i))
		}
	}

	// Each cluster's informative mean sits at a hypercube vertex ±ClassSep:
	// the rows are N(0, AᵀA) around it with |A| ≤ 1, so with ≥ 600 rows the
	// mean is within 0.5 of the vertex with overwhelming probability.
	bounds := []int{0, 600, 2000, 2600, 4000}
	vertices := map[[3]int]bool{}
	for c := 0; c < 4; c++ {
		var key [3]int
		for j := 0; j < 3; j++ {
			m := 0.0
			for i := bounds[c]; i < bounds[c+1]; i++ {
				m += X[i][j]
			}
			m /= float64(bounds[c+1] - bounds[c])
			if math.Abs(math.Abs(m)-10) > 0.5 {
				t.Errorf("cluster %d column %d: mean %v, want ±10", c, j, m)
			}
			if m > 0 {
				key[j] = 1
			}
		}
		vertices[key] = true
	}
	if len(vertices) != 4 {
		t.Errorf("clusters share vertices: %d distinct of 4", len(vertices))
	}

	// The redundant columns are linear combinations of the informative ones:
	// the first 5 columns have rank 3.
	block := mat.NewDense(4000, 5, nil)
	for i := range X {
		block.SetRow(i, X[i][:5])
	}
	var svd mat.SVD
	if !svd.Factorize(block, mat.SVDNone) {
		t.Fatal("SVD failed")
	}
	if r := svd.Rank(1e-9); r != 3 {
		t.Errorf("rank of informative+redundant block = %d, want 3", r)
	}

	// Repeated columns copy one of the first 5 columns exactly.
	for j := 5; j < 7; j++ {
		found := false
		for s := 0; s < 5 && !found; s++ {
			same := true
			for i := range X {
				if X[i][j] != X[i][s] {
					same = false
					break
				}
			}
			found = same
		}
		if !found {
			t.Errorf("repeated column %d copies no earlier column", j)
		}
	}

	// Useless columns are standard normal: mean within 4.5 standard errors
	// (4.5/√4000 ≈ 0.07) of 0 and variance within 0.1 of 1.
	for j := 7; j < 12; j++ {
		m, v := 0.0, 0.0
		for i := range X {
			m += X[i][j]
		}
		m /= 4000
		for i := range X {
			v += (X[i][j] - m) * (X[i][j] - m)
		}
		v /= 4000
		if math.Abs(m) > 0.07 || math.Abs(v-1) > 0.1 {
			t.Errorf("noise column %d: mean %v variance %v, want ≈ 0 and 1", j, m, v)
		}
	}
}

// TestMakeClassificationFlipAndBalance checks the class proportions and the
// label-flip rate, which in scikit-learn re-draws a uniform class, so a
// fraction FlipY·(1 − 1/Classes) of the labels actually changes.
func TestMakeClassificationFlipAndBalance(t *testing.T) {
	opt := DefaultClassificationOptions()
	opt.Samples, opt.Classes, opt.Informative, opt.FlipY, opt.Shuffle = 20000, 4, 4, 0.2, false
	_, y, err := MakeClassification(opt, newRNG(11))
	if err != nil {
		t.Fatal(err)
	}
	counts := make([]int, 4)
	changed := 0
	for i, v := range y {
		counts[v]++
		// Unshuffled clusters of 20000/8 = 2500 rows with labels k mod 4.
		if v != (i/2500)%4 {
			changed++
		}
	}
	// Expected changed fraction 0.2·0.75 = 0.15, standard error
	// √(0.15·0.85/20000) ≈ 0.0025; tolerance 0.01 is four of them.
	if got := float64(changed) / 20000; math.Abs(got-0.15) > 0.01 {
		t.Errorf("changed-label fraction %v, want 0.15 ± 0.01", got)
	}
	for c, n := range counts {
		if math.Abs(float64(n)/20000-0.25) > 0.01 {
			t.Errorf("class %d fraction %v, want 0.25 ± 0.01", c, float64(n)/20000)
		}
	}
}

func TestMakeClassificationSeeds(t *testing.T) {
	opt := DefaultClassificationOptions()
	opt.RandomShift, opt.RandomScale, opt.Hypercube = true, true, false
	X1, y1, err := MakeClassification(opt, newRNG(3))
	if err != nil {
		t.Fatal(err)
	}
	X2, y2, _ := MakeClassification(opt, newRNG(3))
	X3, _, _ := MakeClassification(opt, newRNG(4))
	if !reflect.DeepEqual(X1, X2) || !reflect.DeepEqual(y1, y2) {
		t.Error("same seed gave different data")
	}
	if reflect.DeepEqual(X1, X3) {
		t.Error("different seeds gave identical data")
	}
	// RandomScale multiplies by 1 + 100·U[0,1): at least one column's
	// spread must exceed the unscaled data's by far.
	maxAbs := 0.0
	for _, r := range X1 {
		for _, v := range r {
			maxAbs = math.Max(maxAbs, math.Abs(v))
		}
	}
	if maxAbs < 20 {
		t.Errorf("random scale left max |x| = %v, want a scaled range", maxAbs)
	}
}

func TestHypercubeVerticesDistinct(t *testing.T) {
	for i, test := range []struct{ samples, dim int }{
		{4, 2},   // 0: every vertex of the square, Perm path
		{10, 12}, // 1: rejection path
		{6, 33},  // 2: more than 30 dimensions: 3 free bits + 30 drawn distinct
	} {
		v := hypercubeVertices(test.samples, test.dim, newRNG(uint64(i)))
		seen := map[string]bool{}
		for _, row := range v {
			var b strings.Builder
			for _, x := range row {
				if x != 0 && x != 1 {
					t.Fatalf("case %d: coordinate %v, want 0 or 1", i, x)
				}
				b.WriteByte(byte('0' + int(x)))
			}
			if seen[b.String()] {
				t.Errorf("case %d: vertex %s drawn twice", i, b.String())
			}
			seen[b.String()] = true
		}
	}
}
