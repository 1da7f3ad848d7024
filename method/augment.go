package method

import (
	"fmt"
	"math"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/tda"
)

// Indices of the descriptor numbers the topological feature columns copy
// (the 48-number layout of tda.ComputeDescriptor: β0 curve at 0–19, β1
// curve at 20–39, then H0 and H1 entropy at 40 and 41).
const (
	// betti0Median is β0's curve at the median of its 20 thresholds,
	// index L/2 = 10 (the authors' betti0_curve[len // 2]).
	betti0Median = 10
	h0Entropy    = 40
	h1Entropy    = 41
)

// TopoFeatureColumns is the number of columns AugmentTopology appends.
const TopoFeatureColumns = 4

// AugmentTopology returns the site's standardised splits with the four
// topological columns of the paper's §3.2 ("each client augments its
// feature matrix with four TDA-derived statistics: the ℓ2 distance of each
// sample to the local topological centroid, persistence entropies H0 and
// H1, and the Betti number evaluated at the median filtration scale")
// appended to every row, as the authors' TopoFL client computes them
// (framework/fl.py, _compute_per_sample_tda at commit c027eae):
//
//   - ‖x_i − c‖, with c the mean of the site's standardised training rows;
//   - the descriptor's H0 and H1 persistence entropies (descriptor[40],
//     descriptor[41]), the same in every row;
//   - β0 at the median of the descriptor's 20 Betti-curve thresholds,
//     t_10 = 10·t_max/19 (descriptor[10], the authors'
//     betti0_curve[len // 2]), the same in every row.
//
// The columns are not standardised (the authors append them after the
// scaler). One deviation, on purpose: the authors take c of whatever rows
// they transform, so a test row's distance is to the mean of the test
// split; here every split is measured from the training centroid, so a
// row's features do not depend on the other rows it is scored with. val
// may be empty (no validation split). descriptor must hold at least the 48
// numbers of tda.DescriptorLen (a label-aware extension after them is
// ignored).
func AugmentTopology(train, test, val learn.Data, descriptor []float64) (learn.Data, learn.Data, learn.Data, error) {
	if len(descriptor) < tda.DescriptorLen {
		return train, test, val, fmt.Errorf("topological features: descriptor has %d numbers, want at least %d", len(descriptor), tda.DescriptorLen)
	}
	if len(train.X) == 0 {
		return train, test, val, fmt.Errorf("topological features: no training rows")
	}
	d := len(train.X[0])
	centre := make([]float64, d)
	for _, row := range train.X {
		if len(row) != d {
			return train, test, val, fmt.Errorf("topological features: training rows of %d and %d columns", d, len(row))
		}
		for j, v := range row {
			centre[j] += v
		}
	}
	for j := range centre {
		centre[j] /= float64(len(train.X))
	}
	site := [3]float64{descriptor[h0Entropy], descriptor[h1Entropy], descriptor[betti0Median]}
	for _, v := range site {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return train, test, val, fmt.Errorf("topological features: descriptor value %v is not finite", v)
		}
	}
	augment := func(in learn.Data, split string) (learn.Data, error) {
		out := in
		out.X = make([][]float64, len(in.X))
		for i, row := range in.X {
			if len(row) != d {
				return in, fmt.Errorf("topological features: %s row %d has %d columns, training rows %d", split, i, len(row), d)
			}
			s := 0.0
			for j, v := range row {
				t := v - centre[j]
				s += t * t
			}
			r := make([]float64, d, d+TopoFeatureColumns)
			copy(r, row)
			out.X[i] = append(r, math.Sqrt(s), site[0], site[1], site[2])
		}
		return out, nil
	}
	var err error
	if train, err = augment(train, "training"); err != nil {
		return train, test, val, err
	}
	if test, err = augment(test, "test"); err != nil {
		return train, test, val, err
	}
	if val, err = augment(val, "validation"); err != nil {
		return train, test, val, err
	}
	return train, test, val, nil
}
