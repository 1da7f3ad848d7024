package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/theory"
)

// theoryInput is a small judged theory report: two Eq. 4 pairs, one
// federation's clustering checks, two Thm 3.5 rounds per detector, one
// Thm 3.6 and Prop. 3.11 round, the matched attacks and one convergence
// run of 3 rounds.
func theoryInput() theory.Report {
	rep := theory.Report{
		Eq4: theory.Eq4Result{Pairs: 2, WorstRatio: 1.5, AboveOne: 1, Points: []theory.StabilityPoint{
			{Source: "random", Dim: 0, DH: 0.2, W: 0.3}, {Source: "random", Dim: 1, DH: 0.4, W: 0.1}, {Source: "site data", Dim: 0, DH: 0.1, W: 0.05}}},
		Thm2:  theory.Thm2Result{Margin: 10.1, Eta: 0.1, Gamma: 9.9, Before: []int{0, 0, 1}, After: []int{0, 1, 1}, Refuted: true, Instances: 5},
		Thm33: []theory.Thm33Federation{{Federation: "hc-a000-f00-s1000", Clusters: 2, Margin: 0.08, MaxWithin: 0.3, EtaCovered: 0.04, Tried: 10, Broken: 3, FirstBreak: 0.3}},
		Cor34: []theory.Cor34Federation{{Federation: "hc-a000-f00-s1000", Gamma: 0.5, CDiagram: 0.9, CNormalised: 8, CVector: 2400, Radius: 0.28, Rho: []float64{0.1, 0.5}, Draws: 2, Changed: []int{0, 1}, FirstChange: 0.5}},
		Thm35Rounds: []theory.Thm35Round{
			{Campaign: "a", Setting: "labelled", Level: "2 of 8 sites flip 30 %", Round: 1, Score: "g", Delta: 0.8, Lambda: 3.6, Share: 0.097, WorstHonest: 0.1, FedAvgShare: 0.31, Bound: 0.017, Premise: true, Suppressed: true},
			{Campaign: "a", Setting: "labelled", Level: "2 of 8 sites flip 30 %", Round: 2, Score: "g", Delta: 0.8, Lambda: 3.6, Share: 0.097, WorstHonest: 0.1, FedAvgShare: 0.31, Bound: 0.017, Premise: true, Suppressed: true},
			{Campaign: "b", Setting: "descriptor", Level: "2 of 8 sites flip 30 %", Round: 1, Score: "δ", Delta: -0.01, Lambda: 60, Share: 0.3, WorstHonest: 0.32, FedAvgShare: 0.31, Bound: 0.5},
		},
		Identity:    theory.IdentityResult{Instances: 5, WorstIdentity: 1e-16},
		Thm36Rounds: []theory.Thm36Round{{Setting: "labelled", Round: 2, Sigma2: 0.09, Weighted: 0.085, Correlation: -0.1, Premise: true, Holds: true}},
		Thm37: &theory.Thm37Result{Site: "s", Records: 158, Trials: 40, M: 59, P: 21, LipschitzX: 0.4, CVector: 2400,
			Attacks:   []theory.MatchedAttack{{Release: theory.ReleaseSecretDescriptor, Canary: "outlier", AUC: 0.75}, {Release: theory.ReleaseModel, Canary: "outlier", AUC: 1, EpsilonLB: 1.05}},
			DPEpsilon: 3, Delta: 1e-5, Campaign: 3, Costs: []theory.ReleaseCost{{Release: "descriptor", Noise: 4.4, Epsilon: 0.835}},
			DPAttacks: []theory.MatchedAttack{{Release: "DP descriptor", Canary: "outlier", AUC: 0.5, Epsilon: 0.835}}},
		Convergence: []theory.ConvergenceRun{{Federation: "hc-a000-f00-s1000", Convergence: theory.Convergence{
			Options: theory.ConvergenceOptions{Mu0: 0.01, Steps: 5, Rounds: 2, Batch: 8}, Sigma2: 0.7, B2: 0.05, Dist0: 3, TheoremRate: 0.95,
			Runs:  []theory.Run{{Name: "fedavg", Dist: []float64{3, 1, 0.5}, Bound: []float64{300, 290, 280}, Rate: 0.5, Floor: 0.5, BoundHolds: true, Vacuous: true}},
			Lemma: theory.LemmaResult{Checked: 8, Draws: 64, WorstRatio: 0.2}}}},
		Prop311: []theory.Prop311Round{{Setting: "labelled", Round: 2, B2: 0.07, BAlpha2: 0.066, BSoftmax2: 0.07, Holds: true, HoldsSoftmax: true}},
	}
	rep.Thm35 = theory.SummariseThm35(rep.Thm35Rounds)
	rep.Thm36 = []theory.RoundCounts{theory.CountThm36(rep.Thm36Rounds)}
	rep.Thm36[0].Setting = "labelled"
	rep.Judge()
	return rep
}

