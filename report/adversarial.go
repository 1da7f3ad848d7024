package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/ptopofl/ptopofl/aggregation"
	"github.com/ptopofl/ptopofl/eval"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Adversarial builds the robustness report of the paper's Fig. 4. Per flip
// rate and attack level (the fraction of adversarial sites) it tabulates
// each method's final AUC as mean ± sample std over seeds; each detector's
// detection rate TP/(TP+FN) and false-positive rate FP/(FP+TN), counts
// pooled over seeds ("n/a" when the denominator is zero, e.g. the
// detection rate at 0 %); and, per level, the reference method against
// every other with the paired t-test and Wilcoxon signed-rank test of
// table1, paired by seed. Its figure fig4_adversarial plots the mean final
// AUC against the attack rate for each flip rate, with std whiskers, and
// the first detector's rates. The 0 % level, where nobody flips, is the
// first point of every flip rate's curve. Its figure
// fig4b_adversarial_curves, the paper's Fig. 4(B), plots each method's AUC
// per round (mean over seeds) at the clean level and at the levels
// in.CurveFraction and in.CurveFlipRates choose, beside a table of the
// curves' first and last rounds; the text says how those levels read the
// paper's attack rates, and what τ changes under in.Detector. It returns
// an error when there is no level.
func Adversarial(in AdversarialInput) (*Report, error) {
	if len(in.Levels) == 0 {
		return nil, fmt.Errorf("report: adversarial: no attack levels")
	}
	d := newDocument(in.Title, "Robustness under label-flip attacks")
	ref := in.Reference
	if ref == "" {
		ref = "ptopofl"
	}
	var methods, detectors []string
	var clean []AttackLevel
	var flips []float64
	for _, l := range in.Levels {
		for _, m := range l.Methods {
			if !slices.Contains(methods, m.Method) {
				methods = append(methods, m.Method)
			}
		}
		for _, dt := range l.Detectors {
			if !slices.Contains(detectors, dt.Name) {
				detectors = append(detectors, dt.Name)
			}
		}
		if l.Fraction == 0 {
			clean = append(clean, l)
		} else if !slices.Contains(flips, l.FlipRate) {
			flips = append(flips, l.FlipRate)
		}
	}
	slices.Sort(flips)
	// Each flip rate's levels, with the clean (0 %) level first.
	byFlip := func(flip float64) []AttackLevel {
		out := append([]AttackLevel(nil), clean...)
		for _, l := range in.Levels {
			if l.Fraction > 0 && l.FlipRate == flip {
				out = append(out, l)
			}
		}
		slices.SortStableFunc(out, func(a, b AttackLevel) int { return cmp.Compare(a.Fraction, b.Fraction) })
		return out
	}
	groups := [][]AttackLevel{}
	if len(flips) == 0 {
		groups = append(groups, byFlip(0))
	}
	for _, f := range flips {
		groups = append(groups, byFlip(f))
	}

	d.para("Final AUC-ROC per method (mean ± sample standard deviation over seeds) per fraction of adversarial (label-flipping) sites and flip rate; the detectors' detection and false-positive rates, counts pooled over seeds; and %s against every other method, paired by seed.", ref)
	if t := tauNote(in); t != "" {
		d.para("%s", t)
	}
	for gi, g := range groups {
		flip := 0.0
		if len(flips) > 0 {
			flip = flips[gi]
		}
		d.heading(fmt.Sprintf("Flip rate %.0f %%", 100*flip))
		var rows [][]string
		for _, l := range g {
			row := []string{fmt.Sprintf("%.1f %%", 100*l.Fraction)}
			for _, name := range methods {
				cell := "n/a"
				for _, m := range l.Methods {
					if m.Method == name {
						cell = fmtMeanStd(finalAUCs(m.Runs))
					}
				}
				row = append(row, cell)
			}
			rows = append(rows, row)
		}
		d.table(append([]string{"Adversarial sites"}, methods...), rows)
		if len(detectors) > 0 {
			var drows [][]string
			for _, l := range g {
				row := []string{fmt.Sprintf("%.1f %%", 100*l.Fraction)}
				for _, name := range detectors {
					det, fpr := "n/a", "n/a"
					for _, dt := range l.Detectors {
						if dt.Name == name {
							tp, fn, fp, tn := pooled(dt.Counts)
							det, fpr = fmtRate(tp, tp+fn), fmtRate(fp, fp+tn)
						}
					}
					row = append(row, det, fpr)
				}
				drows = append(drows, row)
			}
			header := []string{"Adversarial sites"}
			for _, name := range detectors {
				header = append(header, name+" detection", name+" false positives")
			}
			d.table(header, drows)
		}
	}

	var prow [][]string
	var notes noteSet
	for _, l := range in.Levels {
		var refRuns []Run
		for _, m := range l.Methods {
			if m.Method == ref {
				refRuns = m.Runs
			}
		}
		if refRuns == nil {
			continue
		}
		for _, m := range l.Methods {
			if m.Method == ref {
				continue
			}
			row, note := pairedRow(ref, refRuns, m)
			prow = append(prow, append([]string{fmt.Sprintf("%.1f %% / %.0f %%", 100*l.Fraction, 100*l.FlipRate)}, row...))
			notes.add(m.Method, note)
		}
	}
	if len(prow) > 0 {
		d.heading("Paired tests")
		d.table([]string{"Adversarial / flip", "Method", "Pairs", ref + " − method (AUC)", "t (df)", "p (paired t)", "W", "p (Wilcoxon)"}, prow)
		for _, n := range notes.sentences() {
			d.para("%s", n)
		}
		for _, p := range pooledSettings(ref, in.Levels) {
			d.para("%s", p)
		}
	}

	var panels []*plot.Plot
	for gi, g := range groups {
		flip := 0.0
		if len(flips) > 0 {
			flip = flips[gi]
		}
		pa := newPlot(fmt.Sprintf("Flip rate %.0f %%", 100*flip), "Adversarial sites (%)", "AUC-ROC")
		x := make([]float64, len(g))
		for i, l := range g {
			x[i] = 100 * l.Fraction
		}
		for k, name := range methods {
			mean, std := make([]float64, len(g)), make([]float64, len(g))
			for i, l := range g {
				mean[i], std[i] = math.NaN(), math.NaN()
				for _, m := range l.Methods {
					if m.Method == name {
						mean[i], std[i] = eval.MeanStd(finalAUCs(m.Runs))
					}
				}
			}
			if err := addLine(pa, name, x, mean, lineStyle(k), glyphStyle(k)); err != nil {
				return nil, fmt.Errorf("report: adversarial: method %q: %w", name, err)
			}
			pa.Add(&whiskers{X: x, Y: mean, Err: std, Color: colour(k)})
		}
		clampAUCAxis(pa)
		pa.Legend = plot.NewLegend() // one legend for the figure, beside the panels
		panels = append(panels, pa)
	}
	legend := plot.NewLegend()
	for k, name := range methods {
		legend.Add(name, &plotter.Line{LineStyle: lineStyle(k)}, &plotter.Scatter{GlyphStyle: glyphStyle(k)})
	}
	if len(detectors) > 0 {
		pd := newPlot(detectors[0], "Adversarial sites (%)", "Rate")
		for gi, g := range groups {
			flip := 0.0
			if len(flips) > 0 {
				flip = flips[gi]
			}
			var x, det, fpr []float64
			for _, l := range g {
				for _, dt := range l.Detectors {
					if dt.Name == detectors[0] {
						tp, fn, fp, tn := pooled(dt.Counts)
						x = append(x, 100*l.Fraction)
						det = append(det, ratio(tp, tp+fn))
						fpr = append(fpr, ratio(fp, fp+tn))
					}
				}
			}
			if len(x) == 0 {
				continue
			}
			if err := addLine(pd, fmt.Sprintf("detection, flip %.0f %%", 100*flip), x, det, rateLine(2*gi), glyphStyle(2*gi)); err != nil {
				return nil, fmt.Errorf("report: adversarial: %w", err)
			}
			if err := addLine(pd, fmt.Sprintf("false positives, flip %.0f %%", 100*flip), x, fpr, rateLine(2*gi+1), glyphStyle(2*gi+1)); err != nil {
				return nil, fmt.Errorf("report: adversarial: %w", err)
			}
		}
		pd.Y.Min, pd.Y.Max = 0, 1.05
		// The rates' entries join the figure's legend, after the methods'.
		for gi := range groups {
			flip := 0.0
			if len(flips) > 0 {
				flip = flips[gi]
			}
			legend.Add(fmt.Sprintf("detection rate, flip %.0f %%", 100*flip), &plotter.Line{LineStyle: rateLine(2 * gi)}, &plotter.Scatter{GlyphStyle: glyphStyle(2 * gi)})
			legend.Add(fmt.Sprintf("false-positive rate, flip %.0f %%", 100*flip), &plotter.Line{LineStyle: rateLine(2*gi + 1)}, &plotter.Scatter{GlyphStyle: glyphStyle(2*gi + 1)})
		}
		pd.Legend = plot.NewLegend()
		panels = append(panels, pd)
	}
	fig, err := renderWithLegend("fig4_adversarial", "Fig. 4: final AUC against the fraction of adversarial sites per flip rate (mean ± std over seeds), and the detector's rates (in the right panel, with the legend's colours of its entries).", [][]*plot.Plot{panels}, &legend)
	if err != nil {
		return nil, err
	}
	d.figure(fig)
	if err := adversarialCurves(d, in, clean, methods); err != nil {
		return nil, err
	}
	return d.build(), nil
}

