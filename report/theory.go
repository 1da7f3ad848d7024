package report

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/ptopofl/ptopofl/theory"
)

// The statements as the paper (../shared/paper) prints them, in plain text.
const (
	stmtEq4     = "§2.2, Eq. 4: “The foundational stability theorem [Cohen-Steiner et al. 2007] guarantees W∞(Dgm(X), Dgm(Y)) ≤ d_H(X, Y), where d_H denotes the Hausdorff distance.”"
	stmtThm33   = "Thm 3.3 (Stability of Topology-Guided Clustering): “Let {φ_k} be the true client descriptors and {φ̃_k} perturbed versions with ‖φ_k − φ̃_k‖₂ ≤ η for all k. If the clusters satisfy the separation-margin condition min_{k∈C_i, j∈C_ℓ, i≠ℓ} ‖φ_k − φ_j‖₂ ≥ 2η + γ for some γ > 0, then hierarchical average-linkage clustering recovers the same assignments from the perturbed descriptors.”"
	stmtCor34   = "Cor. 3.4: “If client data distributions differ by at least γ in Wasserstein diagram distance and Φ has stability constant c, then the cluster assignments are invariant to data perturbations of magnitude at most γ/(2c).”"
	stmtThm35   = "Thm 3.5 (Exponential Suppression of Adversarial Influence): “Let at most εK clients be adversarial, and suppose there exists a separation margin Δ > 0 such that every adversarial client satisfies δ_k^(A) ≥ δ_H + Δ, where δ_H is the mean honest-client distance. Then the total aggregation weight assigned to adversarial clients satisfies Σ_{k∈A} α_k ≤ εe^{−λΔ} / ((1−ε) + εe^{−λΔ}). Moreover, if the temperature λ satisfies λΔ ≥ log((1−ε)/ε), then Σ_{k∈A} α_k ≤ ε², reducing adversarial influence from linear (FedAvg: O(ε)) to quadratic in the fraction of corrupted clients.”"
	stmtThm36   = "Thm 3.6 (Heterogeneity Variance Reduction): “Let {g_k} be client gradient estimates, ḡ = (1/K)Σ_k g_k the uniform average, and ḡ_α = Σ_k α_k g_k the topology-weighted aggregate with Σ_k α_k = 1, α_k ≥ 0. Then Σ_k α_k‖g_k − ḡ_α‖² = Σ_k α_k‖g_k − ḡ‖² − ‖ḡ_α − ḡ‖² ≤ Σ_k α_k‖g_k − ḡ‖². Consequently, if topology-based weighting up-weights clients whose gradients are closer to the global mean, then Σ_k α_k‖g_k − ḡ_α‖² ≤ σ², where σ² is the variance under uniform weights.”"
	stmtThm37   = "Thm 3.7 (Information Contraction of Persistent Descriptors): “Assume: the loss ℓ(w; x, y) is L-Lipschitz in x; the operator Φ is c-stable; Φ outputs a bounded descriptor φ_k ∈ R^m. Then for any individual sample x_i, I(x_i; φ_k) ≤ (m/p)·(c²/L²)·I(x_i; G), where p is the model dimension. [...] In particular, when m ≪ p, the persistent descriptor leaks strictly less mutual information about any individual sample than the gradient does.”"
	stmtThm39   = "Thm 3.9 (Convergence of Wasserstein-Weighted FL): “Under Assumptions (A1)–(A5), the Wasserstein-weighted aggregation converges linearly: E‖wᵗ − w*‖² ≤ (1 − μ/L)^{τt}‖w⁰ − w*‖² + τσ²_eff/(μLα_min), where σ²_eff ≤ σ² is the effective variance after topology-guided clustering. The convergence rate (1 − μ/L)^{τt} matches FedAvg; the error floor is strictly smaller whenever the clustering is non-trivial.” (A3): “Local stochastic gradients satisfy E‖ĝ_k(w) − ∇F_k(w)‖² ≤ σ².”"
	stmtLemma   = "Lemma F.1 (Standard Local Update Bound): “Under Assumptions (A1)–(A3), for any client k and η ≤ 1/L: E‖w_k^{t+1} − w*‖² ≤ (1 − ημ)^τ‖wᵗ − w*‖² + η²τσ²/α_min.”"
	stmtProp311 = "Prop. 3.11 (Reduction of Effective Heterogeneity): “Under the topology-based weighting, the effective heterogeneity constant B²_α = Σ_k α_k‖∇F_k(w) − ∇F_α(w)‖² satisfies B²_α ≤ B², where B² = (1/K)Σ_k‖∇F_k(w) − ∇F(w)‖² is the FedAvg heterogeneity constant.”"
)

