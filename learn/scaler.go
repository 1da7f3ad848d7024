package learn

import (
	"fmt"
	"math"
)

// Scaler standardises features column by column: x'_j = (x_j − Mean_j)/Scale_j.
type Scaler struct {
	Mean  []float64
	Scale []float64
}

// FitStandardScaler fits scikit-learn's StandardScaler on the rows of x:
// Mean is the column mean and Scale the population standard deviation
// (ddof = 0). A column whose standard deviation is below 10·ε (ε the float64
// machine epsilon), for example a constant column, gets Scale 1, as
// scikit-learn's _handle_zeros_in_scale does. This is the per-site scaler of
// the reference's `semantics`.
//
// It returns an error if x has no rows, rows of different lengths, or a
// non-finite value.
func FitStandardScaler(x [][]float64) (Scaler, error) {
	s, err := fitMoments(x)
	if err != nil {
		return Scaler{}, err
	}
	for j, sd := range s.Scale {
		if sd < 10*epsilon {
			s.Scale[j] = 1
		}
	}
	return s, nil
}

// FitStandardScalerEps fits the scaler the reference uses for topology
// (descriptor subsamples and pTopoFL sample weights): Scale is the
// population standard deviation plus eps, so (x − mean)/(std + eps) with
// eps = 1e-8 in the reference. It returns an error as FitStandardScaler.
func FitStandardScalerEps(x [][]float64, eps float64) (Scaler, error) {
	s, err := fitMoments(x)
	if err != nil {
		return Scaler{}, err
	}
	for j := range s.Scale {
		s.Scale[j] += eps
	}
	return s, nil
}

const epsilon = 0x1p-52

func fitMoments(x [][]float64) (Scaler, error) {
	if len(x) == 0 {
		return Scaler{}, fmt.Errorf("learn: fit scaler: no rows")
	}
	d := len(x[0])
	mean := make([]float64, d)
	for i, row := range x {
		if len(row) != d {
			return Scaler{}, fmt.Errorf("learn: fit scaler: row %d has %d features, row 0 has %d", i, len(row), d)
		}
		for j, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return Scaler{}, fmt.Errorf("learn: fit scaler: row %d feature %d is %v", i, j, v)
			}
			mean[j] += v
		}
	}
	n := float64(len(x))
	for j := range mean {
		mean[j] /= n
	}
	sd := make([]float64, d)
	for _, row := range x {
		for j, v := range row {
			t := v - mean[j]
			sd[j] += t * t
		}
	}
	for j := range sd {
		sd[j] = math.Sqrt(sd[j] / n)
	}
	return Scaler{Mean: mean, Scale: sd}, nil
}

// Transform returns the standardised copy of the rows of x. It returns an
// error if a row does not have len(s.Mean) features.
func (s Scaler) Transform(x [][]float64) ([][]float64, error) {
	out := make([][]float64, len(x))
	for i, row := range x {
		if len(row) != len(s.Mean) {
			return nil, fmt.Errorf("learn: transform: row %d has %d features, scaler has %d", i, len(row), len(s.Mean))
		}
		r := make([]float64, len(row))
		for j, v := range row {
			r[j] = (v - s.Mean[j]) / s.Scale[j]
		}
		out[i] = r
	}
	return out, nil
}
