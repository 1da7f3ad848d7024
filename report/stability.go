package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Stability builds the report on the stability of topological signatures
// and the drift monitor (the paper's Fig. 5 and Eq. 9). It tabulates per
// site its H0 and H1 persistence entropy in the first and last round, its
// final drift Δ, whether its data really shift, and the rounds in which
// drift re-clustering moved it to another cluster (the manifests'
// "reassigned"), and says how many shifted and unshifted sites were moved. Its figures are fig5_entropy (H0 and H1
// entropy over rounds, one line per site, dashed for shifted sites) and
// fig5_drift (Δ over rounds with the threshold and the re-clustering
// rounds marked). It returns an error when there are no rounds or sites or
// a trace's length differs from the number of rounds.
func Stability(in StabilityInput) (*Report, error) {
	if len(in.Rounds) == 0 || len(in.Sites) == 0 {
		return nil, fmt.Errorf("report: stability: %d rounds and %d sites, want both non-zero", len(in.Rounds), len(in.Sites))
	}
	for _, s := range in.Sites {
		for name, v := range map[string][]float64{"H0 entropy": s.H0Entropy, "H1 entropy": s.H1Entropy, "drift": s.Drift} {
			if len(v) != len(in.Rounds) {
				return nil, fmt.Errorf("report: stability: site %s: %d %s values for %d rounds", s.Site, len(v), name, len(in.Rounds))
			}
		}
	}
	d := newDocument(in.Title, "Stability of topological signatures")
	first, last := 0, len(in.Rounds)-1
	d.para("H0 and H1 persistence entropy per site in rounds %d and %d, the drift Δ of Eq. 9 after round %d, and the rounds in which its drift passed the threshold and it was re-clustered, marked \"moved\" where that put it in another cluster (a site whose own cluster is still the closest stays); a re-clustered site's current descriptor becomes the reference its later drift is measured from.", in.Rounds[first], in.Rounds[last], in.Rounds[last])
	if in.DriftThreshold > 0 {
		d.para("Re-clustering threshold on Δ: %.3f.", in.DriftThreshold)
	}
	var rows [][]string
	var shifted, shiftedRe, stable, stableRe, shiftedMoved, stableMoved int
	for _, s := range in.Sites {
		shift := "no"
		if s.Shifted {
			shift = "yes"
			if s.ShiftRound > 0 {
				shift = fmt.Sprintf("yes (round %d)", s.ShiftRound)
			}
			shifted++
			if len(s.Reclustered) > 0 {
				shiftedRe++
			}
			if len(s.Reassigned) > 0 {
				shiftedMoved++
			}
		} else {
			stable++
			if len(s.Reclustered) > 0 {
				stableRe++
			}
			if len(s.Reassigned) > 0 {
				stableMoved++
			}
		}
		re := "never"
		if len(s.Reclustered) > 0 {
			var r []string
			for _, v := range s.Reclustered {
				txt := fmt.Sprint(v)
				if slices.Contains(s.Reassigned, v) {
					txt += " (moved)"
				}
				r = append(r, txt)
			}
			re = strings.Join(r, ", ")
		}
		rows = append(rows, []string{s.Site, shift,
			fmtNum(s.H0Entropy[first]) + " → " + fmtNum(s.H0Entropy[last]),
			fmtNum(s.H1Entropy[first]) + " → " + fmtNum(s.H1Entropy[last]),
			fmtNum(s.Drift[last]), re})
	}
	d.table([]string{"Site", "Data shift", "H0 entropy", "H1 entropy", "Final Δ", "Re-clustered in rounds"}, rows)
	d.para("Drift re-clustering fired for %d of %d shifted sites and %d of %d unshifted sites, and moved %d and %d of them to another cluster.",
		shiftedRe, shifted, stableRe, stable, shiftedMoved, stableMoved)

	x := make([]float64, len(in.Rounds))
	for i, r := range in.Rounds {
		x[i] = float64(r)
	}
	p0 := newPlot("H0 persistence entropy", "Round", "Entropy")
	p1 := newPlot("H1 persistence entropy", "Round", "Entropy")
	pd := newPlot("Topological drift Δ (Eq. 9)", "Round", "Δ")
	var marks plotter.XYs
	for i, s := range in.Sites {
		ls := lineStyle(i)
		label := s.Site
		if s.Shifted {
			ls.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
			label += " (shifted)"
		}
		for _, pl := range []struct {
			p *plot.Plot
			y []float64
		}{{p0, s.H0Entropy}, {p1, s.H1Entropy}, {pd, s.Drift}} {
			if err := addLine(pl.p, label, x, pl.y, ls, glyphStyle(i)); err != nil {
				return nil, fmt.Errorf("report: stability: site %s: %w", s.Site, err)
			}
		}
		for _, r := range s.Reclustered {
			for j, rr := range in.Rounds {
				if rr == r && !math.IsNaN(s.Drift[j]) {
					marks = append(marks, plotter.XY{X: x[j], Y: s.Drift[j]})
				}
			}
		}
	}
	if in.DriftThreshold > 0 {
		thr := plotter.NewFunction(func(float64) float64 { return in.DriftThreshold })
		thr.LineStyle = draw.LineStyle{Color: colour(6), Width: vg.Points(1), Dashes: []vg.Length{vg.Points(2), vg.Points(2)}}
		pd.Add(thr)
		pd.Legend.Add("threshold", thr)
	}
	if len(marks) > 0 {
		sc, err := plotter.NewScatter(marks)
		if err != nil {
			return nil, fmt.Errorf("report: stability: %w", err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: colour(6), Radius: vg.Points(5), Shape: draw.RingGlyph{}}
		pd.Add(sc)
		pd.Legend.Add("re-clustered", sc)
	}
	pd.Legend.Left, pd.Legend.Top = true, true
	fig5, err := render("fig5_entropy", "Fig. 5: H0 and H1 persistence entropy per site over rounds; dashed lines are sites whose data shift.", [][]*plot.Plot{{p0, p1}})
	if err != nil {
		return nil, err
	}
	d.figure(fig5)
	fig5d, err := render("fig5_drift", "Drift Δ (Eq. 9) per site over rounds; rings mark rounds where drift re-clustering fired for the site, the dotted line the threshold.", [][]*plot.Plot{{pd}})
	if err != nil {
		return nil, err
	}
	d.figure(fig5d)
	return d.build(), nil
}

// fmtNum formats a measured value with three decimals, "n/a" for NaN.
func fmtNum(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf("%.3f", v)
}
