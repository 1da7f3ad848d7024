package tda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestDPLabelRawHand checks the counts and the block on four points of a
// line, 0, 1, 3, 10 with labels 0, 0, 1, 1, and radii 1.5, 2.5, …, 10.5.
// The six pairs, by hand: {0,1} d=1 same → band 0; {1,3} d=2 cross → band
// 1; {0,3} d=3 cross → band 2; {3,10} d=7 same → band 6; {1,10} d=9 cross
// → band 8; {0,10} d=10 cross → band 9; m = 4, so each counts 1/16.
func TestDPLabelRawHand(t *testing.T) {
	x := [][]float64{{0}, {1}, {3}, {10}}
	y := []float64{0, 0, 1, 1}
	radii := []float64{1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, 10.5}
	raw, delta, err := DPLabelRaw(x, y, allRows(4), DPLabelOptions{Radii: radii})
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, DPLabelRawLen)
	for _, b := range []int{1, 2, 8, 9} {
		want[DPLabelCrossOffset+b] = 1.0 / 16
	}
	for _, b := range []int{0, 6} {
		want[DPLabelSameOffset+b] = 1.0 / 16
	}
	if !slices.Equal(raw, want) {
		t.Errorf("raw = %v, want %v", raw, want)
	}
	if delta != 3.0/16 {
		t.Errorf("Δ = %v, want (m−1)/m² = 3/16", delta)
	}
	// p_null = (4/16)/(3/8) = 2/3 = 2·2·2/(4·3). Cumulative (cross, all)
	// within r_j: (0,1) (1,2) (2,3) (2,3) (2,3) (2,3) (2,4) (2,4) (3,5)
	// (4,6); each fraction over 2/3.
	block, err := DPLabelBlock(raw, 4)
	if err != nil {
		t.Fatal(err)
	}
	wantBlock := []float64{0, 0.75, 1, 1, 1, 1, 0.75, 0.75, 0.9, 1, 0}
	for k := range wantBlock {
		if math.Abs(block[k]-wantBlock[k]) > dpTol {
			t.Errorf("block = %v, want %v", block, wantBlock)
			break
		}
	}
}

// dpLabelPatterns returns label vectors of length m: random, one class,
// a single positive first, alternating.
func dpLabelPatterns(m int, rng *rand.Rand) [][]float64 {
	random := make([]float64, m)
	for i := range random {
		random[i] = float64(rng.IntN(2))
	}
	one := make([]float64, m)
	single := make([]float64, m)
	single[0] = 1
	alt := make([]float64, m)
	for i := range alt {
		alt[i] = float64(i % 2)
	}
	return [][]float64{random, one, single, alt}
}

// TestDPLabelSensitivityBrute zeroes out every record of the clouds of the
// descriptor tests under several label patterns and radii, and checks
// ‖v − v′‖₂ ≤ Δ; it also checks that the bound is attained where the proof
// says it is (all rows at one point, the removed row the only positive).
func TestDPLabelSensitivityBrute(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 17))
	worst, worstWhat, checked := 0.0, "", 0
	radiiSets := [][]float64{nil, {0.5, 1, 1.5, 2, 2.5, 3, 4, 5, 6, 8}, {1e-9, 1e-6, 1e-3, 0.1, 1, 10, 100, 1e3, 1e6, 1e9}}
	for ri, radii := range radiiSets {
		for _, d := range []int{2, 3, 8, 20} {
			for kind := 0; kind < dpTestCloudKinds; kind++ {
				for _, m := range []int{2, 3, 5, 10} {
					x := dpTestCloud(kind, m, d, rng)
					for li, y := range dpLabelPatterns(m, rng) {
						opt := DPLabelOptions{M: m, Radii: radii}
						v, delta, err := DPLabelRaw(x, y, allRows(m), opt)
						if err != nil {
							t.Fatal(err)
						}
						for k := 0; k < m; k++ {
							v2, _, err := DPLabelRaw(x, y, without(allRows(m), k), opt)
							if err != nil {
								t.Fatal(err)
							}
							ratio := l2Distance(v, v2) / delta
							if ratio > 1+dpSensitivityTol {
								t.Fatalf("radii %d d=%d kind %d m=%d labels %d removed %d: ‖v−v′‖/Δ = %v", ri, d, kind, m, li, k, ratio)
							}
							if ratio > worst {
								worst, worstWhat = ratio, fmt.Sprintf("radii %d d=%d kind %d m=%d labels %d removed %d", ri, d, kind, m, li, k)
							}
							checked++
						}
					}
				}
			}
		}
	}
	t.Logf("%d zero-outs checked; largest ‖v−v′‖₂/Δ = %.4f (%s)", checked, worst, worstWhat)
	// Tightness: kind 8 puts every row at the origin; labels pattern 2 makes
	// row 0 the only positive, so its m − 1 pairs are all cross-label in
	// band 0 and the change is exactly (m−1)/m².
	for _, m := range []int{2, 5, 10, 100} {
		x := dpTestCloud(8, m, 3, rng)
		y := make([]float64, m)
		y[0] = 1
		v, delta, _ := DPLabelRaw(x, y, allRows(m), DPLabelOptions{})
		v2, _, _ := DPLabelRaw(x, y, allRows(m)[1:], DPLabelOptions{M: m})
		if r := l2Distance(v, v2) / delta; math.Abs(r-1) > dpTol {
			t.Errorf("m=%d: the extremal zero-out gives ‖v−v′‖/Δ = %v, want 1", m, r)
		}
	}
}

