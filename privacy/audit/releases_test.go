package audit

import (
	"math"
	"testing"
)

// TestAuditReleases audits each of a site's releases besides training
// (the DP descriptor, the label summary, the tabular metrics' score counts
// and a deep site's top-1 count) through the function the site's activity
// calls, at ε = 4 of one release at δ = 1e-5, on 120 training rows of a
// healthcare site, 2,000 releases a world (the descriptor's canary the
// worst of 20 test rows): no lower bound exceeds the
// accountant's ε. The metrics' canary attains their sensitivity (Shift 1),
// and their audits reach a third of ε at this size (measured 0.32 and
// 0.34; the test asks 0.2: the bound's Clopper–Pearson intervals on 1,800
// trials a world keep it from the tail δ = 1e-5 is about); the label
// summary's canary uses 0.6 of its proven sensitivity, the descriptor's
// 0.29, so their audits are looser (measured 0.17 and 0.07 of ε). Run
// without noise, every release is caught: ε_LB above the ε it claims.
// The privacy experiment runs them at full size (20,000 a world).
func TestAuditReleases(t *testing.T) {
	x, y, test := healthcareSite(t, 11)
	x, y = x[:120], y[:120] // the label summary is O(m²) a release
	testY := make([]float64, len(test))
	for _, eps := range []float64{4} {
		for i, rel := range Releases {
			cfg := ReleaseAuditConfig{Release: rel, X: x, Y: y, Epsilon: eps, Trials: 2000, Seed: uint64(i + 1), Secret: testSecret(t)}
			if rel == DescriptorRelease {
				cfg.Candidates, cfg.CandidateY = test[:20], testY[:20]
			}
			r, err := AuditRelease(cfg)
			if err != nil {
				t.Fatalf("%s: %v", rel, err)
			}
			t.Logf("%s at ε %v: z %.4f, accountant ε %.4f, ε_LB %.4f (%.2f of ε), canary shift %.3f of the sensitivity",
				rel, eps, r.NoiseMultiplier, r.Epsilon, r.EpsilonLowerBound, r.EpsilonLowerBound/r.Epsilon, r.Shift)
			if math.Abs(r.Epsilon-eps) > 1e-6 {
				t.Errorf("%s: accountant ε %v, want %v", rel, r.Epsilon, eps)
			}
			if r.EpsilonLowerBound > r.Epsilon {
				t.Errorf("%s at ε %v: ε_LB = %v exceeds the accountant's ε: the release leaks more than it is charged for", rel, eps, r.EpsilonLowerBound)
			}
			if (rel == MetricsRelease || rel == Top1Release) && (math.Abs(r.Shift-1) > 1e-9 || r.EpsilonLowerBound < 0.2*r.Epsilon) {
				t.Errorf("%s at ε %v: shift %v, ε_LB %v; want the sensitivity attained and ε_LB above 0.2·ε", rel, eps, r.Shift, r.EpsilonLowerBound)
			}
			if !(r.Shift > 0 && r.Shift <= 1+1e-9) {
				t.Errorf("%s: the canary moves the release by %v of its sensitivity: beyond the proven bound", rel, r.Shift)
			}
		}
	}
	for i, rel := range Releases {
		cfg := ReleaseAuditConfig{Release: rel, X: x, Y: y, Epsilon: 1, RunNoiseMultiplier: -1, Trials: 40, Seed: uint64(i + 1), Secret: testSecret(t)}
		if rel == DescriptorRelease {
			cfg.Candidates, cfg.CandidateY = test[:2], testY[:2]
		}
		r, err := AuditRelease(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !(r.EpsilonLowerBound > r.Epsilon) {
			t.Errorf("%s without its noise: ε_LB %v, not above the claimed %v", rel, r.EpsilonLowerBound, r.Epsilon)
		}
	}
}
