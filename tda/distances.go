package tda

import (
	"errors"
	"fmt"
	"math"
)

// DistanceMatrix is a symmetric n×n matrix of pairwise distances with a zero
// diagonal, stored as its strict lower triangle: entry (i, j) with i > j is
// lower[i*(i-1)/2+j]. This is the layout Ripser uses; it halves memory and
// keeps the rows a coboundary walk touches close together.
type DistanceMatrix struct {
	n     int
	lower []float64
}

// N returns the number of points.
func (m *DistanceMatrix) N() int { return m.n }

// At returns the distance between points i and j.
func (m *DistanceMatrix) At(i, j int) float64 {
	if i == j {
		return 0
	}
	if i < j {
		i, j = j, i
	}
	return m.lower[i*(i-1)/2+j]
}

// EuclideanDistances returns the pairwise Euclidean distances of points (one
// point per row). Each distance is the square root of a sequential sum of
// squared coordinate differences, in coordinate order, starting from 0; the
// explicit float64 conversion of each product forbids fusing it into an
// FMA. This is the formula of ../shared/golden/ph/README.md, which makes the
// diagrams bit-identical to Ripser's and GUDHI's float64 output.
//
// It returns an error if the rows have different lengths or a coordinate is
// NaN or infinite.
func EuclideanDistances(points [][]float64) (*DistanceMatrix, error) {
	n := len(points)
	if n > 0 {
		d := len(points[0])
		for i, p := range points {
			if len(p) != d {
				return nil, fmt.Errorf("tda: point %d has %d coordinates, point 0 has %d", i, len(p), d)
			}
			for k, x := range p {
				if math.IsNaN(x) || math.IsInf(x, 0) {
					return nil, fmt.Errorf("tda: point %d coordinate %d is %v", i, k, x)
				}
			}
		}
	}
	m := &DistanceMatrix{n: n, lower: make([]float64, n*(n-1)/2)}
	idx := 0
	for i := 1; i < n; i++ {
		x := points[i]
		for j := 0; j < i; j++ {
			y := points[j]
			s := 0.0
			for k := range x {
				t := x[k] - y[k]
				s += float64(t * t)
			}
			m.lower[idx] = math.Sqrt(s)
			idx++
		}
	}
	return m, nil
}

// NewDistanceMatrix builds a DistanceMatrix from a full square matrix. It
// returns an error unless full is square, symmetric, has a zero diagonal and
// holds only finite non-negative numbers.
func NewDistanceMatrix(full [][]float64) (*DistanceMatrix, error) {
	n := len(full)
	for i, row := range full {
		if len(row) != n {
			return nil, fmt.Errorf("tda: distance matrix row %d has %d entries, want %d", i, len(row), n)
		}
	}
	m := &DistanceMatrix{n: n, lower: make([]float64, n*(n-1)/2)}
	for i := 0; i < n; i++ {
		if full[i][i] != 0 {
			return nil, fmt.Errorf("tda: distance matrix diagonal (%d,%d) is %v, want 0", i, i, full[i][i])
		}
		for j := 0; j < i; j++ {
			v := full[i][j]
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return nil, fmt.Errorf("tda: distance (%d,%d) is %v, want a finite non-negative number", i, j, v)
			}
			if full[j][i] != v {
				return nil, fmt.Errorf("tda: distance matrix is not symmetric at (%d,%d): %v != %v", i, j, v, full[j][i])
			}
			m.lower[i*(i-1)/2+j] = v
		}
	}
	return m, nil
}

// errTooLarge guards the 64-bit simplex indices of the cohomology
// computation: C(n, 3) must fit.
var errTooLarge = errors.New("tda: too many points for 64-bit simplex indices")
