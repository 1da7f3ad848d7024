package aggregation

import (
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
)

// robustTol bounds the float64 rounding of a mean of a few values.
const robustTol = 1e-12

func equalWithin(a, b []float64, tol float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > tol {
			return false
		}
	}
	return true
}

func TestCoordinateMedian(t *testing.T) {
	for i, test := range []struct {
		models [][]float64
		want   []float64
	}{
		{ // 0: odd count; medians by hand: {1,2,9}→2, {-1,5,0}→0
			models: [][]float64{{1, -1}, {9, 5}, {2, 0}},
			want:   []float64{2, 0},
		},
		{ // 1: even count takes the mean of the middle two, as numpy.median: {1,2,3,10}→2.5
			models: [][]float64{{10}, {1}, {3}, {2}},
			want:   []float64{2.5},
		},
		{ // 2: one model is its own median
			models: [][]float64{{4, -7, 0.5}},
			want:   []float64{4, -7, 0.5},
		},
		{ // 3: an outlier far away does not move the median: {0,0,0,0,1e9}→0
			models: [][]float64{{0}, {0}, {1e9}, {0}, {0}},
			want:   []float64{0},
		},
	} {
		got, err := CoordinateMedian(test.models)
		if err != nil {
			t.Fatalf("case %d: unexpected error: %v", i, err)
		}
		if !equalWithin(got, test.want, robustTol) {
			t.Errorf("case %d: got %v, want %v", i, got, test.want)
		}
	}
}

func TestTrimmedMean(t *testing.T) {
	for i, test := range []struct {
		models [][]float64
		trim   float64
		want   []float64
	}{
		{ // 0: trim 0 is the plain mean: (1+2+6)/3 = 3
			models: [][]float64{{1}, {2}, {6}},
			trim:   0,
			want:   []float64{3},
		},
		{ // 1: n=5, trim 0.2 → k=1: drop 100 and -50, mean of {1,2,3} = 2
			models: [][]float64{{100}, {1}, {-50}, {3}, {2}},
			trim:   0.2,
			want:   []float64{2},
		},
		{ // 2: n=8, trim 0.1 → k=⌊0.8⌋=0 (rounded down): plain mean 36/8 = 4.5
			models: [][]float64{{1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}},
			trim:   0.1,
			want:   []float64{4.5},
		},
		{ // 3: n=4, trim 0.49 → k=1: per coordinate mean of the middle two,
			// {0,1,2,30}→1.5 and {-4,-3,5,7}→1
			models: [][]float64{{0, 7}, {30, -3}, {1, -4}, {2, 5}},
			trim:   0.49,
			want:   []float64{1.5, 1},
		},
	} {
		got, err := TrimmedMean(test.models, test.trim)
		if err != nil {
			t.Fatalf("case %d: unexpected error: %v", i, err)
		}
		if !equalWithin(got, test.want, robustTol) {
			t.Errorf("case %d: got %v, want %v", i, got, test.want)
		}
	}
}

func TestKrum(t *testing.T) {
	for i, test := range []struct {
		models     [][]float64
		f          int
		wantScores []float64
		wantIndex  int
	}{
		{ // 1-D points 0,1,2,10,20 with f=1: n−f−2 = 2 nearest others.
			// Squared distances by hand: 0→{1,4}=5, 1→{1,1}=2, 2→{1,4}=5,
			// 10→{64,81}=145, 20→{100,324}=424; the min is index 1.
			models:     [][]float64{{0}, {1}, {2}, {10}, {20}},
			f:          1,
			wantScores: []float64{5, 2, 5, 145, 424},
			wantIndex:  1,
		},
		{ // f=0, n=3 → 1 nearest other. Points (0,0),(3,4),(0,1):
			// d²: 0–1 = 25, 0–2 = 1, 1–2 = 9+9 = 18. Scores 1, 18, 1: tie → index 0.
			models:     [][]float64{{0, 0}, {3, 4}, {0, 1}},
			f:          0,
			wantScores: []float64{1, 18, 1},
			wantIndex:  0,
		},
		{ // identical models all score 0; the lowest index wins.
			models:     [][]float64{{1, 1}, {1, 1}, {1, 1}, {1, 1}},
			f:          0,
			wantScores: []float64{0, 0, 0, 0},
			wantIndex:  0,
		},
	} {
		scores, err := KrumScores(test.models, test.f)
		if err != nil {
			t.Fatalf("case %d: unexpected error: %v", i, err)
		}
		if !equalWithin(scores, test.wantScores, robustTol) {
			t.Errorf("case %d: scores %v, want %v", i, scores, test.wantScores)
		}
		got, err := Krum(test.models, test.f)
		if err != nil {
			t.Fatalf("case %d: unexpected error: %v", i, err)
		}
		if !equalWithin(got, test.models[test.wantIndex], 0) {
			t.Errorf("case %d: Krum = %v, want model %d %v", i, got, test.wantIndex, test.models[test.wantIndex])
		}
		got[0] = math.Pi
		if test.models[test.wantIndex][0] == math.Pi {
			t.Errorf("case %d: Krum returned the input slice, want a copy", i)
		}
	}
}

