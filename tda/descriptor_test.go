package tda

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// summaryTol bounds the difference of the four floating-point summaries
// (H0ent, H1ent, A0, A1) from the reference: absolute when |want| ≤ 1,
// relative to |want| otherwise. The reference sums in an order this port
// cannot always know (numpy's pairwise sum over GUDHI's pair order for the
// exact variant), so these may differ by a few ulp; every other entry of
// the descriptor is a count and must match exactly.
const summaryTol = 1e-12

// paperClient is one entry of ../testdata/paper/*/clients.json, copied from
// ../shared/golden/paper (the authors' paper-era code at seed 42; see its
// README for how the numbers were produced).
type paperClient struct {
	Client             int          `json:"client"`
	NTrain             int          `json:"n_train"`
	SubsampleIdx       []int        `json:"subsample_idx"`
	DescriptorTriangle []float64    `json:"descriptor_triangle"`
	DescriptorExact    []float64    `json:"descriptor_exact"`
	TMaxTriangle       float64      `json:"t_max_triangle"`
	TMaxExact          float64      `json:"t_max_exact"`
	H0Pairs            [][2]float64 `json:"h0_pairs"`
	H1PairsExact       [][2]float64 `json:"h1_pairs_exact"`
	H1PairsTriangle    [][2]float64 `json:"h1_pairs_triangle"`
}

// readPaperClients reads the clients.json of scenario ("healthcare" or
// "benchmark").
func readPaperClients(t testing.TB, scenario string) []paperClient {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "paper", scenario, "clients.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cs []paperClient
	if err := json.Unmarshal(b, &cs); err != nil {
		t.Fatalf("%s clients.json: %v", scenario, err)
	}
	return cs
}

// readPaperTrain reads the features (all columns but the last, y) of a
// client's train CSV. strconv.ParseFloat is correctly rounded, so the
// shortest round-trip strings give back the reference's float64 values.
func readPaperTrain(t testing.TB, scenario string, client int) [][]float64 {
	t.Helper()
	path := filepath.Join("..", "testdata", "paper", scenario, fmt.Sprintf("client%d_train.csv", client))
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(recs) < 2 || recs[0][len(recs[0])-1] != "y" {
		t.Fatalf("%s: want a header ending in y and at least one row", path)
	}
	x := make([][]float64, len(recs)-1)
	for i, rec := range recs[1:] {
		x[i] = make([]float64, len(rec)-1)
		for k, s := range rec[:len(rec)-1] {
			if x[i][k], err = strconv.ParseFloat(s, 64); err != nil {
				t.Fatalf("%s row %d column %d: %v", path, i+1, k, err)
			}
		}
	}
	return x
}

// descriptorEntryName names entry k of the layout for failure messages.
func descriptorEntryName(k int) string {
	switch {
	case k < bettiSteps:
		return fmt.Sprintf("bc0[%d]", k)
	case k < 2*bettiSteps:
		return fmt.Sprintf("bc1[%d]", k-bettiSteps)
	}
	return [...]string{"H0ent", "H1ent", "A0", "A1", "nPers0", "nPers1", "count0", "count1"}[k-2*bettiSteps]
}

// isSummaryEntry reports whether entry k is a floating-point summary rather
// than a count.
func isSummaryEntry(k int) bool { return k >= 2*bettiSteps && k < 2*bettiSteps+4 }

// checkPairs reports every pair of got that is not bit-identical to want.
func checkPairs(t *testing.T, what string, got []Pair, want [][2]float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d pairs, want %d", what, len(got), len(want))
		return
	}
	for i, w := range want {
		if got[i].Birth != w[0] || got[i].Death != w[1] {
			t.Errorf("%s[%d] = (%v, %v), want (%v, %v)", what, i, got[i].Birth, got[i].Death, w[0], w[1])
		}
	}
}

