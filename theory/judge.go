package theory

import (
	"fmt"
	"math"
	"strings"
)

// The statements, as the verdicts name them.
const (
	ClaimEq4     = "Eq. 4"
	ClaimThm33   = "Thm 3.3"
	ClaimCor34   = "Cor. 3.4"
	ClaimThm35   = "Thm 3.5"
	ClaimThm36   = "Thm 3.6"
	ClaimThm37   = "Thm 3.7"
	ClaimThm39   = "Thm 3.9"
	ClaimLemma   = "Lemma (App. F)"
	ClaimProp311 = "Prop. 3.11"
)

// Judge states each statement's verdict from the measurements, one
// Verdict per statement in the paper's order: Eq. 4, Thm 3.3, Cor. 3.4,
// Thm 3.5, Thm 3.6, Thm 3.7, Thm 3.9, the appendix's Lemma, Prop. 3.11.
func (rep *Report) Judge() {
	rep.Verdicts = nil
	for _, c := range []struct {
		claim string
		judge func() (string, string)
	}{
		{ClaimEq4, rep.eq4Verdict}, {ClaimThm33, rep.thm33Verdict}, {ClaimCor34, rep.cor34Verdict},
		{ClaimThm35, rep.thm35Verdict}, {ClaimThm36, rep.thm36Verdict}, {ClaimThm37, rep.thm37Verdict},
		{ClaimThm39, rep.thm39Verdict}, {ClaimLemma, rep.lemmaVerdict}, {ClaimProp311, rep.prop311Verdict},
	} {
		v, n := c.judge()
		rep.Verdicts = append(rep.Verdicts, Verdict{Claim: c.claim, Verdict: v, Numbers: n})
	}
}

func (rep *Report) eq4Verdict() (string, string) {
	e := rep.Eq4
	numbers := fmt.Sprintf("%d random pairs of clouds: largest W∞/d_H %.3f, %d diagrams above d_H, %d above 2·d_H", e.Pairs, e.WorstRatio, e.AboveOne, e.AboveTwo)
	if e.RealPairs > 0 {
		numbers += fmt.Sprintf("; %d site subsamples moved by ρ: largest %.3f, %d above d_H, %d above 2·d_H", e.RealPairs, e.RealWorstRatio, e.RealAboveOne, e.RealAboveTwo)
	}
	switch {
	case e.AboveTwo+e.RealAboveTwo > 0:
		return "fails, even with the factor 2", numbers
	case e.AboveOne+e.RealAboveOne > 0:
		return "fails as printed; holds with the factor 2 of Chazal et al. 2009", numbers
	}
	return "holds", numbers
}

func (rep *Report) thm33Verdict() (string, string) {
	t := rep.Thm2
	numbers := fmt.Sprintf("descriptors 0, 10, 20.1 (margin %.1f = 2η + γ, η %.1f, γ %.1f): partition %v → %v; repaired condition (max within + 4η < min between): %d of %d random instances changed",
		t.Margin, t.Eta, t.Gamma, t.Before, t.After, t.Broken, t.Instances)
	broken, fed := 0, 0
	var parts []string
	for _, f := range rep.Thm33 {
		if f.Clusters < 2 {
			continue
		}
		fed++
		if f.Broken > 0 {
			broken++
		}
		first := "none up to 2×"
		if f.FirstBreak > 0 {
			first = fmt.Sprintf("%.2g×", f.FirstBreak)
		}
		parts = append(parts, fmt.Sprintf("%s margin %.3g, first change at η = %s margin/2, %d of %d perturbations within the covered η changed it", f.Federation, f.Margin, first, f.Broken, f.Tried))
	}
	if len(parts) > 0 {
		numbers += "; real descriptors, the system's clustering: " + strings.Join(parts, "; ")
	}
	var v string
	if t.Refuted {
		v = "fails (counterexample)"
		if t.Broken == 0 {
			v += "; a repaired condition holds"
		}
	} else {
		v = "not refuted by the counterexample"
	}
	if fed > 0 {
		if broken > 0 {
			v += fmt.Sprintf("; on real descriptors it fails too (%d of %d federations' partitions changed within its η)", broken, fed)
		} else {
			v += fmt.Sprintf("; on real descriptors no perturbation within its η changed the partition (%d federations)", fed)
		}
	}
	return v, numbers
}