// TestRobustAgainstBruteForce checks the three rules on random inputs
// against direct definitions: the median as the value with at most half of
// the others on each side, the trimmed mean by explicit sorting and
// slicing, and Krum by scoring every model against every subset-free sort.
func TestRobustAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for trial := 0; trial < 50; trial++ {
		n := 5 + rng.IntN(8)
		p := 1 + rng.IntN(6)
		models := make([][]float64, n)
		for k := range models {
			models[k] = make([]float64, p)
			for j := range models[k] {
				models[k][j] = math.Round(rng.NormFloat64()*100) / 10
			}
		}
		med, err := CoordinateMedian(models)
		if err != nil {
			t.Fatal(err)
		}
		trim := rng.Float64() * 0.49
		tm, err := TrimmedMean(models, trim)
		if err != nil {
			t.Fatal(err)
		}
		k := int(trim * float64(n))
		for j := 0; j < p; j++ {
			below, above := 0, 0
			col := make([]float64, n)
			for i, m := range models {
				col[i] = m[j]
				if m[j] < med[j] {
					below++
				}
				if m[j] > med[j] {
					above++
				}
			}
			if below > n/2 || above > n/2 {
				t.Errorf("trial %d coord %d: median %v has %d below and %d above of %d", trial, j, med[j], below, above, n)
			}
			sort.Float64s(col)
			s := 0.0
			for _, v := range col[k : n-k] {
				s += v
			}
			if want := s / float64(n-2*k); math.Abs(tm[j]-want) > robustTol {
				t.Errorf("trial %d coord %d: trimmed mean %v, want %v", trial, j, tm[j], want)
			}
		}
		f := rng.IntN((n-3)/2 + 1)
		idx, err := KrumSelect(models, f)
		if err != nil {
			t.Fatal(err)
		}
		best, bestScore := -1, math.Inf(1)
		for i := range models {
			var d []float64
			for j := range models {
				if j == i {
					continue
				}
				s := 0.0
				for c := range models[i] {
					s += (models[i][c] - models[j][c]) * (models[i][c] - models[j][c])
				}
				d = append(d, s)
			}
			sort.Float64s(d)
			s := 0.0
			for _, v := range d[:n-f-2] {
				s += v
			}
			if s < bestScore {
				best, bestScore = i, s
			}
		}
		if idx != best {
			t.Errorf("trial %d: Krum picked %d, brute force picked %d", trial, idx, best)
		}
	}
}

func TestRobustErrors(t *testing.T) {
	ok := [][]float64{{1, 2}, {3, 4}, {5, 6}, {7, 8}}
	for i, test := range []struct {
		name string
		run  func() error
		want string
	}{
		{"median empty", func() error { _, err := CoordinateMedian(nil); return err }, "no models"},                           // 0
		{"median ragged", func() error { _, err := CoordinateMedian([][]float64{{1, 2}, {3}}); return err }, "model 1 has 1"}, // 1
		{"median NaN", func() error { _, err := CoordinateMedian([][]float64{{1}, {math.NaN()}}); return err }, "is NaN"},     // 2
		{"trim negative", func() error { _, err := TrimmedMean(ok, -0.1); return err }, "trim = -0.1"},                        // 3
		{"trim half", func() error { _, err := TrimmedMean(ok, 0.5); return err }, "trim = 0.5"},                              // 4
		{"trim NaN", func() error { _, err := TrimmedMean(ok, math.NaN()); return err }, "trim = NaN"},                        // 5
		{"krum too few", func() error { _, err := Krum(ok, 1); return err }, "want more than 2f + 2 = 4"},                     // 6
		{"krum negative f", func() error { _, err := Krum(ok, -1); return err }, "f = -1"},                                    // 7
		{"krum Inf", func() error { _, err := Krum([][]float64{{1}, {2}, {math.Inf(1)}}, 0); return err }, "is +Inf"},         // 8
	} {
		err := test.run()
		if err == nil || !strings.Contains(err.Error(), test.want) {
			t.Errorf("case %d (%s): error %v, want one containing %q", i, test.name, err, test.want)
		}
	}
}

func benchModels(n, p int) [][]float64 {
	rng := rand.New(rand.NewPCG(1, 2))
	models := make([][]float64, n)
	for k := range models {
		models[k] = make([]float64, p)
		for j := range models[k] {
			models[k][j] = rng.NormFloat64()
		}
	}
	return models
}

func BenchmarkCoordinateMedian(b *testing.B) {
	models := benchModels(1000, 10000)
	b.ResetTimer()
	for b.Loop() {
		if _, err := CoordinateMedian(models); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTrimmedMean(b *testing.B) {
	models := benchModels(1000, 10000)
	b.ResetTimer()
	for b.Loop() {
		if _, err := TrimmedMean(models, 0.1); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkKrum(b *testing.B) {
	models := benchModels(100, 10000)
	b.ResetTimer()
	for b.Loop() {
		if _, err := Krum(models, 10); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSelectSmallest compares the selection against a full sort on inputs
// with many ties, every rank k.
func TestSelectSmallest(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 20; trial++ {
		n := 1 + rng.IntN(60)
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(rng.IntN(5))
		}
		sorted := append([]float64(nil), v...)
		sort.Float64s(sorted)
		for k := 0; k < n; k++ {
			w := append([]float64(nil), v...)
			selectSmallest(w, k)
			if w[k] != sorted[k] {
				t.Fatalf("trial %d k=%d: got %v, want %v", trial, k, w[k], sorted[k])
			}
			for i := range w {
				if (i < k && w[i] > w[k]) || (i > k && w[i] < w[k]) {
					t.Fatalf("trial %d k=%d: w[%d]=%v on the wrong side of %v", trial, k, i, w[i], w[k])
				}
			}
		}
	}
}