// checkVector compares a descriptor with the reference: counts exactly,
// summaries within summaryTol. It returns how many summaries were
// bit-identical and the largest absolute difference.
func checkVector(t *testing.T, what string, got, want []float64) (identical int, maxDiff float64) {
	t.Helper()
	if len(got) != DescriptorLen || len(want) != DescriptorLen {
		t.Errorf("%s: length %d, reference %d, want %d", what, len(got), len(want), DescriptorLen)
		return 0, 0
	}
	for k := range want {
		g, w := got[k], want[k]
		if !isSummaryEntry(k) {
			if g != w {
				t.Errorf("%s %s = %v, want %v exactly", what, descriptorEntryName(k), g, w)
			}
			continue
		}
		if g == w {
			identical++
		}
		maxDiff = max(maxDiff, math.Abs(g-w))
		if math.Abs(g-w) > summaryTol*math.Max(1, math.Abs(w)) {
			t.Errorf("%s %s = %v, want %v within %g", what, descriptorEntryName(k), g, w, summaryTol)
		}
	}
	return identical, maxDiff
}

// TestDescriptorGolden checks both variants against the paper's reference
// output for all 18 clients of ../shared/golden/paper at seed 42.
func TestDescriptorGolden(t *testing.T) {
	for _, scenario := range []string{"healthcare", "benchmark"} {
		identical, maxDiff := map[string]int{}, map[string]float64{}
		for _, c := range readPaperClients(t, scenario) {
			x := readPaperTrain(t, scenario, c.Client)
			if len(x) != c.NTrain {
				t.Fatalf("%s client %d: %d train rows, clients.json says %d", scenario, c.Client, len(x), c.NTrain)
			}
			for _, tc := range []struct {
				variant string
				vector  []float64
				tMax    float64
				h1      [][2]float64
			}{
				{VariantTriangle, c.DescriptorTriangle, c.TMaxTriangle, c.H1PairsTriangle},
				{VariantExact, c.DescriptorExact, c.TMaxExact, c.H1PairsExact},
			} {
				what := fmt.Sprintf("%s client %d %s", scenario, c.Client, tc.variant)
				d, err := ComputeDescriptor(x, DescriptorOptions{Variant: tc.variant, Rows: c.SubsampleIdx})
				if err != nil {
					t.Errorf("%s: %v", what, err)
					continue
				}
				if !slices.Equal(d.Rows, c.SubsampleIdx) {
					t.Errorf("%s: Rows = %v, want subsample_idx %v", what, d.Rows, c.SubsampleIdx)
				}
				checkPairs(t, what+" H0", d.H0, c.H0Pairs)
				checkPairs(t, what+" H1", d.H1, tc.h1)
				if d.TMax != tc.tMax {
					t.Errorf("%s: TMax = %v, want %v", what, d.TMax, tc.tMax)
				}
				k, diff := checkVector(t, what, d.Vector, tc.vector)
				identical[tc.variant] += k
				maxDiff[tc.variant] = max(maxDiff[tc.variant], diff)
			}
		}
		for _, v := range []string{VariantTriangle, VariantExact} {
			t.Logf("%s %s: %d summaries bit-identical to the reference, largest difference %.3g",
				scenario, v, identical[v], maxDiff[v])
		}
	}
}

func TestPercentileSorted(t *testing.T) {
	// Expected values are numpy 1.24's np.percentile(v, q), derived by hand
	// from its "linear" method (percentileSorted's doc comment).
	for i, tc := range []struct {
		v    []float64
		q    float64
		want float64
	}{
		0: {[]float64{7}, 95, 7},      // N=1: h = 0, a = b = v[0].
		1: {[]float64{1, 2}, 50, 1.5}, // h = 0.5, g = 0.5 ≥ 0.5: 2 − 1·0.5.
		// h = 4·0.95 = 3.7999999999999998 (0.95 rounds down), g < 1, so
		// 5 − (1 − g) = 4.8 after rounding: numpy prints 4.8.
		2: {[]float64{1, 2, 3, 4, 5}, 95, 4.8},
		3: {[]float64{1, 2, 3, 4}, 75, 3.25}, // h = 2.25: 3 + 1·0.25.
		4: {[]float64{1, 2, 3, 4}, 50, 2.5},  // h = 1.5: 3 − 1·0.5.
		5: {[]float64{0, 10}, 25, 2.5},       // h = 0.25: 0 + 10·0.25.
		6: {[]float64{1, 2, 3}, 100, 3},      // h = 2 = N−1: numpy clamps to v[N−1].
		7: {[]float64{1, 2, 3}, 0, 1},        // h = 0: a = 1, g = 0.
		8: {[]float64{2, 2, 4, 4, 4}, 50, 4}, // h = 2: a = v[2] = 4, g = 0.
		// h = 3·0.95 = 2.8499999999999996, g = 0.8499999999999996,
		// 1−g = 0.15000000000000036, 8·(1−g) = 1.2000000000000028, so the
		// result is 6.799999999999997, not 6.8: q/100 is rounded first.
		9: {[]float64{-3, -1, 0, 8}, 95, 6.799999999999997},
	} {
		if got := percentileSorted(tc.v, tc.q); got != tc.want {
			t.Errorf("%d: percentileSorted(%v, %v) = %v, want %v", i, tc.v, tc.q, got, tc.want)
		}
	}
}

