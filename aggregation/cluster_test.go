package aggregation

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func lineDistances(x []float64) [][]float64 {
	d := make([][]float64, len(x))
	for i := range d {
		d[i] = make([]float64, len(x))
		for j := range x {
			d[i][j] = math.Abs(x[i] - x[j])
		}
	}
	return d
}

// naiveAverageLinkage is the textbook O(K³) algorithm: repeatedly merge the
// two clusters with the smallest mean pairwise distance.
func naiveAverageLinkage(dist [][]float64, m int) []int {
	var clusters [][]int
	for i := range dist {
		clusters = append(clusters, []int{i})
	}
	for len(clusters) > m {
		bi, bj, bd := 0, 1, math.Inf(1)
		for i := range clusters {
			for j := i + 1; j < len(clusters); j++ {
				s := 0.0
				for _, a := range clusters[i] {
					for _, b := range clusters[j] {
						s += dist[a][b]
					}
				}
				if d := s / float64(len(clusters[i])*len(clusters[j])); d < bd {
					bi, bj, bd = i, j, d
				}
			}
		}
		clusters[bi] = append(clusters[bi], clusters[bj]...)
		clusters = append(clusters[:bj], clusters[bj+1:]...)
	}
	root := make([]int, len(dist))
	for _, members := range clusters {
		min := len(dist)
		for _, a := range members {
			if a < min {
				min = a
			}
		}
		for _, a := range members {
			root[a] = min
		}
	}
	return canonicalLabels(func(i int) int { return root[i] }, len(dist))
}

func TestAverageLinkage(t *testing.T) {
	// By hand on a line: {0,1} and {5,6} merge at height 1, then at mean
	// distance (5+6+4+5)/4 = 5; 20 joins last.
	d := lineDistances([]float64{0, 1, 5, 6, 20})
	for i, tc := range []struct {
		m    int
		want []int
	}{
		{1, []int{0, 0, 0, 0, 0}}, // 0
		{2, []int{0, 0, 0, 0, 1}},
		{3, []int{0, 0, 1, 1, 2}},
		{5, []int{0, 1, 2, 3, 4}},
		{9, []int{0, 1, 2, 3, 4}}, // 4: m clamped to K
		{0, []int{0, 0, 0, 0, 0}}, // 5: m clamped to 1
	} {
		if got := AverageLinkage(d, tc.m); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%d: M=%d labels %v, want %v", i, tc.m, got, tc.want)
		}
	}
}

// TestAverageLinkageMatchesNaive compares the NN-chain hierarchy with the
// textbook algorithm on random points in general position (no ties).
func TestAverageLinkageMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 30; trial++ {
		k := 3 + rng.IntN(25)
		pts := make([][]float64, k)
		for i := range pts {
			pts[i] = []float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}
		}
		d := EuclideanMatrix(pts)
		for m := 1; m <= k; m++ {
			got, want := AverageLinkage(d, m), naiveAverageLinkage(d, m)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("trial %d K=%d M=%d: %v, naive %v", trial, k, m, got, want)
			}
		}
	}
}

func TestSilhouetteAndChooseClusters(t *testing.T) {
	d := lineDistances([]float64{0, 1, 5, 6})
	// By hand: point 0 a=1, b=(5+6)/2; point 1 a=1, b=(4+5)/2; 2, 3 mirror.
	want := (4.5/5.5 + 3.5/4.5) / 2
	if got := Silhouette(d, []int{0, 0, 1, 1}); math.Abs(got-want) > 1e-15 {
		t.Errorf("Silhouette = %v, want %v", got, want)
	}
	if got := Silhouette(d, []int{0, 0, 0, 0}); got != 0 {
		t.Errorf("one-cluster silhouette = %v, want 0", got)
	}
	for i, tc := range []struct {
		x    []float64
		m    int
		want []int
	}{
		{[]float64{0, 0.1, 10, 10.1, 20, 20.1}, 0, []int{0, 0, 1, 1, 2, 2}}, // 0: silhouette picks 3
		{[]float64{0, 0.1, 10, 10.1}, 0, []int{0, 0, 1, 1}},                 // 1: picks 2
		{[]float64{0, 5}, 2, []int{0, 0}},                                   // 2: min(M, K−1) = 1 → one cluster
		{[]float64{0, 5, 6}, 5, []int{0, 1, 1}},                             // 3: M capped at K−1 = 2
		{[]float64{0, 5, 6}, 1, []int{0, 0, 0}},                             // 4
	} {
		if got := ChooseClusters(lineDistances(tc.x), tc.m, 10); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%d: ChooseClusters(M=%d) = %v, want %v", i, tc.m, got, tc.want)
		}
	}
}
