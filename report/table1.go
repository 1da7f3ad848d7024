package report

import (
	"fmt"
	"math"
	"slices"

	"github.com/ptopofl/ptopofl/eval"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

// DefaultReference is the method baselines are compared to when
// Table1Input.Reference is empty.
const DefaultReference = "ptopofl"

// Table1 builds the comparison report of the paper's Table 1 and Figs. 2
// and 3. For every scenario it tabulates, per method, the final AUC,
// the final accuracy and the convergence round as mean ± sample std over
// seeds, and for every other method the paired difference
// reference − method in final AUC over the seeds both ran, with a paired
// t-test and an exact Wilcoxon signed-rank test (eval.PairedTTest,
// eval.WilcoxonSignedRank); where there are too few pairs for a test the
// report says so instead of printing a p-value. Its figures are
// fig2_auc_curves (mean AUC per round over seeds, one panel per scenario)
// and fig3_final_auc (final AUC with std whiskers, and convergence
// rounds). It returns an error when there is no scenario, a scenario has
// no method, or a method has no run.
func Table1(in Table1Input) (*Report, error) {
	if len(in.Scenarios) == 0 {
		return nil, fmt.Errorf("report: table1: no scenarios")
	}
	ref := in.Reference
	if ref == "" {
		ref = DefaultReference
	}
	d := newDocument(in.Title, "Table 1: pTopoFL against the baselines")
	methods := methodOrder(ref, in.Scenarios)
	idx := make(map[string]int, len(methods))
	for i, m := range methods {
		idx[m] = i
	}
	d.para("Final AUC-ROC, accuracy and convergence round (first round from which the AUC stays within 0.005 of its final value), mean ± sample standard deviation over seeds. Differences are %s − method in final AUC, paired by seed.", ref)
	if len(in.Provenance) > 0 {
		var rows [][]string
		for _, n := range in.Provenance {
			rows = append(rows, []string{n.Method, n.Note})
		}
		d.table([]string{"Method", "Which row of the paper's Table 1 it is"}, rows)
	}

	var curves []*plot.Plot
	for _, sc := range in.Scenarios {
		if len(sc.Methods) == 0 {
			return nil, fmt.Errorf("report: table1: scenario %q has no methods", sc.Name)
		}
		d.heading("Scenario " + sc.Name)
		var rows [][]string
		var refRuns []Run
		for _, m := range sc.Methods {
			if len(m.Runs) == 0 {
				return nil, fmt.Errorf("report: table1: scenario %q: method %q has no runs", sc.Name, m.Method)
			}
			if m.Method == ref {
				refRuns = m.Runs
			}
			auc, acc, conv := finals(m.Runs)
			rows = append(rows, []string{m.Method, fmt.Sprint(len(m.Runs)), fmtMeanStd(auc), fmtMeanStd(acc), fmtRoundMeanStd(conv)})
		}
		d.table([]string{"Method", "Seeds", "Final AUC", "Final accuracy", "Convergence round"}, rows)

		if refRuns == nil {
			d.para("No runs of the reference method %s in this scenario: no paired differences.", ref)
		} else {
			var diff [][]string
			var ns noteSet
			for _, m := range sc.Methods {
				if m.Method == ref {
					continue
				}
				row, note := pairedRow(ref, refRuns, m)
				diff = append(diff, row)
				ns.add(m.Method, note)
			}
			if len(diff) > 0 {
				d.table([]string{"Method", "Pairs", ref + " − method (AUC)", "t (df)", "p (paired t)", "W", "p (Wilcoxon)"}, diff)
				for _, n := range ns.sentences() {
					d.para("%s", n)
				}
			}
		}

		p := newPlot(sc.Name, "Round", "AUC-ROC")
		for _, m := range sc.Methods {
			x, y := meanCurve(m.Runs)
			if err := addLine(p, m.Method, x, y, lineStyle(idx[m.Method]), glyphStyle(idx[m.Method])); err != nil {
				return nil, fmt.Errorf("report: table1: scenario %q: method %q: %w", sc.Name, m.Method, err)
			}
		}
		p.Legend = plot.NewLegend() // one legend for the figure, beside the panels
		curves = append(curves, p)
	}
	methodLegend := plot.NewLegend()
	for i, m := range methods {
		methodLegend.Add(m, &plotter.Line{LineStyle: lineStyle(i)}, &plotter.Scatter{GlyphStyle: glyphStyle(i)})
	}

	fig2, err := renderWithLegend("fig2_auc_curves", "Fig. 2: AUC-ROC per round, mean over seeds, one panel per scenario.", [][]*plot.Plot{curves}, &methodLegend)
	if err != nil {
		return nil, err
	}
	d.heading("Figures")
	d.figure(fig2)

	// Fig. 3: groups are methods, series are scenarios.
	var scenarios []string
	aucMean := make([][]float64, len(in.Scenarios))
	aucStd := make([][]float64, len(in.Scenarios))
	convMean := make([][]float64, len(in.Scenarios))
	convStd := make([][]float64, len(in.Scenarios))
	cols := make([]int, len(in.Scenarios))
	for s, sc := range in.Scenarios {
		scenarios = append(scenarios, sc.Name)
		cols[s] = s + 1
		for _, name := range methods {
			mean, std, cm, cs := math.NaN(), math.NaN(), math.NaN(), math.NaN()
			for _, m := range sc.Methods {
				if m.Method == name {
					auc, _, conv := finals(m.Runs)
					mean, std = eval.MeanStd(auc)
					cm, cs = eval.MeanStd(conv)
				}
			}
			aucMean[s] = append(aucMean[s], mean)
			aucStd[s] = append(aucStd[s], std)
			convMean[s] = append(convMean[s], cm)
			convStd[s] = append(convStd[s], cs)
		}
	}
	pa := newPlot("Final AUC", "", "AUC-ROC")
	addGroupedBars(pa, methods, scenarios, aucMean, aucStd, cols)
	pa.Y.Min, pa.Y.Max = 0, 1 // an AUC lies in [0, 1]
	pc := newPlot("Convergence round", "", "Round")
	addGroupedBars(pc, methods, scenarios, convMean, convStd, cols)
	// The scenarios' legend beside the panels, not in them: no headroom
	// above the bars is needed for it.
	scenarioLegend := plot.NewLegend()
	for s, name := range scenarios {
		scenarioLegend.Add(name, &bars{Color: colour(cols[s])})
	}
	pa.Legend, pc.Legend = plot.NewLegend(), plot.NewLegend()
	pc.Y.Max = 0
	for s := range convMean {
		for g, v := range convMean[s] {
			if e := convStd[s][g]; !math.IsNaN(e) {
				v += e
			}
			if !math.IsNaN(v) {
				pc.Y.Max = math.Max(pc.Y.Max, 1.05*v)
			}
		}
	}
	fig3, err := renderWithLegend("fig3_final_auc", "Fig. 3: final AUC (left) and convergence round (right) per method, mean ± std over seeds.", [][]*plot.Plot{{pa, pc}}, &scenarioLegend)
	if err != nil {
		return nil, err
	}
	d.figure(fig3)
	return d.build(), nil
}

// methodOrder lists the methods of all scenarios, the reference first and
// the others in order of first appearance, so that a method has the same
// colour in every panel.
func methodOrder(ref string, scs []Table1Scenario) []string {
	out := []string{}
	seen := map[string]bool{}
	for _, sc := range scs {
		for _, m := range sc.Methods {
			if m.Method == ref && !seen[ref] {
				out = append([]string{ref}, out...)
				seen[ref] = true
			}
		}
	}
	for _, sc := range scs {
		for _, m := range sc.Methods {
			if !seen[m.Method] {
				out = append(out, m.Method)
				seen[m.Method] = true
			}
		}
	}
	return out
}

// finals returns the final AUCs, accuracies and known convergence rounds
// of runs.
func finals(runs []Run) (auc, acc, conv []float64) {
	for _, r := range runs {
		auc = append(auc, r.FinalAUC)
		acc = append(acc, r.FinalAccuracy)
		if r.ConvergenceRound > 0 {
			conv = append(conv, float64(r.ConvergenceRound))
		}
	}
	return auc, acc, conv
}

// meanCurve returns rounds 1…R and the mean AUC per round over the runs
// that have that round (NaN where none has).
func meanCurve(runs []Run) (x, y []float64) {
	n := 0
	for _, r := range runs {
		n = max(n, len(r.AUC))
	}
	for i := range n {
		var v []float64
		for _, r := range runs {
			if i < len(r.AUC) && !math.IsNaN(r.AUC[i]) {
				v = append(v, r.AUC[i])
			}
		}
		m, _ := eval.MeanStd(v)
		x = append(x, float64(i+1))
		y = append(y, m)
	}
	return x, y
}

// pairBySeed returns the final AUCs of a's and b's runs on the seeds both
// ran, in increasing seed order (a seed run twice counts with its last
// run).
func pairBySeed(a, b []Run) (x, y []float64) {
	as, bs := map[int64]float64{}, map[int64]float64{}
	for _, r := range a {
		as[r.Seed] = r.FinalAUC
	}
	for _, r := range b {
		bs[r.Seed] = r.FinalAUC
	}
	var seeds []int64
	for s := range as {
		if _, ok := bs[s]; ok {
			seeds = append(seeds, s)
		}
	}
	slices.Sort(seeds)
	for _, s := range seeds {
		x, y = append(x, as[s]), append(y, bs[s])
	}
	return x, y
}

// pairedRow compares the reference runs with m's runs of the same seeds.
// It returns the table row and, when a test cannot be run or cannot be
// significant, the reason, without the method's name (noteSet.add groups
// the methods that share one).
func pairedRow(ref string, refRuns []Run, m MethodRuns) (row []string, note string) {
	a, b := pairBySeed(refRuns, m.Runs)
	d := make([]float64, len(a))
	for i := range a {
		d[i] = a[i] - b[i]
	}
	row = []string{m.Method, fmt.Sprint(len(a)), fmtMeanStd(d), "n/a", "n/a", "n/a", "n/a"}
	t, err := eval.PairedTTest(a, b)
	if err != nil {
		return row, fmt.Sprintf("%d paired seed(s) with %s; the paired t-test needs at least 2 and the differences are not tested.", len(a), ref)
	}
	row[3] = fmt.Sprintf("%.3f (%d)", t.T, t.DF)
	row[4] = fmtP(t.P)
	w, err := eval.WilcoxonSignedRank(a, b)
	if err != nil {
		return row, fmt.Sprintf("every paired difference to %s is zero; the signed-rank test is undefined.", ref)
	}
	row[5] = fmt.Sprintf("%g", w.Statistic)
	row[6] = fmtP(w.P)
	if !w.Exact {
		row[6] += " (normal approx.)"
	}
	if w.Exact {
		if minP := 2 / math.Exp2(float64(w.N)); minP > 0.05 {
			note = fmt.Sprintf("with %d non-zero paired differences the exact signed-rank test cannot reach p < 0.05 (its smallest possible p is %.4f); run more seeds to test these differences.", w.N, minP)
		}
	}
	return row, note
}
