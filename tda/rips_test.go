package tda

import (
	"bufio"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// goldenPH is the copy of ../shared/golden/ph in the repository.
const goldenPH = "../testdata/ph"

// readCloud reads a golden point cloud: one point per line, no header.
func readCloud(t testing.TB, path string) [][]float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var pts [][]float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var p []float64
		for _, s := range strings.Split(line, ",") {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			p = append(p, v)
		}
		pts = append(pts, p)
	}
	return pts
}

// readGoldenPairs reads the `dim birth death` lines of a golden diagram.
func readGoldenPairs(t testing.TB, path string) Diagram {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d Diagram
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		birth, err1 := strconv.ParseFloat(f[1], 64)
		death, err2 := strconv.ParseFloat(f[2], 64)
		if len(f) != 3 || err1 != nil || err2 != nil {
			t.Fatalf("%s: bad line %q", path, line)
		}
		switch f[0] {
		case "0":
			d.H0 = append(d.H0, Pair{birth, death})
		case "1":
			d.H1 = append(d.H1, Pair{birth, death})
		}
	}
	return d
}

// TestVietorisRipsGolden reproduces every diagram of ../shared/golden/ph bit
// for bit: the golden files were written by Ripser in float64 and
// cross-checked with GUDHI and a brute-force reduction, and their README
// says a correct implementation using the same distance formula reaches an
// exact match (comparison rule step 2 with difference 0).
func TestVietorisRipsGolden(t *testing.T) {
	csvs, err := filepath.Glob(filepath.Join(goldenPH, "*.csv"))
	if err != nil || len(csvs) == 0 {
		t.Fatalf("no golden clouds in %s: %v", goldenPH, err)
	}
	for _, csv := range csvs {
		stem := strings.TrimSuffix(filepath.Base(csv), ".csv")
		t.Run(stem, func(t *testing.T) {
			if testing.Short() && strings.Contains(stem, "n1000") {
				t.Skip("large case skipped in -short mode")
			}
			m, err := EuclideanDistances(readCloud(t, csv))
			if err != nil {
				t.Fatal(err)
			}
			got := VietorisRips(m)
			want := readGoldenPairs(t, strings.TrimSuffix(csv, ".csv")+".diag")
			for dim := 0; dim <= 1; dim++ {
				g, w := got.Dim(dim), want.Dim(dim)
				if len(g) != len(w) {
					t.Fatalf("H%d: %d bars, want %d", dim, len(g), len(w))
				}
				for k := range w {
					if g[k] != w[k] {
						t.Fatalf("H%d bar %d: got %v, want %v", dim, k, g[k], w[k])
					}
				}
			}
		})
	}
}

// TestVietorisRipsSmall checks hand-computed diagrams.
func TestVietorisRipsSmall(t *testing.T) {
	inf := math.Inf(1)
	for i, test := range []struct {
		points [][]float64
		want   Diagram
	}{
		{ // 0: no points, no bars.
			points: nil,
			want:   Diagram{},
		},
		{ // 1: one point: the single infinite H0 bar.
			points: [][]float64{{1, 2}},
			want:   Diagram{H0: []Pair{{0, inf}}},
		},
		{ // 2: (0,0),(3,4): one bar [0,5).
			points: [][]float64{{0, 0}, {3, 4}},
			want:   Diagram{H0: []Pair{{0, 5}, {0, inf}}},
		},
		{ // 3: two identical points: the zero-length merge is not listed.
			points: [][]float64{{1, 1}, {1, 1}},
			want:   Diagram{H0: []Pair{{0, inf}}},
		},
		{ // 4: unit square: three [0,1) bars, one H1 bar [1, √2) that the
			// diagonals kill.
			points: [][]float64{{0, 0}, {1, 0}, {1, 1}, {0, 1}},
			want: Diagram{
				H0: []Pair{{0, 1}, {0, 1}, {0, 1}, {0, inf}},
				H1: []Pair{{1, math.Sqrt2}},
			},
		},
		{ // 5: square with a duplicated corner: same diagram as case 4.
			points: [][]float64{{0, 0}, {1, 0}, {1, 1}, {0, 1}, {1, 0}},
			want: Diagram{
				H0: []Pair{{0, 1}, {0, 1}, {0, 1}, {0, inf}},
				H1: []Pair{{1, math.Sqrt2}},
			},
		},
		{ // 6: 3-4-5 right triangle: the cycle appears and is filled at 5.
			points: [][]float64{{0, 0}, {3, 0}, {0, 4}},
			want:   Diagram{H0: []Pair{{0, 3}, {0, 4}, {0, inf}}},
		},
	} {
		m, err := EuclideanDistances(test.points)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		got := VietorisRips(m)
		if !slices.Equal(got.H0, test.want.H0) || !slices.Equal(got.H1, test.want.H1) {
			t.Errorf("case %d: got %v, want %v", i, got, test.want)
		}
	}
}

