package report

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"

	"github.com/ptopofl/ptopofl/eval"
)

// Privacy builds the privacy report: the paper's arithmetic (§3.6, §4.6,
// Fig. 6: the reconstruction risk ρ of Eqs. 10–11 from vector lengths and
// an assumed α_c, and the mutual-information proxy), labelled as such,
// beside what the site actually releases each round and what attacks and
// an audit measure of it: (a) the inversion of one-record site updates,
// (b) LiRA membership inference against site models (Carlini et al.
// 2022), (c) membership inference against descriptors, (d) a Dirac-canary
// audit of the DP mechanism against the accountant (Jagielski et al. 2020;
// Nasr et al. 2023), and (e) the utility each budget costs. Its figures:
// fig6_privacy, (A) the paper's ρ per site, (B) attack success against ε,
// (C) the numbers a site releases per round; fig_privacy_utility, the
// utility against ε. Beside report.md it writes results.json (Assets):
// audit, reconstruction, membership and utility, the contract scripts
// read. It returns an error when a part is empty.
func Privacy(in PrivacyInput) (*Report, error) {
	switch {
	case len(in.Federations) == 0:
		return nil, fmt.Errorf("report: privacy: no federations")
	case len(in.Reconstruction) == 0 || len(in.Membership) == 0 || len(in.Audit) == 0 || len(in.Utility) == 0:
		return nil, fmt.Errorf("report: privacy: a measured part is empty (reconstruction %d, membership %d, audit %d, utility %d rows)",
			len(in.Reconstruction), len(in.Membership), len(in.Audit), len(in.Utility))
	}
	d := newDocument(in.Title, "Privacy: what a site releases, what attacks recover, what differential privacy costs")
	d.para("The paper's privacy figures are arithmetic: ρ = I_trans/(n·d) from vector lengths and an assumed compression α_c, so ρ_topo/ρ_grad = m·α_c/p for every site, counting the descriptor while the same site also sends its model. This report puts them beside what a site releases and what attacks measure, without differential privacy and under dp record at each budget ε (δ = 1e-5).")

	first := in.Federations[0].Report
	d.heading("The paper's claim and what is measured")
	recon := func(eps float64) string {
		for _, r := range in.Reconstruction {
			if r.Epsilon == eps {
				return fmt.Sprintf("%.3g", r.MedianError)
			}
		}
		return "–"
	}
	lira := func(scenario string, eps float64) string {
		for _, m := range in.Membership {
			if m.Target == "model" && m.Scenario == scenario && m.Epsilon == eps {
				return fmt.Sprintf("%.3f", m.AUC)
			}
		}
		return "–"
	}
	sent := releaseTotal(in.Releases, "ptopofl", 0)
	d.table([]string{"", "the paper's arithmetic", "measured"}, [][]string{
		{"reconstruction", fmt.Sprintf("ρ_topo/ρ_grad = %.3f: a %.1f-fold lower risk from sending a descriptor instead of a gradient (the paper: \"4.5× lower reconstruction risk\")", first.RiskRatio, 1/first.RiskRatio),
			fmt.Sprintf("a site sends its model too; a one-record site's update is inverted with median relative error %s without DP (exact), %s at ε = 8, %s at ε = 1", recon(0), recon(8), recon(1))},
		{"membership", fmt.Sprintf("mutual-information proxy %.2f bits (gradient) against %.2f (descriptor)", first.GradientMI, first.DescriptorMI),
			fmt.Sprintf("LiRA against site models: AUC %s without DP, %s at ε = 8, %s at ε = 1 (healthcare)", lira("healthcare", 0), lira("healthcare", 8), lira("healthcare", 1))},
		{"what is sent", fmt.Sprintf("p = %d model parameters against m = %d descriptor entries", first.Settings.ModelParams, first.Settings.DescriptorDim),
			fmt.Sprintf("a pTopoFL site sends %d numbers in round 1 (model, descriptor, label summary, metrics), more than a FedAvg site (%d)", sent, releaseTotal(in.Releases, "fedavg", 0))},
	})

	d.heading("What a site releases per round")
	d.para("From the manifests' record of what each site released (the first site of the first healthcare federation; every site releases alike).")
	var relRows [][]string
	for _, r := range in.Releases {
		var parts []string
		total := 0
		for i, k := range r.Kinds {
			parts = append(parts, fmt.Sprintf("%s %d", k, r.Numbers[i]))
			total += r.Numbers[i]
		}
		relRows = append(relRows, []string{r.Method, epsLabel(r.Epsilon), fmt.Sprint(r.Round), strings.Join(parts, ", "), fmt.Sprint(total)})
	}
	d.table([]string{"Method", "ε", "Round", "Released", "Numbers"}, relRows)

	d.heading("(a) Reconstruction from a logistic site update")
	d.para("A one-record site takes one gradient step from a model the server knows and sends the result; the server inverts it: for logistic regression with an intercept, one record's gradient is g_w = r·x, g_b = r, so x = g_w/g_b (Zhu et al. 2019; Zhao et al. 2020). Under DP the step is DP-GD with the noise of one ε-DP release.")
	var rr [][]string
	for _, r := range in.Reconstruction {
		rr = append(rr, []string{epsLabel(r.Epsilon), fmt.Sprintf("%.3g", r.MedianError), fmt.Sprintf("%.3g", r.MaxError), fmt.Sprint(r.Records)})
	}
	d.table([]string{"ε", "median relative error", "largest", "records"}, rr)

	d.heading("(b, c) Membership inference")
	d.para("Against site models: LiRA (Carlini et al. 2022) with in and out shadow models, the logit-scaled confidence of the true label, per-record Gaussians and the likelihood ratio; the ROC is over (target model, record) pairs. Against descriptors: the descriptor of a site with a canary record and without it (its slot a null record), many times with fresh randomness, and the strongest attacker that knows the rest of the data. TPR at a false-positive rate of 0.1 %% and 1 %%; chance is an AUC of 0.5 and a TPR equal to the FPR.")
	var mr [][]string
	for _, m := range in.Membership {
		what := m.Scenario
		if m.Target == "descriptor" {
			what = fmt.Sprintf("%s canary, %s descriptor", m.Canary, m.Condition)
		}
		mr = append(mr, []string{m.Target, what, epsLabel(m.Epsilon), fmt.Sprintf("%.3f", m.AUC), fmt.Sprintf("%.4f", m.TPRAt0001), fmt.Sprintf("%.4f", m.TPRAt001)})
	}
	d.table([]string{"Target", "What", "ε", "AUC", "TPR at FPR 0.1 %", "TPR at FPR 1 %"}, mr)

	d.heading("(d) DP audit against the accountant")
	d.para("Every mechanism by which a site releases under dp record, audited through the site's own code (the functions its activities call) with a canary (Jagielski et al. 2020; Nasr et al. 2023), in or out of a site's data: DP-GD, a Dirac canary whose clipped gradient has norm C with every step visible to the auditor (q = 1, the federated threat model, where auditing is tight); DP-SGD at the deep presets' sampling rate, a canary on weights no other record moves, seen only through the round's model, as the server sees it (a final-model audit of subsampled DP-SGD is loose by nature); the DP descriptor, the label summary and the metrics (score counts, top-1 count), a canary record chosen to move the noiseless release most, scored by the Neyman–Pearson test of the noisy release. The lower bound is from Clopper–Pearson bounds on the test's error rates, its threshold chosen on a tenth of the trials and the bounds taken on the rest; it must never exceed the accountant's ε (that would be a bug). Where the canary attains the release's sensitivity (DP-GD, the metrics) it should reach a good share of ε.")
	var ar [][]string
	for _, a := range in.Audit {
		ok := "yes"
		if a.LowerBound > a.Epsilon {
			ok = "NO: a bug"
		}
		mech, q := a.Mechanism, a.SamplingRate
		if mech == "" {
			mech = "dp-gd"
		}
		if q == 0 {
			q = 1
		}
		ar = append(ar, []string{mech, fmt.Sprintf("%.3f", a.Epsilon), fmt.Sprintf("%.3f", a.LowerBound), fmt.Sprintf("%.2f", a.LowerBound/a.Epsilon),
			fmt.Sprint(a.Steps), fmt.Sprintf("%.4g", q), fmt.Sprintf("%.4g", a.NoiseMultiplier), fmt.Sprint(a.Trials), ok})
	}
	d.table([]string{"mechanism", "accountant's ε", "audit's ε lower bound", "ratio", "steps", "sampling rate", "noise multiplier", "trials per world", "within"}, ar)

	d.heading("(e) What differential privacy costs")
	d.para("Mean ± standard deviation over seeds of each method's final score, scored exactly on the sites' test splits with the models the sites hold after the last round; beside it, the mean of what the sites released (under DP, their noised metrics).")
	var ur [][]string
	for _, u := range in.Utility {
		m, sd := eval.MeanStd(u.Values)
		rel, _ := eval.MeanStd(u.Released)
		exact := fmt.Sprintf("%.4f ± %.4f", m, sd)
		if len(u.Values) == 1 {
			exact = fmt.Sprintf("%.4f", m)
		}
		ur = append(ur, []string{u.Scenario, u.Method, epsLabel(u.Epsilon), u.Metric, exact, fmt.Sprintf("%.4f", rel), fmt.Sprint(len(u.Values))})
	}
	d.table([]string{"Scenario", "Method", "ε", "Metric", "exact", "released", "seeds"}, ur)

	d.heading("The paper's arithmetic")
	d.para("Reconstruction risk ρ_grad = min(1, p/(n·d)) of sending a gradient and ρ_topo = m/(n·d)·α_c of sending a topological descriptor (Eqs. 10–11), and the mutual-information proxy log2(1 + dim·α_c): the paper's proxies, computed from sizes, not a measurement and not a differential-privacy guarantee.")
	var siteLabels []string
	var gradRisk, topoRisk []float64
	for _, f := range in.Federations {
		r := f.Report
		if len(r.Sites) == 0 {
			return nil, fmt.Errorf("report: privacy: federation %q has no sites", f.Name)
		}
		d.para("Federation %s: d = %d features, p = %d model parameters, m = %d descriptor entries, α_c = %g.", f.Name, r.Settings.Features, r.Settings.ModelParams, r.Settings.DescriptorDim, r.Settings.Compression)
		var rows [][]string
		for _, s := range r.Sites {
			rows = append(rows, []string{s.Site, fmt.Sprint(s.N), fmtRisk(s.GradientRisk), fmtRisk(s.DescriptorRisk)})
			if f.Name == in.Federations[0].Name {
				siteLabels = append(siteLabels, s.Site)
				gradRisk = append(gradRisk, s.GradientRisk)
				topoRisk = append(topoRisk, s.DescriptorRisk)
			}
		}
		rows = append(rows, []string{"mean", "", fmtRisk(r.MeanGradientRisk), fmtRisk(r.MeanDescriptorRisk)})
		d.table([]string{"Site", "n", "ρ_grad", "ρ_topo"}, rows)
		d.para("Risk ratio ρ_topo/ρ_grad of the means: %.3f (a %.1f-fold reduction). Mutual-information proxy: %.2f bits for gradients, %.2f bits for descriptors.", r.RiskRatio, 1/r.RiskRatio, r.GradientMI, r.DescriptorMI)
	}

	figs, err := privacyFigures(in, siteLabels, gradRisk, topoRisk)
	if err != nil {
		return nil, err
	}
	d.heading("Figures")
	for _, f := range figs {
		d.figure(f)
	}
	rep := d.build()
	b, err := PrivacyResults(in)
	if err != nil {
		return nil, err
	}
	rep.Assets["results.json"] = b
	return rep, nil
}

