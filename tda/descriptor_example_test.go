package tda_test

import (
	"fmt"
	"log"

	"github.com/ptopofl/ptopofl/tda"
)

// ExampleComputeDescriptor computes both descriptor variants of the four
// corners of a square. After standardising, the sides are about 2 and the
// diagonals about 2√2. Exact H1 sees the square's one loop, born when the
// last side appears and dying when the diagonals fill it in. The paper-era
// triangle statistic instead keeps one (side, diagonal) pair for each of
// the four triangles.
func ExampleComputeDescriptor() {
	square := [][]float64{{0, 0}, {1, 0}, {1, 1}, {0, 1}}
	for _, variant := range []string{tda.VariantExact, tda.VariantTriangle} {
		d, err := tda.ComputeDescriptor(square, tda.DescriptorOptions{Variant: variant})
		if err != nil {
			log.Fatal(err)
		}
		v := d.Vector
		fmt.Printf("%s: %d H0 pairs, %d H1 pairs, t_max %.4f\n", variant, len(d.H0), len(d.H1), d.TMax)
		fmt.Printf("  bc0 %v\n  bc1 %v\n", v[0:20], v[20:40])
		fmt.Printf("  H0ent %.4g H1ent %.4g A0 %.4g A1 %.4g nPers %v %v count %v %v\n",
			v[40], v[41], v[42], v[43], v[44], v[45], v[46], v[47])
	}
	// Output:
	// exact: 3 H0 pairs, 1 H1 pairs, t_max 2.7042
	//   bc0 [3 3 3 3 3 3 3 3 3 3 3 3 3 3 3 0 0 0 0 0]
	//   bc1 [0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1 1 1 1 1]
	//   H0ent 1.099 H1ent -1e-12 A0 3.464 A1 0.8284 nPers 0 0 count 3 1
	// triangle: 3 H0 pairs, 4 H1 pairs, t_max 2.8284
	//   bc0 [3 3 3 3 3 3 3 3 3 3 3 3 3 3 0 0 0 0 0 0]
	//   bc1 [0 0 0 0 0 0 0 0 0 0 0 0 0 0 4 4 4 4 4 0]
	//   H0ent 1.099 H1ent 1.386 A0 3.464 A1 1.657 nPers 0 0 count 3 4
}