func (rep *Report) cor34Verdict() (string, string) {
	if len(rep.Cor34) == 0 {
		return "not measured", ""
	}
	var parts []string
	inside, changedAny := 0, 0
	cMax, cVec, cNorm := 0.0, 0.0, 0.0
	for _, c := range rep.Cor34 {
		cMax, cVec, cNorm = math.Max(cMax, c.CDiagram), math.Max(cVec, c.CVector), math.Max(cNorm, c.CNormalised)
		if c.RadiusChanged > 0 || (c.FirstChange > 0 && c.FirstChange <= c.Radius) {
			inside++
		}
		if c.FirstChange > 0 {
			changedAny++
		}
		first := "no ρ tried"
		if c.FirstChange > 0 {
			first = fmt.Sprintf("ρ = %g", c.FirstChange)
		}
		parts = append(parts, fmt.Sprintf("%s: γ %.3g, c %.3g, radius γ/(2c) %.3g (%d of %d draws at it changed the partition), first change at %s", c.Federation, c.Gamma, c.CDiagram, c.Radius, c.RadiusChanged, c.Draws, first))
	}
	numbers := fmt.Sprintf("stability constants measured: diagrams (W∞ over d_H) up to %.3g, the 48 numbers a site sends (‖Δφ‖ over d_H) up to %.3g, their normalised φ̂ the clustering reads up to %.3g; ", cMax, cVec, cNorm) + strings.Join(parts, "; ")
	v := fmt.Sprintf("holds on %d of %d federations: no data perturbation within γ/(2c) changed the partition", len(rep.Cor34)-inside, len(rep.Cor34))
	if inside > 0 {
		v = fmt.Sprintf("fails on %d of %d federations: a data perturbation within γ/(2c) changed the partition", inside, len(rep.Cor34))
	}
	v += fmt.Sprintf(" (c measured on the diagrams, %.3g; the clustering reads the normalised 48 numbers, whose sensitivity is %.3g)", cMax, cNorm)
	return v, numbers
}

func (rep *Report) thm35Verdict() (string, string) {
	var vs, ns []string
	for _, s := range rep.Thm35 {
		vs = append(vs, fmt.Sprintf("%s: %s", s.Setting, s.Verdict()))
		ns = append(ns, fmt.Sprintf("%s: %d rounds with adversaries, premise on %d, bound held on %d, share below FedAvg's on %d, ε² corollary's condition on %d (share ≤ ε² on %d), weight recovery residual ≤ %.1e",
			s.Setting, s.Rounds, s.Premise, s.Holds, s.Suppressed, s.Corollary, s.CorollaryHolds, s.WorstResidual))
	}
	sb := rep.SoftmaxBound
	ns = append(ns, fmt.Sprintf("the weights the theorem has in mind (α ∝ e^{−λδ}): first bound broken on %d of %d random instances; its ε² corollary fails on the tight instance ε = 1/4 (weight %.4f against ε² = %.4f)",
		sb.Violations, sb.Instances, sb.TightShare, sb.TightEps2))
	if len(vs) == 0 {
		return "not measured on the system (no campaign with an adversary)", strings.Join(ns, "; ")
	}
	return strings.Join(vs, ". "), strings.Join(ns, "; ")
}

func (rep *Report) thm36Verdict() (string, string) {
	numbers := fmt.Sprintf("identity: largest relative error %.1e over %d random instances", rep.Identity.WorstIdentity, rep.Identity.Instances)
	total := RoundCounts{}
	for _, c := range rep.Thm36 {
		numbers += fmt.Sprintf("; %s: %d rounds, α decreasing with ‖g − ḡ‖ (r < 0) on %d, Σα‖g−ḡ_α‖² ≤ σ² on %d (%d of them with the premise)", c.Setting, c.Rounds, c.Premise, c.Holds, c.HoldsWithPremise)
		total.Rounds += c.Rounds
		total.Premise += c.Premise
		total.Holds += c.Holds
	}
	v := "the displayed equation is an identity (the parallel-axis theorem, true of any weights summing to 1: it cannot fail)"
	if rep.Identity.WorstIdentity > 1e-9 {
		v = "the displayed equation fails numerically (a bug here: it is an identity)"
	}
	if total.Rounds > 0 {
		v += fmt.Sprintf("; on the system's weights its premise holds on %d of %d rounds and its consequence (weighted variance ≤ σ²) on %d", total.Premise, total.Rounds, total.Holds)
	}
	return v, numbers
}

