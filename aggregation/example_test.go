package aggregation_test

import (
	"fmt"

	"github.com/ptopofl/ptopofl/aggregation"
	"github.com/ptopofl/ptopofl/learn"
)

// A pTopoFL round over three sites: two with similar topology share a
// cluster model, the third gets its own, both blended with β = 0.3 (Eq. 7):
// cluster models [2 0] and [0 8], consensus 2/3·[2 0] + 1/3·[0 8].
func ExampleAggregateRound() {
	desc := func(a int) []float64 { d := make([]float64, 48); d[a] = 1; return d }
	sites := []aggregation.SiteResult{
		{Params: []float64{1, 0}, N: 100, Descriptor: desc(0)},
		{Params: []float64{3, 0}, N: 100, Descriptor: desc(0)},
		{Params: []float64{0, 8}, N: 50, Descriptor: desc(1)},
	}
	out, err := aggregation.AggregateRound(aggregation.RoundInput{
		Method: learn.PTopoFL, Round: 1, Sites: sites, Config: aggregation.DefaultConfig(),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("clusters:", out.Labels)
	for k, m := range out.Models {
		fmt.Printf("site %d receives [%.3f %.3f]\n", k, m[0], m[1])
	}
	// Output:
	// clusters: [0 0 1]
	// site 0 receives [1.800 0.800]
	// site 1 receives [1.800 0.800]
	// site 2 receives [0.400 6.400]
}
