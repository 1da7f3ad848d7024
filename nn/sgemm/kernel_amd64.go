package sgemm

import "golang.org/x/sys/cpu"

// HasAsm reports whether Gemm uses the AVX2/FMA assembly micro-kernel.
var HasAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// kernel6x16 is the AVX2/FMA micro-kernel, see kernelGo for its contract.
//
//go:noescape
func kernel6x16(kc int, a, b, c *float32, ldc int, overwrite bool)

func kernel(kc int, a, b, c []float32, ldc int, overwrite bool) {
	if !HasAsm {
		kernelGo(kc, a, b, c, ldc, overwrite)
		return
	}
	// The bounds the assembly relies on, checked once per call.
	_ = a[kc*MR-1]
	_ = b[kc*NR-1]
	_ = c[(MR-1)*ldc+NR-1]
	kernel6x16(kc, &a[0], &b[0], &c[0], ldc, overwrite)
}

// The packing routines of pack_amd64.s; see packPanelA and packPanelB for
// their contracts. kc must be at least 1.
//
//go:noescape
func packA6N(dst, src *float32, kc, ld int)

//go:noescape
func packA6T(dst, src *float32, kc, ld int)

//go:noescape
func packB16N(dst, src *float32, kc, ld int)

// packPanelA packs one full MR-row panel of op(A) whose first element is
// src[0]: kc columns from rows of stride ld (transA false) or kc rows of
// stride ld holding MR consecutive values (transA true).
func packPanelA(dst, src []float32, kc, ld int, transA bool) {
	if !HasAsm {
		packPanelAGo(dst, src, kc, ld, transA)
		return
	}
	_ = dst[kc*MR-1]
	if transA {
		_ = src[(kc-1)*ld+MR-1]
		packA6T(&dst[0], &src[0], kc, ld)
		return
	}
	_ = src[(MR-1)*ld+kc-1]
	packA6N(&dst[0], &src[0], kc, ld)
}

// packPanelB packs one full NR-column panel of a non-transposed B: kc rows
// of stride ld, NR consecutive values each.
func packPanelB(dst, src []float32, kc, ld int) {
	if !HasAsm {
		packPanelBGo(dst, src, kc, ld)
		return
	}
	_ = dst[kc*NR-1]
	_ = src[(kc-1)*ld+NR-1]
	packB16N(&dst[0], &src[0], kc, ld)
}

//go:noescape
func kernel6x16Direct(kc int, a *float32, lda int, b, c *float32, ldc int, overwrite bool)

// directA reports whether full MR-row panels of a non-transposed A are read
// in place by the micro-kernel instead of being packed.
func directA() bool { return HasAsm }

// kernelDirect is kernel with the MR×kc panel of A read in place from rows
// of stride lda starting at a[0]; same arithmetic, same bits.
func kernelDirect(kc int, a []float32, lda int, b, c []float32, ldc int, overwrite bool) {
	_ = a[(MR-1)*lda+kc-1]
	_ = b[kc*NR-1]
	_ = c[(MR-1)*ldc+NR-1]
	kernel6x16Direct(kc, &a[0], lda, &b[0], &c[0], ldc, overwrite)
}