// TestPercentileEqualNeighbours pins the pitfall of
// ../shared/golden/paper/README.md step 6: when a == b numpy's lerp returns
// b − 0·(1−g) = b exactly, whereas (1−g)·a + g·b is one ulp off for these
// inputs (found by searching small N and values; the test checks that the
// naive form really is off, so the case keeps exercising the pitfall).
func TestPercentileEqualNeighbours(t *testing.T) {
	for i, tc := range []struct {
		v []float64
	}{
		0: {[]float64{2.9, 2.9, 2.9}}, // h = 2·0.95 = 1.9, g = 0.8999999999999999.
		// N = 2, h = g = 0.95; the value is healthcare client 0's
		// t_max_triangle.
		1: {[]float64{10.457328420685217, 10.457328420685217}},
		2: {[]float64{1, 2.9, 2.9}}, // i = 1: a = b = 2.9 again.
	} {
		a := tc.v[len(tc.v)-1]
		h := float64(len(tc.v)-1) * 0.95
		g := h - math.Floor(h)
		if naive := float64((1-g)*a) + float64(g*a); naive == a {
			t.Fatalf("%d: (1−g)·a + g·b = a; the case no longer shows the pitfall", i)
		}
		if got := percentileSorted(tc.v, 95); got != a {
			t.Errorf("%d: percentileSorted(%v, 95) = %v, want %v exactly", i, tc.v, got, a)
		}
	}
}

func TestMedianSorted(t *testing.T) {
	// numpy's np.median: the middle value, or the mean of the two middle
	// values for an even count; derived by hand.
	for i, tc := range []struct {
		v    []float64
		want float64
	}{
		0: {[]float64{7}, 7},
		1: {[]float64{1, 2}, 1.5},
		2: {[]float64{1, 2, 3}, 2},
		3: {[]float64{1, 2, 3, 4}, 2.5},
		4: {[]float64{0, 0, 0, 5}, 0},
		5: {[]float64{0.1, 0.2}, 0.15000000000000002}, // (0.1+0.2)/2 = 0.30000000000000004/2.
	} {
		if got := medianSorted(tc.v); got != tc.want {
			t.Errorf("%d: medianSorted(%v) = %v, want %v", i, tc.v, got, tc.want)
		}
	}
}

func TestPairwiseSum(t *testing.T) {
	const big = 1 << 53 // the ulp is 2 here, so big + 1 rounds back to big (ties to even).
	ones := func(lead float64, n int) []float64 {
		v := make([]float64, n)
		v[0] = lead
		for i := 1; i < n; i++ {
			v[i] = 1
		}
		return v
	}
	// Expected values derived by hand from numpy's pairwise_sum (see
	// pairwiseSum's doc comment).
	for i, tc := range []struct {
		v    []float64
		want float64
	}{
		0: {nil, 0},
		1: {ones(big, 3), big}, // n < 8, left to right: every +1 is lost.
		// n = 8: ((big+1)+(1+1)) + ((1+1)+(1+1)) = (big+2) + 4.
		2: {ones(big, 8), big + 6},
		// n = 9: big+6, then +1 is a tie between big+6 and big+8; big+8
		// has the even significand.
		3: {ones(big, 9), big + 8},
		// n = 136 splits at 64: the first half has r0 = big (7 lost ones)
		// and r1..r7 = 8 each, so big+56; the second half is 72 ones.
		// One unsplit pass would give big+120.
		4: {ones(big, 136), big + 128},
	} {
		if got := pairwiseSum(tc.v); got != tc.want {
			t.Errorf("%d: pairwiseSum = %v, want %v", i, got, tc.want)
		}
	}
}

