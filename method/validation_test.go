package method

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// TestValidationRows: the held-out count ⌊f·n + ½⌋ (at least 1, leaving 2
// to train), both lists sorted, disjoint and covering every row, the same
// rows for the same seed and others for another.
func TestValidationRows(t *testing.T) {
	for i, c := range []struct {
		n       int
		f       float64
		wantVal int    // ⌊f·n + ½⌋ by hand, floored at 1
		wantErr string // a substring
	}{
		0: {10, 0, 0, ""},
		1: {10, 0.2, 2, ""},
		2: {130, 0.2, 26, ""}, // the golden client0's 130 rows
		3: {10, 0.25, 3, ""},  // 2.5 + 0.5 = 3
		4: {10, 0.01, 1, ""},  // 0.1 rounds to 0: at least 1
		5: {4, 0.5, 2, ""},    // leaves 2
		6: {3, 0.5, 0, "fewer than 2"},
		7: {10, 1, 0, "[0, 1)"},
		8: {10, -0.1, 0, "[0, 1)"},
	} {
		train, val, err := ValidationRows(c.n, c.f, 7)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%d: error %v, want %q", i, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if len(val) != c.wantVal || len(train)+len(val) != c.n || !slices.IsSorted(train) || !slices.IsSorted(val) {
			t.Errorf("%d: train %v val %v", i, train, val)
		}
		all := append(slices.Clone(train), val...)
		slices.Sort(all)
		for j, r := range all {
			if r != j {
				t.Errorf("%d: rows %v do not cover 0..%d once each", i, all, c.n-1)
				break
			}
		}
	}
	_, a, _ := ValidationRows(100, 0.2, 1)
	_, b, _ := ValidationRows(100, 0.2, 1)
	_, c, _ := ValidationRows(100, 0.2, 2)
	if !slices.Equal(a, b) || slices.Equal(a, c) {
		t.Errorf("seed 1 twice %v %v; seed 2 %v", a, b, c)
	}
}

// TestPrepareSiteValidation: the scaler is the training rows' alone. Rows
// 0, 2, 4 train (mean 2, population sd √(8/3)) and row 6 is held out, so
// it standardises to (6 − 2)/√(8/3) = √6 ≈ 2.449, by hand; the training
// rows to −√1.5, 0, √1.5.
func TestPrepareSiteValidation(t *testing.T) {
	x := [][]float64{{0}, {6}, {2}, {4}}
	y := []float64{0, 1, 1, 0}
	p, err := PrepareSiteValidation("s", x, y, [][]float64{{2}}, []float64{1}, []int{0, 2, 3}, []int{1})
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{-math.Sqrt(1.5), 0, math.Sqrt(1.5)}
	for i, w := range want {
		if math.Abs(p.Train.X[i][0]-w) > 1e-15 {
			t.Errorf("train row %d: %v, want %v", i, p.Train.X[i][0], w)
		}
	}
	if len(p.Val.X) != 1 || math.Abs(p.Val.X[0][0]-math.Sqrt(6)) > 1e-15 || p.Val.Y[0] != 1 || p.RawVal.X[0][0] != 6 {
		t.Errorf("validation %+v (raw %+v), want √6 with label 1", p.Val, p.RawVal)
	}
	if p.Test.X[0][0] != 0 {
		t.Errorf("test %v, want 0 (the training mean)", p.Test.X[0][0])
	}
}

// TestValidationFractionRefused: validation_fraction is checked for range
// and refused where it cannot hold: a site's own program (it reads the whole
// file); image networks (1) and dp record (3: its metric is released and
// charged like the test metrics) take it.
func TestValidationFractionRefused(t *testing.T) {
	for i, c := range []struct {
		set  func(h *Hyperparameters)
		want string
	}{
		0: {func(h *Hyperparameters) { h.ValidationFraction = 0.6 }, "must be in [0, 0.5]"},
		1: {func(h *Hyperparameters) { h.ValidationFraction, h.Model = 0.2, ModelCNN }, ""},
		2: {func(h *Hyperparameters) { h.ValidationFraction, h.Model, h.Trainer = 0.2, ModelExternal, "t" }, "whole training file"},
		3: {func(h *Hyperparameters) {
			h.ValidationFraction, h.DP, h.DPNoise, h.LocalSolver = 0.2, DPRecord, 1, "gd"
		}, ""},
		4: {func(h *Hyperparameters) { h.ValidationFraction = 0.2 }, ""},
	} {
		h := Defaults(Default)
		c.set(&h)
		err := h.Validate("fedavg")
		if c.want == "" {
			if err != nil {
				t.Errorf("%d: %v", i, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d: %v, want %q", i, err, c.want)
		}
	}
}
