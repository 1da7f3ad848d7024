package audit

import (
	"math"
	"testing"
)

// TestAuditDPGD is the acceptance test of the DP-GD mechanism and the
// accountant: for noise multipliers accounted to ε = 1, 3 and 8 at δ =
// 1e-5 over T = 1, 2 and 3 steps, the audit's lower bound never exceeds
// the accountant's ε (a violation would be a bug in learn's clipping,
// privacy/noise's Gaussian mechanism or privacy's accountant), and, at
// q = 1 with a gradient canary seen at every step, it reaches at least half
// of it: the audit is tight enough to catch a mechanism that is off by a
// factor of two in ε. ε = 1 runs the default 200,000 trials a world, the
// others 100,000 (to keep the test to a few seconds; the default only
// tightens them). The normal error rates predict ε_LB = 0.67·ε, 0.67·ε and
// 0.60·ε for the threshold test on the 180,000, 90,000 and 90,000 trials
// a world left for the bound; measured on the tests' seeds (see the log):
// 0.69, 0.83 and 0.60 of ε. The canary is clipped to C at every step of
// every trial.
func TestAuditDPGD(t *testing.T) {
	for i, c := range []struct {
		eps    float64
		steps  int
		trials int
		z      float64 // √T/μ(ε, δ), by privacy.GaussianMu
	}{
		{1, 1, 0, 3.7306},       // 0: the default 200,000 trials
		{3, 2, 100_000, 1.9666}, // 1
		{8, 3, 100_000, 1.0396}, // 2
	} {
		r, err := AuditDPGD(AuditConfig{Epsilon: c.eps, Steps: c.steps, Trials: c.trials, Seed: uint64(i + 1), Secret: testSecret(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("ε = %v, T = %d: z = %.4f, accountant ε = %.4f, ε_LB = %.4f (%.2f of ε), μ̂ = %.4f (ε̂ = %.3f); bound %+v",
			c.eps, c.steps, r.NoiseMultiplier, r.Epsilon, r.EpsilonLowerBound, r.EpsilonLowerBound/r.Epsilon, r.MuEstimate, r.EpsilonEstimate, r.Bound)
		if math.Abs(r.NoiseMultiplier-c.z) > 1e-4 || math.Abs(r.Epsilon-c.eps) > 1e-6 {
			t.Errorf("%d: z = %v, accountant ε = %v, want %v, %v", i, r.NoiseMultiplier, r.Epsilon, c.z, c.eps)
		}
		if r.EpsilonLowerBound > r.Epsilon {
			t.Errorf("%d: ε_LB = %v exceeds the accountant's ε = %v: the mechanism leaks more than it is charged for", i, r.EpsilonLowerBound, r.Epsilon)
		}
		if r.EpsilonLowerBound < r.Epsilon/2 {
			t.Errorf("%d: ε_LB = %v, below half the accountant's ε = %v: the audit is not tight", i, r.EpsilonLowerBound, r.Epsilon)
		}
		if r.UnclippedSteps != 0 {
			t.Errorf("%d: the canary was not clipped at %d steps", i, r.UnclippedSteps)
		}
		if n := r.Trials - r.Trials/10; r.Bound.Positives != n || r.Bound.Negatives != n {
			t.Errorf("%d: %d trials, bound on %d and %d", i, r.Trials, r.Bound.Positives, r.Bound.Negatives)
		}
	}
}

// TestAuditCatchesBrokenMechanism runs a mechanism that adds a third of
// the noise it claims (z/3 for ε = 1 at T = 1): its true μ is 3/z, ε about
// 3.4, and the audit's ε_LB exceeds the accountant's 1 with 20,000 trials
// a world (measured: see the log), so the audit can catch such a bug.
func TestAuditCatchesBrokenMechanism(t *testing.T) {
	const z = 3.7306316348189195 // √1/μ(1, 1e-5)
	r, err := AuditDPGD(AuditConfig{NoiseMultiplier: z, RunNoiseMultiplier: z / 3, Trials: 20_000, Seed: 9, Secret: testSecret(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("claimed ε = %.4f, ε_LB = %.4f, μ̂ = %.4f (ε̂ = %.3f)", r.Epsilon, r.EpsilonLowerBound, r.MuEstimate, r.EpsilonEstimate)
	if !(r.EpsilonLowerBound > r.Epsilon) {
		t.Errorf("a mechanism with a third of its noise: ε_LB = %v, not above the accountant's ε = %v", r.EpsilonLowerBound, r.Epsilon)
	}
}

// TestAuditDeterministic checks that the result is a function of the
// configuration alone, whatever the number of workers.
func TestAuditDeterministic(t *testing.T) {
	cfg := AuditConfig{Epsilon: 3, Steps: 2, Trials: 2000, Seed: 4, Secret: testSecret(t)}
	var first AuditResult
	for i, w := range []int{1, 2, 3} {
		cfg.Workers = w
		r, err := AuditDPGD(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = r
		} else if r != first {
			t.Errorf("%d workers: %+v, 1 worker: %+v", w, r, first)
		}
	}
}

func TestAuditErrors(t *testing.T) {
	for i, cfg := range []AuditConfig{
		{},                     // 0: neither ε nor z
		{Epsilon: math.Inf(1)}, // 1
		{NoiseMultiplier: -1},  // 2
		{Epsilon: 1, RunNoiseMultiplier: math.NaN()}, // 3
		{Epsilon: 1, Delta: 1},                       // 4
		{Epsilon: 1, Steps: -1},                      // 5
		{Epsilon: 1, Trials: 3},                      // 6
		{Epsilon: 1, Records: -1},                    // 7
		{Epsilon: 1, Features: 1},                    // 8
		{Epsilon: 1, Clip: 3},                        // 9: the canary would not be clipped
		{Epsilon: 1, LR: math.Inf(1)},                // 10
		{Epsilon: 1, C: -2},                          // 11
		{Epsilon: 1, Confidence: 0.4},                // 12
	} {
		if _, err := AuditDPGD(cfg); err == nil {
			t.Errorf("invalid %d: no error", i)
		}
	}
}
