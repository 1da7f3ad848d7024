package aggregation_test

import (
	"fmt"
	"log"

	"github.com/ptopofl/ptopofl/aggregation"
)

// ExampleFoolsGoldWeights scores four sites by their summed updates: sites
// 0 and 1 push the same direction, as sybils do, and FoolsGold gives them
// weight 0, which FoolsGoldFlags reports; the two honest sites, whose
// updates differ, keep full weight. By hand: the sybils' cosine similarity
// is 1, so α = 1 − 1 = 0; site 2's closest neighbours are the sybils
// (cosine 1/2), pardoned to 1/2 · (1/2)/1 = 1/4, so α = 3/4; site 3 is
// orthogonal to all, α = 1. Rescaled by 1, the logit sends 3/4 to
// ln 3 + 0.5 > 1 and the capped 0.99 to ln 99 + 0.5, both clipped to 1.
func ExampleFoolsGoldWeights() {
	history := [][]float64{
		{1, 1, 0},
		{2, 2, 0},
		{0, 1, 1},
		{1, -1, 1},
	}
	w, err := aggregation.FoolsGoldWeights(history, 1)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(w)
	fmt.Println(aggregation.FoolsGoldFlags(w, 0.01))
	// Output:
	// [0 0 1 1]
	// [true true false false]
}
