package report

import (
	"fmt"

	"gonum.org/v1/plot"
)

// Privacy builds the privacy report of the paper's §4.6 and Fig. 6 from
// figures computed by eval.Privacy. Per federation it tabulates each
// site's training size n and reconstruction risks ρ_grad (Eq. 10) and
// ρ_topo (Eq. 11), their means and ratio, the mutual-information proxies
// and the transmitted dimensionality. Its figure fig6_privacy has three
// panels: (A) ρ per site for gradients and descriptors, (B) the
// mutual-information proxy in bits and (C) the transmitted dimensionality
// (p for gradients, m for descriptors), one bar group per federation in B
// and C. It returns an error when there is no federation or a federation
// has no sites.
func Privacy(in PrivacyInput) (*Report, error) {
	if len(in.Federations) == 0 {
		return nil, fmt.Errorf("report: privacy: no federations")
	}
	d := newDocument(in.Title, "Privacy: reconstruction risk and mutual-information proxy")
	d.para("Reconstruction risk ρ_grad = min(1, p/(n·d)) of sending a gradient and ρ_topo = m/(n·d)·α_c of sending a topological descriptor (Eqs. 10–11), and the mutual-information proxy log2(1 + dim·α_c). These are the paper's proxies, not a differential-privacy guarantee.")
	var siteLabels, feds []string
	var gradRisk, topoRisk []float64
	miGrad, miTopo := []float64{}, []float64{}
	dimGrad, dimTopo := []float64{}, []float64{}
	for _, f := range in.Federations {
		r := f.Report
		if len(r.Sites) == 0 {
			return nil, fmt.Errorf("report: privacy: federation %q has no sites", f.Name)
		}
		d.heading("Federation " + f.Name)
		d.para("d = %d features, p = %d model parameters, m = %d descriptor entries, α_c = %g.", r.Settings.Features, r.Settings.ModelParams, r.Settings.DescriptorDim, r.Settings.Compression)
		var rows [][]string
		for _, s := range r.Sites {
			rows = append(rows, []string{s.Site, fmt.Sprint(s.N), fmtRisk(s.GradientRisk), fmtRisk(s.DescriptorRisk)})
			label := s.Site
			if len(in.Federations) > 1 {
				label = f.Name + "/" + s.Site
			}
			siteLabels = append(siteLabels, label)
			gradRisk = append(gradRisk, s.GradientRisk)
			topoRisk = append(topoRisk, s.DescriptorRisk)
		}
		rows = append(rows, []string{"mean", "", fmtRisk(r.MeanGradientRisk), fmtRisk(r.MeanDescriptorRisk)})
		d.table([]string{"Site", "n", "ρ_grad", "ρ_topo"}, rows)
		d.para("Risk ratio ρ_topo/ρ_grad of the means: %.3f (a %.1f-fold reduction). Mutual-information proxy: %.2f bits for gradients, %.2f bits for descriptors.", r.RiskRatio, 1/r.RiskRatio, r.GradientMI, r.DescriptorMI)
		feds = append(feds, f.Name)
		miGrad = append(miGrad, r.GradientMI)
		miTopo = append(miTopo, r.DescriptorMI)
		dimGrad = append(dimGrad, float64(r.Settings.ModelParams))
		dimTopo = append(dimTopo, float64(r.Settings.DescriptorDim))
	}
	series := []string{"gradient", "descriptor"}
	cols := []int{1, 0}
	nan := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = nanValue
		}
		return v
	}
	pa := newPlot("(A) Reconstruction risk ρ", "", "ρ")
	addGroupedBars(pa, siteLabels, series, [][]float64{gradRisk, topoRisk}, [][]float64{nan(len(gradRisk)), nan(len(topoRisk))}, cols)
	pa.X.Tick.Label.Rotation = 0.6
	pa.X.Tick.Label.XAlign, pa.X.Tick.Label.YAlign = -1, -0.5
	pb := newPlot("(B) Mutual-information proxy", "", "bits")
	addGroupedBars(pb, feds, series, [][]float64{miGrad, miTopo}, [][]float64{nan(len(feds)), nan(len(feds))}, cols)
	pc := newPlot("(C) Transmitted dimensionality", "", "numbers sent")
	addGroupedBars(pc, feds, series, [][]float64{dimGrad, dimTopo}, [][]float64{nan(len(feds)), nan(len(feds))}, cols)
	fig, err := render("fig6_privacy", "Fig. 6: (A) reconstruction risk per site, (B) mutual-information proxy, (C) transmitted dimensionality, for gradients and topological descriptors.", [][]*plot.Plot{{pa, pb, pc}})
	if err != nil {
		return nil, err
	}
	d.heading("Figures")
	d.figure(fig)
	return d.build(), nil
}

// fmtRisk formats a reconstruction risk with four significant digits.
func fmtRisk(v float64) string { return fmt.Sprintf("%.4g", v) }
