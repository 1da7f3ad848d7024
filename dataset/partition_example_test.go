package dataset_test

import (
	"fmt"

	"github.com/ptopofl/ptopofl/dataset"
)

// Split 1,000 samples of 4 classes among 3 sites, first nearly IID
// (α = 100), then skewed (α = 0.1), and print each site's class counts.
func ExampleDirichletPartition() {
	labels := make([]int, 1000)
	for i := range labels {
		labels[i] = i % 4
	}
	for _, alpha := range []float64{100, 0.1} {
		parts, err := dataset.DirichletPartition(labels, 4, 3, alpha, 20, 42)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("α = %v:\n", alpha)
		for s, p := range parts {
			count := make([]int, 4)
			for _, i := range p {
				count[labels[i]]++
			}
			fmt.Printf("  site %d: %d samples, per class %v\n", s, len(p), count)
		}
	}
	// Output:
	// α = 100:
	//   site 0: 321 samples, per class [79 87 88 67]
	//   site 1: 341 samples, per class [88 87 76 90]
	//   site 2: 338 samples, per class [83 76 86 93]
	// α = 0.1:
	//   site 0: 349 samples, per class [48 0 51 250]
	//   site 1: 463 samples, per class [202 250 11 0]
	//   site 2: 188 samples, per class [0 0 188 0]
}
