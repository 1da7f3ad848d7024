package tda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// dpSensitivityTol is the slack of the sensitivity checks: the bound is
// exact in real arithmetic, and the float64 sums it is checked on carry a
// relative error far below this.
const dpSensitivityTol = 1e-9

// dpTestOptions are the option sets the sensitivity tests run under: the
// defaults, a coarse grid with a narrow kernel, and a sharp kernel whose
// density has a separate mode per point (many H0 bars, the case where one
// point moves the most numbers).
var dpTestOptions = []DPDescriptorOptions{
	{},
	{Grid: 8, Bandwidth: 0.1, LandscapeMax: 1},
	{Grid: 16, Bandwidth: 0.04, LandscapeMax: 0.5},
}

// liftToRow returns a d-feature row whose step-1 point is p·(R/R) for the
// default radius: dpProjection has orthonormal columns, so projecting
// P·(R·p) gives R·p back (d ≥ 2).
func liftToRow(p [2]float64, d int, r float64) []float64 {
	proj := dpProjection(d)
	row := make([]float64, d)
	for k := range row {
		row[k] = r * (p[0]*proj[k][0] + p[1]*proj[k][1])
	}
	return row
}

// dpTestCloud returns cloud number kind of m rows in d dimensions: random,
// spread, far outside the clipping disc, duplicates, on the clipping
// sphere, with one huge outlier, collinear, all at the origin, on grid
// vertices of the default grid, on a ring.
func dpTestCloud(kind, m, d int, rng *rand.Rand) [][]float64 {
	x := make([][]float64, m)
	gauss := func(scale float64) []float64 {
		row := make([]float64, d)
		for k := range row {
			row[k] = scale * rng.NormFloat64()
		}
		return row
	}
	coord := dpGridCoordinates(DefaultDPGrid)
	for i := range x {
		switch kind {
		case 0: // unit-scale features
			x[i] = gauss(1)
		case 1: // filling the disc
			x[i] = gauss(DefaultDPRadius / 2)
		case 2: // far outside: clipped onto the circle
			x[i] = gauss(1000)
		case 3: // all duplicates
			if i == 0 {
				x[i] = gauss(2)
			} else {
				x[i] = slices.Clone(x[0])
			}
		case 4: // half duplicates
			if i%2 == 1 {
				x[i] = slices.Clone(x[i-1])
			} else {
				x[i] = gauss(3)
			}
		case 5: // on the clipping sphere in d dimensions
			row := gauss(1)
			n := math.Sqrt(dot(row, row))
			for k := range row {
				row[k] *= DefaultDPRadius / n
			}
			x[i] = row
		case 6: // one outlier of 1e300, the rest unit-scale
			x[i] = gauss(1)
			if i == 0 {
				for k := range x[i] {
					x[i][k] = math.Copysign(1e300, x[i][k])
				}
			}
		case 7: // collinear
			if i == 0 {
				x[i] = gauss(1)
			} else {
				x[i] = slices.Clone(x[0])
				s := 6 * rng.NormFloat64()
				for k := range x[i] {
					x[i][k] *= s
				}
			}
		case 8: // all at the origin
			x[i] = make([]float64, d)
		case 9: // on vertices of the default grid, where the kernel is 1
			p := [2]float64{coord[8+rng.IntN(16)], coord[8+rng.IntN(16)]}
			x[i] = liftToRow(p, d, DefaultDPRadius)
		case 10: // on a ring of radius 0.5 (an H1 class)
			a := 2 * math.Pi * float64(i) / float64(m)
			x[i] = liftToRow([2]float64{0.5 * math.Cos(a), 0.5 * math.Sin(a)}, d, DefaultDPRadius)
		}
	}
	return x
}

const dpTestCloudKinds = 11

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func l2Distance(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		d := a[i] - b[i]
		s += d * d
	}
	return math.Sqrt(s)
}

func allRows(n int) []int {
	r := make([]int, n)
	for i := range r {
		r[i] = i
	}
	return r
}

// without returns rows with the entry at position k left out.
func without(rows []int, k int) []int {
	return append(slices.Clone(rows[:k]), rows[k+1:]...)
}

