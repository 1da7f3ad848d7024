package theory

import (
	"math"
	"strings"
	"testing"
)

// TestThm2: the counterexample refutes Thm 3.3 — three descriptors 0, 10,
// 20.1 cluster {0, 10}, {20.1} (M = 2: 0–10 at 10 merges before 10–20.1
// at 10.1); the margin d(10, 20.1) = 10.1 = 2η + γ with η = 0.1, γ = 9.9;
// moving 10 to 10.1 makes 10.1–20.1 (10.0) the first merge — while the
// repaired condition (max within + 4η < min between: every within
// distance stays below every between one, so average linkage merges each
// cluster whole first) holds on every separated random instance.
func TestThm2(t *testing.T) {
	r := CheckThm2(200, 5)
	if !r.Refuted || !samePartition(r.Before, []int{0, 0, 1}) || !samePartition(r.After, []int{0, 1, 1}) || math.Abs(r.Margin-10.1) > 1e-12 {
		t.Errorf("counterexample: %+v", r)
	}
	if r.Instances < 100 || r.Broken != 0 {
		t.Errorf("repaired condition: %d of %d instances changed (want 0 of ≥ 100)", r.Broken, r.Instances)
	}
}

// TestSoftmaxBound: on the weights Thm 3.5 has in mind, α ∝ e^{−λδ}, the
// first bound holds on 2000 random instances (by Jensen, Σ_H e^{−λδ} ≥
// |H|e^{−λδ_H}); the ε² corollary does not: with λΔ = log((1 − ε)/ε) the
// bound is ε²/(1 − 2ε + 2ε²) > ε², attained when every honest δ equals
// δ_H. K = 4, ε = 1/4, honest δ = 1, adversary δ = 1 + ln 3, λ = 1:
// α_A = (1/3)/(3 + 1/3) = 0.1 > ε² = 0.0625.
func TestSoftmaxBound(t *testing.T) {
	r := CheckSoftmaxBound(2000, 13)
	if r.Violations != 0 || math.Abs(r.TightShare-0.1) > 1e-12 || r.TightEps2 != 0.0625 {
		t.Errorf("%+v", r)
	}
}

// TestEq4: Eq. 4 as printed (factor 1) fails on random clouds, with the
// factor 2 it holds (the theorem for the diameter filtration; tda's
// TestStabilityHausdorff has the constructed case W∞ = 2·d_H). Every pair
// gives an H0 and an H1 point for the figure.
func TestEq4(t *testing.T) {
	r, err := CheckEq4(300, 2026)
	if err != nil {
		t.Fatal(err)
	}
	if r.AboveTwo != 0 || r.AboveOne == 0 || !(r.WorstRatio > 1 && r.WorstRatio <= 2+1e-12) || len(r.Points) != 600 {
		t.Errorf("%d above d_H, %d above 2·d_H, worst %v, %d points", r.AboveOne, r.AboveTwo, r.WorstRatio, len(r.Points))
	}
	// Real pairs add to their own counts: W∞ 0.3 at d_H 0.2 is above d_H,
	// not above 2·d_H.
	r.addReal([]StabilityPoint{{Source: "site data", Dim: 0, DH: 0.2, W: 0.3}, {Source: "site data", Dim: 1, DH: 0.2, W: 0.1}})
	if r.RealPairs != 1 || r.RealAboveOne != 1 || r.RealAboveTwo != 0 || math.Abs(r.RealWorstRatio-1.5) > 1e-12 {
		t.Errorf("real: %+v", r)
	}
}

// TestIdentity: Thm 3.6's displayed equation is the parallel-axis
// identity, true to rounding on 2000 random instances. A hand case: g =
// 0, 0, 6 (ḡ = 2, σ² = (4 + 4 + 16)/3 = 8) with α = (½, ½, 0): ḡ_α = 0,
// the left side 0, the right ½·4 + ½·4 − 4 = 0; with α = (0, 0, 1) both
// sides are 0 too (16 − 16), though that α favours the farthest site.
func TestIdentity(t *testing.T) {
	if r := CheckIdentity(2000, 36); r.WorstIdentity > 1e-12 {
		t.Errorf("identity error %v", r.WorstIdentity)
	}
	g := [][]float64{{0}, {0}, {6}}
	for i, tc := range []struct {
		alpha         []float64
		lhs, rhs, sig float64
	}{
		{[]float64{0.5, 0.5, 0}, 0, 0, 8}, // 0
		{[]float64{0, 0, 1}, 0, 0, 8},
		{[]float64{1.0 / 3, 1.0 / 3, 1.0 / 3}, 8, 8, 8}, // 2: uniform weights, no reduction
	} {
		lhs, rhs, sig := thm36Sides(g, tc.alpha)
		if math.Abs(lhs-tc.lhs) > 1e-12 || math.Abs(rhs-tc.rhs) > 1e-12 || math.Abs(sig-tc.sig) > 1e-12 {
			t.Errorf("case %d: sides %v = %v, σ² %v; want %v, %v, %v", i, lhs, rhs, sig, tc.lhs, tc.rhs, tc.sig)
		}
	}
}