// TestDPLabelSensitivityHillClimb moves the removed row (and tries both
// labels) to maximise the change of the label vector.
func TestDPLabelSensitivityHillClimb(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 19))
	worst := 0.0
	for _, tc := range []struct{ kind, m, d int }{{0, 6, 2}, {1, 10, 8}, {4, 8, 3}, {9, 10, 20}} {
		base := dpTestCloud(tc.kind, tc.m-1, tc.d, rng)
		labels := dpLabelPatterns(tc.m-1, rng)[0]
		opt := DPLabelOptions{M: tc.m, Radii: []float64{0.5, 1, 1.5, 2, 2.5, 3, 4, 5, 6, 8}}
		for _, yr := range []float64{0, 1} {
			xAll := append(slices.Clone(base), make([]float64, tc.d))
			yAll := append(slices.Clone(labels), yr)
			v0, delta, err := DPLabelRaw(xAll, yAll, allRows(tc.m-1), opt)
			if err != nil {
				t.Fatal(err)
			}
			objective := func(p []float64) float64 {
				xAll[tc.m-1] = p
				v, _, err := DPLabelRaw(xAll, yAll, allRows(tc.m), opt)
				if err != nil {
					t.Fatal(err)
				}
				return l2Distance(v, v0) / delta
			}
			p := make([]float64, tc.d)
			best := objective(p)
			step := 2.0
			for it := 0; it < 200; it++ {
				q := slices.Clone(p)
				for k := range q {
					q[k] += step * rng.NormFloat64()
				}
				if val := objective(q); val > best {
					p, best = q, val
				} else {
					step *= 0.98
				}
			}
			if best > 1+dpSensitivityTol {
				t.Fatalf("kind %d m=%d d=%d: hill climb reached ‖v−v′‖/Δ = %v", tc.kind, tc.m, tc.d, best)
			}
			worst = math.Max(worst, best)
		}
	}
	t.Logf("hill climbing: largest ‖v−v′‖₂/Δ = %.4f", worst)
}

func TestDPLabelRawErrors(t *testing.T) {
	x := [][]float64{{0}, {1}, {2}}
	y := []float64{0, 1, 1}
	for i, tc := range []struct {
		y    []float64
		rows []int
		opt  DPLabelOptions
		want string
	}{
		{y, []int{0, 1, 2}, DPLabelOptions{}, ""},                                                      // 0
		{y, []int{0, 1}, DPLabelOptions{M: 3}, ""},                                                     // 1
		{y, []int{0, 1, 2}, DPLabelOptions{M: 2}, "M = 2"},                                             // 2
		{y, []int{0}, DPLabelOptions{}, "M = 1"},                                                       // 3
		{y, []int{0, 1}, DPLabelOptions{M: -2}, "M = -2"},                                              // 4
		{[]float64{0, 2, 1}, []int{0, 1}, DPLabelOptions{}, "label 1 is 2"},                            // 5
		{[]float64{0, 1}, []int{0, 1}, DPLabelOptions{}, "3 rows and 2 labels"},                        // 6
		{y, []int{0, 5}, DPLabelOptions{}, "out of range"},                                             // 7
		{y, []int{0, 1}, DPLabelOptions{Radii: []float64{1, 2}}, "Radii has 2"},                        // 8
		{y, []int{0, 1}, DPLabelOptions{Radii: []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 9}}, "Radii[9]"},   // 9
		{y, []int{0, 1}, DPLabelOptions{Radii: []float64{-1, 2, 3, 4, 5, 6, 7, 8, 9, 10}}, "Radii[0]"}, // 10
	} {
		_, _, err := DPLabelRaw(x, tc.y, tc.rows, tc.opt)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%d: unexpected error %v", i, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%d: error %v, want one mentioning %q", i, err, tc.want)
		}
	}
	if d, err := DPLabelSensitivity(80); err != nil || d != 79.0/6400 {
		t.Errorf("DPLabelSensitivity(80) = %v, %v; want 79/6400", d, err)
	}
	if _, err := DPLabelSensitivity(1); err == nil {
		t.Error("DPLabelSensitivity(1): no error")
	}
}

