package tda

import (
	"errors"
	"fmt"
	"math"
)

// DistanceMatrix is a symmetric n×n matrix of pairwise distances with a zero
// diagonal, stored in full, row-major. Ripser stores only the lower
// triangle; we keep both halves because the coboundary walks of the H1
// computation scan rows i and j of an edge (i, j) side by side, and full
// rows make those scans sequential in memory instead of strided. At n = 2000
// this costs 32 MB, within the memory budget of the benchmark.
type DistanceMatrix struct {
	n int
	d []float64
}

// N returns the number of points.
func (m *DistanceMatrix) N() int { return m.n }

// At returns the distance between points i and j.
func (m *DistanceMatrix) At(i, j int) float64 {
	return m.d[i*m.n+j]
}

// Row returns the distances from point i to every point. The slice aliases
// the matrix and must not be modified.
func (m *DistanceMatrix) Row(i int) []float64 { return m.d[i*m.n : (i+1)*m.n : (i+1)*m.n] }

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
	m := &DistanceMatrix{n: n, d: make([]float64, n*n)}
	for i := 1; i < n; i++ {
		x := points[i]
		for j := 0; j < i; j++ {
			y := points[j][:len(x)]
			s := 0.0
			for k := range x {
				t := x[k] - y[k]
				s += float64(t * t)
			}
			v := math.Sqrt(s)
			m.d[i*n+j] = v
			m.d[j*n+i] = v
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
	m := &DistanceMatrix{n: n, d: make([]float64, n*n)}
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
			m.d[i*n+j] = v
			m.d[j*n+i] = v
		}
	}
	return m, nil
}

// errTooLarge guards the 64-bit simplex indices of the cohomology
// computation: C(n, 3) must fit.
var errTooLarge = errors.New("tda: too many points for 64-bit simplex indices")
