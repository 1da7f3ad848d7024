package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/ptopofl/ptopofl/eval"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg/draw"
)

// DefaultAblationReference is the variant the others are compared with
// when AblationInput.Reference is empty.
const DefaultAblationReference = "full"

// Ablation builds the ablation report of the paper's §4.7 and Fig. 7, one
// section per scenario: per variant (M=1, β=0, full, automatic M, …) its
// final AUC as mean ± sample std over seeds and, where given, the numbers
// of clusters used; every other variant against the reference (full),
// paired by seed, with the paired t-test and Wilcoxon signed-rank test of
// table1; and, where the scenario has a β grid (two or more variants on
// it), which β has the highest mean final AUC and whether its difference
// from the reference's β is significant, so that a reader can judge the
// paper's claim that β = 0.3 is best in both scenarios (§3.3, §4.7).
// Its figure fig7_ablation shows the mean final AUC per variant with std
// whiskers, one panel per scenario; fig7_beta, drawn when a scenario has a
// β grid, the mean final AUC against β (mean ± std over seeds) and, below,
// each β's paired difference from the reference's. Variants are shown in
// the order given. It returns an error when there is no variant, a variant
// has no final AUC, or its seeds do not match its final AUCs.
func Ablation(in AblationInput) (*Report, error) {
	if len(in.Variants) == 0 {
		return nil, fmt.Errorf("report: ablation: no variants")
	}
	ref := in.Reference
	if ref == "" {
		ref = DefaultAblationReference
	}
	type scenario struct {
		name     string
		variants []AblationVariant
	}
	var scs []*scenario
	for _, v := range in.Variants {
		if len(v.FinalAUC) == 0 {
			return nil, fmt.Errorf("report: ablation: variant %q has no final AUC", v.Name)
		}
		if v.Seeds != nil && len(v.Seeds) != len(v.FinalAUC) {
			return nil, fmt.Errorf("report: ablation: variant %q has %d seeds for %d final AUCs", v.Name, len(v.Seeds), len(v.FinalAUC))
		}
		name := v.Scenario
		if name == "" {
			name = in.Scenario
		}
		i := slices.IndexFunc(scs, func(s *scenario) bool { return s.name == name })
		if i < 0 {
			scs = append(scs, &scenario{name: name})
			i = len(scs) - 1
		}
		scs[i].variants = append(scs[i].variants, v)
	}
	// A variant keeps its colour in every scenario's panel.
	var order []string
	for _, v := range in.Variants {
		if !slices.Contains(order, v.Name) {
			order = append(order, v.Name)
		}
	}
	d := newDocument(in.Title, "Ablation study")
	switch {
	case len(scs) == 1 && scs[0].name != "":
		d.para("Scenario: %s. Final AUC-ROC, mean ± sample standard deviation over seeds; every variant against %s, paired by seed.", scs[0].name, ref)
	default:
		d.para("Final AUC-ROC, mean ± sample standard deviation over seeds, per scenario; every variant against %s, paired by seed.", ref)
	}

	var barPanels, betaMean, betaDiff []*plot.Plot
	betaLegend := plot.NewLegend()
	diffs := false // some scenario's β grid has the reference on it
	for si, sc := range scs {
		if len(scs) > 1 {
			d.heading("Scenario " + sc.name)
		}
		var rows [][]string
		var names []string
		mean, std := make([]float64, len(sc.variants)), make([]float64, len(sc.variants))
		for i, v := range sc.variants {
			clusters := ""
			if len(v.Clusters) > 0 {
				var c []string
				for _, k := range v.Clusters {
					c = append(c, fmt.Sprint(k))
				}
				clusters = strings.Join(c, ", ")
			}
			rows = append(rows, []string{v.Name, v.Description, fmt.Sprint(len(v.FinalAUC)), fmtMeanStd(v.FinalAUC), clusters})
			names = append(names, v.Name)
			mean[i], std[i] = eval.MeanStd(v.FinalAUC)
		}
		d.table([]string{"Variant", "Description", "Seeds", "Final AUC", "Clusters per seed"}, rows)

		refAt := slices.IndexFunc(sc.variants, func(v AblationVariant) bool { return v.Name == ref })
		if refAt >= 0 && len(sc.variants) > 1 {
			refRuns := ablationRuns(sc.variants[refAt])
			var prow [][]string
			var notes noteSet
			for _, v := range sc.variants {
				if v.Name == ref {
					continue
				}
				row, note := pairedRow(ref, refRuns, MethodRuns{Method: v.Name, Runs: ablationRuns(v)})
				// "full − M=1": the row says which difference it is; the
				// variants differ by 1e-4 where table1's methods differ by
				// 1e-2, so the difference has four decimals.
				row[0] = ref + " − " + v.Name
				row[2] = fmtMeanStd4(pairedDiffs(sc.variants[refAt], v))
				if strings.HasPrefix(row[3], "NaN") {
					row[3] = "n/a" // every difference zero: nothing to test
				}
				prow = append(prow, row)
				notes.add(v.Name, note)
			}
			d.table([]string{"Comparison", "Pairs", "Difference (AUC)", "t (df)", "p (paired t)", "W", "p (Wilcoxon)"}, prow)
			for _, n := range notes.sentences() {
				d.para("%s", n)
			}
		}

		p := newPlot(sc.name, "", "Final AUC-ROC")
		if sc.name == "" {
			p.Title.Text = "Ablation"
		}
		for i, v := range sc.variants {
			p.Add(&bars{X: []float64{float64(i)}, Y: []float64{mean[i]}, Err: []float64{std[i]}, Width: 0.6, Color: colour(slices.Index(order, v.Name))})
		}
		p.NominalX(names...)
		p.X.Min, p.X.Max = -0.5, float64(len(names))-0.5
		if len(names) > 5 {
			// Eight names ("automatic M" among them) overlap when level.
			p.X.Tick.Label.Rotation = math.Pi / 6
			p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YTop
		}
		p.Y.Min, p.Y.Max = 0, 1 // an AUC lies in [0, 1]
		barPanels = append(barPanels, p)

		var grid []AblationVariant
		for _, v := range sc.variants {
			if v.OnBetaGrid {
				grid = append(grid, v)
			}
		}
		if len(grid) < 2 {
			continue
		}
		slices.SortStableFunc(grid, func(a, b AblationVariant) int { return cmp.Compare(a.Beta, b.Beta) })
		var refGrid *AblationVariant
		if refAt >= 0 && sc.variants[refAt].OnBetaGrid {
			refGrid = &sc.variants[refAt]
		}
		d.para("%s", betaVerdict(grid, refGrid))

		pm := newPlot(sc.name, "β (inter-cluster blending)", "Final AUC-ROC")
		pd := newPlot("", "β (inter-cluster blending)", "AUC − AUC at reference β")
		x, m, s := make([]float64, len(grid)), make([]float64, len(grid)), make([]float64, len(grid))
		dm, ds := make([]float64, len(grid)), make([]float64, len(grid))
		for i, v := range grid {
			x[i] = v.Beta
			m[i], s[i] = eval.MeanStd(v.FinalAUC)
			dm[i], ds[i] = math.NaN(), math.NaN()
			if refGrid != nil {
				dm[i], ds[i] = eval.MeanStd(pairedDiffs(v, *refGrid))
			}
		}
		if err := addLine(pm, "", x, m, lineStyle(si), glyphStyle(si)); err != nil {
			return nil, fmt.Errorf("report: ablation: scenario %q: %w", sc.name, err)
		}
		pm.Add(&whiskers{X: x, Y: m, Err: s, Color: colour(si)})
		clampAUCAxis(pm)
		betaMean = append(betaMean, pm)
		betaLegend.Add(fmt.Sprintf("%s: mean ± std over seeds", sc.name), &plotter.Line{LineStyle: lineStyle(si)}, &plotter.Scatter{GlyphStyle: glyphStyle(si)})
		if refGrid != nil {
			zero, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 0}})
			if err != nil {
				return nil, fmt.Errorf("report: ablation: %w", err)
			}
			zero.LineStyle = rateLine(6)
			pd.Add(zero)
			if err := addLine(pd, "", x, dm, lineStyle(si), glyphStyle(si)); err != nil {
				return nil, fmt.Errorf("report: ablation: scenario %q: %w", sc.name, err)
			}
			pd.Add(&whiskers{X: x, Y: dm, Err: ds, Color: colour(si)})
			pd.Title.Text = fmt.Sprintf("%s: paired difference from β = %g", sc.name, refGrid.Beta)
		}
		pm.Legend = plot.NewLegend()
		pd.Legend = plot.NewLegend()
		if refGrid == nil {
			pd = nil // nothing to pair with: an empty tile
		} else {
			diffs = true
		}
		betaDiff = append(betaDiff, pd)
	}
	fig, err := render("fig7_ablation", "Fig. 7: final AUC per ablation variant, mean ± std over seeds.", [][]*plot.Plot{barPanels})
	if err != nil {
		return nil, err
	}
	d.figure(fig)
	if len(betaMean) > 0 {
		panels, caption := [][]*plot.Plot{betaMean}, "Final AUC against β, mean ± std over seeds, one panel per scenario."
		if diffs {
			betaLegend.Add("reference β (difference 0)", &plotter.Line{LineStyle: rateLine(6)})
			panels = append(panels, betaDiff)
			caption = "Final AUC against β, mean ± std over seeds (top), and each β's difference from the reference's β, paired by seed, mean ± std of the differences (bottom); one column per scenario."
		}
		fb, err := renderWithLegend("fig7_beta", caption, panels, &betaLegend)
		if err != nil {
			return nil, err
		}
		d.figure(fb)
	}
	return d.build(), nil
}

