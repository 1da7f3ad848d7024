// Package theory checks the paper's convergence theorem (Thm 3.9, "linear
// rate to an error floor strictly smaller than FedAvg's") on the strongly
// convex problem it assumes: L2-regularised logistic regression over the
// sites of a federation. It knows nothing of the pipeline: rows in,
// numbers out.
package theory

import (
	"fmt"
	"math"

	"github.com/ptopofl/ptopofl/learn"
)

// Site is one site's rows: features and 0/1 labels.
type Site struct {
	X [][]float64
	Y []float64
}

// ConvergenceOptions are the problem and the training: F_k(w) = mean
// logistic loss of site k + (Mu0/2)‖w‖² (the bias included), τ = Steps
// full-batch gradient steps per round at η = 1/L from the aggregate, for
// Rounds rounds, from w = 0.
type ConvergenceOptions struct {
	Mu0    float64
	Steps  int
	Rounds int
}

// Aggregator is one aggregation rule under test: its name and its
// weights α_k (summing to 1).
type Aggregator struct {
	Name  string
	Alpha []float64
}

// Run is one aggregator's trajectory: Dist[t] = ‖w^t − w*‖² for t = 0 …
// Rounds, its floor (the last value, once it has settled), and the
// theorem's bound at each t.
type Run struct {
	Name     string    `json:"name"`
	AlphaMin float64   `json:"alpha_min"`
	Dist     []float64 `json:"dist"`
	Bound    []float64 `json:"bound"`
	Floor    float64   `json:"floor"`
	// Rate is the measured contraction per round of Dist − Floor over the
	// first rounds (where it is well above the floor); the theorem's is
	// (1 − μ/L)^τ.
	Rate float64 `json:"rate"`
	// BoundHolds says Dist[t] ≤ Bound[t] (+ Convergence.Slack) at every t.
	BoundHolds bool `json:"bound_holds"`
	// BAlpha2 is Prop. 3.11's effective heterogeneity at w*,
	// Σ_k α_k ‖∇F_k − ∇F_α‖² with ∇F_α = Σ_k α_k ∇F_k.
	BAlpha2 float64 `json:"b_alpha2"`
}

// Convergence is the check's outcome: the constants estimated on the
// problem and one Run per aggregator.
type Convergence struct {
	Mu, L        float64 // strong convexity and smoothness of every F_k (bounds)
	Sigma2       float64 // σ² = B² = Σ_k p_k ‖∇F_k(w*) − ∇F(w*)‖² (full-batch steps: no sampling noise)
	Dist0        float64 // ‖w^0 − w*‖²
	TheoremRate  float64 // (1 − μ/L)^τ
	WStarGradNrm float64 // ‖∇F(w*)‖ at the computed optimum
	// Slack is how far the computed w* may lie from the true one, squared
	// and doubled ((2‖∇F(w*)‖/μ)², strong convexity): the bound is
	// checked as Dist ≤ Bound + Slack.
	Slack float64
	// B2 is Prop. 3.11's FedAvg heterogeneity at w*, (1/K) Σ_k ‖∇F_k −
	// ∇F̄‖² with ∇F̄ the plain mean of the sites' gradients.
	B2   float64
	Runs []Run
}

