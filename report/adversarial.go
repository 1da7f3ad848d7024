package report

import (
	"fmt"
	"math"
	"slices"

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
// first point of every flip rate's curve. It returns an error when there
// is no level.
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
		slices.SortStableFunc(out, func(a, b AttackLevel) int {
			switch {
			case a.Fraction < b.Fraction:
				return -1
			case a.Fraction > b.Fraction:
				return 1
			}
			return 0
		})
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
	return d.build(), nil
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
