package eval

import (
	"math"
	"testing"
)

func TestROCAUC(t *testing.T) {
	const tol = 1e-15
	for i, tc := range []struct {
		scores, labels []float64
		want           float64
	}{
		// 0: scikit-learn's roc_auc_score docstring example.
		{[]float64{0.1, 0.4, 0.35, 0.8}, []float64{0, 0, 1, 1}, 0.75},
		// 1–3: by hand, counting positive–negative pairs with ties as 1/2.
		{[]float64{0.1, 0.5, 0.5, 0.9}, []float64{0, 0, 1, 1}, 3.5 / 4},
		{[]float64{0.5, 0.5}, []float64{0, 1}, 0.5},
		{[]float64{0.9, 0.8, 0.1}, []float64{0, 0, 1}, 0},
		// 4–5: one class only, the reference's 0.5.
		{[]float64{0.2, 0.9}, []float64{1, 1}, 0.5},
		{[]float64{0.2}, []float64{0}, 0.5},
		// 6: all scores tied.
		{[]float64{0.3, 0.3, 0.3, 0.3, 0.3}, []float64{0, 1, 0, 1, 1}, 0.5},
	} {
		got, err := ROCAUC(tc.scores, tc.labels)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if math.Abs(got-tc.want) > tol {
			t.Errorf("%d: ROCAUC = %v, want %v", i, got, tc.want)
		}
	}
	for i, tc := range []struct{ scores, labels []float64 }{
		{[]float64{0.1}, []float64{0, 1}},
		{nil, nil},
		{[]float64{0.1}, []float64{2}},
		{[]float64{math.NaN(), 0.1}, []float64{0, 1}},
	} {
		if _, err := ROCAUC(tc.scores, tc.labels); err == nil {
			t.Errorf("bad %d: no error", i)
		}
		if _, err := Accuracy(tc.scores, tc.labels); err == nil {
			t.Errorf("bad %d: Accuracy: no error", i)
		}
	}
}

func TestAccuracy(t *testing.T) {
	// By hand: 0.5 predicts 1 (score ≥ 0.5), 0.49 predicts 0.
	got, err := Accuracy([]float64{0.5, 0.49, 0.9, 0.1}, []float64{1, 1, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	if got != 0.5 {
		t.Errorf("Accuracy = %v, want 0.5", got)
	}
}

func TestSiteMeanAndConvergence(t *testing.T) {
	if got := SiteMean([]float64{0.5, 1, 0.75}); got != 0.75 {
		t.Errorf("SiteMean = %v, want 0.75", got)
	}
	if !math.IsNaN(SiteMean(nil)) {
		t.Error("SiteMean(nil) is not NaN")
	}
	for i, tc := range []struct {
		curve []float64
		want  int
	}{
		{[]float64{0.5, 0.8, 0.9, 0.95, 1.0}, 4}, // 0: 0.95·1.0 = 0.95 first reached at round 4
		{[]float64{0.96, 0.5, 1.0}, 1},           // 1: the first round already qualifies
		{[]float64{0.7}, 1},                      // 2
		{nil, 0},                                 // 3
	} {
		if got := ConvergenceRound(tc.curve); got != tc.want {
			t.Errorf("%d: ConvergenceRound = %d, want %d", i, got, tc.want)
		}
	}
}

func TestSettlingRound(t *testing.T) {
	for i, tc := range []struct {
		curve []float64
		tol   float64
		want  int
	}{
		{nil, 0.005, 0},                                  // 0
		{[]float64{0.8}, 0.005, 1},                       // 1
		{[]float64{0.80, 0.80, 0.80}, 0, 1},              // 2: flat from round 1
		{[]float64{0.79, 0.795, 0.798, 0.799}, 0.005, 2}, // 3: 0.795 is within 0.004 of 0.799, 0.79 is not
		{[]float64{0.80, 0.70, 0.80, 0.80}, 0.005, 3},    // 4: a dip resets the count
		{[]float64{0.5, 0.6, 0.7, 0.8}, 0.005, 4},        // 5: still moving in the last round
		{[]float64{0.8179, 0.8286, 0.8342, 0.8370, 0.8389, 0.8404, 0.8411, 0.8417, 0.8423, 0.8428}, 0.005, 5}, // 6: FedAvg on benchmark under default, 10 seeds (README)
	} {
		if got := SettlingRound(tc.curve, tc.tol); got != tc.want {
			t.Errorf("%d: SettlingRound = %d, want %d", i, got, tc.want)
		}
	}
}