// adversarialCurves adds Fig. 4(B) to d: AUC per round, mean over seeds,
// one panel per attack rate (the clean levels, then the levels at
// in.CurveFraction with the flip rates of in.CurveFlipRates), each method
// in its colour of Fig. 4, the methods of in.CurveFocus in a first row of
// their own; and a table of each curve's first and last round. Levels the input lacks are left out; with none but the clean
// level's, or no curve, it adds nothing.
func adversarialCurves(d *document, in AdversarialInput, clean []AttackLevel, methods []string) error {
	if len(in.CurveFlipRates) == 0 {
		return nil
	}
	type panel struct {
		rate   float64
		levels []AttackLevel
	}
	panels := []panel{{0, clean}}
	for _, flip := range in.CurveFlipRates {
		p := panel{rate: flip}
		for _, l := range in.Levels {
			if l.Fraction == in.CurveFraction && l.FlipRate == flip {
				p.levels = append(p.levels, l)
			}
		}
		if len(p.levels) > 0 {
			panels = append(panels, p)
		}
	}
	if len(panels) < 2 || len(clean) == 0 {
		return nil
	}
	// Runs of one method at one panel's levels (a level may come twice,
	// e.g. once per collector, so runs are pooled).
	runsOf := func(p panel, method string) []Run {
		var out []Run
		for _, l := range p.levels {
			for _, m := range l.Methods {
				if m.Method == method {
					out = append(out, m.Runs...)
				}
			}
		}
		return out
	}
	sites := 0
	for _, p := range panels[1:] {
		for _, l := range p.levels {
			sites = max(sites, l.Sites)
		}
	}
	var rates []string
	for _, p := range panels {
		rates = append(rates, fmt.Sprintf("%.0f %%", 100*p.rate))
	}
	who := fmt.Sprintf("%.1f %% of the sites", 100*in.CurveFraction)
	if sites > 0 {
		who = fmt.Sprintf("%d of %d sites", int(math.Round(in.CurveFraction*float64(sites))), sites)
	}
	d.heading("Fig. 4(B): AUC per round under attack")
	d.para("The paper's Fig. 4(B) shows AUC curves at %s attack rates. Its caption reads the rate as the share of clients that are adversarial, but the authors' code (experiment_e3_adversarial) makes clients 1 and 4 of 8 adversarial at every rate and flips that share of their labels, so the curves below follow the code: %s flip %s of their labels (our level %.1f %% of adversarial sites at those flip rates), beside the clean federation (0 %%). The caption's reading, the share of adversarial sites, is the x axis of Fig. 4 above. AUC per round is the mean over seeds; the table gives each curve's first and last round.",
		joinAnd(rates), who, joinAnd(rates[1:]), 100*in.CurveFraction)

	var rows [][]string
	for _, p := range panels {
		row := []string{fmt.Sprintf("%.0f %%", 100*p.rate)}
		for _, name := range methods {
			cell := "n/a"
			if first, last := firstLast(meanCurveY(runsOf(p, name))); !math.IsNaN(first) {
				cell = fmt.Sprintf("%.3f → %.3f", first, last)
			}
			row = append(row, cell)
		}
		rows = append(rows, row)
	}
	// A row of panels per set of methods: the focus (pTopoFL and FedAvg,
	// as in the paper's figure) on a y range of their own, where a method
	// that collapses (FoolsGold under 50 % flips) would flatten them, then
	// every method.
	sets := [][]string{methods}
	if len(in.CurveFocus) > 0 {
		var focus []string
		for _, m := range methods {
			if slices.Contains(in.CurveFocus, m) {
				focus = append(focus, m)
			}
		}
		if len(focus) > 0 && len(focus) < len(methods) {
			sets = [][]string{focus, methods}
		}
	}
	var grid [][]*plot.Plot
	drawn := false
	for si, set := range sets {
		var plots []*plot.Plot
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, p := range panels {
			title := "Attack rate 0 % (no adversary)"
			if p.rate > 0 {
				title = fmt.Sprintf("Attack rate %.0f %% (%s)", 100*p.rate, who)
			}
			if len(sets) > 1 && si == 0 {
				title += ": " + joinAnd(set)
			}
			pl := newPlot(title, "Round", "AUC-ROC")
			for _, name := range set {
				k := slices.Index(methods, name)
				x, y := meanCurve(runsOf(p, name))
				for _, v := range y {
					if !math.IsNaN(v) {
						lo, hi = math.Min(lo, v), math.Max(hi, v)
						drawn = true
					}
				}
				if err := addLine(pl, name, x, y, lineStyle(k), glyphStyle(k)); err != nil {
					return fmt.Errorf("report: adversarial: Fig. 4(B): method %q: %w", name, err)
				}
			}
			pl.Legend = plot.NewLegend() // one legend for the figure, beside the panels
			plots = append(plots, pl)
		}
		// One y range for a row's panels, so that they compare, within
		// [0, 1], where an AUC lies.
		for _, pl := range plots {
			pl.Y.Min, pl.Y.Max = math.Max(0, lo-0.005), math.Min(1, hi+0.005)
		}
		grid = append(grid, plots)
	}
	if !drawn {
		return nil
	}
	d.table(append([]string{"Attack rate"}, methods...), rows)
	legend := plot.NewLegend()
	for k, name := range methods {
		legend.Add(name, &plotter.Line{LineStyle: lineStyle(k)}, &plotter.Scatter{GlyphStyle: glyphStyle(k)})
	}
	caption := fmt.Sprintf("Fig. 4(B): AUC-ROC per round, mean over seeds, at attack rates %s: %s flip that share of their labels (the authors' code's reading).", joinAnd(rates), who)
	if len(grid) > 1 {
		caption += fmt.Sprintf(" Top row: %s, the y range fitted to the row; bottom row: every method.", joinAnd(sets[0]))
	}
	fig, err := renderWithLegend("fig4b_adversarial_curves", caption, grid, &legend)
	if err != nil {
		return err
	}
	d.figure(fig)
	return nil
}

