//go:build !amd64

package sgemm

// HasAsm reports whether Gemm uses an assembly micro-kernel; there is none
// for this architecture.
var HasAsm = false

func kernel(kc int, a, b, c []float32, ldc int) { kernelGo(kc, a, b, c, ldc) }
