package learn

import (
	"fmt"
	"math"
)

// Data is a labelled sample: one row of X per sample, Y[i] ∈ {0, 1}, and
// optional per-sample Weights (nil means every weight is 1).
type Data struct {
	X       [][]float64
	Y       []float64
	Weights []float64
}

// Validate returns an error naming the first inconsistency: no rows, rows of
// different lengths, labels other than 0 and 1, a weight count that differs
// from the row count, a negative weight, or a non-finite value.
func (d Data) Validate() error {
	if len(d.X) == 0 {
		return fmt.Errorf("learn: data has no rows")
	}
	if len(d.Y) != len(d.X) {
		return fmt.Errorf("learn: data has %d rows and %d labels", len(d.X), len(d.Y))
	}
	if d.Weights != nil && len(d.Weights) != len(d.X) {
		return fmt.Errorf("learn: data has %d rows and %d weights", len(d.X), len(d.Weights))
	}
	nf := len(d.X[0])
	for i, row := range d.X {
		if len(row) != nf {
			return fmt.Errorf("learn: data row %d has %d features, row 0 has %d", i, len(row), nf)
		}
		for j, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("learn: data row %d feature %d is %v", i, j, v)
			}
		}
		if y := d.Y[i]; y != 0 && y != 1 {
			return fmt.Errorf("learn: data row %d has label %v, want 0 or 1", i, y)
		}
		if d.Weights != nil {
			if w := d.Weights[i]; !(w >= 0) || math.IsInf(w, 1) {
				return fmt.Errorf("learn: data row %d has weight %v, want a finite non-negative number", i, w)
			}
		}
	}
	return nil
}

// NumFeatures returns the number of columns of X (0 for empty data).
func (d Data) NumFeatures() int {
	if len(d.X) == 0 {
		return 0
	}
	return len(d.X[0])
}

// Model is a binary classifier whose parameters are one flat vector, so
// that federated strategies average, blend and correct models without
// knowing their shape. Logistic is the model of the paper's Scenarios A and
// B; an MLP can implement the same interface.
type Model interface {
	// NumParams returns the length of the parameter vector.
	NumParams() int
	// Score returns the predicted probability of class 1 for one row x.
	Score(params, x []float64) float64
	// Objective returns the regularised training objective at params and,
	// if grad is non-nil, writes its gradient into grad (len NumParams()).
	// It is what the L-BFGS solver minimises.
	Objective(params []float64, d Data, grad []float64) float64
	// MeanGradient writes into grad the gradient the gradient-descent
	// baselines step along: the gradient of Objective divided by the number
	// of rows.
	MeanGradient(params []float64, d Data, grad []float64)
}

// Logistic is L2-regularised binary logistic regression in scikit-learn's
// C convention. Its parameter vector is the Features coefficients followed
// by the intercept.
type Logistic struct {
	Features int
	// C is the inverse regularisation strength (the paper's Table 3: 1.0).
	C float64
}

// NumParams returns Features+1.
func (m Logistic) NumParams() int { return m.Features + 1 }

// Score returns σ(x·w + b) with the logit clipped to [−30, 30], the
// reference's `semantics` for evaluation.
func (m Logistic) Score(params, x []float64) float64 {
	return Sigmoid(m.logit(params, x))
}

func (m Logistic) logit(params, x []float64) float64 {
	if len(params) != m.Features+1 || len(x) != m.Features {
		panic("learn: logistic dimension mismatch")
	}
	z := params[m.Features]
	for j, v := range x {
		z += v * params[j]
	}
	return z
}

// Objective returns Σ_i w_i·logloss(y_i, x_i·w + b) + ‖w‖²/(2C), the
// objective scikit-learn's LogisticRegression(penalty="l2", C) minimises
// with sample weights w_i (the intercept b is not penalised; expected.json
// pTopoFL `notes`: "loss sum_i w_i*logloss_i + ||coef||^2/(2C)"). Its
// gradient is X^T(w∘(σ−y)) + w/C for the coefficients and Σ w_i(σ_i−y_i) for
// the intercept. No logit clip is applied here, so the optimum is exact.
func (m Logistic) Objective(params []float64, d Data, grad []float64) float64 {
	nf := m.Features
	if grad != nil {
		for j := range grad {
			grad[j] = 0
		}
	}
	loss := 0.0
	for i, x := range d.X {
		z := m.logit(params, x)
		w := 1.0
		if d.Weights != nil {
			w = d.Weights[i]
		}
		if grad == nil {
			loss += w * LogLoss(d.Y[i], z)
			continue
		}
		l, sig := lossAndSigmoid(d.Y[i], z)
		loss += w * l
		r := w * (sig - d.Y[i])
		for j, v := range x {
			grad[j] += r * v
		}
		grad[nf] += r
	}
	reg := 0.0
	for j := 0; j < nf; j++ {
		reg += params[j] * params[j]
		if grad != nil {
			grad[j] += params[j] / m.C
		}
	}
	return loss + reg/(2*m.C)
}

// MeanGradient writes the full-batch gradient of the reference's
// gradient-descent baselines (expected.json FedProx/SCAFFOLD/pFedMe
// `notes`): grad_w = X^T(σ(Xw+b)−y)/n + w/(C·n) and grad_b = mean(σ(Xw+b)−y),
// with σ the clipped Sigmoid. Sample weights, if any, multiply the
// residuals σ−y.
func (m Logistic) MeanGradient(params []float64, d Data, grad []float64) {
	nf := m.Features
	for j := range grad {
		grad[j] = 0
	}
	for i, x := range d.X {
		r := Sigmoid(m.logit(params, x)) - d.Y[i]
		if d.Weights != nil {
			r *= d.Weights[i]
		}
		for j, v := range x {
			grad[j] += v * r
		}
		grad[nf] += r
	}
	n := float64(len(d.X))
	for j := 0; j < nf; j++ {
		grad[j] = grad[j]/n + params[j]/(m.C*n)
	}
	grad[nf] /= n
}

// Scores returns Model.Score for every row of x.
func Scores(m Model, params []float64, x [][]float64) []float64 {
	out := make([]float64, len(x))
	for i, row := range x {
		out[i] = m.Score(params, row)
	}
	return out
}
