package sgemm

import "golang.org/x/sys/cpu"

// HasAsm reports whether Gemm uses the AVX2/FMA assembly micro-kernel.
var HasAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// kernel6x16 is the AVX2/FMA micro-kernel, see kernelGo for its contract.
//
//go:noescape
func kernel6x16(kc int, a, b, c *float32, ldc int)

func kernel(kc int, a, b, c []float32, ldc int) {
	if !HasAsm {
		kernelGo(kc, a, b, c, ldc)
		return
	}
	// The bounds the assembly relies on, checked once per call.
	_ = a[kc*MR-1]
	_ = b[kc*NR-1]
	_ = c[(MR-1)*ldc+NR-1]
	kernel6x16(kc, &a[0], &b[0], &c[0], ldc)
}