// epsLabel is "none" for 0 (without DP) and ε otherwise.
func epsLabel(eps float64) string {
	if eps == 0 {
		return "none"
	}
	return fmt.Sprint(eps)
}

// releaseTotal is the numbers a site of method released in round 1 at
// budget eps (0: without DP).
func releaseTotal(rows []ReleaseRow, method string, eps float64) int {
	for _, r := range rows {
		if r.Method == method && r.Epsilon == eps && r.Round == 1 {
			t := 0
			for _, n := range r.Numbers {
				t += n
			}
			return t
		}
	}
	return 0
}

func privacyFigures(in PrivacyInput, siteLabels []string, gradRisk, topoRisk []float64) ([]figure, error) {
	nanOf := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = nanValue
		}
		return v
	}
	pa := newPlot("(A) The paper's ρ (arithmetic)", "", "ρ")
	addGroupedBars(pa, siteLabels, []string{"gradient", "descriptor"}, [][]float64{gradRisk, topoRisk}, [][]float64{nanOf(len(gradRisk)), nanOf(len(topoRisk))}, []int{1, 0})
	pa.X.Tick.Label.Rotation = 0.6
	pa.X.Tick.Label.XAlign, pa.X.Tick.Label.YAlign = -1, -0.5

	// (B) attack success against ε: membership AUC per attack.
	budgets := budgetsOf(in)
	labels := make([]string, len(budgets))
	for i, e := range budgets {
		labels[i] = "ε " + epsLabel(e)
	}
	type attack struct {
		name string
		hit  func(MembershipRow) bool
	}
	attacks := []attack{
		{"LiRA, healthcare", func(m MembershipRow) bool { return m.Target == "model" && m.Scenario == "healthcare" }},
		{"LiRA, deep-small", func(m MembershipRow) bool { return m.Target == "model" && m.Scenario == "deep-small" }},
		{"descriptor, outlier", func(m MembershipRow) bool {
			return m.Target == "descriptor" && m.Canary == "outlier" && (m.Condition == "dp" || m.Epsilon == 0)
		}},
	}
	var series []string
	var vals, errs [][]float64
	for _, a := range attacks {
		v := nanOf(len(budgets))
		found := false
		for _, m := range in.Membership {
			if a.hit(m) {
				if i := slices.Index(budgets, m.Epsilon); i >= 0 {
					v[i], found = m.AUC, true
				}
			}
		}
		if found {
			series, vals, errs = append(series, a.name), append(vals, v), append(errs, nanOf(len(budgets)))
		}
	}
	pb := newPlot("(B) Membership inference against ε", "", "attack AUC (0.5: chance)")
	cols := make([]int, len(series))
	for i := range cols {
		cols[i] = i
	}
	addGroupedBars(pb, labels, series, vals, errs, cols)

	// (C) numbers a site releases in round 1, by method and kind.
	var cats []string
	kinds := []string{}
	for _, r := range in.Releases {
		if r.Round != 1 {
			continue
		}
		cats = append(cats, r.Method+" ε "+epsLabel(r.Epsilon))
		for _, k := range r.Kinds {
			if !slices.Contains(kinds, k) {
				kinds = append(kinds, k)
			}
		}
	}
	cv := make([][]float64, len(kinds))
	for k := range kinds {
		cv[k] = nanOf(len(cats))
	}
	c := 0
	for _, r := range in.Releases {
		if r.Round != 1 {
			continue
		}
		for i, kind := range r.Kinds {
			cv[slices.Index(kinds, kind)][c] = float64(r.Numbers[i])
		}
		c++
	}
	ce := make([][]float64, len(kinds))
	kc := make([]int, len(kinds))
	for k := range kinds {
		ce[k], kc[k] = nanOf(len(cats)), k
	}
	pc := newPlot("(C) What a site releases in round 1", "", "numbers")
	addGroupedBars(pc, cats, kinds, cv, ce, kc)
	pc.X.Tick.Label.Rotation = 0.6
	pc.X.Tick.Label.XAlign, pc.X.Tick.Label.YAlign = -1, -0.5
	fig6, err := render("fig6_privacy", "Fig. 6: (A) the paper's reconstruction risk per site (arithmetic), (B) membership inference against site models and descriptors at each budget, (C) what a site releases in round 1, by kind.", [][]*plot.Plot{{pa, pb, pc}})
	if err != nil {
		return nil, err
	}

	// Utility against ε, one panel per scenario.
	var panels []*plot.Plot
	utilLegend := plot.NewLegend()
	var utilMethods []string
	for _, sc := range scenariosOf(in.Utility) {
		var methods []string
		for _, u := range in.Utility {
			if u.Scenario == sc && !slices.Contains(methods, u.Method) {
				methods = append(methods, u.Method)
			}
		}
		metric := ""
		v := make([][]float64, len(methods))
		e := make([][]float64, len(methods))
		for k, m := range methods {
			v[k], e[k] = nanOf(len(budgets)), nanOf(len(budgets))
			for _, u := range in.Utility {
				if u.Scenario == sc && u.Method == m {
					if i := slices.Index(budgets, u.Epsilon); i >= 0 && len(u.Values) > 0 {
						v[k][i], e[k][i] = eval.MeanStd(u.Values)
						metric = u.Metric
					}
				}
			}
		}
		p := newPlot(sc, "", metric)
		mc := make([]int, len(methods))
		for i := range mc {
			mc[i] = i
		}
		addGroupedBars(p, labels, methods, v, e, mc)
		p.Y.Min, p.Y.Max = 0, 1 // final AUC and accuracy lie in [0, 1]
		p.Legend = plot.NewLegend()
		panels = append(panels, p)
		for k, m := range methods {
			if !slices.Contains(utilMethods, m) {
				utilMethods = append(utilMethods, m)
				utilLegend.Add(m, &bars{Color: colour(mc[k])})
			}
		}
	}
	util, err := renderWithLegend("fig_privacy_utility", "Utility against the budget ε: each method's final score (mean ± std over seeds, scored exactly), per scenario.", [][]*plot.Plot{panels}, &utilLegend)
	if err != nil {
		return nil, err
	}
	return []figure{fig6, util}, nil
}