func toPairs(bars []levelBar) []Pair {
	p := make([]Pair, len(bars))
	for i, b := range bars {
		p[i] = Pair{Birth: b.Lo, Death: b.Hi}
	}
	return p
}

// dpIntermediates returns the density and barcode DPDescriptor computes,
// for checking the proof's steps one by one.
func dpIntermediates(t *testing.T, x [][]float64, rows []int, opt DPDescriptorOptions) ([]float64, superlevelBarcode) {
	t.Helper()
	pts, o, err := dpProjectedPoints(x, rows, opt)
	if err != nil {
		t.Fatal(err)
	}
	f := dpDensity(pts, o)
	return f, superlevelPersistence(newGridComplex(o.Grid), f)
}

// TestDPDescriptorSensitivityBrute zeroes out every record of small
// random and adversarial clouds (m ≤ 10, d ∈ {2, 3, 8, 20}) and checks
// each step of DPDescriptor's proof: ‖f − f′‖∞ ≤ 1/m, bottleneck distances
// of the H0 (capped) and H1 diagrams ≤ 1/m, and ‖v − v′‖₂ ≤ Δ.
func TestDPDescriptorSensitivityBrute(t *testing.T) {
	rng := rand.New(rand.NewPCG(2024, 1))
	worst, worstWhat := 0.0, ""
	checked := 0
	for oi, opt := range dpTestOptions {
		for _, d := range []int{2, 3, 8, 20} {
			for kind := 0; kind < dpTestCloudKinds; kind++ {
				for _, m := range []int{1, 2, 3, 5, 10} {
					if testing.Short() && m != 5 {
						continue
					}
					x := dpTestCloud(kind, m, d, rng)
					rows := allRows(m)
					o := opt
					o.M = m
					v, delta, err := DPDescriptor(x, rows, o)
					if err != nil {
						t.Fatalf("options %d d=%d kind %d m=%d: %v", oi, d, kind, m, err)
					}
					if want := math.Sqrt(48) / float64(m); delta != want {
						t.Fatalf("Δ = %v, want √48/%d = %v", delta, m, want)
					}
					f, bc := dpIntermediates(t, x, rows, o)
					for k := range rows {
						rest := without(rows, k)
						v2, _, err := DPDescriptor(x, rest, o)
						if err != nil {
							t.Fatal(err)
						}
						f2, bc2 := dpIntermediates(t, x, rest, o)
						inv := 1 / float64(m)
						sup := 0.0
						for g := range f {
							sup = math.Max(sup, math.Abs(f[g]-f2[g]))
						}
						b0 := Bottleneck(toPairs(bc.withEssential(0)), toPairs(bc2.withEssential(0)))
						b1 := Bottleneck(toPairs(bc.H1), toPairs(bc2.H1))
						ratio := l2Distance(v, v2) / delta
						what := func() string {
							return fmt.Sprintf("options %d d=%d kind %d m=%d removed %d", oi, d, kind, m, k)
						}
						if sup > inv*(1+dpSensitivityTol) || b0 > inv*(1+dpSensitivityTol) || b1 > inv*(1+dpSensitivityTol) || ratio > 1+dpSensitivityTol {
							t.Fatalf("%s: ‖f−f′‖∞ = %v, d_B(H0) = %v, d_B(H1) = %v (1/m = %v); ‖v−v′‖/Δ = %v",
								what(), sup, b0, b1, inv, ratio)
						}
						if ratio > worst {
							worst, worstWhat = ratio, what()
						}
						checked++
					}
				}
			}
		}
	}
	t.Logf("%d zero-outs checked; largest ‖v−v′‖₂/Δ = %.4f (%s)", checked, worst, worstWhat)
}