// TestDescriptorSmallSites covers the degenerate diagrams.
func TestDescriptorSmallSites(t *testing.T) {
	for _, variant := range []string{VariantExact, VariantTriangle} {
		// One row: no pairs at all, so every entry is 0 and TMax is 0.
		d, err := ComputeDescriptor([][]float64{{1, 2, 3}}, DescriptorOptions{Variant: variant})
		if err != nil {
			t.Fatalf("%s, one row: %v", variant, err)
		}
		if len(d.H0) != 0 || len(d.H1) != 0 || d.TMax != 0 {
			t.Errorf("%s, one row: H0 %v, H1 %v, TMax %v; want no pairs and 0", variant, d.H0, d.H1, d.TMax)
		}
		if !slices.Equal(d.Vector, make([]float64, DescriptorLen)) {
			t.Errorf("%s, one row: Vector = %v, want zeros", variant, d.Vector)
		}

		// Two rows: column 0 has mean 1 and std 1, column 1 mean 2 and std
		// 2, so the standardised rows are ∓(1/(1+1e-8), 2/(2+1e-8)) and the
		// single H0 pair dies at their distance w.
		d, err = ComputeDescriptor([][]float64{{0, 0}, {2, 4}}, DescriptorOptions{Variant: variant})
		if err != nil {
			t.Fatalf("%s, two rows: %v", variant, err)
		}
		// A variable, so that Go does not fold the arithmetic exactly at
		// compile time.
		eps := 1e-8
		d0, d1 := 2*(1/(1+eps)), 2*(2/(2+eps)) // coordinate differences
		w := math.Sqrt(float64(d0*d0) + float64(d1*d1))
		if len(d.H0) != 1 || d.H0[0] != (Pair{0, w}) || len(d.H1) != 0 {
			t.Fatalf("%s, two rows: H0 %v, H1 %v; want [{0 %v}] and none", variant, d.H0, d.H1, w)
		}
		// N = 1 death, so t_max = w; the pair is alive at t_0..t_18 and
		// dead at t_19 = w. Entropy of one pair: p = 1, −ln(1 + 1e-12).
		want := make([]float64, DescriptorLen)
		for j := 0; j < bettiSteps-1; j++ {
			want[j] = 1
		}
		want[40] = -math.Log(1 + 1e-12)
		want[42] = w
		want[46] = 1
		if d.TMax != w || !slices.Equal(d.Vector, want) {
			t.Errorf("%s, two rows: TMax %v, Vector %v; want %v, %v", variant, d.TMax, d.Vector, w, want)
		}
	}
}

// TestDescriptorDuplicateRows checks that the zero-length H0 pairs of
// duplicate rows are kept and counted but never alive.
func TestDescriptorDuplicateRows(t *testing.T) {
	for _, variant := range []string{VariantExact, VariantTriangle} {
		// Rows 0 and 2 coincide: Kruskal takes edge (0,2) of length 0 first.
		d, err := ComputeDescriptor([][]float64{{0, 0}, {1, 0}, {0, 0}, {0, 1}}, DescriptorOptions{Variant: variant})
		if err != nil {
			t.Fatalf("%s: %v", variant, err)
		}
		if len(d.H0) != 3 || d.H0[0] != (Pair{0, 0}) || d.H0[1].Death <= 0 || d.H0[2].Death <= 0 {
			t.Errorf("%s: H0 = %v, want {0 0} then two positive deaths", variant, d.H0)
		}
		if d.Vector[46] != 3 || d.Vector[0] != 2 {
			t.Errorf("%s: count0 = %v, bc0[0] = %v; want 3 and 2 (0 ≤ 0 < 0 is false)", variant, d.Vector[46], d.Vector[0])
		}

		// All rows equal: every distance is 0 (the standardised values are
		// the same tiny number in each row), so the n−1 pairs are all
		// {0, 0}, t_max is 0 and only count0 is non-zero.
		same := [][]float64{{0.1, 5}, {0.1, 5}, {0.1, 5}, {0.1, 5}}
		d, err = ComputeDescriptor(same, DescriptorOptions{Variant: variant})
		if err != nil {
			t.Fatalf("%s, equal rows: %v", variant, err)
		}
		want := make([]float64, DescriptorLen)
		want[46] = 3
		if !slices.Equal(d.Vector, want) || d.TMax != 0 || len(d.H1) != 0 {
			t.Errorf("%s, equal rows: Vector %v, TMax %v, H1 %v; want count0 = 3 only", variant, d.Vector, d.TMax, d.H1)
		}
	}
}

