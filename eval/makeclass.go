package eval

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// ClassificationOptions are the settings of MakeClassification. The fields
// and their meaning follow scikit-learn's sklearn.datasets.make_classification
// (version 1.2); DefaultClassificationOptions returns scikit-learn's defaults.
type ClassificationOptions struct {
	// Samples is the number of rows to generate.
	Samples int
	// Features is the total number of columns: Informative + Redundant +
	// Repeated + useless noise columns.
	Features int
	// Informative is the number of columns drawn around the vertices of a
	// hypercube of side 2·ClassSep.
	Informative int
	// Redundant is the number of random linear combinations of the
	// informative columns.
	Redundant int
	// Repeated is the number of copies of randomly chosen informative or
	// redundant columns.
	Repeated int
	// Classes is the number of class labels, 0..Classes−1.
	Classes int
	// ClustersPerClass is the number of Gaussian clusters per class.
	ClustersPerClass int
	// Weights are the class proportions. Nil means balanced classes; with
	// Classes−1 entries the last class gets 1 − sum(Weights).
	Weights []float64
	// FlipY is the fraction of rows whose label is replaced by a uniformly
	// random class (which may equal the old one), as in scikit-learn.
	FlipY float64
	// ClassSep scales the hypercube: cluster centroids sit at ±ClassSep.
	ClassSep float64
	// Hypercube places centroids on the hypercube's vertices; when false
	// they sit at random points of a random polytope, as in scikit-learn.
	Hypercube bool
	// Shift is added to every column (scikit-learn's scalar shift). It is
	// ignored when RandomShift is set.
	Shift float64
	// RandomShift draws a per-column shift uniformly from
	// [−ClassSep, ClassSep] (scikit-learn's shift=None).
	RandomShift bool
	// Scale multiplies every column after the shift. It is ignored when
	// RandomScale is set.
	Scale float64
	// RandomScale draws a per-column scale uniformly from [1, 101]
	// (scikit-learn's scale=None).
	RandomScale bool
	// Shuffle permutes the rows and then the columns.
	Shuffle bool
}

// DefaultClassificationOptions returns scikit-learn's defaults for
// make_classification: 100 samples, 20 features of which 2 informative and
// 2 redundant, 2 classes with 2 clusters each, FlipY 0.01, ClassSep 1,
// hypercube vertices, shift 0, scale 1, shuffled.
func DefaultClassificationOptions() ClassificationOptions {
	return ClassificationOptions{
		Samples:          100,
		Features:         20,
		Informative:      2,
		Redundant:        2,
		Repeated:         0,
		Classes:          2,
		ClustersPerClass: 2,
		FlipY:            0.01,
		ClassSep:         1,
		Hypercube:        true,
		Shift:            0,
		Scale:            1,
		Shuffle:          true,
	}
}

// Validate reports the first setting that make_classification would
// reject, naming the field.
func (o ClassificationOptions) Validate() error {
	switch {
	case o.Samples < 1:
		return fmt.Errorf("classification options: Samples = %d, want at least 1", o.Samples)
	case o.Informative < 1:
		return fmt.Errorf("classification options: Informative = %d, want at least 1", o.Informative)
	case o.Redundant < 0 || o.Repeated < 0:
		return fmt.Errorf("classification options: Redundant = %d, Repeated = %d, want non-negative", o.Redundant, o.Repeated)
	case o.Informative+o.Redundant+o.Repeated > o.Features:
		return fmt.Errorf("classification options: Informative + Redundant + Repeated = %d exceeds Features = %d",
			o.Informative+o.Redundant+o.Repeated, o.Features)
	case o.Classes < 1:
		return fmt.Errorf("classification options: Classes = %d, want at least 1", o.Classes)
	case o.ClustersPerClass < 1:
		return fmt.Errorf("classification options: ClustersPerClass = %d, want at least 1", o.ClustersPerClass)
	case o.Informative < 63 && o.Classes*o.ClustersPerClass > 1<<o.Informative:
		return fmt.Errorf("classification options: Classes × ClustersPerClass = %d exceeds 2^Informative = %d; raise Informative",
			o.Classes*o.ClustersPerClass, 1<<o.Informative)
	case !(o.FlipY >= 0 && o.FlipY <= 1):
		return fmt.Errorf("classification options: FlipY = %v, want a fraction in [0, 1]", o.FlipY)
	case math.IsNaN(o.ClassSep) || math.IsInf(o.ClassSep, 0):
		return fmt.Errorf("classification options: ClassSep = %v, want a finite number", o.ClassSep)
	case !o.RandomShift && (math.IsNaN(o.Shift) || math.IsInf(o.Shift, 0)):
		return fmt.Errorf("classification options: Shift = %v, want a finite number", o.Shift)
	case !o.RandomScale && (math.IsNaN(o.Scale) || math.IsInf(o.Scale, 0)):
		return fmt.Errorf("classification options: Scale = %v, want a finite number", o.Scale)
	}
	if o.Weights != nil {
		if len(o.Weights) != o.Classes && len(o.Weights) != o.Classes-1 {
			return fmt.Errorf("classification options: %d Weights for %d Classes, want %d or %d",
				len(o.Weights), o.Classes, o.Classes-1, o.Classes)
		}
		for i, w := range o.Weights {
			if !(w >= 0) || math.IsInf(w, 0) {
				return fmt.Errorf("classification options: Weights[%d] = %v, want a finite non-negative number", i, w)
			}
		}
		sum := 0.0
		for _, w := range o.classWeights() {
			if w < 0 {
				return fmt.Errorf("classification options: Weights sum to more than 1")
			}
			sum += w
		}
		if sum > 1+1e-9 {
			return fmt.Errorf("classification options: Weights sum to %v, want at most 1", sum)
		}
	}
	return nil
}