// Theory builds the report of `starter experiment theory`: a summary
// table of the verdicts, then one section per statement (Eq. 4, Thm 3.3
// with Cor. 3.4, Thm 3.5, Thm 3.6, Thm 3.7, Thm 3.9 with the appendix's
// Lemma, Prop. 3.11), each with the statement quoted, its premises as
// checked, the verdict, the numbers and, where one helps, a figure:
// theory_eq4 (W∞ against d_H), theory_thm35 (the adversaries' share
// against the bound and against FedAvg's share), theory_thm39 (E‖wᵗ −
// w*‖² against the bound per round). It returns an error when rep has no
// verdicts (it was not judged) or a figure cannot be drawn.
func Theory(rep theory.Report) (*Report, error) {
	if len(rep.Verdicts) == 0 {
		return nil, fmt.Errorf("report: theory: no verdicts (the report was not judged)")
	}
	verdict := map[string]theory.Verdict{}
	for _, v := range rep.Verdicts {
		verdict[v.Claim] = v
	}
	d := newDocument("", "The paper's theorems, checked on the system")
	d.para("Each statement of the pTopoFL paper that can be measured, measured on this system's own code and campaigns: %d pTopoFL campaigns of the durable pipeline (settings %s) on %d federations of the adversarial experiment (label-flipping sites among healthcare sites), the robustness τ = 1.8; the weights the aggregation applied are read off the stored models (least squares: the consensus model as a combination of the sites' local models), the descriptors are the ones the sites sent, and the data are the sites' own rows. Each section quotes the statement, lists its premises as checked, gives the verdict and the numbers. theory.json holds every number, round by round.", rep.Campaigns, strings.Join(rep.Settings, ", "), rep.Federations)
	var rows [][]string
	for _, v := range rep.Verdicts {
		rows = append(rows, []string{v.Claim, v.Verdict})
	}
	d.table([]string{"Statement", "Verdict"}, rows)

	if err := theoryEq4(d, rep, verdict[theory.ClaimEq4]); err != nil {
		return nil, err
	}
	theoryThm33(d, rep, verdict[theory.ClaimThm33], verdict[theory.ClaimCor34])
	if err := theoryThm35(d, rep, verdict[theory.ClaimThm35]); err != nil {
		return nil, err
	}
	theoryThm36(d, rep, verdict[theory.ClaimThm36])
	theoryThm37(d, rep, verdict[theory.ClaimThm37])
	if err := theoryThm39(d, rep, verdict[theory.ClaimThm39], verdict[theory.ClaimLemma]); err != nil {
		return nil, err
	}
	theoryProp311(d, rep, verdict[theory.ClaimProp311])
	return d.build(), nil
}

// section writes a statement's heading, quotation, premises and verdict.
func section(d *document, title, statement string, premises [][]string, v theory.Verdict) {
	d.heading(title)
	d.para("%s", statement)
	if len(premises) > 0 {
		d.table([]string{"Premise", "As checked here"}, premises)
	}
	d.para("Verdict: %s.", v.Verdict)
}

// g3 formats a measured number with three significant digits.
func g3(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf("%.3g", v)
}