// ablationRuns returns v's final AUCs as runs, for pairedRow.
func ablationRuns(v AblationVariant) []Run {
	out := make([]Run, len(v.FinalAUC))
	for i, auc := range v.FinalAUC {
		out[i] = Run{Seed: variantSeed(v, i), FinalAUC: auc}
	}
	return out
}

func variantSeed(v AblationVariant, i int) int64 {
	if v.Seeds == nil {
		return int64(i + 1)
	}
	return v.Seeds[i]
}

// fmtMeanStd4 is fmtMeanStd with four decimals.
func fmtMeanStd4(x []float64) string { return fmtStats(x, "%.4f (1 seed)", "%.4f ± %.4f") }

// pairedDiffs returns a − b in final AUC on the seeds both ran.
func pairedDiffs(a, b AblationVariant) []float64 {
	x, y := pairVariants(a, b)
	d := make([]float64, len(x))
	for i := range x {
		d[i] = x[i] - y[i]
	}
	return d
}

// pairVariants returns the final AUCs of a and b on the seeds both ran,
// in increasing seed order (pairBySeed).
func pairVariants(a, b AblationVariant) (x, y []float64) {
	return pairBySeed(ablationRuns(a), ablationRuns(b))
}

// betaVerdict says which β of the grid (sorted by β) has the highest mean
// final AUC and how it compares, paired by seed, with the reference's β
// (ref, nil when the reference is not on the grid): with the best other β
// when the reference is best, else with the reference.
func betaVerdict(grid []AblationVariant, ref *AblationVariant) string {
	var betas []string
	best, bestMean := 0, math.Inf(-1)
	for i, v := range grid {
		betas = append(betas, fmt.Sprintf("%g", v.Beta))
		if m, _ := eval.MeanStd(v.FinalAUC); m > bestMean {
			best, bestMean = i, m
		}
	}
	b := grid[best]
	head := fmt.Sprintf("β grid (%s): %s has the highest mean final AUC, %s", strings.Join(betas, ", "), betaName(b), fmtMeanStd4(b.FinalAUC))
	if ref == nil {
		return head + "."
	}
	other := b
	if b.Name == ref.Name {
		// The reference is best: how far behind is the runner-up?
		second, secondMean := -1, math.Inf(-1)
		for i, v := range grid {
			if m, _ := eval.MeanStd(v.FinalAUC); i != best && m > secondMean {
				second, secondMean = i, m
			}
		}
		other = grid[second]
		head += fmt.Sprintf("; the next, %s at %s, is %.4f lower", betaName(other), fmtMeanStd4(other.FinalAUC), bestMean-secondMean)
	} else {
		rm, _ := eval.MeanStd(ref.FinalAUC)
		head += fmt.Sprintf(", %.4f above %s at %s", bestMean-rm, betaName(*ref), fmtMeanStd4(ref.FinalAUC))
	}
	return head + "; " + pairedVerdict(other, *ref) + ". " + betaSignificance(grid, *ref)
}