// TestTriangleKeepsTies checks the stable order and the cut at 20 on a
// square, where every triangle gives the same pair.
func TestTriangleKeepsTies(t *testing.T) {
	// Sides s ≈ 2 and diagonals ≈ 2√2 after standardising. Of the 12
	// positive entries 8 are sides, so thr = percentile 75 = diagonal
	// (h = 8.25, a = b = diagonal) and each of the 4 triangles keeps
	// (side, diagonal).
	square := [][]float64{{0, 0}, {1, 0}, {1, 1}, {0, 1}}
	d, err := ComputeDescriptor(square, DescriptorOptions{Variant: VariantTriangle})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.H1) != 4 {
		t.Fatalf("H1 = %v, want 4 pairs", d.H1)
	}
	for i, p := range d.H1 {
		if p != d.H1[0] || !(p.Birth < p.Death) {
			t.Errorf("H1[%d] = %v, want %v with birth < death", i, p, d.H1[0])
		}
	}
	// The README's pitfall: the 7 deaths are 3 sides then 4 diagonals, so
	// h = 6·0.95 = 5.7 lands between two diagonals and t_max is the
	// diagonal exactly; the four pairs are alive at t_18 but not at
	// t_19 = t_max, because death is excluded.
	if d.TMax != d.H1[0].Death || d.Vector[bettiSteps+18] != 4 || d.Vector[bettiSteps+19] != 0 {
		t.Errorf("TMax %v, bc1[18] %v, bc1[19] %v; want the diagonal %v, 4 and 0",
			d.TMax, d.Vector[bettiSteps+18], d.Vector[bettiSteps+19], d.H1[0].Death)
	}

	// keepTop on its own: 25 pairs with persistence 1, 2, 1, 2, ...: the
	// kept 20 are the 12 twos then 8 ones, each group in arrival order.
	var kept []Pair
	for i := 0; i < 25; i++ {
		keepTop(&kept, Pair{Birth: float64(i), Death: float64(i + 1 + i%2)})
	}
	if len(kept) != triangleKeep {
		t.Fatalf("keepTop kept %d pairs, want %d", len(kept), triangleKeep)
	}
	for k, p := range kept {
		wantBirth := float64(2*k + 1) // the odd births have persistence 2
		if k >= 12 {
			wantBirth = float64(2 * (k - 12))
		}
		if p.Birth != wantBirth {
			t.Errorf("kept[%d] = %v, want birth %v", k, p, wantBirth)
		}
	}
}

