package theory

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestLambdaMaxAgainstGonum: the power iteration's λ_max(X̃ᵀX̃) equals
// gonum's symmetric eigen-decomposition (an independent reference) on
// random matrices.
func TestLambdaMaxAgainstGonum(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for c := range 10 {
		n, d := 5+r.IntN(40), 1+r.IntN(6)
		x := make([][]float64, n)
		a := mat.NewDense(n, d+1, nil)
		for i := range x {
			x[i] = make([]float64, d)
			for j := range x[i] {
				x[i][j] = r.NormFloat64()
				a.Set(i, j, x[i][j])
			}
			a.Set(i, d, 1)
		}
		var g mat.SymDense
		g.SymOuterK(1, a.T())
		var eig mat.EigenSym
		if !eig.Factorize(&g, false) {
			t.Fatal("eigen failed")
		}
		vals := eig.Values(nil)
		want := vals[len(vals)-1]
		if got := lambdaMax(x); math.Abs(got-want) > 1e-8*want {
			t.Errorf("case %d: λ_max %v; gonum %v", c, got, want)
		}
	}
}

// toySite draws n rows of two features around centre with labels from a
// noisy linear rule.
func toySite(r *rand.Rand, n int, centre float64) Site {
	var s Site
	for range n {
		x := []float64{centre + r.NormFloat64(), r.NormFloat64()}
		y := 0.0
		if x[0]+0.5*x[1]+0.3*r.NormFloat64() > centre {
			y = 1
		}
		s.X, s.Y = append(s.X, x), append(s.Y, y)
	}
	return s
}

// TestConvergenceIdenticalSites: with every site holding the same rows,
// every site's gradient at w* is ∇F(w*) = 0 (B² = 0); full-batch steps
// (σ² = 0) are plain gradient descent on F, which reaches w* within the
// theorem's bound (1 − μ/L)^{τt}‖w⁰ − w*‖², whatever the weights.
func TestConvergenceIdenticalSites(t *testing.T) {
	s := toySite(rand.New(rand.NewPCG(3, 4)), 60, 0)
	c, err := Check([]Site{s, s, s}, []Aggregator{{"uniform", []float64{1.0 / 3, 1.0 / 3, 1.0 / 3}}, {"skewed", []float64{0.8, 0.1, 0.1}}},
		ConvergenceOptions{Mu0: 0.05, Steps: 5, Rounds: 400, Runs: 1})
	if err != nil {
		t.Fatal(err)
	}
	if c.Sigma2 != 0 || c.B2 > 1e-20 {
		t.Fatalf("σ² %v, B² %v; want 0", c.Sigma2, c.B2)
	}
	for _, r := range c.Runs {
		if !r.BoundHolds || r.Floor > 1e-18 || r.Vacuous {
			t.Errorf("%s: bound holds %v, floor %v, vacuous %v", r.Name, r.BoundHolds, r.Floor, r.Vacuous)
		}
		if !(r.Rate <= c.TheoremRate+1e-9) {
			t.Errorf("%s: fitted rate %v above the theorem's %v", r.Name, r.Rate, c.TheoremRate)
		}
	}
	if c.Lemma.Violations != 0 {
		t.Errorf("lemma: %+v", c.Lemma)
	}
}

// TestConvergenceHeterogeneousFullBatch: two sites whose data differ
// (centres 0 and 3) under full-batch local steps, where A3 holds with
// σ² = 0: the theorem then bounds E‖wᵗ − w*‖² by (1 − μ/L)^{τt}‖w⁰ − w*‖²,
// which goes to 0, while τ = 5 local steps towards each site's own optimum
// leave the aggregate at a fixed point away from w* (client drift). The
// bound is broken, and so is the Lemma at the later rounds.
func TestConvergenceHeterogeneousFullBatch(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	sites := []Site{toySite(r, 50, 0), toySite(r, 50, 3)}
	c, err := Check(sites, []Aggregator{{"uniform", []float64{0.5, 0.5}}}, ConvergenceOptions{Mu0: 0.05, Steps: 5, Rounds: 300, Runs: 1})
	if err != nil {
		t.Fatal(err)
	}
	run := c.Runs[0]
	t.Logf("floor %v, bound at the end %v, B² %v, lemma %+v", run.Floor, run.Bound[len(run.Bound)-1], c.B2, c.Lemma)
	if run.BoundHolds || !(run.Floor > 1e-6) || c.Lemma.Violations == 0 {
		t.Errorf("bound holds %v, floor %v, lemma violations %d: want broken, a floor > 0, violations", run.BoundHolds, run.Floor, c.Lemma.Violations)
	}
}

// TestMinibatchVariance: A3's variance of a minibatch of b rows drawn with
// replacement is (1/b)·(1/n)Σ‖∇ℓ_i − ∇ℓ̄‖²; against brute force over all
// n^b equally likely batches (n = 3, b = 2: 9 batches) of a hand site.
func TestMinibatchVariance(t *testing.T) {
	s := Site{X: [][]float64{{1, 0}, {0, 2}, {-1, 1}}, Y: []float64{1, 0, 1}}
	w := []float64{0.3, -0.2, 0.1}
	tr := trainer{sites: []Site{s}, batch: 2}
	tr.grad, tr.sample, tr.mean = make([]float64, 3), make([]float64, 3), make([]float64, 3)
	got := tr.variance(s, w)
	full := make([]float64, 3)
	siteGrad(s, w, 0, full)
	g := make([][]float64, 3)
	for i := range g {
		g[i] = make([]float64, 3)
		sampleGrad(s, i, w, g[i])
	}
	want := 0.0
	for a := range 3 {
		for b := range 3 {
			batch := make([]float64, 3)
			for j := range batch {
				batch[j] = (g[a][j] + g[b][j]) / 2
			}
			want += sqDist(batch, full) / 9
		}
	}
	if math.Abs(got-want) > 1e-15 {
		t.Errorf("variance %v, brute force %v", got, want)
	}
}

// TestFitGeometric: the fit recovers a, ρ and b of an exact a·ρᵗ + b.
func TestFitGeometric(t *testing.T) {
	for i, c := range []struct{ a, rho, b float64 }{{3, 0.9, 0.2}, {1, 0.5, 0}, {10, 0.97, 1}} {
		y := make([]float64, 200)
		for t := range y {
			y[t] = c.a*math.Pow(c.rho, float64(t)) + c.b
		}
		rho, a, b := fitGeometric(y)
		if math.Abs(rho-c.rho) > 1e-6 || math.Abs(a-c.a) > 1e-4 || math.Abs(b-c.b) > 1e-4 {
			t.Errorf("%d: fit %v, %v, %v; want %v, %v, %v", i, rho, a, b, c.rho, c.a, c.b)
		}
	}
}
