package eval_test

import (
	"fmt"

	"github.com/ptopofl/ptopofl/eval"
)

// ExamplePairedTTest compares the final AUC of two methods run with the
// same three seeds.
func ExamplePairedTTest() {
	ptopofl := []float64{0.84, 0.85, 0.83}
	fedavg := []float64{0.79, 0.80, 0.80}
	t, err := eval.PairedTTest(ptopofl, fedavg)
	if err != nil {
		fmt.Println(err)
		return
	}
	w, err := eval.WilcoxonSignedRank(ptopofl, fedavg)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("difference %.3f ± %.3f, t(%d) = %.2f, p = %.3f\n", t.MeanDiff, t.StdDiff, t.DF, t.T, t.P)
	fmt.Printf("signed-rank W = %g, exact p = %.2f\n", w.Statistic, w.P)
	// Output:
	// difference 0.043 ± 0.012, t(2) = 6.50, p = 0.023
	// signed-rank W = 0, exact p = 0.25
}