// classWeights expands o.Weights to one entry per class as scikit-learn
// does: balanced when nil, the complement appended when one is missing.
func (o ClassificationOptions) classWeights() []float64 {
	w := make([]float64, o.Classes)
	switch {
	case o.Weights == nil:
		for i := range w {
			w[i] = 1 / float64(o.Classes)
		}
	case len(o.Weights) == o.Classes-1:
		sum := 0.0
		for i, v := range o.Weights {
			w[i] = v
			sum += v
		}
		w[o.Classes-1] = 1 - sum
	default:
		copy(w, o.Weights)
	}
	return w
}

// MakeClassification generates a random classification problem following
// scikit-learn's make_classification algorithm (I. Guyon, "Design of
// experiments for the NIPS 2003 variable selection benchmark", 2003), drawing
// every random number from rng. It returns Samples rows of Features columns
// and one label in 0..Classes−1 per row.
//
// The steps are scikit-learn's, in its order: rows are split into
// Classes·ClustersPerClass clusters with sizes int(Samples·w_c/ClustersPerClass)
// and the remainder dealt round-robin; each cluster gets a distinct vertex of
// the Informative-dimensional hypercube (scaled to ±ClassSep) as centroid,
// and standard normal rows multiplied by a random matrix with entries in
// [−1, 1) plus the centroid; cluster k has label k mod Classes. Then come the
// redundant columns (informative columns times a random [−1, 1) matrix), the
// repeated columns (copies of columns ⌊(I+R−1)·u + 0.5⌋), the useless
// standard normal columns, the label flips, the shift and scale, and
// finally a row shuffle followed by a column shuffle.
//
// The random streams are not numpy's, so the output matches scikit-learn in
// distribution, not in value. MakeClassification returns an error for
// invalid options and never panics on them.
func MakeClassification(opt ClassificationOptions, rng *rand.Rand) ([][]float64, []int, error) {
	if rng == nil {
		return nil, nil, errors.New("make classification: nil random source")
	}
	if err := opt.Validate(); err != nil {
		return nil, nil, fmt.Errorf("make classification: %w", err)
	}
	n, nf, ni := opt.Samples, opt.Features, opt.Informative
	nUseless := nf - ni - opt.Redundant - opt.Repeated
	nClusters := opt.Classes * opt.ClustersPerClass

	weights := opt.classWeights()
	perCluster := make([]int, nClusters)
	total := 0
	for k := range perCluster {
		perCluster[k] = int(float64(n) * weights[k%opt.Classes] / float64(opt.ClustersPerClass))
		total += perCluster[k]
	}
	if total > n {
		return nil, nil, fmt.Errorf("make classification: Weights ask for %d rows, more than Samples = %d", total, n)
	}
	for i := 0; i < n-total; i++ {
		perCluster[i%nClusters]++
	}

	X := make([][]float64, n)
	for i := range X {
		X[i] = make([]float64, nf)
	}
	y := make([]int, n)

	centroids := hypercubeVertices(nClusters, ni, rng)
	for _, c := range centroids {
		for j := range c {
			c[j] = c[j]*2*opt.ClassSep - opt.ClassSep
		}
	}
	if !opt.Hypercube {
		for _, c := range centroids {
			u := rng.Float64()
			for j := range c {
				c[j] *= u
			}
		}
		for j := 0; j < ni; j++ {
			u := rng.Float64()
			for _, c := range centroids {
				c[j] *= u
			}
		}
	}

	for i := range X {
		for j := 0; j < ni; j++ {
			X[i][j] = rng.NormFloat64()
		}
	}
	buf := make([]float64, ni)
	stop := 0
	for k, centroid := range centroids {
		start := stop
		stop += perCluster[k]
		A := uniformMatrix(ni, ni, rng)
		for i := start; i < stop; i++ {
			y[i] = k % opt.Classes
			row := X[i][:ni]
			for c := 0; c < ni; c++ {
				s := 0.0
				for r := 0; r < ni; r++ {
					s += row[r] * A[r][c]
				}
				buf[c] = s + centroid[c]
			}
			copy(row, buf)
		}
	}

	if opt.Redundant > 0 {
		B := uniformMatrix(ni, opt.Redundant, rng)
		for i := range X {
			for c := 0; c < opt.Redundant; c++ {
				s := 0.0
				for r := 0; r < ni; r++ {
					s += X[i][r] * B[r][c]
				}
				X[i][ni+c] = s
			}
		}
	}
	if opt.Repeated > 0 {
		m := ni + opt.Redundant
		src := make([]int, opt.Repeated)
		for j := range src {
			src[j] = int(float64(m-1)*rng.Float64() + 0.5)
		}
		for i := range X {
			for j, s := range src {
				X[i][m+j] = X[i][s]
			}
		}
	}
	if nUseless > 0 {
		for i := range X {
			for j := nf - nUseless; j < nf; j++ {
				X[i][j] = rng.NormFloat64()
			}
		}
	}

	if opt.FlipY > 0 {
		flip := make([]bool, n)
		for i := range flip {
			flip[i] = rng.Float64() < opt.FlipY
		}
		for i, f := range flip {
			if f {
				y[i] = rng.IntN(opt.Classes)
			}
		}
	}

	shift := constantVector(nf, opt.Shift)
	if opt.RandomShift {
		for j := range shift {
			shift[j] = (2*rng.Float64() - 1) * opt.ClassSep
		}
	}
	scale := constantVector(nf, opt.Scale)
	if opt.RandomScale {
		for j := range scale {
			scale[j] = 1 + 100*rng.Float64()
		}
	}
	for _, row := range X {
		for j := range row {
			row[j] = (row[j] + shift[j]) * scale[j]
		}
	}

	if opt.Shuffle {
		perm := rng.Perm(n)
		X2 := make([][]float64, n)
		y2 := make([]int, n)
		for i, p := range perm {
			X2[i], y2[i] = X[p], y[p]
		}
		X, y = X2, y2
		cols := rng.Perm(nf)
		tmp := make([]float64, nf)
		for _, row := range X {
			for j, c := range cols {
				tmp[j] = row[c]
			}
			copy(row, tmp)
		}
	}
	return X, y, nil
}