func theoryEq4(d *document, rep theory.Report, v theory.Verdict) error {
	e := rep.Eq4
	section(d, "Eq. 4: stability of persistence diagrams", stmtEq4, [][]string{
		{"X, Y point clouds; Dgm the Vietoris–Rips diagrams (H0, H1)", "tda.VietorisRips of the Euclidean distances; W∞ is tda.Bottleneck, d_H tda.Hausdorff"},
		{"clouds", fmt.Sprintf("%d random pairs in R² (4–12 Gaussian points, a copy jittered by up to 0.3, every other pair one point dropped); %d pairs of a real site's descriptor subsample and the same rows moved by ρ (Cor. 3.4's perturbations)", e.Pairs, e.RealPairs)},
	}, v)
	d.table([]string{"Pairs", "Count", "Largest W∞/d_H", "Diagrams above d_H", "Above 2·d_H"}, [][]string{
		{"random clouds", fmt.Sprint(e.Pairs), fmt.Sprintf("%.3f", e.WorstRatio), fmt.Sprint(e.AboveOne), fmt.Sprint(e.AboveTwo)},
		{"site data", fmt.Sprint(e.RealPairs), fmt.Sprintf("%.3f", e.RealWorstRatio), fmt.Sprint(e.RealAboveOne), fmt.Sprint(e.RealAboveTwo)},
	})
	d.para("The inequality as printed has constant 1. For the Vietoris–Rips (diameter) filtration these diagrams use, the theorem that holds is W∞ ≤ 2·d_H (Chazal, Cohen-Steiner, Guibas, Mémoli, Oudot 2009, Thm 3.1: W∞ ≤ 2·d_GH ≤ 2·d_H; two points pushed apart by ε each give W∞ = 2ε, tda's TestStabilityHausdorff; with every filtration value halved the constant is 1).")
	p := newPlot("Eq. 4: W∞/d_H per pair", "d_H(X, Y)", "W∞(Dgm X, Dgm Y) / d_H(X, Y)")
	for i, src := range []struct {
		name string
		dim  int
	}{{"random", 0}, {"random", 1}, {"site data", 0}, {"site data", 1}} {
		var pts plotter.XYs
		for _, q := range e.Points {
			if q.Source == src.name && q.Dim == src.dim && q.DH > 0 {
				pts = append(pts, plotter.XY{X: q.DH, Y: q.W / q.DH})
			}
		}
		if len(pts) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return fmt.Errorf("report: theory: %w", err)
		}
		sc.GlyphStyle = glyphStyle(i)
		p.Add(sc)
		p.Legend.Add(fmt.Sprintf("%s, H%d", src.name, src.dim), sc)
	}
	for i, k := range []float64{1, 2} {
		f := plotter.NewFunction(func(float64) float64 { return k })
		f.LineStyle = draw.LineStyle{Color: colour(6), Width: vg.Points(1), Dashes: [][]vg.Length{nil, {vg.Points(4), vg.Points(3)}}[i]}
		p.Add(f)
		p.Legend.Add(fmt.Sprintf("W∞ = %g·d_H", k), f)
	}
	p.Y.Min, p.Y.Max = 0, 2.2
	fig, err := render("theory_eq4", "Eq. 4: the bottleneck distance W∞ between the Vietoris–Rips diagrams of two clouds over their Hausdorff distance d_H, one point per pair and dimension; above the solid line the paper's bound is broken, the dashed one is the factor-2 bound that holds.", [][]*plot.Plot{{p}})
	if err != nil {
		return err
	}
	d.figure(fig)
	return nil
}

