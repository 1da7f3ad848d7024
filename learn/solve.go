package learn

import (
	"fmt"
	"math"
)

// LBFGSSettings controls FitLBFGS.
type LBFGSSettings struct {
	// GradTol stops the solver once the infinity norm of the objective's
	// gradient is below it. The reference's scikit-learn solver stops at
	// tol = 1e-4, which leaves the final AUC up to 2.4e-4 from the optimum
	// (golden README); solving to 1e-10 makes the result independent of the
	// warm start and of the solver.
	GradTol float64
	// MaxIter bounds the L-BFGS major iterations.
	MaxIter int
}

// DefaultLBFGS is the tight-tolerance setting every preset uses.
var DefaultLBFGS = LBFGSSettings{GradTol: 1e-10, MaxIter: 1000}

// acceptGradTol is the largest gradient infinity norm, relative to
// max(1, Σ weights), that FitLBFGS accepts when the line search can make no
// further progress in float64 before GradTol is met.
const acceptGradTol = 1e-7

// FitLBFGS minimises m.Objective on d by limited-memory BFGS (Nocedal &
// Wright, Numerical Optimization, Algorithm 7.4, memory 10) with a
// backtracking Armijo line search, starting from init (the warm start; nil
// means all zeros), and returns the minimiser. Near the optimum the decrease
// of the objective falls below float64 resolution before the gradient meets
// GradTol; a step that leaves the objective unchanged to 1e-13 relative but
// shrinks the gradient is then accepted, which is what lets the solver reach
// 1e-10. (gonum/optimize was the first choice, but it imports
// gonum/stat/distmv and so golang.org/x/tools, which go.sum does not pin.)
//
// It returns an error if the data are invalid or the solver stops with a
// gradient norm above 1e-7·max(1, Σ weights).
func FitLBFGS(m Model, d Data, init []float64, s LBFGSSettings) ([]float64, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	np := m.NumParams()
	x := make([]float64, np)
	if init != nil {
		if len(init) != np {
			return nil, fmt.Errorf("learn: lbfgs warm start has %d parameters, model has %d", len(init), np)
		}
		copy(x, init)
	}
	const memory = 10
	g := make([]float64, np)
	f := m.Objective(x, d, g)
	var sHist, yHist [][]float64
	var rho []float64
	dir := make([]float64, np)
	alpha := make([]float64, memory)
	xNew := make([]float64, np)
	gNew := make([]float64, np)
	for it := 0; it < s.MaxIter; it++ {
		if infNorm(g) < s.GradTol {
			return x, nil
		}
		// Two-loop recursion: dir = −H·g.
		copy(dir, g)
		for i := len(sHist) - 1; i >= 0; i-- {
			alpha[i] = rho[i] * dot(sHist[i], dir)
			axpy(-alpha[i], yHist[i], dir)
		}
		gamma := 1 / math.Max(1, infNorm(g))
		if k := len(sHist) - 1; k >= 0 {
			gamma = dot(sHist[k], yHist[k]) / dot(yHist[k], yHist[k])
		}
		for j := range dir {
			dir[j] *= gamma
		}
		for i := range sHist {
			beta := rho[i] * dot(yHist[i], dir)
			axpy(alpha[i]-beta, sHist[i], dir)
		}
		for j := range dir {
			dir[j] = -dir[j]
		}
		slope := dot(g, dir)
		if !(slope < 0) {
			// Not a descent direction (a numerically broken curvature pair):
			// restart from steepest descent.
			sHist, yHist, rho = nil, nil, nil
			for j := range dir {
				dir[j] = -g[j] * gamma
			}
			slope = dot(g, dir)
		}
		step, fNew, accepted := 1.0, 0.0, false
		for ls := 0; ls < 60; ls++ {
			for j := range x {
				xNew[j] = x[j] + step*dir[j]
			}
			fNew = m.Objective(xNew, d, gNew)
			if fNew <= f+1e-4*step*slope {
				accepted = true
				break
			}
			if math.Abs(fNew-f) <= 1e-13*math.Max(1, math.Abs(f)) && infNorm(gNew) < infNorm(g) {
				accepted = true
				break
			}
			step /= 2
		}
		if !accepted {
			break
		}
		sv := make([]float64, np)
		yv := make([]float64, np)
		for j := range x {
			sv[j] = xNew[j] - x[j]
			yv[j] = gNew[j] - g[j]
		}
		if sy := dot(sv, yv); sy > 0 {
			if len(sHist) == memory {
				sHist, yHist, rho = sHist[1:], yHist[1:], rho[1:]
			}
			sHist = append(sHist, sv)
			yHist = append(yHist, yv)
			rho = append(rho, 1/sy)
		}
		copy(x, xNew)
		copy(g, gNew)
		f = fNew
	}
	gnorm := infNorm(g)
	if gnorm < s.GradTol {
		return x, nil
	}
	scale := 0.0
	for i := range d.X {
		if d.Weights == nil {
			scale++
		} else {
			scale += d.Weights[i]
		}
	}
	if !(gnorm <= acceptGradTol*math.Max(1, scale)) {
		return nil, fmt.Errorf("learn: lbfgs stopped with gradient norm %.3g after %d iterations", gnorm, s.MaxIter)
	}
	return x, nil
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

func axpy(a float64, x, y []float64) {
	for i, v := range x {
		y[i] += a * v
	}
}

func infNorm(a []float64) float64 {
	m := 0.0
	for _, v := range a {
		m = math.Max(m, math.Abs(v))
	}
	return m
}

// GDStep is one full-batch gradient-descent step's extra gradient term:
// given the current parameters it adds the method's correction (FedProx's
// proximal pull, SCAFFOLD's control variates, pFedMe's Moreau term) to grad.
type GDStep func(params, grad []float64)

// GradientDescent runs steps full-batch gradient-descent steps
// θ ← θ − lr·(∇ + extra(θ)) from init, with ∇ = m.MeanGradient, and returns
// the final parameters. extra may be nil. init is not modified.
func GradientDescent(m Model, d Data, init []float64, lr float64, steps int, extra GDStep) []float64 {
	theta := append([]float64(nil), init...)
	grad := make([]float64, len(theta))
	for s := 0; s < steps; s++ {
		m.MeanGradient(theta, d, grad)
		if extra != nil {
			extra(theta, grad)
		}
		for j := range theta {
			theta[j] -= lr * grad[j]
		}
	}
	return theta
}