func (rep *Report) thm37Verdict() (string, string) {
	t := rep.Thm37
	if t == nil {
		return "not measured", ""
	}
	get := func(release, canary string) (MatchedAttack, bool) {
		for _, a := range t.Attacks {
			if a.Release == release && a.Canary == canary {
				return a, true
			}
		}
		return MatchedAttack{}, false
	}
	var ns []string
	for _, a := range t.Attacks {
		ns = append(ns, fmt.Sprintf("%s, %s canary: AUC %.3f, TPR %.3f at 0.1 %% FPR, ε_LB %.2f", a.Release, a.Canary, a.AUC, a.TPRAt0001, a.EpsilonLB))
	}
	numbers := fmt.Sprintf("site %s, %d records; m = %d descriptor numbers against p = %d model parameters (m/p = %.2f); loss Lipschitz in x with L = %.3g; descriptor sensitivity ‖Δφ‖/d_H up to %.3g; ",
		t.Site, t.Records, t.M, t.P, float64(t.M)/float64(t.P), t.LipschitzX, t.CVector) + strings.Join(ns, "; ")
	if len(t.Costs) > 0 {
		var cs []string
		for _, c := range t.Costs {
			cs = append(cs, fmt.Sprintf("%s ε %.3g (z %.3g)", c.Release, c.Epsilon, c.Noise))
		}
		numbers += fmt.Sprintf("; dp record at ε = %g (δ %g, whole campaign %.3g): %s", t.DPEpsilon, t.Delta, t.Campaign, strings.Join(cs, ", "))
		for _, a := range t.DPAttacks {
			numbers += fmt.Sprintf("; DP descriptor at ε %.3g, %s canary: AUC %.3f, ε_LB %.2f", a.Epsilon, a.Canary, a.AUC, a.EpsilonLB)
		}
	}
	v := fmt.Sprintf("its bound cannot be evaluated (no mutual information is measurable here, and its premise m ≪ p fails: m/p = %.2f); ", float64(t.M)/float64(t.P))
	secret, ok1 := get(ReleaseSecretDescriptor, "outlier")
	system, ok2 := get(ReleaseSystemDescriptor, "outlier")
	grad, ok3 := get(ReleaseGradient, "outlier")
	model, ok4 := get(ReleaseModel, "outlier")
	if ok1 && ok2 && ok3 && ok4 {
		less := secret.AUC < grad.AUC && secret.AUC < model.AUC
		sysLess := system.AUC < grad.AUC && system.AUC < model.AUC
		switch {
		case less && sysLess:
			v += fmt.Sprintf("its conclusion holds at matched settings: the descriptor leaks less about an outlier (AUC %.3f with a secret subsample, %.3f as the site draws it) than the gradient (%.3f) or the model (%.3f)", secret.AUC, system.AUC, grad.AUC, model.AUC)
		case less:
			v += fmt.Sprintf("its conclusion holds only when the descriptor's subsample is secret (outlier AUC %.3f against the gradient's %.3f and the model's %.3f); as the site draws it, from a seed the campaign's spec fixes, the descriptor tells the attacker as much (AUC %.3f)", secret.AUC, grad.AUC, model.AUC, system.AUC)
		default:
			v += fmt.Sprintf("its conclusion fails at matched settings: outlier AUC %.3f (descriptor, secret subsample), %.3f (as the site draws it) against %.3f (gradient) and %.3f (model)", secret.AUC, system.AUC, grad.AUC, model.AUC)
		}
	}
	return v, numbers
}

