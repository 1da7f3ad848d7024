package audit

import (
	"testing"
)

// TestAuditDPSGD: a round of DP-SGD at deep-small's q = 32/600 (19
// Poisson-sampled steps), its noise accounted to ε = 2 at δ = 1e-5 by RDP,
// audited through nn.UpdateSite with 1,000 rounds a world: the lower bound
// never exceeds the accountant's ε. Run without its noise, the same
// mechanism is caught: its ε_LB passes the ε it claims.
func TestAuditDPSGD(t *testing.T) {
	r, err := AuditDPSGD(DPSGDAuditConfig{Epsilon: 2, Trials: 1000, Seed: 3, Secret: testSecret(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("q = %.4f, %d steps, z = %.4f: accountant ε = %.4f, ε_LB = %.4f; bound %+v", r.Q, r.Steps, r.NoiseMultiplier, r.Epsilon, r.EpsilonLowerBound, r.Bound)
	if r.Steps != 19 || r.Q != 32.0/600 || r.Epsilon > 2 || r.Epsilon < 1.98 {
		t.Errorf("round %+v, want 19 steps at q = 32/600 accounted to ε just below 2", r)
	}
	if r.EpsilonLowerBound > r.Epsilon {
		t.Errorf("ε_LB = %v exceeds the accountant's ε = %v: DP-SGD leaks more than it is charged for", r.EpsilonLowerBound, r.Epsilon)
	}
	broken, err := AuditDPSGD(DPSGDAuditConfig{Epsilon: 2, RunNoiseMultiplier: -1, Trials: 200, Seed: 3, Secret: testSecret(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("without noise: claimed ε = %.4f, ε_LB = %.4f", broken.Epsilon, broken.EpsilonLowerBound)
	if !(broken.EpsilonLowerBound > broken.Epsilon) {
		t.Errorf("DP-SGD without its noise: ε_LB = %v, not above the claimed ε = %v", broken.EpsilonLowerBound, broken.Epsilon)
	}
}