// meanCurveY is meanCurve's AUC per round alone.
func meanCurveY(runs []Run) []float64 {
	_, y := meanCurve(runs)
	return y
}

// firstLast returns the first and the last value of y that are not NaN
// (NaN, NaN when there is none).
func firstLast(y []float64) (first, last float64) {
	first, last = math.NaN(), math.NaN()
	for _, v := range y {
		if math.IsNaN(v) {
			continue
		}
		if math.IsNaN(first) {
			first = v
		}
		last = v
	}
	return first, last
}

// joinAnd joins s as "a, b and c".
func joinAnd(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// tauNote says which τ pTopoFL ran with and what τ changes under its
// detector (aggregation.Flags, LabelZScores, TrustScores): the labelled
// detector scales its label scores by τ (z = τ·g/γ), so τ moves the trust
// weights exp(−max(z − 1, 0)) but not the flags z > τ, i.e. g > γ; the
// descriptor detector's trust comes from the z-score alone, so τ moves its
// flags only; and where flags are trust below a bound (the paper preset,
// as the authors' code), τ moves them only through the trust.
func tauNote(in AdversarialInput) string {
	if in.Tau == 0 {
		return ""
	}
	s := fmt.Sprintf("pTopoFL ran with τ = %g (anomaly_threshold; the paper's Table 3 gives 1.8 for robustness and 2.0 for the comparison, and the authors' experiment_e3_adversarial passes 1.8). ", in.Tau)
	weights := in.Detector == string(aggregation.LabelledDetector) || in.Detector == string(aggregation.CombinedDetector)
	switch {
	case in.FlagTrustBelow > 0 && !weights:
		s += fmt.Sprintf("Here, as in the authors' code, a site is flagged when its trust weight is below %g, not when its z-score exceeds τ, and the %s detector's trust comes from the z-score of its descriptor distance without τ: τ changes nothing (it matters only for the detectors that flag by z > τ, descriptor and combined, or scale a z-score by it, labelled and combined).", in.FlagTrustBelow, in.Detector)
	case in.FlagTrustBelow > 0:
		s += fmt.Sprintf("A site is flagged when its trust weight is below %g, and under the %s detector that weight depends on τ (z = τ·g/γ), so τ changes both the flags and the weights.", in.FlagTrustBelow, in.Detector)
	case in.Detector == string(aggregation.LabelledDetector):
		s += "The labelled detector puts its label scores g on the z-score scale as z = τ·g/γ, so a site is flagged when g > γ whatever τ is (detection rates do not depend on τ), but its trust weight exp(−max(z − 1, 0)) falls faster with a larger τ: τ changes the weights, not the flags."
	case in.Detector == string(aggregation.DescriptorDetector):
		s += "The descriptor detector flags a site when the z-score of its descriptor distance exceeds τ and takes its trust weight from the same z-score without τ: τ changes the flags (the detection rates), not the weights."
	case in.Detector == string(aggregation.CombinedDetector):
		s += "The combined detector takes z = max(τ·g/γ, the descriptor z-score) and flags z > τ: τ changes both the flags and the weights."
	}
	return s
}

// pooledSettings compares the reference with each other setting of the
// same method (a series named "<ref> (…)", pTopoFL at τ = 2 beside τ =
// 1.8) over every level and seed at once: one sentence each with the
// number of paired federations, the mean ± std of the differences in final
// AUC and both tests' p. A setting with fewer than 2 pairs says nothing.
func pooledSettings(ref string, levels []AttackLevel) []string {
	var names []string
	pairs := map[string][2][]float64{}
	for _, l := range levels {
		var refRuns []Run
		for _, m := range l.Methods {
			if m.Method == ref {
				refRuns = m.Runs
			}
		}
		for _, m := range l.Methods {
			if !strings.HasPrefix(m.Method, ref+" (") || refRuns == nil {
				continue
			}
			if _, ok := pairs[m.Method]; !ok {
				names = append(names, m.Method)
			}
			a, b := pairBySeed(refRuns, m.Runs)
			q := pairs[m.Method]
			q[0], q[1] = append(q[0], a...), append(q[1], b...)
			pairs[m.Method] = q
		}
	}
	var out []string
	for _, name := range names {
		a, b := pairs[name][0], pairs[name][1]
		t, err := eval.PairedTTest(a, b)
		if err != nil {
			continue
		}
		d := make([]float64, len(a))
		for i := range a {
			d[i] = a[i] - b[i]
		}
		mean, sd := eval.MeanStd(d)
		wp := "n/a (every difference is zero)"
		if w, err := eval.WilcoxonSignedRank(a, b); err == nil {
			wp = fmtP(w.P)
			if !w.Exact {
				wp += " (normal approx.)"
			}
		}
		out = append(out, fmt.Sprintf("Pooled over every level and seed (%d paired federations), %s − %s in final AUC: %+.5f ± %.5f, paired t-test p = %s, Wilcoxon p = %s.", len(a), ref, name, mean, sd, fmtP(t.P), wp))
	}
	return out
}

// rateLine is the style of the detector's rate lines: lineStyle(k) dashed,
// so that in the figure's one legend they are not taken for the methods'
// AUC lines, which share the palette.
func rateLine(k int) draw.LineStyle {
	l := lineStyle(k)
	l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	return l
}

func finalAUCs(runs []Run) []float64 {
	out := make([]float64, len(runs))
	for i, r := range runs {
		out[i] = r.FinalAUC
	}
	return out
}

func pooled(counts []DetectionCounts) (tp, fn, fp, tn int) {
	for _, c := range counts {
		tp += c.TruePositives
		fn += c.FalseNegatives
		fp += c.FalsePositives
		tn += c.TrueNegatives
	}
	return tp, fn, fp, tn
}

func ratio(num, den int) float64 {
	if den == 0 {
		return math.NaN()
	}
	return float64(num) / float64(den)
}
