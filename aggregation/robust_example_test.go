package aggregation_test

import (
	"fmt"

	"github.com/ptopofl/ptopofl/aggregation"
)

// Five sites send two-parameter models; site 4 is Byzantine and sends a
// huge update. The robust rules ignore it where the mean would not.
func ExampleKrum() {
	models := [][]float64{
		{1.0, -0.5},
		{1.1, -0.4},
		{0.9, -0.6},
		{1.0, -0.45},
		{50, 80},
	}
	krum, _ := aggregation.Krum(models, 1)
	median, _ := aggregation.CoordinateMedian(models)
	trimmed, _ := aggregation.TrimmedMean(models, 0.2)
	fmt.Printf("krum    %.3f\n", krum)
	fmt.Printf("median  %.3f\n", median)
	fmt.Printf("trimmed %.3f\n", trimmed)
	// Output:
	// krum    [1.000 -0.450]
	// median  [1.000 -0.450]
	// trimmed [1.033 -0.450]
}
