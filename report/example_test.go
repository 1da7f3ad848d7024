package report_test

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ptopofl/ptopofl/report"
)

// ExampleAblation builds the ablation report from final AUCs of two seeds
// and lists what it returns: Markdown, HTML and the figure assets to write
// beside the Markdown.
func ExampleAblation() {
	r, err := report.Ablation(report.AblationInput{
		Scenario: "healthcare",
		Variants: []report.AblationVariant{
			{Name: "M=1", Description: "one cluster", FinalAUC: []float64{0.79, 0.81}},
			{Name: "full", Description: "pTopoFL", FinalAUC: []float64{0.84, 0.85}},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, line := range strings.Split(string(r.Markdown), "\n") {
		if strings.HasPrefix(line, "| M=1") || strings.HasPrefix(line, "![") {
			fmt.Println(line)
		}
	}
	var names []string
	for name := range r.Assets {
		names = append(names, name)
	}
	slices.Sort(names)
	fmt.Println(names)
	// Output:
	// | M=1 | one cluster | 2 | 0.800 ± 0.014 |  |
	// ![Fig. 7: final AUC per ablation variant, mean ± std over seeds.](fig7_ablation.png)
	// [fig7_ablation.png fig7_ablation.svg]
}
