package tda_test

import (
	"fmt"
	"log"

	"github.com/ptopofl/ptopofl/tda"
)

// ExampleLabelledSummary summarises two classes of five points on a line,
// far apart, first with clean labels and then with one label of each class
// flipped (the second point of each). Clean, no short edge joins the
// classes (the mixing curve is 0 at small scales) and the spanning tree
// crosses once, a fifth of what a random relabelling gives; the flips put
// cross-label edges at the smallest scales (the shortest edges are the
// flipped points' edges to their neighbours) and bring the cross-label
// tree edges up to what a random relabelling gives.
func ExampleLabelledSummary() {
	var x [][]float64
	for c := 0; c < 2; c++ {
		for _, o := range []float64{0, 0.1, 0.3, 0.7, 1.5} {
			x = append(x, []float64{100*float64(c) + o})
		}
	}
	clean := []float64{0, 0, 0, 0, 0, 1, 1, 1, 1, 1}
	flipped := []float64{0, 1, 0, 0, 0, 1, 0, 1, 1, 1}
	for _, y := range [][]float64{clean, flipped} {
		s, err := tda.LabelledSummary(x, y, tda.LabelledOptions{})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("mixing at q=%.2f: %.2f  at q=%.2f: %.2f  cross-label H0 ratio: %.2f\n",
			tda.LabelMixingScales[1], s[tda.LabelMixingOffset+1],
			tda.LabelMixingScales[5], s[tda.LabelMixingOffset+5], s[tda.LabelMSTOffset])
	}
	// Output:
	// mixing at q=0.02: 0.00  at q=0.10: 0.00  cross-label H0 ratio: 0.20
	// mixing at q=0.02: 1.80  at q=0.10: 1.20  cross-label H0 ratio: 1.00
}