// hypercubeVertices returns samples distinct vertices of the unit
// hypercube in dim dimensions, as 0/1 coordinates, the way scikit-learn's
// _generate_hypercube does: beyond 30 dimensions the leading dim−30
// coordinates are independent fair bits and only the last 30 are drawn
// without replacement. The caller guarantees samples ≤ 2^dim.
func hypercubeVertices(samples, dim int, rng *rand.Rand) [][]float64 {
	out := make([][]float64, samples)
	for i := range out {
		out[i] = make([]float64, dim)
	}
	lead := 0
	if dim > 30 {
		lead = dim - 30
		for i := range out {
			for j := 0; j < lead; j++ {
				out[i][j] = float64(rng.IntN(2))
			}
		}
	}
	bits := dim - lead
	for i, v := range distinctIntegers(samples, 1<<bits, rng) {
		for j := 0; j < bits; j++ {
			// Most significant bit first, as np.unpackbits orders them.
			out[i][lead+j] = float64((v >> (bits - 1 - j)) & 1)
		}
	}
	return out
}

// distinctIntegers draws k distinct integers from [0, n) in random order.
// The caller guarantees k ≤ n.
func distinctIntegers(k, n int, rng *rand.Rand) []int {
	if 2*k >= n {
		return rng.Perm(n)[:k]
	}
	seen := make(map[int]bool, k)
	out := make([]int, 0, k)
	for len(out) < k {
		v := rng.IntN(n)
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// uniformMatrix returns a rows×cols matrix with entries uniform in [−1, 1),
// filled row by row.
func uniformMatrix(rows, cols int, rng *rand.Rand) [][]float64 {
	m := make([][]float64, rows)
	for i := range m {
		m[i] = make([]float64, cols)
		for j := range m[i] {
			m[i][j] = 2*rng.Float64() - 1
		}
	}
	return m
}

func constantVector(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}