// Check computes w* = argmin Σ_k p_k F_k (p_k = n_k/n, Eq. 1) by
// gradient descent to ‖∇F‖ < 1e-12, then runs every aggregator and
// evaluates the theorem's bound (1 − μ/L)^{τt} ‖w^0 − w*‖² + τσ²/(μ L
// α_min) with μ = Mu0 (a lower bound of every F_k's strong convexity), L
// = max_k λ_max(X̃_kᵀX̃_k)/(4 n_k) + Mu0 (X̃ with the bias column; an upper
// bound of every F_k's smoothness, λ_max by power iteration) and σ² the
// gradient heterogeneity at w*.
func Check(sites []Site, aggs []Aggregator, opt ConvergenceOptions) (Convergence, error) {
	k := len(sites)
	if k == 0 {
		return Convergence{}, fmt.Errorf("theory: no sites")
	}
	if !(opt.Mu0 > 0) || opt.Steps < 1 || opt.Rounds < 2 {
		return Convergence{}, fmt.Errorf("theory: μ0 %v, τ %d, rounds %d: want μ0 > 0, τ ≥ 1, rounds ≥ 2", opt.Mu0, opt.Steps, opt.Rounds)
	}
	d := len(sites[0].X[0]) + 1
	n := 0
	for i, s := range sites {
		if len(s.X) == 0 || len(s.X) != len(s.Y) {
			return Convergence{}, fmt.Errorf("theory: site %d: %d rows, %d labels", i, len(s.X), len(s.Y))
		}
		for _, row := range s.X {
			if len(row)+1 != d {
				return Convergence{}, fmt.Errorf("theory: site %d: ragged rows", i)
			}
		}
		n += len(s.X)
	}
	p := make([]float64, k)
	for i, s := range sites {
		p[i] = float64(len(s.X)) / float64(n)
	}
	var c Convergence
	c.Mu = opt.Mu0
	for _, s := range sites {
		c.L = math.Max(c.L, lambdaMax(s.X)/(4*float64(len(s.X)))+opt.Mu0)
	}
	eta := 1 / c.L
	// w*: full-batch gradient descent on F at 1/L (F is L-smooth and
	// μ-strongly convex, so it converges linearly).
	w := make([]float64, d)
	g := make([]float64, d)
	for it := 0; it < 2_000_000; it++ {
		globalGrad(sites, p, w, opt.Mu0, g)
		if norm(g) < 1e-12 {
			break
		}
		for j := range w {
			w[j] -= eta * g[j]
		}
	}
	globalGrad(sites, p, w, opt.Mu0, g)
	c.WStarGradNrm = norm(g)
	wStar := w
	gk := make([]float64, d)
	grads := make([][]float64, k)
	for i, s := range sites {
		grads[i] = make([]float64, d)
		siteGrad(s, wStar, opt.Mu0, grads[i])
	}
	c.B2 = spread(grads, uniform(k))
	for i, s := range sites {
		siteGrad(s, wStar, opt.Mu0, gk)
		diff := 0.0
		for j := range gk {
			diff += (gk[j] - g[j]) * (gk[j] - g[j])
		}
		c.Sigma2 += p[i] * diff
	}
	c.Dist0 = sqDist(make([]float64, d), wStar)
	c.Slack = math.Pow(2*c.WStarGradNrm/c.Mu, 2) + 1e-30
	c.TheoremRate = math.Pow(1-c.Mu/c.L, float64(opt.Steps))

	for _, a := range aggs {
		if len(a.Alpha) != k {
			return Convergence{}, fmt.Errorf("theory: aggregator %s: %d weights for %d sites", a.Name, len(a.Alpha), k)
		}
		r := Run{Name: a.Name, AlphaMin: math.Inf(1), BoundHolds: true, BAlpha2: spread(grads, a.Alpha)}
		for _, x := range a.Alpha {
			r.AlphaMin = math.Min(r.AlphaMin, x)
		}
		wt := make([]float64, d)
		local := make([]float64, d)
		for t := 0; t <= opt.Rounds; t++ {
			r.Dist = append(r.Dist, sqDist(wt, wStar))
			r.Bound = append(r.Bound, math.Pow(c.TheoremRate, float64(t))*c.Dist0+float64(opt.Steps)*c.Sigma2/(c.Mu*c.L*r.AlphaMin))
			if r.Dist[t] > r.Bound[t]+c.Slack {
				r.BoundHolds = false
			}
			if t == opt.Rounds {
				break
			}
			next := make([]float64, d)
			for i, s := range sites {
				copy(local, wt)
				for range opt.Steps {
					siteGrad(s, local, opt.Mu0, gk)
					for j := range local {
						local[j] -= eta * gk[j]
					}
				}
				for j := range next {
					next[j] += a.Alpha[i] * local[j]
				}
			}
			wt = next
		}
		r.Floor = r.Dist[opt.Rounds]
		// The measured rate: the geometric mean contraction of Dist −
		// Floor over the rounds where it is above 100 × the floor's
		// last change (so the floor's own digits do not count).
		settle := math.Abs(r.Dist[opt.Rounds] - r.Dist[opt.Rounds-1])
		t1 := 0
		for t := 1; t <= opt.Rounds; t++ {
			if r.Dist[t]-r.Floor <= 100*settle || r.Dist[t]-r.Floor <= 0 {
				break
			}
			t1 = t
		}
		r.Rate = math.NaN()
		if t1 >= 1 && r.Dist[0]-r.Floor > 0 {
			r.Rate = math.Pow((r.Dist[t1]-r.Floor)/(r.Dist[0]-r.Floor), 1/float64(t1))
		}
		c.Runs = append(c.Runs, r)
	}
	return c, nil
}

