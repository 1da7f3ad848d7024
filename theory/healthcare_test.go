package theory

import "testing"

// TestConvergenceHealthcare checks Thm 3.9 and Prop. 3.11 on
// L2-regularised logistic regression (μ0 = 0.01, τ = 5 steps at 1/L, 300
// rounds) over the sites of healthcare federations of seeds 1–3, for
// FedAvg's weights p_k and Eq. 12's softmax weights. What it finds, and
// asserts, on every seed:
//   - the linear rate holds: ‖w^t − w*‖² approaches its floor at least as
//     fast as the theorem's (1 − μ/L)^τ per round;
//   - the bound holds but says little: its floor τσ²/(μ L α_min) is more
//     than 1000 times the measured floors (and above ‖w⁰ − w*‖² itself);
//   - the softmax floor is not smaller than FedAvg's, it is larger: the
//     weights pull the fixed point towards argmin Σ α_k F_k, away from
//     the w* of Eq. 1 (Σ p_k F_k); the theorem's bound is smaller for
//     softmax only because its α_min is larger;
//   - Prop. 3.11's B²_α ≤ B² is logged (it depends on the weights).
func TestConvergenceHealthcare(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		sites, aggs, err := HealthcareProblem(seed, 1)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Check(sites, aggs, ConvergenceDefaults)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("seed %d: μ %.4g L %.4g σ² %.4g B² %.4g ‖w0−w*‖² %.4g theorem rate %.6f", seed, c.Mu, c.L, c.Sigma2, c.B2, c.Dist0, c.TheoremRate)
		for _, r := range c.Runs {
			floorBound := r.Bound[len(r.Bound)-1]
			t.Logf("  %-8s α_min %.4f floor %.4g rate %.6f bound holds %v (floor bound %.4g) B²_α %.4g", r.Name, r.AlphaMin, r.Floor, r.Rate, r.BoundHolds, floorBound, r.BAlpha2)
			if !r.BoundHolds || !(r.Rate <= c.TheoremRate) {
				t.Errorf("seed %d %s: bound holds %v, rate %v against the theorem's %v", seed, r.Name, r.BoundHolds, r.Rate, c.TheoremRate)
			}
			if floorBound < 1000*r.Floor || floorBound < c.Dist0 {
				t.Errorf("seed %d %s: the bound's floor %v is within 1000× of the measured %v: not as loose as docs/explanation/paper.md says", seed, r.Name, floorBound, r.Floor)
			}
		}
		if fed, soft := c.Runs[0], c.Runs[1]; !(soft.Floor > fed.Floor) {
			t.Errorf("seed %d: softmax floor %v ≤ FedAvg's %v: the theorem's claim would hold here", seed, soft.Floor, fed.Floor)
		}
	}
}