func theoryThm33(d *document, rep theory.Report, v, vc theory.Verdict) {
	t := rep.Thm2
	section(d, "Thm 3.3 and Cor. 3.4: stability of the clustering", stmtThm33, [][]string{
		{"φ_k the descriptors the clustering reads", "the sites' round-1 descriptors from the campaigns, l2-normalised as the server normalises them (§3.3, Step 1); the margin and η are measured there"},
		{"hierarchical average-linkage clustering", "the system's: aggregation.ChooseClusters on the Euclidean distances (what aggregation.TopologyStep runs in round 1), checked equal to the partition the system computes from the descriptors as sent"},
		{"‖φ_k − φ̃_k‖ ≤ η", "every pair of sites in different clusters moved towards each other by η (the counterexample's move), every site moved alone by η towards the nearest site of each other cluster, and random moves of norm η of every site, for η from 0.05 to 2 times margin/2"},
	}, v)
	d.para("The counterexample: descriptors 0, 10 and 20.1 on a line with M = 2 cluster as %v; the margin is %.1f = 2η + γ with η = %.1f and γ = %.1f, and moving 10 to 10.1 gives %v. The margin condition bounds the separation between clusters, not how tight they are; and even perfectly tight clusters break within it: two sites of different clusters moved towards each other by η end m − 2η apart, nearer each other than their own clusters (η away) once η > m/3, below the m/2 the theorem covers (TestThm33TightClusters). A repaired condition, max within-cluster distance + 4η < min between-cluster distance, kept the partition on %d of %d random instances.", t.Before, t.Margin, t.Eta, t.Gamma, t.After, t.Instances-t.Broken, t.Instances)
	var rows [][]string
	for _, f := range rep.Thm33 {
		first := "none up to 2"
		if f.FirstBreak > 0 {
			first = g3(f.FirstBreak)
		}
		rep := "not separated"
		if f.RepairedEta > 0 {
			rep = g3(f.RepairedEta)
		}
		rows = append(rows, []string{f.Federation, fmt.Sprint(f.Clusters), g3(f.Margin), g3(f.MaxWithin), g3(f.EtaCovered), first, fmt.Sprintf("%d of %d", f.Broken, f.Tried), rep})
	}
	if len(rows) > 0 {
		d.table([]string{"Federation", "Clusters", "Margin", "Max within", "η covered (margin/2)", "First change at η/(margin/2)", "Changed within the covered η", "Repaired condition's η"}, rows)
	}
	d.para("%s", stmtCor34)
	d.table([]string{"Premise", "As checked here"}, [][]string{
		{"Φ has stability constant c", "measured: the largest W∞ between the diagrams a site computes (tda.ComputeDescriptor: its standardised subsample) before and after its rows move, over d_H of the rows; and the same for the 48 numbers it sends and for the normalised ones the clustering reads"},
		{"distributions differ by at least γ", "γ = the smallest bottleneck distance (H0 or H1) between the diagrams of two sites in different clusters"},
		{"data perturbations of magnitude at most γ/(2c)", "every training row of every site moved by a random vector of norm ρ (so d_H ≤ ρ), descriptors recomputed with the site's options and seed, all sites re-clustered by the system"},
	})
	d.para("Verdict: %s.", vc.Verdict)
	rows = nil
	for _, c := range rep.Cor34 {
		var changes []string
		for i, rho := range c.Rho {
			changes = append(changes, fmt.Sprintf("%g: %d/%d", rho, c.Changed[i], c.Draws))
		}
		rows = append(rows, []string{c.Federation, g3(c.Gamma), g3(c.CDiagram), g3(c.CNormalised), g3(c.CVector), g3(c.Radius), fmt.Sprintf("%d of %d", c.RadiusChanged, c.Draws), strings.Join(changes, ", ")})
	}
	if len(rows) > 0 {
		d.table([]string{"Federation", "γ", "c (diagrams)", "c (φ̂)", "c (φ)", "γ/(2c)", "Changed at ρ = γ/(2c)", "Changed at ρ (draws)"}, rows)
	}
}