// TestDPDescriptorSensitivityHillClimb searches for the removed point that
// moves the vector most: for fixed clouds of m − 1 points it hill-climbs
// the position of the m-th point (random steps in feature space, shrinking
// when they stop helping, from several starts) to maximise
// ‖v(D) − v(D′)‖₂ and checks the maximum against Δ.
func TestDPDescriptorSensitivityHillClimb(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	worst, worstWhat := 0.0, ""
	steps := 120
	if testing.Short() {
		steps = 30
	}
	for oi, opt := range dpTestOptions {
		for _, tc := range []struct{ kind, m, d int }{
			{0, 5, 2}, {3, 5, 3}, {9, 10, 2}, {10, 8, 8}, {1, 10, 20}, {8, 2, 2}, {4, 6, 2},
		} {
			base := dpTestCloud(tc.kind, tc.m-1, tc.d, rng)
			o := opt
			o.M = tc.m
			v0, delta, err := DPDescriptor(append(base, make([]float64, tc.d)), allRows(tc.m-1), o)
			if err != nil {
				t.Fatal(err)
			}
			objective := func(p []float64) float64 {
				v, _, err := DPDescriptor(append(slices.Clone(base), p), allRows(tc.m), o)
				if err != nil {
					t.Fatal(err)
				}
				return l2Distance(v, v0) / delta
			}
			for start := 0; start < 3; start++ {
				p := make([]float64, tc.d)
				for k := range p {
					p[k] = DefaultDPRadius / 2 * rng.NormFloat64()
				}
				if start == 0 && tc.m > 1 {
					p = slices.Clone(base[0]) // on top of an existing point
				}
				best := objective(p)
				step := DefaultDPRadius / 4
				for it := 0; it < steps; it++ {
					q := slices.Clone(p)
					for k := range q {
						q[k] += step * rng.NormFloat64()
					}
					if val := objective(q); val > best {
						p, best = q, val
					} else {
						step *= 0.97
					}
				}
				if best > 1+dpSensitivityTol {
					t.Fatalf("options %d kind %d m=%d d=%d: hill climb reached ‖v−v′‖/Δ = %v > 1", oi, tc.kind, tc.m, tc.d, best)
				}
				if best > worst {
					worst = best
					worstWhat = fmt.Sprintf("options %d kind %d m=%d d=%d", oi, tc.kind, tc.m, tc.d)
				}
			}
		}
	}
	t.Logf("hill climbing: largest ‖v−v′‖₂/Δ = %.4f (%s)", worst, worstWhat)
}