// TestDPLabelBlockRobust feeds DPLabelBlock pure noise, of every size, and
// checks that the block stays finite and in [0, 2], and that bad input is
// an error rather than a panic.
func TestDPLabelBlockRobust(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 23))
	for trial := 0; trial < 500; trial++ {
		raw := make([]float64, DPLabelRawLen)
		scale := math.Pow(10, float64(trial%12-6))
		for k := range raw {
			raw[k] = scale * rng.NormFloat64()
		}
		m := 2 + trial%300
		b, err := DPLabelBlock(raw, m)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != LabelledLen {
			t.Fatalf("%d numbers, want %d", len(b), LabelledLen)
		}
		for k, v := range b {
			if !(v >= 0 && v <= 2) {
				t.Fatalf("trial %d: block[%d] = %v, want a ratio in [0, 2]", trial, k, v)
			}
		}
	}
	for i, tc := range []struct {
		raw  []float64
		m    int
		want string
	}{
		{make([]float64, DPLabelRawLen-1), 10, "numbers"},                   // 0
		{make([]float64, DPLabelRawLen), 1, "m = 1"},                        // 1
		{append(make([]float64, DPLabelRawLen-1), math.NaN()), 10, "entry"}, // 2
	} {
		if _, err := DPLabelBlock(tc.raw, tc.m); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%d: error %v, want one mentioning %q", i, err, tc.want)
		}
	}
}

// TestDPLabelBlockFlips checks the meaning the detector relies on, without
// noise: on two classes that are locally pure, the ratio is well below 1;
// flipping a fraction f of the labels at random lifts it, leaving about
// (1−2f)² of the gap 1 − ratio.
func TestDPLabelBlockFlips(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 29))
	const m = 400
	x := make([][]float64, m)
	y := make([]float64, m)
	for i := range x {
		c := float64(i % 2)
		x[i] = []float64{4*c + rng.NormFloat64(), rng.NormFloat64()}
		y[i] = c
	}
	radii := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	ratio := func(y []float64) float64 {
		raw, _, err := DPLabelRaw(x, y, allRows(m), DPLabelOptions{Radii: radii})
		if err != nil {
			t.Fatal(err)
		}
		b, err := DPLabelBlock(raw, m)
		if err != nil {
			t.Fatal(err)
		}
		return b[LabelMSTOffset]
	}
	clean := ratio(y)
	if !(clean < 0.3) {
		t.Fatalf("clean ratio %v, want well below 1", clean)
	}
	for i, f := range []float64{0.1, 0.3} {
		flipped := slices.Clone(y)
		// Flip exactly f·m labels, half of each class, so the classes stay
		// balanced as in the derivation.
		perm := rng.Perm(m)
		n0, n1 := 0, 0
		for _, k := range perm {
			if y[k] == 0 && n0 < int(f*m/2) {
				flipped[k], n0 = 1, n0+1
			} else if y[k] == 1 && n1 < int(f*m/2) {
				flipped[k], n1 = 0, n1+1
			}
		}
		got := 1 - ratio(flipped)
		want := (1 - 2*f) * (1 - 2*f) * (1 - clean)
		if math.Abs(got-want) > 0.08 {
			t.Errorf("%d: f=%v: gap %v, want about (1−2f)²·%v = %v", i, f, got, 1-clean, want)
		}
		t.Logf("f=%v: gap %.3f, (1−2f)² predicts %.3f", f, got, want)
	}
}