func theoryThm35(d *document, rep theory.Report, v theory.Verdict) error {
	section(d, "Thm 3.5: suppression of adversarial influence", stmtThm35, [][]string{
		{"α_k, the aggregation weights", "the weight of each site's local model in the round's consensus Σ_c (|C_c|/K)·θ_c (the mean of the models the sites hold after the blend, Eq. 7), read off the stored models by least squares; the worst honest site's share is read off the model it holds"},
		{"δ_k, the anomaly distance", "descriptor detector: Eq. 8's mean distance between l2-normalised descriptors (the theorem's δ); labelled detector: its label score g_k (aggregation.LabelScores), the score its trust is exponential in"},
		{"λ, the temperature", "the slope of the system's trust rule t_k = exp(−max(z_k − 1, 0)) in the score's units: 1/σ_δ for z = (δ − δ̄)/σ_δ, τ/γ for z = τ·g/γ"},
		{"Δ > 0: every adversary at least δ_H + Δ", "measured every round: Δ = min over adversaries of the score minus the honest mean"},
		{"FedAvg's O(ε)", "the adversaries' share of the rows, Σ_A n_k/Σ n_k"},
	}, v)
	type key struct{ setting, level string }
	var order []key
	groups := map[key][]theory.Thm35Round{}
	for _, r := range rep.Thm35Rounds {
		k := key{r.Setting, r.Level}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	var rows [][]string
	for _, k := range order {
		rs := groups[k]
		var delta, lambda, share, worst, fed, bound []float64
		premise, holds, below := 0, 0, 0
		for _, r := range rs {
			delta, lambda, share = append(delta, r.Delta), append(lambda, r.Lambda), append(share, r.Share)
			worst, fed, bound = append(worst, r.WorstHonest), append(fed, r.FedAvgShare), append(bound, r.Bound)
			if r.Premise {
				premise++
				if r.Holds {
					holds++
				}
				if r.Suppressed {
					below++
				}
			}
		}
		rows = append(rows, []string{k.setting, k.level, fmt.Sprint(len(rs)), rs[0].Score + " " + meanText(delta), meanText(lambda),
			meanText(share), meanText(worst), meanText(fed), meanText(bound), fmt.Sprint(premise), fmt.Sprint(holds), fmt.Sprint(below)})
	}
	d.table([]string{"Detector", "Attack", "Rounds", "Δ (mean)", "λ", "Share", "Worst honest site's share", "FedAvg share", "Bound", "Premise holds", "Bound holds", "Below FedAvg"}, rows)
	d.para("Means over the rounds of every seed. The bound is the theorem's with the measured ε, λ and Δ; it is a claim only where the premise holds. Why the system's weights break it where its premise holds: the trust rule is 1 up to z = 1 (where the theorem's softmax keeps falling), it is clipped below at trust_min = 0.05, and the weights also carry n_k and the cluster structure (a cluster's weights are normalised within it, so trust does not move weight between clusters).")
	sb := rep.SoftmaxBound
	d.para("On the weights the theorem has in mind, α_k ∝ e^{−λδ_k}, the first bound is Jensen's inequality (broken on %d of %d random instances), and its ε² corollary fails: with λΔ = log((1 − ε)/ε) the bound is ε²/(1 − 2ε + 2ε²) > ε², attained by K = 4, ε = 1/4, honest δ = 1, adversary δ = 1 + ln 3, λ = 1 (weight %.4f against ε² = %.4f).", sb.Violations, sb.Instances, sb.TightShare, sb.TightEps2)

	settings := []string{}
	for _, r := range rep.Thm35Rounds {
		if !slices.Contains(settings, r.Setting) {
			settings = append(settings, r.Setting)
		}
	}
	pb := newPlot("Share against the bound (premise holds)", "the theorem's bound", "adversaries' share")
	pf := newPlot("Share against FedAvg's (every round)", "FedAvg share Σ_A n_k/Σ n_k", "adversaries' share")
	pb.X.Scale, pb.Y.Scale = plot.LogScale{}, plot.LogScale{}
	pb.X.Tick.Marker, pb.Y.Tick.Marker = logTicks{}, logTicks{}
	lo, hi := math.Inf(1), 0.0
	for i, s := range settings {
		var pts, fpts plotter.XYs
		for _, r := range rep.Thm35Rounds {
			if r.Setting != s {
				continue
			}
			fpts = append(fpts, plotter.XY{X: r.FedAvgShare, Y: r.Share})
			if r.Premise && r.Bound > 0 && r.Share > 0 {
				pts = append(pts, plotter.XY{X: r.Bound, Y: r.Share})
				lo, hi = math.Min(lo, math.Min(r.Bound, r.Share)), math.Max(hi, math.Max(r.Bound, r.Share))
			}
		}
		for _, pl := range []struct {
			p   *plot.Plot
			pts plotter.XYs
		}{{pb, pts}, {pf, fpts}} {
			if len(pl.pts) == 0 {
				continue
			}
			sc, err := plotter.NewScatter(pl.pts)
			if err != nil {
				return fmt.Errorf("report: theory: %w", err)
			}
			sc.GlyphStyle = glyphStyle(i)
			pl.p.Add(sc)
			pl.p.Legend.Add(s+" detector", sc)
		}
	}
	diag := func(p *plot.Plot, a, b float64) error {
		l, err := plotter.NewLine(plotter.XYs{{X: a, Y: a}, {X: b, Y: b}})
		if err != nil {
			return fmt.Errorf("report: theory: %w", err)
		}
		l.LineStyle = draw.LineStyle{Color: color.Gray{Y: 0x80}, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}
		p.Add(l)
		p.Legend.Add("share = x", l)
		return nil
	}
	if hi > 0 {
		if err := diag(pb, lo, hi); err != nil {
			return err
		}
	}
	flo, fhi := math.Inf(1), 0.0
	for _, r := range rep.Thm35Rounds {
		flo, fhi = math.Min(flo, math.Min(r.FedAvgShare, r.Share)), math.Max(fhi, math.Max(r.FedAvgShare, r.Share))
	}
	if fhi > 0 {
		if err := diag(pf, flo, fhi); err != nil {
			return err
		}
	}
	pb.Legend.Left, pf.Legend.Left = true, true
	fig, err := render("theory_thm35", "Thm 3.5 on the system's weights, one point per campaign round: left, the adversaries' share of the consensus weight against the theorem's bound (rounds where its premise holds; above the dashed line the bound is broken); right, against their FedAvg share (below the line the weights suppress them).", [][]*plot.Plot{{pb, pf}})
	if err != nil {
		return err
	}
	d.figure(fig)
	return nil
}

// meanText formats the mean of v with three significant digits.
func meanText(v []float64) string {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return g3(s / float64(len(v)))
}

func theoryThm36(d *document, rep theory.Report, v theory.Verdict) {
	section(d, "Thm 3.6: heterogeneity variance reduction", stmtThm36, [][]string{
		{"the displayed equation", fmt.Sprintf("the parallel-axis identity: true of any vectors and any weights summing to 1, so it cannot fail (largest relative error %.1e over %d random instances, rounding)", rep.Identity.WorstIdentity, rep.Identity.Instances)},
		{"g_k, client gradient estimates", "each site's update θ_k − θ_k^start in a round (τ local steps: −lr times a sum of gradients), from the stored models, rounds 2 on"},
		{"α_k, topology weights", "the consensus weights the aggregation applied, read off the stored models"},
		{"“up-weights clients whose gradients are closer to the global mean”", "Pearson's r between α_k and ‖g_k − ḡ‖ is negative"},
	}, v)
	var rows [][]string
	for _, c := range rep.Thm36 {
		rows = append(rows, []string{c.Setting, fmt.Sprint(c.Rounds), fmt.Sprint(c.Premise), fmt.Sprint(c.Holds), fmt.Sprint(c.HoldsWithPremise)})
	}
	if len(rows) > 0 {
		d.table([]string{"Detector", "Rounds", "Premise (r < 0)", "Σα‖g−ḡ_α‖² ≤ σ²", "Both"}, rows)
	}
	var ratio []float64
	for _, r := range rep.Thm36Rounds {
		if r.Sigma2 > 0 {
			ratio = append(ratio, r.Weighted/r.Sigma2)
		}
	}
	if len(ratio) > 0 {
		slices.Sort(ratio)
		d.para("The weighted variance over σ² ranges from %s to %s (median %s): the gain term ‖ḡ_α − ḡ‖² is what the weights buy.", g3(ratio[0]), g3(ratio[len(ratio)-1]), g3(ratio[len(ratio)/2]))
	}
}

func theoryThm37(d *document, rep theory.Report, v theory.Verdict) {
	t := rep.Thm37
	if t == nil {
		return
	}
	section(d, "Thm 3.7: information contraction of the descriptor", stmtThm37, [][]string{
		{"ℓ(w; x, y) is L-Lipschitz in x", fmt.Sprintf("holds: for logistic regression L = ‖w‖ of the coefficients (|σ(z) − y| ≤ 1), %s at the site's round-1 model", g3(t.LipschitzX))},
		{"Φ is c-stable", fmt.Sprintf("for the diagrams, c = 2 (Eq. 4's section); for the %d numbers a site releases, the measured ‖Δφ‖/d_H reaches %s (Betti counts jump), so the vector the theorem bounds is not c-stable with a small c", t.M, g3(t.CVector))},
		{"bounded φ_k ∈ R^m", fmt.Sprintf("holds (m = %d: the paper's 48 numbers and the label-aware summary)", t.M)},
		{"m ≪ p", fmt.Sprintf("fails for the paper's own model: p = %d parameters of logistic regression on %d features, m/p = %.2f", t.P, t.P-1, float64(t.M)/float64(t.P))},
		{"I(x_i; φ), I(x_i; G)", "no mutual information is measurable here; what is measured is what an attacker learns of a record's membership from one release, with one attack for all releases"},
	}, v)
	d.para("The attack: it knows the site's %d records and the canary, sees one release, and tells D from D ∪ {canary} (package audit's distinguishing test, %d trials a world: a normal fit per coordinate on half the releases, the log likelihood ratio on the other half). The outlier canary lies 5 times the largest row norm away; the typical one is a test row of the site. The releases are the same site's: the paper's descriptor with a subsample drawn from a secret stream in every trial (the privacy experiment's attack), the descriptor as the site computes it (its subsample seed is derived from the campaign seed in the spec, so an attacker can draw it too), the model the site sends after round 1, and the gradient ∇F_k at the model it starts from.", t.Records, t.Trials)
	var rows [][]string
	for _, a := range t.Attacks {
		rows = append(rows, []string{a.Release, a.Canary, fmt.Sprintf("%.3f", a.AUC), fmt.Sprintf("%.3f", a.TPRAt0001), fmt.Sprintf("%.2f", a.EpsilonLB)})
	}
	d.table([]string{"Release", "Canary", "AUC", "TPR at 0.1 % FPR", "ε lower bound"}, rows)
	if len(t.Costs) > 0 {
		rows = nil
		for _, c := range t.Costs {
			rows = append(rows, []string{c.Release, g3(c.Noise), g3(c.Epsilon)})
		}
		d.para("Under dp record every release is a Gaussian mechanism and the accountant prices it. A campaign planned at ε = %g (δ = %g) over the federation's sites (method.PlanPrivacy, the defaults dp record brings: one descriptor release, in round 1) spends, at this site:", t.DPEpsilon, t.Delta)
		d.table([]string{"One release of", "Noise multiplier", "ε"}, rows)
		rows = nil
		for _, a := range t.DPAttacks {
			rows = append(rows, []string{a.Release, a.Canary, g3(a.Epsilon), fmt.Sprintf("%.3f", a.AUC), fmt.Sprintf("%.2f", a.EpsilonLB)})
		}
		if len(rows) > 0 {
			d.para("The campaign's whole budget is %s at this site. The DP descriptor (tda.DPDescriptor, what a site releases under dp record instead of the paper's) attacked at its release's ε:", g3(t.Campaign))
			d.table([]string{"Release", "Canary", "ε", "AUC", "ε lower bound"}, rows)
		}
	}
}

func theoryThm39(d *document, rep theory.Report, v, lemma theory.Verdict) error {
	section(d, "Thm 3.9 and the Lemma: convergence", stmtThm39, [][]string{
		{"(A1) L-smooth, (A2) μ-strongly convex", "the theorem's own problem, since the system's objective leaves the intercept unpenalised (not strongly convex): F_k = mean logistic loss + (μ0/2)‖w‖² on the site's standardised rows, μ = μ0, L = max_k λ_max(X̃ᵀX̃)/(4n_k) + μ0"},
		{"(A3) stochastic variance ≤ σ²", "local SGD on minibatches of b rows drawn with replacement; σ² = the largest E‖ĝ − ∇F_k‖² = (1/b)·(per-row variance) at every point the runs stepped from (full batch: σ² = 0)"},
		{"(A5) α_k ≥ α_min > 0", "FedAvg's n_k/n and Eq. 12's softmax weights on the sites' round-1 descriptors (aggregation.SoftmaxWeights, the system's), fixed over rounds"},
		{"τ SGD steps at η = 1/L", "as stated; E over 8 runs (1 for full batch)"},
		{"the rate “(1 − μ/L)^{τt}”", "fitted as the theorem states it: E‖wᵗ − w*‖² ≈ a·ρ̂ᵗ + b by least squares over every round"},
		{"σ²_eff ≤ σ²", "the bound is evaluated with A3's σ² (σ²_eff needs c and Wasserstein radii the appendix does not fix); its Step 7 reads σ² as heterogeneity plus local variance, so theory.json also holds the bound with σ² + B²"},
	}, v)
	var rows [][]string
	for _, c := range rep.Convergence {
		for _, r := range c.Runs {
			rows = append(rows, []string{c.Federation, fmt.Sprintf("μ0 %g, τ %d, b %s", c.Options.Mu0, c.Options.Steps, batchText(c.Options.Batch)),
				r.Name, g3(c.Sigma2), g3(c.B2), g3(c.Dist0), fmt.Sprintf("%.4f", c.TheoremRate), fmt.Sprintf("%.4f", r.Rate),
				g3(r.Floor), g3(r.Bound[len(r.Bound)-1]), yesNo(r.BoundHolds), yesNo(r.Vacuous)})
		}
	}
	d.table([]string{"Federation", "Regime", "Weights", "σ²", "B²", "‖w⁰ − w*‖²", "Theorem's rate", "Fitted ρ̂", "Measured floor", "Bound's floor", "Bound holds", "Vacuous"}, rows)
	d.para("%s", stmtLemma)
	d.para("Verdict: %s. Checked at rounds 0, 1, 2, 5, 20 and 100 of each regime's first run, every site, the expectation over 64 draws of the site's τ local steps from wᵗ; a site-round is broken when the mean left side exceeds the right by more than two standard errors.", lemma.Verdict)
	rows = nil
	for _, c := range rep.Convergence {
		rows = append(rows, []string{c.Federation, fmt.Sprintf("μ0 %g, τ %d, b %s", c.Options.Mu0, c.Options.Steps, batchText(c.Options.Batch)),
			fmt.Sprintf("%d of %d", c.Lemma.Violations, c.Lemma.Checked), g3(c.Lemma.WorstRatio)})
	}
	d.table([]string{"Federation", "Regime", "Broken site-rounds", "Largest left/right"}, rows)

	// The figure: the first federation, one panel per regime.
	if len(rep.Convergence) == 0 {
		return nil
	}
	var panels []*plot.Plot
	for _, c := range rep.Convergence {
		if c.Federation != rep.Convergence[0].Federation {
			continue
		}
		p := newPlot(fmt.Sprintf("μ0 %g, τ %d, batch %s", c.Options.Mu0, c.Options.Steps, batchText(c.Options.Batch)), "round t", "E‖wᵗ − w*‖²")
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, logTicks{}
		for i, r := range c.Runs {
			x := make([]float64, len(r.Dist))
			for t := range x {
				x[t] = float64(t)
			}
			if err := addLine(p, r.Name, x, positive(r.Dist), lineStyle(i), draw.GlyphStyle{}); err != nil {
				return fmt.Errorf("report: theory: %w", err)
			}
			bs := lineStyle(i)
			bs.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			if err := addLine(p, r.Name+" bound", x, positive(r.Bound), bs, draw.GlyphStyle{}); err != nil {
				return fmt.Errorf("report: theory: %w", err)
			}
		}
		panels = append(panels, p)
	}
	fig, err := render("theory_thm39", fmt.Sprintf("Thm 3.9 on %s: E‖wᵗ − w*‖² per round (solid) against the theorem's bound (dashed), one panel per regime.", rep.Convergence[0].Federation), [][]*plot.Plot{panels})
	if err != nil {
		return err
	}
	d.figure(fig)
	return nil
}

// positive replaces values that a log axis cannot show by NaN (a gap).
func positive(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = x
		if !(x > 0) {
			out[i] = math.NaN()
		}
	}
	return out
}

