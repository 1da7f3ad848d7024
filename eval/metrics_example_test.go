package eval_test

import (
	"fmt"

	"github.com/ptopofl/ptopofl/eval"
)

func ExampleROCAUC() {
	// Two sites' test scores; site b has a tie between a positive and a
	// negative, which counts one half.
	a, _ := eval.ROCAUC([]float64{0.1, 0.4, 0.35, 0.8}, []float64{0, 0, 1, 1})
	b, _ := eval.ROCAUC([]float64{0.2, 0.6, 0.6}, []float64{0, 0, 1})
	fmt.Printf("site AUCs %.3f %.3f, round AUC %.3f\n", a, b, eval.SiteMean([]float64{a, b}))
	fmt.Println("convergence round:", eval.ConvergenceRound([]float64{0.6, 0.7, 0.8, 0.8}))
	// Output:
	// site AUCs 0.750 0.750, round AUC 0.750
	// convergence round: 3
}
