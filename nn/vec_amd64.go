package nn

import "github.com/ptopofl/ptopofl/nn/sgemm"

//go:noescape
func addVecAVX(dst, src *float32, n int)

// addVec adds src to dst elementwise. Each element is one rounded float32
// addition either way, so the AVX and the Go loop give the same bits.
func addVec(dst, src []float32) {
	if len(src) == 0 {
		return
	}
	if !sgemm.HasAsm {
		addVecGo(dst, src)
		return
	}
	_ = dst[len(src)-1]
	addVecAVX(&dst[0], &src[0], len(src))
}
