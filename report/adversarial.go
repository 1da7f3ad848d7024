package report

import (
	"fmt"
	"math"

	"github.com/ptopofl/ptopofl/eval"
	"gonum.org/v1/plot"
)

// Adversarial builds the robustness report of the paper's Fig. 4. Per
// attack level (the fraction of adversarial sites) it tabulates each
// method's final AUC as mean ± sample std over seeds, and the anomaly
// detector's detection rate TP/(TP+FN) and false-positive rate FP/(FP+TN)
// with the counts pooled over seeds ("n/a" when the denominator is zero,
// e.g. the detection rate at 0 %). Its figure fig4_adversarial plots the
// mean final AUC against the attack rate, with std whiskers, and the two
// detector rates. Levels are shown in the order given. It returns an
// error when there is no level.
func Adversarial(in AdversarialInput) (*Report, error) {
	if len(in.Levels) == 0 {
		return nil, fmt.Errorf("report: adversarial: no attack levels")
	}
	d := &document{title: in.Title}
	if d.title == "" {
		d.title = "Robustness under label-flip attacks"
	}
	var methods []string
	seen := map[string]bool{}
	for _, l := range in.Levels {
		for _, m := range l.Methods {
			if !seen[m.Method] {
				seen[m.Method] = true
				methods = append(methods, m.Method)
			}
		}
	}
	d.para("Final AUC-ROC per method (mean ± sample standard deviation over seeds) and the anomaly detector's detection and false-positive rates, counts pooled over seeds, per fraction of adversarial (label-flipping) sites.")
	header := append([]string{"Adversarial sites"}, methods...)
	header = append(header, "Detection rate", "False-positive rate")
	var rows [][]string
	x := make([]float64, len(in.Levels))
	mean := make([][]float64, len(methods))
	std := make([][]float64, len(methods))
	det, fpr := make([]float64, len(in.Levels)), make([]float64, len(in.Levels))
	for i, l := range in.Levels {
		x[i] = 100 * l.Fraction
		row := []string{fmt.Sprintf("%.0f %%", 100*l.Fraction)}
		for k, name := range methods {
			cell, mu, sd := "n/a", math.NaN(), math.NaN()
			for _, m := range l.Methods {
				if m.Method == name {
					cell = fmtMeanStd(m.FinalAUC)
					mu, sd = eval.MeanStd(m.FinalAUC)
				}
			}
			row = append(row, cell)
			mean[k] = append(mean[k], mu)
			std[k] = append(std[k], sd)
		}
		var tp, fn, fp, tn int
		for _, c := range l.Detection {
			tp += c.TruePositives
			fn += c.FalseNegatives
			fp += c.FalsePositives
			tn += c.TrueNegatives
		}
		row = append(row, fmtRate(tp, tp+fn), fmtRate(fp, fp+tn))
		det[i], fpr[i] = ratio(tp, tp+fn), ratio(fp, fp+tn)
		rows = append(rows, row)
	}
	d.table(header, rows)

	pa := newPlot("Final AUC against attack rate", "Adversarial sites (%)", "AUC-ROC")
	for k, name := range methods {
		if err := addLine(pa, name, x, mean[k], lineStyle(k), glyphStyle(k)); err != nil {
			return nil, fmt.Errorf("report: adversarial: method %q: %w", name, err)
		}
		pa.Add(&whiskers{X: x, Y: mean[k], Err: std[k], Color: colour(k)})
	}
	pa.Legend.Top = false
	pd := newPlot("Anomaly detector", "Adversarial sites (%)", "Rate")
	if err := addLine(pd, "detection rate", x, det, lineStyle(0), glyphStyle(0)); err != nil {
		return nil, fmt.Errorf("report: adversarial: %w", err)
	}
	if err := addLine(pd, "false-positive rate", x, fpr, lineStyle(2), glyphStyle(2)); err != nil {
		return nil, fmt.Errorf("report: adversarial: %w", err)
	}
	pd.Y.Min, pd.Y.Max = 0, 1.05
	pd.Legend.Left = true
	fig, err := render("fig4_adversarial", "Fig. 4: final AUC against the fraction of adversarial sites (mean ± std over seeds), and the detector's rates.", [][]*plot.Plot{{pa, pd}})
	if err != nil {
		return nil, err
	}
	d.figure(fig)
	return d.build(), nil
}

func ratio(num, den int) float64 {
	if den == 0 {
		return math.NaN()
	}
	return float64(num) / float64(den)
}
