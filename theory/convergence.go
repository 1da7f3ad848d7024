package theory

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ptopofl/ptopofl/learn"
)

// Site is one site's rows for the convergence check: features (as the
// site trains on them, standardised) and 0/1 labels.
type Site struct {
	X [][]float64
	Y []float64
}

// ConvergenceOptions are the problem and the training of Thm 3.9's check,
// the theorem's own setting: F_k(w) = mean logistic loss of site k +
// (Mu0/2)‖w‖² (the bias included, so that every F_k is Mu0-strongly convex,
// A2), Steps = τ local steps per round at η = 1/L from the aggregate, each
// on a minibatch of Batch rows drawn uniformly with replacement (so that
// the stochastic gradient's variance is what A3 bounds; Batch 0 is full
// batch), for Rounds rounds from w = 0; Runs independent runs estimate the
// expectation E‖wᵗ − w*‖² of the theorem.
type ConvergenceOptions struct {
	Mu0    float64 `json:"mu0"`
	Steps  int     `json:"steps"`
	Rounds int     `json:"rounds"`
	Batch  int     `json:"batch"`
	Runs   int     `json:"runs"`
	Seed   uint64  `json:"seed"`
}

// Aggregator is one aggregation rule under test: its name and its
// weights α_k (summing to 1).
type Aggregator struct {
	Name  string
	Alpha []float64
}

// Run is one aggregator's trajectory under the theorem's setting.
type Run struct {
	Name     string  `json:"name"`
	AlphaMin float64 `json:"alpha_min"`
	// Dist[t] is E‖wᵗ − w*‖², the mean over the runs, t = 0 … Rounds.
	Dist []float64 `json:"dist"`
	// Bound[t] is the theorem's (1 − μ/L)^{τt}‖w⁰ − w*‖² + τσ²/(μLα_min)
	// with A3's σ²; BoundB2 the same with σ² + B² (the appendix's Step 7
	// reads σ² as heterogeneity plus local variance).
	Bound   []float64 `json:"bound"`
	BoundB2 []float64 `json:"bound_b2"`
	// Floor is the mean of Dist over the last fifth of the rounds.
	Floor float64 `json:"floor"`
	// Rate is ρ̂ of the least-squares fit Dist[t] ≈ a·ρ̂ᵗ + b over every
	// round, the theorem's form (its rate is (1 − μ/L)^τ).
	Rate     float64 `json:"rate"`
	FitA     float64 `json:"fit_a"`
	FitFloor float64 `json:"fit_floor"`
	// BoundHolds says Dist[t] ≤ Bound[t] + Convergence.Slack at every t.
	BoundHolds bool `json:"bound_holds"`
	// Vacuous says the bound's floor is at least ‖w⁰ − w*‖²: then it holds
	// for any run that does not move away from w*.
	Vacuous bool `json:"vacuous"`
	// BAlpha2 is Prop. 3.11's Σ_k α_k‖∇F_k − ∇F_α‖² at w*.
	BAlpha2 float64 `json:"b_alpha2"`
}

// Convergence is the check's outcome: the constants estimated on the
// problem, one Run per aggregator, and the Lemma's check.
type Convergence struct {
	Options ConvergenceOptions `json:"options"`
	Mu      float64            `json:"mu"`
	L       float64            `json:"l"`
	// Sigma2 is A3's σ²: the largest E‖ĝ_k(w) − ∇F_k(w)‖² of any site at
	// any point the runs visited (a minibatch of b rows drawn with
	// replacement has variance (1/b)·(1/n_k)Σ_i‖∇ℓ_i(w) − ∇ℓ̄(w)‖²; the
	// regulariser is exact). Sigma2Global is a σ² valid at every w:
	// max_k (1/b)(1/n_k)Σ_i‖x̃_i‖² (|σ(z) − y| ≤ 1).
	Sigma2       float64 `json:"sigma2"`
	Sigma2Global float64 `json:"sigma2_global"`
	// B2 is Σ_k p_k‖∇F_k(w*) − ∇F(w*)‖², the heterogeneity at w*.
	B2 float64 `json:"b2"`
	// Dist0 is ‖w⁰ − w*‖², TheoremRate (1 − μ/L)^τ.
	Dist0       float64 `json:"dist0"`
	TheoremRate float64 `json:"theorem_rate"`
	// Slack is (2‖∇F(w*)‖/μ)², how far the computed w* may lie from the
	// true one (strong convexity), added to the bound.
	Slack float64 `json:"slack"`
	// BUniform2 is Prop. 3.11's FedAvg heterogeneity (1/K)Σ‖∇F_k − ∇F‖²
	// at w*.
	BUniform2 float64 `json:"b_uniform2"`
	Runs      []Run   `json:"runs"`
	// Lemma is the Standard Local Update Bound checked at some rounds of
	// the first run of every aggregator.
	Lemma LemmaResult `json:"lemma"`
}

