package simulate

import (
	"math"
	"testing"

	"github.com/ptopofl/ptopofl/learn"
)

// TestSCAFFOLDCorrectVersusReference measures how the correct SCAFFOLD
// (sites send Δc_i, the server adds their mean) differs from the authors'
// (sites send c_i, so the server variate accumulates), both started from the
// recorded init_coef. TestParityGradientDescentMethods checks that
// ReferenceBug reproduces the golden curve within 1e-6.
//
// Measured with this implementation (round: correct / reference AUC):
//
//	healthcare  r1 .830625/.830625  r2 .836771/.836771  r3 .838984/.838250
//	            r9 .835709/.824108  r15 .835966/.805249; final acc .785852/.743028
//	benchmark   r1 .907008/.907008  r2 .908904/.908904  r3 .909739/.909205
//	            r12 .909369/.828934 r15 .909321/.846419; final acc .783000/.725000
//
// Rounds 1 and 2 agree (with c_i = 0 before round 1, the first Δc_i equals
// c_i). From round 3 on the reference's server variate keeps adding the full
// client variates and its AUC decays — by 0.031 (HC) and 0.063 (BM) at round
// 15, with the BM "oscillation" the paper reports — while the correct
// algorithm stays within 0.004 of its round-2 AUC (HC) and 0.003 (BM) and
// ends 0.0307 (HC) and 0.0629 (BM) above the reference. The pinned final
// values below have no external provenance: they are this implementation's
// output, kept as a regression check.
func TestSCAFFOLDCorrectVersusReference(t *testing.T) {
	for i, tc := range []struct {
		scenario  string
		finalAUC  float64
		finalAcc  float64
		maxSpread float64 // max |AUC_r − AUC_15| over rounds
	}{
		{"healthcare", 0.835966, 0.785852, 0.0054}, // 0
		{"benchmark", 0.909321, 0.783000, 0.0024},  // 1
	} {
		sites, exp := loadScenario(t, tc.scenario)
		ref := exp.Methods["SCAFFOLD"]
		// The paper preset selects the authors' variant
		// (scaffold_variant "authors"); this test measures the standard one.
		cfg := paperConfig(t, learn.SCAFFOLD)
		cfg.Site.SCAFFOLD.ReferenceBug = false
		cfg.Seed = 342
		got, err := Run(withInit(sites, ref.InitCoef), cfg)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		for r := 0; r < 2; r++ {
			if math.Abs(got.AUCCurve[r]-ref.AUCCurve[r]) > curveTol {
				t.Errorf("%d: round %d AUC %v, reference %v; the first two rounds must agree", i, r+1, got.AUCCurve[r], ref.AUCCurve[r])
			}
		}
		if math.Abs(got.FinalAUC-tc.finalAUC) > 1e-6 || math.Abs(got.FinalAcc-tc.finalAcc) > 1e-6 {
			t.Errorf("%d: final AUC/acc %.7f/%.7f, measured %v/%v", i, got.FinalAUC, got.FinalAcc, tc.finalAUC, tc.finalAcc)
		}
		spread := 0.0
		for _, a := range got.AUCCurve {
			spread = math.Max(spread, math.Abs(a-got.FinalAUC))
		}
		if spread > tc.maxSpread {
			t.Errorf("%d: correct SCAFFOLD AUC spread %v over rounds, want ≤ %v (no accumulation)", i, spread, tc.maxSpread)
		}
		if got.FinalAUC-ref.FinalAUC < 0.03 {
			t.Errorf("%d: correct final AUC %v is not clearly above the reference's %v", i, got.FinalAUC, ref.FinalAUC)
		}
	}
}