// budgetsOf lists the budgets of the report: none (0) first, then the
// others from the largest to the smallest.
func budgetsOf(in PrivacyInput) []float64 {
	seen := []float64{0}
	add := func(e float64) {
		if !slices.Contains(seen, e) {
			seen = append(seen, e)
		}
	}
	for _, u := range in.Utility {
		add(u.Epsilon)
	}
	for _, m := range in.Membership {
		add(m.Epsilon)
	}
	slices.SortFunc(seen[1:], func(a, b float64) int {
		switch {
		case a > b:
			return -1
		case a < b:
			return 1
		}
		return 0
	})
	return seen
}

func scenariosOf(us []UtilityRow) []string {
	var out []string
	for _, u := range us {
		if !slices.Contains(out, u.Scenario) {
			out = append(out, u.Scenario)
		}
	}
	return out
}

// fmtRisk formats a reconstruction risk with four significant digits.
func fmtRisk(v float64) string { return fmt.Sprintf("%.4g", v) }

// PrivacyResults is results.json of the privacy experiment, the contract
// scripts read (it must hold): audit (epsilon, the accountant's, and
// epsilon_lower_bound; also mechanism, steps, sampling_rate,
// noise_multiplier, trials), reconstruction (dp, epsilon or null,
// relative_error: the median), membership (target "model" or
// "descriptor", epsilon or null, auc, tpr_at_fpr_0_001, tpr_at_fpr_0_01;
// also scenario, canary and condition) and utility (method, scenario,
// epsilon or null, final_auc or final_acc: the mean over seeds of the
// exact scores; also seeds and released). An ε of 0 (without DP) is
// written as null.
func PrivacyResults(in PrivacyInput) ([]byte, error) {
	eps := func(e float64) *float64 {
		if e == 0 {
			return nil
		}
		return &e
	}
	type auditJ struct {
		Mechanism       string  `json:"mechanism"`
		Epsilon         float64 `json:"epsilon"`
		LowerBound      float64 `json:"epsilon_lower_bound"`
		Steps           int     `json:"steps"`
		SamplingRate    float64 `json:"sampling_rate"`
		NoiseMultiplier float64 `json:"noise_multiplier"`
		Trials          int     `json:"trials"`
	}
	type reconJ struct {
		DP            bool     `json:"dp"`
		Epsilon       *float64 `json:"epsilon"`
		RelativeError float64  `json:"relative_error"`
		MaxError      float64  `json:"max_relative_error"`
		Records       int      `json:"records"`
	}
	type memberJ struct {
		Target    string   `json:"target"`
		Scenario  string   `json:"scenario,omitempty"`
		Canary    string   `json:"canary,omitempty"`
		Condition string   `json:"condition,omitempty"`
		Epsilon   *float64 `json:"epsilon"`
		AUC       float64  `json:"auc"`
		TPR0001   float64  `json:"tpr_at_fpr_0_001"`
		TPR001    float64  `json:"tpr_at_fpr_0_01"`
	}
	type utilJ struct {
		Method   string   `json:"method"`
		Scenario string   `json:"scenario"`
		Epsilon  *float64 `json:"epsilon"`
		FinalAUC *float64 `json:"final_auc,omitempty"`
		FinalAcc *float64 `json:"final_acc,omitempty"`
		Seeds    int      `json:"seeds"`
		Released float64  `json:"released"`
	}
	out := struct {
		Audit          []auditJ  `json:"audit"`
		Reconstruction []reconJ  `json:"reconstruction"`
		Membership     []memberJ `json:"membership"`
		Utility        []utilJ   `json:"utility"`
	}{Audit: []auditJ{}, Reconstruction: []reconJ{}, Membership: []memberJ{}, Utility: []utilJ{}}
	finite := func(v float64) float64 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return -1
		}
		return v
	}
	for _, a := range in.Audit {
		mech, q := a.Mechanism, a.SamplingRate
		if mech == "" {
			mech = "dp-gd"
		}
		if q == 0 {
			q = 1
		}
		out.Audit = append(out.Audit, auditJ{mech, a.Epsilon, a.LowerBound, a.Steps, q, a.NoiseMultiplier, a.Trials})
	}
	for _, r := range in.Reconstruction {
		out.Reconstruction = append(out.Reconstruction, reconJ{r.Epsilon != 0, eps(r.Epsilon), finite(r.MedianError), finite(r.MaxError), r.Records})
	}
	for _, m := range in.Membership {
		out.Membership = append(out.Membership, memberJ{m.Target, m.Scenario, m.Canary, m.Condition, eps(m.Epsilon), m.AUC, m.TPRAt0001, m.TPRAt001})
	}
	for _, u := range in.Utility {
		mean, _ := eval.MeanStd(u.Values)
		rel, _ := eval.MeanStd(u.Released)
		j := utilJ{Method: u.Method, Scenario: u.Scenario, Epsilon: eps(u.Epsilon), Seeds: len(u.Values), Released: finite(rel)}
		if u.Metric == "final_acc" {
			j.FinalAcc = &mean
		} else {
			j.FinalAUC = &mean
		}
		out.Utility = append(out.Utility, j)
	}
	return json.MarshalIndent(out, "", "  ")
}