func TestDescriptorSubsample(t *testing.T) {
	x := make([][]float64, 400)
	for i := range x {
		x[i] = []float64{float64(i), float64(i * i % 17)}
	}
	rows := func(n int, opt DescriptorOptions) []int {
		t.Helper()
		r, err := descriptorRows(n, opt)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a := rows(400, DescriptorOptions{Seed: 1})
	if len(a) != defaultNSub {
		t.Fatalf("len(Rows) = %d, want %d", len(a), defaultNSub)
	}
	seen := map[int]bool{}
	for _, r := range a {
		if r < 0 || r >= 400 || seen[r] {
			t.Fatalf("Rows %v: %d out of range or repeated", a, r)
		}
		seen[r] = true
	}
	if b := rows(400, DescriptorOptions{Seed: 1}); !slices.Equal(a, b) {
		t.Errorf("same seed, different rows: %v and %v", a, b)
	}
	if b := rows(400, DescriptorOptions{Seed: 2}); slices.Equal(a, b) {
		t.Errorf("seeds 1 and 2 give the same rows %v", a)
	}
	if b := rows(400, DescriptorOptions{Seed: 1, NSub: 10}); len(b) != 10 || !slices.Equal(b, a[:10]) {
		// A partial Fisher–Yates draws the same prefix whatever NSub is.
		t.Errorf("NSub 10 rows %v, want the first 10 of %v", b, a)
	}
	if b := rows(50, DescriptorOptions{Seed: 1}); len(b) != 50 || !slices.IsSorted(b) {
		t.Errorf("n = 50 ≤ NSub: rows %v, want 0..49 in order", b)
	}
	d1, err1 := ComputeDescriptor(x, DescriptorOptions{Variant: VariantTriangle, Seed: 7})
	d2, err2 := ComputeDescriptor(x, DescriptorOptions{Variant: VariantTriangle, Seed: 7})
	if err1 != nil || err2 != nil || !slices.Equal(d1.Vector, d2.Vector) || !slices.Equal(d1.Rows, d2.Rows) {
		t.Errorf("same seed twice: %v %v; vectors equal %v", err1, err2, slices.Equal(d1.Vector, d2.Vector))
	}
}

func TestDescriptorErrors(t *testing.T) {
	good := [][]float64{{0, 1}, {1, 0}, {2, 2}}
	for i, tc := range []struct {
		x    [][]float64
		opt  DescriptorOptions
		want string // a substring of the error
	}{
		0:  {nil, DescriptorOptions{}, "no rows"},
		1:  {[][]float64{{}}, DescriptorOptions{}, "no features"},
		2:  {[][]float64{{0, 1}, {1}}, DescriptorOptions{}, "row 1 has 1 features"},
		3:  {[][]float64{{0, 1}, {math.NaN(), 0}}, DescriptorOptions{}, "row 1 feature 0 is NaN"},
		4:  {[][]float64{{0, math.Inf(-1)}}, DescriptorOptions{}, "row 0 feature 1 is -Inf"},
		5:  {good, DescriptorOptions{Variant: "Exact"}, `variant "Exact" is unknown`},
		6:  {good, DescriptorOptions{Rows: []int{0, 3}}, "Rows[1] = 3 is out of range"},
		7:  {good, DescriptorOptions{Rows: []int{-1}}, "Rows[0] = -1 is out of range"},
		8:  {good, DescriptorOptions{Rows: []int{2, 0, 2}}, "Rows[2] = 2 is repeated"},
		9:  {good, DescriptorOptions{Rows: []int{}}, "Rows is empty"},
		10: {good, DescriptorOptions{NSub: -1}, "NSub = -1 is negative"},
		// Finite, but the column sum overflows, so the mean is +Inf and
		// the standardised values are NaN.
		11: {[][]float64{{math.MaxFloat64}, {math.MaxFloat64}}, DescriptorOptions{}, "feature 0 overflows"},
	} {
		_, err := ComputeDescriptor(tc.x, tc.opt)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%d: error %v, want one containing %q", i, err, tc.want)
		}
	}
}

func TestNormalizeDescriptor(t *testing.T) {
	for i, tc := range []struct {
		v, want []float64
	}{
		0: {[]float64{3, 4}, []float64{3 / (5 + 1e-8), 4 / (5 + 1e-8)}}, // ‖v‖ = 5.
		1: {[]float64{0, 0, 0}, []float64{0, 0, 0}},                     // 0/1e-8.
		2: {[]float64{}, []float64{}},
		3: {[]float64{-2}, []float64{-2 / (2 + 1e-8)}},
	} {
		in := slices.Clone(tc.v)
		got := NormalizeDescriptor(tc.v)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%d: NormalizeDescriptor(%v) = %v, want %v", i, in, got, tc.want)
		}
		if !slices.Equal(tc.v, in) {
			t.Errorf("%d: input changed to %v", i, tc.v)
		}
	}
}

func BenchmarkDescriptor(b *testing.B) {
	c := readPaperClients(b, "benchmark")[0]
	x := readPaperTrain(b, "benchmark", c.Client)
	for _, variant := range []string{VariantExact, VariantTriangle} {
		b.Run(variant+"/n=80", func(b *testing.B) {
			opt := DescriptorOptions{Variant: variant, Rows: c.SubsampleIdx}
			for b.Loop() {
				if _, err := ComputeDescriptor(x, opt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
