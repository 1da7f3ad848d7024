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

// TestConvergenceIdenticalSites: with every site holding the same rows,
// every site's gradient at w* is ∇F(w*) = 0, so σ² = 0: any weights give
// plain gradient descent on F, which converges to w* (floor ≈ 0) within
// the theorem's bound (1 − μ/L)^{τt}‖w⁰ − w*‖².
func TestConvergenceIdenticalSites(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var s Site
	for range 60 {
		x := []float64{r.NormFloat64(), r.NormFloat64()}
		y := 0.0
		if x[0]+0.5*x[1]+0.3*r.NormFloat64() > 0 {
			y = 1
		}
		s.X, s.Y = append(s.X, x), append(s.Y, y)
	}
	c, err := Check([]Site{s, s, s}, []Aggregator{{"uniform", []float64{1.0 / 3, 1.0 / 3, 1.0 / 3}}, {"skewed", []float64{0.8, 0.1, 0.1}}},
		ConvergenceOptions{Mu0: 0.05, Steps: 5, Rounds: 400})
	if err != nil {
		t.Fatal(err)
	}
	if c.Sigma2 > 1e-20 || c.WStarGradNrm > 1e-12 {
		t.Fatalf("σ² %v, ‖∇F(w*)‖ %v; want 0", c.Sigma2, c.WStarGradNrm)
	}
	for _, r := range c.Runs {
		if !r.BoundHolds || r.Floor > 1e-18 {
			t.Errorf("%s: bound holds %v, floor %v", r.Name, r.BoundHolds, r.Floor)
		}
		if !(r.Rate <= c.TheoremRate+1e-9) {
			t.Errorf("%s: measured rate %v above the theorem's %v", r.Name, r.Rate, c.TheoremRate)
		}
	}
}

// TestProp311Counterexample: Prop. 3.11 claims B²_α ≤ B² for the
// topology weights. As a statement about weights it cannot hold in
// general: site gradients 0, 0 and 10 (one coordinate) have B² = (1/3)
// Σ (g − 10/3)² = 200/9 ≈ 22.2 under uniform weights, and weights (½, 0, ½)
// give B²_α = ½·25 + ½·25 = 25 > B². It holds only for weights that do not
// put their mass on the extremes, which the topology weights do not
// promise (TestConvergenceHealthcare logs both on healthcare federations).
func TestProp311Counterexample(t *testing.T) {
	g := [][]float64{{0}, {0}, {10}}
	b2, ba2 := spread(g, uniform(3)), spread(g, []float64{0.5, 0, 0.5})
	if math.Abs(b2-200.0/9) > 1e-12 || math.Abs(ba2-25) > 1e-12 || !(ba2 > b2) {
		t.Fatalf("B² %v (want 200/9), B²_α %v (want 25 > B²)", b2, ba2)
	}
}