// betaSignificance lists the β of the grid whose final AUC differs from
// the reference's, paired by seed, at the 5 % level by both the paired
// t-test and the Wilcoxon test, above and below it, with the mean paired
// difference.
func betaSignificance(grid []AblationVariant, ref AblationVariant) string {
	var above, below []string
	for _, v := range grid {
		if v.Name == ref.Name {
			continue
		}
		x, y := pairVariants(v, ref)
		t, err := eval.PairedTTest(x, y)
		if err != nil || !(t.P < 0.05) {
			continue
		}
		if w, err := eval.WilcoxonSignedRank(x, y); err != nil || !(w.P < 0.05) {
			continue
		}
		s := fmt.Sprintf("β = %g (%+.4f)", v.Beta, t.MeanDiff)
		if t.MeanDiff > 0 {
			above = append(above, s)
		} else {
			below = append(below, s)
		}
	}
	name := betaName(ref)
	if len(above)+len(below) == 0 {
		return fmt.Sprintf("No β of the grid differs from %s at the 5 %% level by both tests.", name)
	}
	var parts []string
	if len(above) > 0 {
		parts = append(parts, "above it "+joinAnd(above))
	}
	if len(below) > 0 {
		parts = append(parts, "below it "+joinAnd(below))
	}
	return fmt.Sprintf("Different from %s at the 5 %% level by both tests, paired by seed: %s.", name, strings.Join(parts, "; "))
}

