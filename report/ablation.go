package report

import (
	"fmt"
	"strings"

	"github.com/ptopofl/ptopofl/eval"
	"gonum.org/v1/plot"
)

// Ablation builds the ablation report of the paper's §4.7 and Fig. 7: per
// variant (M=1, β=0, full, automatic M, …) its final AUC as mean ± sample
// std over seeds and, where given, the numbers of clusters used. Its
// figure fig7_ablation shows the mean final AUC per variant with std
// whiskers. Variants are shown in the order given. It returns an error
// when there is no variant or a variant has no final AUC.
func Ablation(in AblationInput) (*Report, error) {
	if len(in.Variants) == 0 {
		return nil, fmt.Errorf("report: ablation: no variants")
	}
	d := newDocument(in.Title, "Ablation study")
	if in.Scenario != "" {
		d.para("Scenario: %s. Final AUC-ROC, mean ± sample standard deviation over seeds.", in.Scenario)
	} else {
		d.para("Final AUC-ROC, mean ± sample standard deviation over seeds.")
	}
	var rows [][]string
	var names []string
	mean, std := make([]float64, len(in.Variants)), make([]float64, len(in.Variants))
	for i, v := range in.Variants {
		if len(v.FinalAUC) == 0 {
			return nil, fmt.Errorf("report: ablation: variant %q has no final AUC", v.Name)
		}
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
	p := newPlot("Ablation", "", "Final AUC-ROC")
	for i := range in.Variants {
		b := &bars{X: []float64{float64(i)}, Y: []float64{mean[i]}, Err: []float64{std[i]}, Width: 0.6, Color: colour(i)}
		p.Add(b)
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.5, float64(len(names))-0.5
	p.Y.Min, p.Y.Max = 0, 1.05
	fig, err := render("fig7_ablation", "Fig. 7: final AUC per ablation variant, mean ± std over seeds.", [][]*plot.Plot{{p}})
	if err != nil {
		return nil, err
	}
	d.figure(fig)
	return d.build(), nil
}