// LemmaResult is the appendix's Lemma (Standard Local Update Bound),
// E‖w_k^{t+1} − w*‖² ≤ (1 − ημ)^τ‖wᵗ − w*‖² + η²τσ²/α_min, checked for
// every site at Checked (round, aggregator) points: the expectation over
// Draws draws of the site's τ local SGD steps from wᵗ.
type LemmaResult struct {
	Checked int `json:"checked"`
	Draws   int `json:"draws"`
	// Violations counts the site-rounds where the mean left side exceeds
	// the right side by more than two standard errors.
	Violations int `json:"violations"`
	// WorstRatio is the largest mean left side over right side.
	WorstRatio float64 `json:"worst_ratio"`
}

// lemmaRounds are the rounds at which the Lemma is checked.
var lemmaRounds = []int{0, 1, 2, 5, 20, 100}

// Check computes w* = argmin Σ_k p_k F_k (p_k = n_k/n, Eq. 1) by gradient
// descent to ‖∇F‖ < 1e-12, runs every aggregator opt.Runs times with
// minibatch SGD and evaluates the theorem's bound with μ = Mu0 (every F_k
// is Mu0-strongly convex), L = max_k λ_max(X̃_kᵀX̃_k)/(4n_k) + Mu0 (X̃ with
// the bias column; every F_k is L-smooth, λ_max by power iteration) and
// A3's σ² as measured on the runs.
func Check(sites []Site, aggs []Aggregator, opt ConvergenceOptions) (Convergence, error) {
	k := len(sites)
	if k == 0 {
		return Convergence{}, fmt.Errorf("theory: no sites")
	}
	if !(opt.Mu0 > 0) || opt.Steps < 1 || opt.Rounds < 5 || opt.Batch < 0 || opt.Runs < 1 {
		return Convergence{}, fmt.Errorf("theory: μ0 %v, τ %d, rounds %d, batch %d, runs %d: want μ0 > 0, τ ≥ 1, rounds ≥ 5, batch ≥ 0, runs ≥ 1", opt.Mu0, opt.Steps, opt.Rounds, opt.Batch, opt.Runs)
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
	c := Convergence{Options: opt, Mu: opt.Mu0}
	for _, s := range sites {
		c.L = math.Max(c.L, lambdaMax(s.X)/(4*float64(len(s.X)))+opt.Mu0)
		b := float64(opt.Batch)
		if opt.Batch == 0 {
			b = math.Inf(1)
		}
		norms := 0.0
		for _, row := range s.X {
			norms += 1 + sqNorm(row)
		}
		c.Sigma2Global = math.Max(c.Sigma2Global, norms/float64(len(s.X))/b)
	}
	eta := 1 / c.L
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
	wStar := w
	c.Slack = math.Pow(2*norm(g)/c.Mu, 2) + 1e-30
	grads := make([][]float64, k)
	for i, s := range sites {
		grads[i] = make([]float64, d)
		siteGrad(s, wStar, opt.Mu0, grads[i])
		c.B2 += p[i] * sqDist(grads[i], g)
	}
	c.BUniform2 = 0
	for _, gi := range grads {
		c.BUniform2 += sqDist(gi, g) / float64(k)
	}
	c.Dist0 = sqDist(make([]float64, d), wStar)
	c.TheoremRate = math.Pow(1-c.Mu/c.L, float64(opt.Steps))

	tr := trainer{sites: sites, mu0: opt.Mu0, eta: eta, steps: opt.Steps, batch: opt.Batch}
	type trace struct{ w [][]float64 } // the global model at each round of run 0
	traces := make([]trace, len(aggs))
	for ai, a := range aggs {
		if len(a.Alpha) != k {
			return Convergence{}, fmt.Errorf("theory: aggregator %s: %d weights for %d sites", a.Name, len(a.Alpha), k)
		}
		r := Run{Name: a.Name, AlphaMin: math.Inf(1), BAlpha2: spread(grads, a.Alpha), Dist: make([]float64, opt.Rounds+1)}
		for _, x := range a.Alpha {
			r.AlphaMin = math.Min(r.AlphaMin, x)
		}
		for run := range opt.Runs {
			rng := rand.New(rand.NewPCG(opt.Seed, uint64(1000*ai+run)))
			wt := make([]float64, d)
			for t := 0; t <= opt.Rounds; t++ {
				r.Dist[t] += sqDist(wt, wStar) / float64(opt.Runs)
				if run == 0 {
					traces[ai].w = append(traces[ai].w, append([]float64(nil), wt...))
				}
				if t == opt.Rounds {
					break
				}
				next := make([]float64, d)
				for i := range sites {
					local, s2 := tr.local(i, wt, rng)
					c.Sigma2 = math.Max(c.Sigma2, s2)
					for j := range next {
						next[j] += a.Alpha[i] * local[j]
					}
				}
				wt = next
			}
		}
		c.Runs = append(c.Runs, r)
	}
	for i := range c.Runs {
		r := &c.Runs[i]
		r.BoundHolds = true
		for t := 0; t <= opt.Rounds; t++ {
			decay := math.Pow(c.TheoremRate, float64(t)) * c.Dist0
			tau := float64(opt.Steps)
			r.Bound = append(r.Bound, decay+tau*c.Sigma2/(c.Mu*c.L*r.AlphaMin))
			r.BoundB2 = append(r.BoundB2, decay+tau*(c.Sigma2+c.B2)/(c.Mu*c.L*r.AlphaMin))
			if r.Dist[t] > r.Bound[t]+c.Slack {
				r.BoundHolds = false
			}
		}
		r.Vacuous = r.Bound[opt.Rounds] >= c.Dist0
		tail := opt.Rounds / 5
		for t := opt.Rounds - tail + 1; t <= opt.Rounds; t++ {
			r.Floor += r.Dist[t] / float64(tail)
		}
		r.Rate, r.FitA, r.FitFloor = fitGeometric(r.Dist)
	}
	// The Lemma, from the first run's global models.
	lemmaRNG := rand.New(rand.NewPCG(opt.Seed, 99))
	const draws = 64
	c.Lemma.Draws = draws
	for ai := range aggs {
		alphaMin := c.Runs[ai].AlphaMin
		for _, t := range lemmaRounds {
			if t >= opt.Rounds {
				continue
			}
			wt := traces[ai].w[t]
			rhs := math.Pow(1-eta*c.Mu, float64(opt.Steps))*sqDist(wt, wStar) + eta*eta*float64(opt.Steps)*c.Sigma2/alphaMin
			for i := range sites {
				var sum, sum2 float64
				for range draws {
					local, _ := tr.local(i, wt, lemmaRNG)
					v := sqDist(local, wStar)
					sum += v
					sum2 += v * v
				}
				mean := sum / draws
				se := math.Sqrt(math.Max(sum2/draws-mean*mean, 0) / draws)
				c.Lemma.Checked++
				c.Lemma.WorstRatio = math.Max(c.Lemma.WorstRatio, mean/rhs)
				if mean-2*se > rhs+c.Slack {
					c.Lemma.Violations++
				}
			}
		}
	}
	return c, nil
}

// trainer runs the theorem's local update: τ minibatch SGD steps.
type trainer struct {
	sites  []Site
	mu0    float64
	eta    float64
	steps  int
	batch  int
	grad   []float64
	sample []float64
	mean   []float64
}

// local runs site i's τ steps from w and returns the local model and the
// largest A3 variance E‖ĝ − ∇F_i‖² at the points it stepped from.
func (t *trainer) local(i int, w []float64, rng *rand.Rand) ([]float64, float64) {
	s := t.sites[i]
	d := len(w)
	if len(t.grad) != d {
		t.grad, t.sample, t.mean = make([]float64, d), make([]float64, d), make([]float64, d)
	}
	local := append([]float64(nil), w...)
	worst := 0.0
	for range t.steps {
		worst = math.Max(worst, t.variance(s, local))
		if t.batch == 0 {
			siteGrad(s, local, t.mu0, t.grad)
		} else {
			for j := range t.grad {
				t.grad[j] = 0
			}
			for range t.batch {
				r := rng.IntN(len(s.X))
				sampleGrad(s, r, local, t.sample)
				for j, v := range t.sample {
					t.grad[j] += v / float64(t.batch)
				}
			}
			for j := range t.grad {
				t.grad[j] += t.mu0 * local[j]
			}
		}
		for j := range local {
			local[j] -= t.eta * t.grad[j]
		}
	}
	return local, worst
}

// variance returns E‖ĝ − ∇F_k(w)‖² for a minibatch of t.batch rows drawn
// with replacement: (1/b)·(1/n)Σ_i‖∇ℓ_i − ∇ℓ̄‖² (0 for full batch).
func (t *trainer) variance(s Site, w []float64) float64 {
	if t.batch == 0 {
		return 0
	}
	for j := range t.mean {
		t.mean[j] = 0
	}
	n := float64(len(s.X))
	for r := range s.X {
		sampleGrad(s, r, w, t.sample)
		for j, v := range t.sample {
			t.mean[j] += v / n
		}
	}
	v := 0.0
	for r := range s.X {
		sampleGrad(s, r, w, t.sample)
		v += sqDist(t.sample, t.mean) / n
	}
	return v / float64(t.batch)
}

// sampleGrad sets g to row r's loss gradient (σ(x̃·w) − y)·x̃, x̃ = (x, 1).
func sampleGrad(s Site, r int, w, g []float64) {
	d := len(w)
	x := s.X[r]
	z := w[d-1]
	for j, v := range x {
		z += w[j] * v
	}
	e := learn.ExactSigmoid(z) - s.Y[r]
	for j, v := range x {
		g[j] = e * v
	}
	g[d-1] = e
}

// fitGeometric fits y[t] ≈ a·ρᵗ + b by least squares: for each ρ the best
// a and b are linear, and ρ is found by golden-section search on (0, 1)
// after a grid of 200 points.
func fitGeometric(y []float64) (rho, a, b float64) {
	sse := func(r float64) (float64, float64, float64) {
		// Linear least squares on the basis (rᵗ, 1).
		var s11, s12, s22, t1, t2 float64
		for t, v := range y {
			x := math.Pow(r, float64(t))
			s11 += x * x
			s12 += x
			s22++
			t1 += x * v
			t2 += v
		}
		det := s11*s22 - s12*s12
		if det == 0 {
			return math.Inf(1), 0, 0
		}
		aa := (t1*s22 - t2*s12) / det
		bb := (s11*t2 - s12*t1) / det
		e := 0.0
		for t, v := range y {
			r := v - aa*math.Pow(r, float64(t)) - bb
			e += r * r
		}
		return e, aa, bb
	}
	best, bestE := 0.5, math.Inf(1)
	for i := 1; i < 200; i++ {
		r := float64(i) / 200
		if e, _, _ := sse(r); e < bestE {
			best, bestE = r, e
		}
	}
	lo, hi := math.Max(best-0.005, 1e-9), math.Min(best+0.005, 1-1e-12)
	phi := (math.Sqrt(5) - 1) / 2
	for range 100 {
		m1, m2 := hi-phi*(hi-lo), lo+phi*(hi-lo)
		e1, _, _ := sse(m1)
		e2, _, _ := sse(m2)
		if e1 < e2 {
			hi = m2
		} else {
			lo = m1
		}
	}
	rho = (lo + hi) / 2
	_, a, b = sse(rho)
	return rho, a, b
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

func norm(v []float64) float64 { return math.Sqrt(sqNorm(v)) }

func sqNorm(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	return s
}

func sqDist(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += (a[i] - b[i]) * (a[i] - b[i])
	}
	return s
}
