package theory

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// Recovered is the weight vector a model was made with, read back from
// the models: target ≈ Σ_k W_k θ_k.
type Recovered struct {
	// W are the least-squares weights, one per site model.
	W []float64
	// Residual is ‖target − Σ W_k θ_k‖ / ‖target‖: 0 (to rounding) when the
	// target is a linear combination of the site models.
	Residual float64
	// Cond is the condition number of the matrix of site models: how far
	// rounding in the models can move W (relative error up to about Cond
	// times the models' relative precision).
	Cond float64
}

// RecoverWeights solves target = Σ_k W_k models[k] for W by least squares
// (gonum's SVD), which reads the weights an aggregation actually applied
// off the models it combined and the model it produced, whatever rule it
// claims to follow. It needs at least as many parameters as models and
// models that are linearly independent (rank K): it returns an error when
// the SVD fails, the lengths differ or the rank is short.
func RecoverWeights(models [][]float64, target []float64) (Recovered, error) {
	k := len(models)
	if k == 0 {
		return Recovered{}, fmt.Errorf("theory: recover weights: no models")
	}
	p := len(target)
	if p < k {
		return Recovered{}, fmt.Errorf("theory: recover weights: %d parameters for %d models: want at least as many parameters", p, k)
	}
	a := mat.NewDense(p, k, nil)
	for j, m := range models {
		if len(m) != p {
			return Recovered{}, fmt.Errorf("theory: recover weights: model %d has %d parameters, the target %d", j, len(m), p)
		}
		for i, v := range m {
			a.Set(i, j, v)
		}
	}
	var svd mat.SVD
	if !svd.Factorize(a, mat.SVDThin) {
		return Recovered{}, fmt.Errorf("theory: recover weights: SVD failed")
	}
	if r := svd.Rank(1e-13); r < k {
		return Recovered{}, fmt.Errorf("theory: recover weights: the %d models have rank %d", k, r)
	}
	var w mat.VecDense
	svd.SolveVecTo(&w, mat.NewVecDense(p, append([]float64(nil), target...)), k)
	out := Recovered{W: make([]float64, k), Cond: svd.Cond()}
	for j := range out.W {
		out.W[j] = w.AtVec(j)
	}
	res, norm := 0.0, 0.0
	for i := range target {
		s := 0.0
		for j, m := range models {
			s += out.W[j] * m[i]
		}
		res += (target[i] - s) * (target[i] - s)
		norm += target[i] * target[i]
	}
	out.Residual = math.Sqrt(res / math.Max(norm, 1e-300))
	return out, nil
}