// TestDPDescriptorNotInSubsample checks the other half of zero-out: a
// record outside rows changes nothing, whatever its value, because no
// statistic of the data rescales anything (no min-max or standard
// normalisation).
func TestDPDescriptorNotInSubsample(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	x := dpTestCloud(1, 12, 8, rng)
	rows := []int{0, 2, 4, 6, 8, 10}
	v, _, err := DPDescriptor(x, rows, DPDescriptorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, outlier := range []float64{0, 1e6, -1e300} {
		y := make([][]float64, len(x))
		for r := range x {
			y[r] = slices.Clone(x[r])
		}
		for k := range y[3] {
			y[3][k] = outlier
		}
		w, _, err := DPDescriptor(y, rows, DPDescriptorOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(v, w) {
			t.Errorf("%d: row 3 (not in rows) set to %v changed the vector", i, outlier)
		}
	}
}

// TestDPPublicConstants checks that the projection, grid, levels and ranks
// are fixed functions of the options and the number of features only, and
// that the projection has orthonormal columns.
func TestDPPublicConstants(t *testing.T) {
	for _, d := range []int{1, 2, 3, 8, 20, 512} {
		p := dpProjection(d)
		q := dpProjection(d)
		for k := range p {
			if p[k] != q[k] {
				t.Fatalf("d=%d: projection differs between calls", d)
			}
		}
		var c00, c11, c01 float64
		for k := range p {
			c00 += p[k][0] * p[k][0]
			c11 += p[k][1] * p[k][1]
			c01 += p[k][0] * p[k][1]
		}
		want11 := 1.0
		if d == 1 {
			want11 = 0
		}
		if math.Abs(c00-1) > dpTol || math.Abs(c11-want11) > dpTol || math.Abs(c01) > dpTol {
			t.Errorf("d=%d: PᵀP = [[%v %v] [%v %v]], want orthonormal columns", d, c00, c01, c01, c11)
		}
	}
	// By hand: G = 3 puts the grid at −1, 0, 1; T = 0.5 puts the levels at
	// 0.05, 0.10, …, 0.50; G = 32 gives ranks 1, 2, 4, …, 128 and G = 8
	// (64 values) gives max(1, round(2^i/16)) = 1, 1, 1, 1, 1, 2, 4, 8
	// (round(0.5) = 1).
	if got := dpGridCoordinates(3); !slices.Equal(got, []float64{-1, 0, 1}) {
		t.Errorf("grid of 3: %v", got)
	}
	levels := dpLevels(0.5)
	for j, l := range levels {
		if math.Abs(l-0.05*float64(j+1)) > dpTol {
			t.Errorf("level %d = %v, want %v", j, l, 0.05*float64(j+1))
		}
	}
	if got := dpDensityRanks(32); got != [8]int{1, 2, 4, 8, 16, 32, 64, 128} {
		t.Errorf("ranks for G=32: %v", got)
	}
	if got := dpDensityRanks(8); got != [8]int{1, 1, 1, 1, 1, 2, 4, 8} {
		t.Errorf("ranks for G=8: %v", got)
	}
	// A fixed projection, not a data-adaptive one (PCA would be): moving
	// every row along a direction orthogonal to both columns changes
	// nothing.
	rng := rand.New(rand.NewPCG(5, 5))
	x := dpTestCloud(0, 10, 3, rng)
	proj := dpProjection(3)
	// The DCT-II vector k = 2 is orthogonal to the first two.
	u := []float64{math.Cos(math.Pi * 0.5 * 2 / 3), math.Cos(math.Pi * 1.5 * 2 / 3), math.Cos(math.Pi * 2.5 * 2 / 3)}
	if math.Abs(u[0]*proj[0][0]+u[1]*proj[1][0]+u[2]*proj[2][0]) > dpTol || math.Abs(u[0]*proj[0][1]+u[1]*proj[1][1]+u[2]*proj[2][1]) > dpTol {
		t.Fatal("u is not orthogonal to the projection")
	}
	v, _, err := DPDescriptor(x, allRows(10), DPDescriptorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range x {
		s := 100 * rng.NormFloat64()
		for k := range x[i] {
			x[i][k] += s * u[k]
		}
	}
	w, _, err := DPDescriptor(x, allRows(10), DPDescriptorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k := range v {
		if math.Abs(v[k]-w[k]) > dpTol {
			t.Fatalf("entry %d: %v before, %v after a move orthogonal to the projection", k, v[k], w[k])
		}
	}
}

func TestDPDescriptorDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	x := dpTestCloud(1, 40, 20, rng)
	a, da, err := DPDescriptor(x, allRows(40), DPDescriptorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, db, _ := DPDescriptor(x, allRows(40), DPDescriptorOptions{})
	if !slices.Equal(a, b) || da != db {
		t.Error("two calls with the same inputs differ")
	}
	if len(a) != DescriptorLen {
		t.Errorf("%d numbers, want %d", len(a), DescriptorLen)
	}
}

func TestDPDescriptorErrors(t *testing.T) {
	x := [][]float64{{0, 1}, {1, 0}, {2, 2}}
	for i, tc := range []struct {
		x    [][]float64
		rows []int
		opt  DPDescriptorOptions
		want string // a substring of the error; "" for none
	}{
		{x, []int{0, 1, 2}, DPDescriptorOptions{}, ""},                            // 0
		{x, []int{0, 1}, DPDescriptorOptions{M: 3}, ""},                           // 1: a zeroed-out record
		{x, []int{0, 1, 2}, DPDescriptorOptions{M: 2}, "M = 2"},                   // 2
		{x, []int{0, 1, 2}, DPDescriptorOptions{M: -1}, "M = -1"},                 // 3
		{x, []int{0, 1, 2}, DPDescriptorOptions{Radius: -1}, "Radius"},            // 4
		{x, []int{0, 1, 2}, DPDescriptorOptions{Radius: math.Inf(1)}, "Radius"},   // 5
		{x, []int{0, 1, 2}, DPDescriptorOptions{Grid: 1}, "Grid"},                 // 6
		{x, []int{0, 1, 2}, DPDescriptorOptions{Grid: 1000}, "Grid"},              // 7
		{x, []int{0, 1, 2}, DPDescriptorOptions{Bandwidth: math.NaN()}, "Bandw"},  // 8
		{x, []int{0, 1, 2}, DPDescriptorOptions{LandscapeMax: 2}, "LandscapeMax"}, // 9
		{x, []int{0, 3}, DPDescriptorOptions{}, "rows[1] = 3"},                    // 10
		{x, []int{1, 1}, DPDescriptorOptions{}, "repeats"},                        // 11
		{x, []int{}, DPDescriptorOptions{}, "M = 0"},                              // 12
		{[][]float64{{0, math.NaN()}}, []int{0}, DPDescriptorOptions{}, "NaN"},    // 13
		{nil, nil, DPDescriptorOptions{M: 1}, "no rows"},                          // 14
		{x, []int{}, DPDescriptorOptions{M: 1}, ""},                               // 15: the only record zeroed out
	} {
		_, _, err := DPDescriptor(tc.x, tc.rows, tc.opt)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%d: unexpected error %v", i, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%d: error %v, want one mentioning %q", i, err, tc.want)
		}
	}
	if _, err := DPDescriptorSensitivity(0); err == nil {
		t.Error("DPDescriptorSensitivity(0): no error")
	}
	if d, err := DPDescriptorSensitivity(80); err != nil || math.Abs(d-math.Sqrt(48)/80) > dpTol {
		t.Errorf("DPDescriptorSensitivity(80) = %v, %v; want √48/80", d, err)
	}
}

func TestIsotonicNonIncreasing(t *testing.T) {
	for i, tc := range []struct{ in, want []float64 }{
		// By hand (pool adjacent violators, blocks averaged).
		{[]float64{3, 2, 1}, []float64{3, 2, 1}},                         // 0: already ordered
		{[]float64{1, 3, 2}, []float64{2, 2, 2}},                         // 1: (1,3) → 2, 2
		{[]float64{3, 1, 2}, []float64{3, 1.5, 1.5}},                     // 2
		{[]float64{0, 0, 4, 0}, []float64{4.0 / 3, 4.0 / 3, 4.0 / 3, 0}}, // 3
		{nil, nil}, // 4
	} {
		v := slices.Clone(tc.in)
		isotonicNonIncreasing(v)
		for k := range v {
			if math.Abs(v[k]-tc.want[k]) > dpTol {
				t.Errorf("%d: %v → %v, want %v", i, tc.in, v, tc.want)
				break
			}
		}
	}
}

// TestDPDescriptorVector checks that the post-processing leaves noiseless
// vectors alone and never moves a noisy one farther from the noiseless one.
func TestDPDescriptorVector(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 13))
	for trial := 0; trial < 60; trial++ {
		opt := dpTestOptions[trial%len(dpTestOptions)]
		x := dpTestCloud(trial%dpTestCloudKinds, 3+trial%8, 2+trial%5, rng)
		v, delta, err := DPDescriptor(x, allRows(len(x)), opt)
		if err != nil {
			t.Fatal(err)
		}
		same, err := DPDescriptorVector(v, opt)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(same, v) {
			t.Fatalf("trial %d: a noiseless vector was changed:\n%v\n%v", trial, v, same)
		}
		for _, z := range []float64{0.5, 2, 10} {
			noisy := slices.Clone(v)
			for k := range noisy {
				noisy[k] += z * delta * rng.NormFloat64()
			}
			post, err := DPDescriptorVector(noisy, opt)
			if err != nil {
				t.Fatal(err)
			}
			if l2Distance(post, v) > l2Distance(noisy, v)*(1+dpSensitivityTol) {
				t.Fatalf("trial %d z=%v: post-processing moved away: %v > %v", trial, z, l2Distance(post, v), l2Distance(noisy, v))
			}
		}
	}
	if _, err := DPDescriptorVector(make([]float64, 47), DPDescriptorOptions{}); err == nil {
		t.Error("47 numbers: no error")
	}
	bad := make([]float64, DescriptorLen)
	bad[7] = math.Inf(1)
	if _, err := DPDescriptorVector(bad, DPDescriptorOptions{}); err == nil || !strings.Contains(err.Error(), "entry 7") {
		t.Errorf("infinite entry: error %v", err)
	}
}
