package sgemm_test

import (
	"fmt"

	"github.com/ptopofl/ptopofl/nn/sgemm"
)

// Multiply a 2×3 matrix by a 3×2 one, then accumulate the product of the
// transposes onto the result.
func ExampleGemm() {
	a := []float32{1, 2, 3, 4, 5, 6}    // 2×3
	b := []float32{7, 8, 9, 10, 11, 12} // 3×2
	c := make([]float32, 4)
	sgemm.Gemm(1, false, false, 2, 2, 3, a, 3, b, 2, c, 2, false)
	fmt.Println(c)
	// Aᵀ is 3×2 stored as A (2×3), Bᵀ is 2×3 stored as B (3×2): Bᵀ·Aᵀ =
	// (A·B)ᵀ, so C becomes A·B + (A·B)ᵀ.
	sgemm.Gemm(1, true, true, 2, 2, 3, b, 2, a, 3, c, 2, true)
	fmt.Println(c)
	// Output:
	// [58 64 139 154]
	// [116 203 203 308]
}