// spread returns Σ_k w_k ‖g_k − ḡ‖² with ḡ = Σ_k w_k g_k.
func spread(g [][]float64, w []float64) float64 {
	mean := make([]float64, len(g[0]))
	for k, gk := range g {
		for j, v := range gk {
			mean[j] += w[k] * v
		}
	}
	s := 0.0
	for k, gk := range g {
		s += w[k] * sqDist(gk, mean)
	}
	return s
}

func uniform(k int) []float64 {
	w := make([]float64, k)
	for i := range w {
		w[i] = 1 / float64(k)
	}
	return w
}

// siteGrad sets g to ∇F_k(w): the mean over the site's rows of (σ(x̃·w)
// − y)·x̃ plus μ0·w, with x̃ = (x, 1).
func siteGrad(s Site, w []float64, mu0 float64, g []float64) {
	d := len(w)
	for j := range g {
		g[j] = 0
	}
	for i, x := range s.X {
		z := w[d-1]
		for j, v := range x {
			z += w[j] * v
		}
		e := learn.ExactSigmoid(z) - s.Y[i]
		for j, v := range x {
			g[j] += e * v
		}
		g[d-1] += e
	}
	m := float64(len(s.X))
	for j := range g {
		g[j] = g[j]/m + mu0*w[j]
	}
}

// globalGrad sets g to ∇F(w) = Σ_k p_k ∇F_k(w).
func globalGrad(sites []Site, p, w []float64, mu0 float64, g []float64) {
	gk := make([]float64, len(w))
	for j := range g {
		g[j] = 0
	}
	for i, s := range sites {
		siteGrad(s, w, mu0, gk)
		for j := range g {
			g[j] += p[i] * gk[j]
		}
	}
}

// lambdaMax returns the largest eigenvalue of X̃ᵀX̃ (X̃ = (X, 1)) by power
// iteration, which converges from a positive start since X̃ᵀX̃ is positive
// semi-definite; 1000 iterations or a relative change below 1e-12.
func lambdaMax(x [][]float64) float64 {
	d := len(x[0]) + 1
	v := make([]float64, d)
	for j := range v {
		v[j] = 1 / math.Sqrt(float64(d))
	}
	lambda := 0.0
	for range 1000 {
		u := make([]float64, d)
		for _, row := range x {
			s := v[d-1]
			for j, a := range row {
				s += a * v[j]
			}
			for j, a := range row {
				u[j] += s * a
			}
			u[d-1] += s
		}
		nu := norm(u)
		if nu == 0 {
			return 0
		}
		for j := range u {
			u[j] /= nu
		}
		v = u
		if math.Abs(nu-lambda) <= 1e-12*nu {
			return nu
		}
		lambda = nu
	}
	return lambda
}

func norm(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}

func sqDist(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += (a[i] - b[i]) * (a[i] - b[i])
	}
	return s
}