// pairedVerdict tests a against b paired by seed and says whether the
// difference is significant at the 5 % level by each test.
func pairedVerdict(a, b AblationVariant) string {
	x, y := pairVariants(a, b)
	t, err := eval.PairedTTest(x, y)
	if err != nil {
		return fmt.Sprintf("%d paired seed(s), too few to test", len(x))
	}
	w, werr := eval.WilcoxonSignedRank(x, y)
	if werr != nil {
		return fmt.Sprintf("paired over %d seeds every difference is zero", len(x))
	}
	tSig, wSig := t.P < 0.05, w.P < 0.05
	var verdict string
	switch {
	case tSig && wSig:
		verdict = "significant at the 5 % level by both tests"
	case tSig:
		verdict = "significant at the 5 % level by the paired t-test only"
	case wSig:
		verdict = "significant at the 5 % level by the Wilcoxon test only"
	default:
		verdict = "not significant at the 5 % level"
	}
	return fmt.Sprintf("paired over %d seeds, paired t-test %s, Wilcoxon %s: %s", len(x), pIs(t.P), pIs(w.P), verdict)
}

// pIs says "p = 0.0123", or "p < 0.0001" for a smaller p (fmtP).
func pIs(p float64) string {
	f := fmtP(p)
	if strings.HasPrefix(f, "<") {
		return "p " + f
	}
	return "p = " + f
}

// betaName names a variant of the β grid by its β, and by its name too
// where that is not "β=<β>" ("β = 0.3 (full)").
func betaName(v AblationVariant) string {
	s := fmt.Sprintf("β = %g", v.Beta)
	if v.Name != fmt.Sprintf("β=%g", v.Beta) {
		s += " (" + v.Name + ")"
	}
	return s
}

// clampAUCAxis keeps p's y axis, fitted to its data, within [0, 1], where
// an AUC lies, with a margin of 0.01 where there is room.
func clampAUCAxis(p *plot.Plot) {
	p.Y.Min = math.Max(0, p.Y.Min-0.01)
	p.Y.Max = math.Min(1, p.Y.Max+0.01)
}
