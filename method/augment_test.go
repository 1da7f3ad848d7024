package method

import (
	"math"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/learn"
)

// TestAugmentTopology checks the four columns of §3.2 on a hand-computed
// case: training rows (1, 0), (−1, 0), (0, 2), (0, −2) have centroid
// (0, 0), so their distances are 1, 1, 2, 2; the test row (3, 4) is 5 from
// it and the validation row (0, 0) is 0. The descriptor's H0 and H1
// entropies (indices 40, 41) are 0.5 and 0.25 and β0 at the median
// threshold (index 10) is 7: every row gets them as they are.
func TestAugmentTopology(t *testing.T) {
	desc := make([]float64, 48)
	desc[10], desc[40], desc[41] = 7, 0.5, 0.25
	train := learn.Data{X: [][]float64{{1, 0}, {-1, 0}, {0, 2}, {0, -2}}, Y: []float64{0, 1, 0, 1}}
	test := learn.Data{X: [][]float64{{3, 4}}, Y: []float64{1}}
	val := learn.Data{X: [][]float64{{0, 0}}, Y: []float64{0}}
	gotTrain, gotTest, gotVal, err := AugmentTopology(train, test, val, desc)
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		got, want []float64
	}{
		{gotTrain.X[0], []float64{1, 0, 1, 0.5, 0.25, 7}}, // 0
		{gotTrain.X[1], []float64{-1, 0, 1, 0.5, 0.25, 7}},
		{gotTrain.X[2], []float64{0, 2, 2, 0.5, 0.25, 7}},
		{gotTrain.X[3], []float64{0, -2, 2, 0.5, 0.25, 7}},
		{gotTest.X[0], []float64{3, 4, 5, 0.5, 0.25, 7}}, // 4
		{gotVal.X[0], []float64{0, 0, 0, 0.5, 0.25, 7}},
	} {
		if len(tc.got) != len(tc.want) {
			t.Fatalf("case %d: %v, want %v", i, tc.got, tc.want)
		}
		for j := range tc.want {
			if math.Abs(tc.got[j]-tc.want[j]) > 1e-15 {
				t.Errorf("case %d: %v, want %v", i, tc.got, tc.want)
				break
			}
		}
	}
	if len(train.X[0]) != 2 || gotTrain.Y[1] != 1 {
		t.Errorf("the input rows changed (%v) or the labels were lost (%v)", train.X[0], gotTrain.Y)
	}
	// No validation split stays empty.
	if _, _, v, err := AugmentTopology(train, test, learn.Data{}, desc); err != nil || len(v.X) != 0 {
		t.Errorf("empty validation split: %v, %v", v.X, err)
	}
	for i, tc := range []struct {
		train learn.Data
		desc  []float64
		want  string
	}{
		{train, desc[:47], "descriptor has 47 numbers"}, // 0
		{learn.Data{}, desc, "no training rows"},
		{learn.Data{X: [][]float64{{1, 0}, {1}}}, desc, "training rows of 2 and 1 columns"},
		{train, append(append([]float64(nil), desc[:40]...), math.NaN(), 0, 0, 0, 0, 0, 0, 0), "not finite"}, // 3
	} {
		if _, _, _, err := AugmentTopology(tc.train, test, val, tc.desc); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("case %d: error %v, want one saying %q", i, err, tc.want)
		}
	}
}