// TestTheoryReport: a section per statement with the statement quoted, the
// premises, the verdict and the numbers, in both Markdown and HTML; the
// three figures; the same bytes from the same input; an error for a report
// that was not judged.
func TestTheoryReport(t *testing.T) {
	in := theoryInput()
	r, err := Theory(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"## Eq. 4: stability of persistence diagrams", "## Thm 3.3 and Cor. 3.4: stability of the clustering",
		"## Thm 3.5: suppression of adversarial influence", "## Thm 3.6: heterogeneity variance reduction",
		"## Thm 3.7: information contraction of the descriptor", "## Thm 3.9 and the Lemma: convergence",
		"## Prop. 3.11: reduction of effective heterogeneity",
		"“The foundational stability theorem", "Let at most εK clients be adversarial",
		"Verdict: fails as printed; holds with the factor 2 of Chazal et al. 2009.",
	} {
		if !bytes.Contains(r.Markdown, []byte(mdEscaper.Replace(w))) {
			t.Errorf("Markdown lacks %q", w)
		}
		if !strings.Contains(htmlUnescape(r.HTML), strings.TrimPrefix(w, "## ")) {
			t.Errorf("HTML lacks %q", w)
		}
	}
	for _, row := range [][]string{
		{"Premise", "As checked here"},
		{"labelled", "2 of 8 sites flip 30 %", "2", "g 0.8", "3.6", "0.097", "0.1", "0.31", "0.017", "2", "0", "2"},
		{"model after round 1", "outlier", "1.000", "0.000", "1.05"},
		{"hc-a000-f00-s1000", "μ0 0.01, τ 5, b 8", "fedavg", "0.7", "0.05", "3", "0.9500", "0.5000", "0.5", "280", "yes", "yes"},
	} {
		var md []string
		for _, c := range row {
			md = append(md, mdEscaper.Replace(c))
		}
		if !bytes.Contains(r.Markdown, []byte("| "+strings.Join(md, " | ")+" |")) {
			t.Errorf("Markdown lacks the row %q", row)
		}
		if !strings.Contains(htmlUnescape(r.HTML), strings.Join(row, "</td><td>")) && !strings.Contains(htmlUnescape(r.HTML), strings.Join(row, "</th><th>")) {
			t.Errorf("HTML lacks the row %q", row)
		}
	}
	for _, v := range in.Verdicts {
		if !bytes.Contains(r.Markdown, []byte(mdEscaper.Replace(v.Verdict))) {
			t.Errorf("Markdown lacks the verdict of %s", v.Claim)
		}
	}
	for _, f := range []string{"theory_eq4", "theory_thm35", "theory_thm39"} {
		if r.Assets[f+".png"] == nil || r.Assets[f+".svg"] == nil || !bytes.Contains(r.Markdown, []byte("("+f+".png)")) {
			t.Errorf("figure %s missing", f)
		}
	}
	checkSelfContained(t, r.HTML)
	again, err := Theory(in)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(r.Markdown, again.Markdown) || !bytes.Equal(r.HTML, again.HTML) {
		t.Error("the same input gave different bytes")
	}
	if _, err := Theory(theory.Report{}); err == nil {
		t.Error("a report without verdicts: no error")
	}
}