func batchText(b int) string {
	if b == 0 {
		return "full"
	}
	return fmt.Sprint(b)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func theoryProp311(d *document, rep theory.Report, v theory.Verdict) {
	section(d, "Prop. 3.11: reduction of effective heterogeneity", stmtProp311, [][]string{
		{"∇F_k(w)", "each site's exact gradient of its local objective (package learn's, on the rows it trains on) at the round's consensus start model, rounds 2 on"},
		{"∇F(w)", "Σ_k p_k ∇F_k with p_k = n_k/n (Eq. 1)"},
		{"α_k, the topology-based weighting", "the consensus weights the aggregation applied (clusters, Eqs. 6–7), read off the stored models; and Eq. 12's softmax weights on the same descriptors"},
	}, v)
	type counts struct{ n, held, soft int }
	var order []string
	by := map[string]*counts{}
	for _, p := range rep.Prop311 {
		c, ok := by[p.Setting]
		if !ok {
			c = &counts{}
			by[p.Setting] = c
			order = append(order, p.Setting)
		}
		c.n++
		if p.Holds {
			c.held++
		}
		if p.HoldsSoftmax {
			c.soft++
		}
	}
	var rows [][]string
	for _, s := range order {
		c := by[s]
		rows = append(rows, []string{s, fmt.Sprint(c.n), fmt.Sprint(c.held), fmt.Sprint(c.soft)})
	}
	if len(rows) > 0 {
		d.table([]string{"Detector", "Rounds", "B²_α ≤ B² (system's weights)", "B²_α ≤ B² (softmax weights)"}, rows)
	}
	d.para("As a statement about weights it cannot hold in general: site gradients 0, 0 and 10 give B² = 200/9 ≈ 22.2, and weights (½, 0, ½) give B²_α = 25. On the system's weights it is a measurement.")
}

// logTicks marks a log axis at every integer times every power of ten in
// its range, labelling 1, 2 and 5 times them when the range spans at most
// three decades and the powers of ten otherwise: gonum's LogTicks labels
// only the powers of ten, which a range inside one decade does not contain.
type logTicks struct{}

// Ticks implements plot.Ticker.
func (logTicks) Ticks(min, max float64) []plot.Tick {
	var out []plot.Tick
	wide := math.Log10(max)-math.Log10(min) > 3
	for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
		p := math.Pow(10, e)
		for m := 1.0; m < 10; m++ {
			v := m * p
			if v < min*(1-1e-9) || v > max*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || (!wide && (m == 2 || m == 5)) {
				t.Label = strconvG(v)
			}
			out = append(out, t)
		}
	}
	return out
}

// strconvG formats a tick value compactly ("0.002", "5e+03").
func strconvG(v float64) string { return fmt.Sprintf("%.3g", v) }