func (rep *Report) thm39Verdict() (string, string) {
	if len(rep.Convergence) == 0 {
		return "not measured", ""
	}
	var runs, rate, bound, vacuous, floorWorse, fed int
	var ns []string
	for _, c := range rep.Convergence {
		o := c.Options
		var rs []string
		for _, r := range c.Runs {
			runs++
			if r.Rate <= c.TheoremRate {
				rate++
			}
			if r.BoundHolds {
				bound++
			}
			if r.Vacuous {
				vacuous++
			}
			rs = append(rs, fmt.Sprintf("%s ρ̂ %.4f, floor %.3g, bound's floor %.3g%s", r.Name, r.Rate, r.Floor, r.Bound[len(r.Bound)-1], map[bool]string{true: " (holds)", false: " (broken)"}[r.BoundHolds]))
		}
		if len(c.Runs) >= 2 {
			fed++
			if c.Runs[1].Floor > c.Runs[0].Floor {
				floorWorse++
			}
		}
		ns = append(ns, fmt.Sprintf("%s, μ0 %g, τ %d, batch %s: L %.3g, σ² %.3g, B² %.3g, ‖w⁰ − w*‖² %.3g, theorem's rate %.4f; %s",
			c.Federation, o.Mu0, o.Steps, batchText(o.Batch), c.L, c.Sigma2, c.B2, c.Dist0, c.TheoremRate, strings.Join(rs, ", ")))
	}
	v := fmt.Sprintf("the fitted rate is at least as fast as the theorem's on %d of %d runs; the bound holds on %d of %d, and is vacuous (its floor above ‖w⁰ − w*‖²) on %d of them", rate, runs, bound, runs, vacuous)
	if bound < runs {
		v += fmt.Sprintf("; it is broken on %d runs (full batch, σ² = 0: the theorem then promises convergence to w*, and heterogeneity keeps a floor)", runs-bound)
	}
	v += fmt.Sprintf("; the softmax (Eq. 12) floor is above FedAvg's on %d of %d, where the theorem says below", floorWorse, fed)
	return v, strings.Join(ns, "; ")
}

func batchText(b int) string {
	if b == 0 {
		return "full (σ² = 0)"
	}
	return fmt.Sprint(b)
}

func (rep *Report) lemmaVerdict() (string, string) {
	checked, viol, worst := 0, 0, 0.0
	var ns []string
	for _, c := range rep.Convergence {
		checked += c.Lemma.Checked
		viol += c.Lemma.Violations
		worst = math.Max(worst, c.Lemma.WorstRatio)
		ns = append(ns, fmt.Sprintf("%s, μ0 %g, batch %s: %d of %d site-rounds broken, largest left/right %.3g", c.Federation, c.Options.Mu0, batchText(c.Options.Batch), c.Lemma.Violations, c.Lemma.Checked, c.Lemma.WorstRatio))
	}
	if checked == 0 {
		return "not measured", ""
	}
	v := fmt.Sprintf("holds on all %d site-rounds checked (largest left/right %.3g)", checked, worst)
	if viol > 0 {
		v = fmt.Sprintf("fails on %d of %d site-rounds (largest left/right %.3g): a site's local steps contract towards its own optimum, not w*", viol, checked, worst)
	}
	return v, strings.Join(ns, "; ")
}

func (rep *Report) prop311Verdict() (string, string) {
	n, held, soft := len(rep.Prop311), 0, 0
	for _, p := range rep.Prop311 {
		if p.Holds {
			held++
		}
		if p.HoldsSoftmax {
			soft++
		}
	}
	if n == 0 {
		return "not measured", ""
	}
	numbers := fmt.Sprintf("%d rounds: B²_α ≤ B² on %d with the weights the aggregation applied (clusters, Eqs. 6–7), on %d with Eq. 12's softmax weights on the same descriptors; not true of weights in general: gradients 0, 0, 10 with α = (½, 0, ½) give B²_α = 25 > B² = 22.2", n, held, soft)
	var v string
	switch {
	case held == n && soft == n:
		v = "holds on every round measured"
	default:
		v = fmt.Sprintf("fails on %d of %d rounds with the system's weights (%d with softmax weights)", n-held, n, n-soft)
	}
	return v, numbers
}
