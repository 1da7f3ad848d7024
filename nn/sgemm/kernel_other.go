//go:build !amd64

package sgemm

// HasAsm reports whether Gemm uses an assembly micro-kernel; there is none
// for this architecture.
var HasAsm = false

func kernel(kc int, a, b, c []float32, ldc int, overwrite bool) {
	kernelGo(kc, a, b, c, ldc, overwrite)
}

func packPanelA(dst, src []float32, kc, ld int, transA bool) {
	packPanelAGo(dst, src, kc, ld, transA)
}

func packPanelB(dst, src []float32, kc, ld int) { packPanelBGo(dst, src, kc, ld) }

func directA() bool { return false }

func kernelDirect(kc int, a []float32, lda int, b, c []float32, ldc int, overwrite bool) {
	panic("sgemm: no direct kernel on this architecture")
}