// TestProp311Counterexample: Prop. 3.11 claims B²_α ≤ B² for the
// topology weights. As a statement about weights it cannot hold in
// general: site gradients 0, 0 and 10 (one coordinate) have B² = (1/3)
// Σ (g − 10/3)² = 200/9 ≈ 22.2 under uniform weights, and weights (½, 0, ½)
// give B²_α = ½·25 + ½·25 = 25 > B².
func TestProp311Counterexample(t *testing.T) {
	g := [][]float64{{0}, {0}, {10}}
	b2, ba2 := spread(g, uniform(3)), spread(g, []float64{0.5, 0, 0.5})
	if math.Abs(b2-200.0/9) > 1e-12 || math.Abs(ba2-25) > 1e-12 || !(ba2 > b2) {
		t.Fatalf("B² %v (want 200/9), B²_α %v (want 25 > B²)", b2, ba2)
	}
}

// TestJudge: the verdicts follow from the measurements, one per statement
// in the paper's order.
func TestJudge(t *testing.T) {
	rep := Report{
		Eq4:      Eq4Result{Pairs: 3, WorstRatio: 1.5, AboveOne: 1},
		Thm2:     Thm2Result{Refuted: true, Instances: 5},
		Thm33:    []Thm33Federation{{Federation: "a", Clusters: 2, Margin: 0.1, EtaCovered: 0.05, Tried: 10, Broken: 2, FirstBreak: 0.3}},
		Cor34:    []Cor34Federation{{Federation: "a", Gamma: 1, CDiagram: 1, Radius: 0.5, Draws: 3, RadiusChanged: 0, FirstChange: 0.7}},
		Thm35:    []Thm35Summary{{Setting: "labelled", Score: "g", Rounds: 4, Premise: 4, Holds: 0, Suppressed: 4, ShareOverBound: 5}},
		Identity: IdentityResult{Instances: 5, WorstIdentity: 1e-16},
		Thm36:    []RoundCounts{{Setting: "labelled", Rounds: 4, Premise: 3, Holds: 4, HoldsWithPremise: 3}},
		Thm37: &Thm37Result{M: 59, P: 21, Attacks: []MatchedAttack{
			{Release: ReleaseSecretDescriptor, Canary: "outlier", AUC: 0.7}, {Release: ReleaseSystemDescriptor, Canary: "outlier", AUC: 1},
			{Release: ReleaseModel, Canary: "outlier", AUC: 1}, {Release: ReleaseGradient, Canary: "outlier", AUC: 1}}},
		Convergence: []ConvergenceRun{{Federation: "a", Convergence: Convergence{TheoremRate: 0.95, Dist0: 2, Runs: []Run{
			{Name: "fedavg", Rate: 0.9, BoundHolds: true, Vacuous: true, Floor: 0.01, Bound: []float64{3}},
			{Name: "softmax", Rate: 0.9, BoundHolds: false, Floor: 0.05, Bound: []float64{1}},
		}, Lemma: LemmaResult{Checked: 8, Violations: 2, WorstRatio: 3}}}},
		Prop311: []Prop311Round{{Holds: true, HoldsSoftmax: true}, {Holds: false, HoldsSoftmax: true}},
	}
	rep.Judge()
	want := []struct{ claim, verdict string }{
		{ClaimEq4, "fails as printed; holds with the factor 2"},
		{ClaimThm33, "fails (counterexample); a repaired condition holds; on real descriptors it fails too (1 of 1"},
		{ClaimCor34, "holds on 1 of 1 federations"},
		{ClaimThm35, "labelled: premise (Δ > 0 on g) holds on 4 of 4 rounds; the bound fails on all of them (median share/bound 5); the adversaries' share is below FedAvg's on every one"},
		{ClaimThm36, "the displayed equation is an identity"},
		{ClaimThm37, "its bound cannot be evaluated (no mutual information is measurable here, and its premise m ≪ p fails: m/p = 2.81); its conclusion holds only when the descriptor's subsample is secret"},
		{ClaimThm39, "the fitted rate is at least as fast as the theorem's on 2 of 2 runs; the bound holds on 1 of 2, and is vacuous (its floor above ‖w⁰ − w*‖²) on 1 of them; it is broken on 1 runs"},
		{ClaimLemma, "fails on 2 of 8 site-rounds"},
		{ClaimProp311, "fails on 1 of 2 rounds"},
	}
	if len(rep.Verdicts) != len(want) {
		t.Fatalf("%d verdicts: %+v", len(rep.Verdicts), rep.Verdicts)
	}
	for i, w := range want {
		if v := rep.Verdicts[i]; v.Claim != w.claim || !strings.HasPrefix(v.Verdict, w.verdict) {
			t.Errorf("verdict %d: %s %q; want %s %q…", i, v.Claim, v.Verdict, w.claim, w.verdict)
		}
	}
}