// TestVietorisRipsBruteForce compares with a textbook Z/2 reduction of the
// boundary matrix of the full 2-skeleton, on random small clouds with ties
// (integer coordinates) and without.
func TestVietorisRipsBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for c := 0; c < 200; c++ {
		n := 1 + rng.IntN(12)
		pts := make([][]float64, n)
		for i := range pts {
			if c%2 == 0 {
				pts[i] = []float64{float64(rng.IntN(4)), float64(rng.IntN(4))}
			} else {
				pts[i] = []float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}
			}
		}
		m, err := EuclideanDistances(pts)
		if err != nil {
			t.Fatal(err)
		}
		got := VietorisRips(m)
		want := bruteForceRips(m)
		if !slices.Equal(got.H0, want.H0) || !slices.Equal(got.H1, want.H1) {
			t.Fatalf("cloud %d (%v):\ngot  %v\nwant %v", c, pts, got, want)
		}
	}
}

// bruteForceRips reduces the full boundary matrix of the 2-skeleton with
// the standard column algorithm (Edelsbrunner–Harer), sorting simplices by
// (diameter, dimension) — an ordering independent of the one VietorisRips
// uses.
func bruteForceRips(m *DistanceMatrix) Diagram {
	n := m.N()
	type simplex struct {
		v    []int
		diam float64
	}
	var s []simplex
	for i := 0; i < n; i++ {
		s = append(s, simplex{[]int{i}, 0})
	}
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			s = append(s, simplex{[]int{i, j}, m.At(i, j)})
		}
	}
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			for k := j + 1; k < n; k++ {
				s = append(s, simplex{[]int{i, j, k}, max(m.At(i, j), m.At(i, k), m.At(j, k))})
			}
		}
	}
	sort.SliceStable(s, func(a, b int) bool {
		if s[a].diam != s[b].diam {
			return s[a].diam < s[b].diam
		}
		return len(s[a].v) < len(s[b].v)
	})
	pos := map[string]int{}
	for k, x := range s {
		pos[fmt.Sprint(x.v)] = k
	}
	cols := make([]map[int]bool, len(s))
	for k, x := range s {
		cols[k] = map[int]bool{}
		if len(x.v) > 1 {
			for drop := range x.v {
				var f []int
				f = append(f, x.v[:drop]...)
				f = append(f, x.v[drop+1:]...)
				cols[k][pos[fmt.Sprint(f)]] = true
			}
		}
	}
	low := func(c map[int]bool) int {
		l := -1
		for r := range c {
			l = max(l, r)
		}
		return l
	}
	owner := map[int]int{}
	paired := make([]bool, len(s))
	var d Diagram
	for k := range s {
		for {
			l := low(cols[k])
			o, ok := owner[l]
			if l < 0 || !ok {
				break
			}
			for r := range cols[o] {
				if cols[k][r] {
					delete(cols[k], r)
				} else {
					cols[k][r] = true
				}
			}
		}
		if l := low(cols[k]); l >= 0 {
			owner[l] = k
			paired[l], paired[k] = true, true
			if s[k].diam > s[l].diam {
				p := Pair{s[l].diam, s[k].diam}
				if len(s[l].v) == 1 {
					d.H0 = append(d.H0, p)
				} else {
					d.H1 = append(d.H1, p)
				}
			}
		}
	}
	for k := range s {
		if !paired[k] && len(s[k].v) == 1 {
			d.H0 = append(d.H0, Pair{0, math.Inf(1)})
		}
	}
	SortPairs(d.H0)
	SortPairs(d.H1)
	return d
}

// TestVietorisRipsNoisyCircle checks the known shape: a noisy circle has
// exactly one long H1 bar.
func TestVietorisRipsNoisyCircle(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	pts := make([][]float64, 120)
	for i := range pts {
		a := 2 * math.Pi * rng.Float64()
		pts[i] = []float64{math.Cos(a) + 0.05*rng.NormFloat64(), math.Sin(a) + 0.05*rng.NormFloat64()}
	}
	m, _ := EuclideanDistances(pts)
	d := VietorisRips(m)
	long := 0
	for _, p := range d.H1 {
		if p.Persistence() > 0.5 {
			long++
		}
	}
	if long != 1 {
		t.Fatalf("noisy circle: %d H1 bars longer than 0.5, want 1 (H1 = %v)", long, d.H1)
	}
}

func BenchmarkVietorisRips(b *testing.B) {
	for _, n := range []int{80, 500, 1000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			pts := readCloud(b, filepath.Join(goldenPH, fmt.Sprintf("blobs_d20_n%d_s1.csv", n)))
			m, err := EuclideanDistances(pts)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				VietorisRips(m)
			}
		})
	}
}
