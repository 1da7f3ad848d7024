#include "textflag.h"

// PACK_ARGS loads the arguments every pack routine takes, (dst, src
// *float32, kc, ld int): DI = dst, SI = src, CX = kc, R8 = ld in bytes.
#define PACK_ARGS \
	MOVQ dst+0(FP), DI; \
	MOVQ src+8(FP), SI; \
	MOVQ kc+16(FP), CX; \
	MOVQ ld+24(FP), R8; \
	SHLQ $2, R8

// func packA6N(dst, src *float32, kc, ld int)
// dst[q*6+r] = src[r*ld+q] for r < 6, q < kc: six rows of A interleaved,
// four columns at a time by a 4x4 SSE transpose of rows 0-3 and an unpack
// of rows 4-5.
TEXT ·packA6N(SB), NOSPLIT, $0-32
	PACK_ARGS
	LEAQ (SI)(R8*1), R9
	LEAQ (R9)(R8*1), R10
	LEAQ (R10)(R8*1), R11
	LEAQ (R11)(R8*1), R12
	LEAQ (R12)(R8*1), R13
	MOVQ CX, BX
	SHRQ $2, BX
	JZ   tail6n

loop6n:
	MOVUPS   (SI), X0
	MOVUPS   (R9), X1
	MOVUPS   (R10), X2
	MOVUPS   (R11), X3
	MOVUPS   (R12), X4
	MOVUPS   (R13), X5
	MOVAPS   X0, X6
	UNPCKLPS X1, X6   // a0 b0 a1 b1
	UNPCKHPS X1, X0   // a2 b2 a3 b3
	MOVAPS   X2, X7
	UNPCKLPS X3, X7   // c0 d0 c1 d1
	UNPCKHPS X3, X2   // c2 d2 c3 d3
	MOVAPS   X6, X1
	MOVLHPS  X7, X1   // a0 b0 c0 d0
	MOVHLPS  X6, X7   // a1 b1 c1 d1
	MOVAPS   X0, X3
	MOVLHPS  X2, X3   // a2 b2 c2 d2
	MOVHLPS  X0, X2   // a3 b3 c3 d3
	MOVAPS   X4, X8
	UNPCKLPS X5, X8   // e0 f0 e1 f1
	UNPCKHPS X5, X4   // e2 f2 e3 f3
	MOVUPS   X1, 0(DI)
	MOVLPS   X8, 16(DI)
	MOVUPS   X7, 24(DI)
	MOVHPS   X8, 40(DI)
	MOVUPS   X3, 48(DI)
	MOVLPS   X4, 64(DI)
	MOVUPS   X2, 72(DI)
	MOVHPS   X4, 88(DI)
	ADDQ     $16, SI
	ADDQ     $16, R9
	ADDQ     $16, R10
	ADDQ     $16, R11
	ADDQ     $16, R12
	ADDQ     $16, R13
	ADDQ     $96, DI
	DECQ     BX
	JNZ      loop6n

tail6n:
	ANDQ $3, CX
	JZ   done6n

loop6n1:
	MOVSS (SI), X0
	MOVSS X0, 0(DI)
	MOVSS (R9), X0
	MOVSS X0, 4(DI)
	MOVSS (R10), X0
	MOVSS X0, 8(DI)
	MOVSS (R11), X0
	MOVSS X0, 12(DI)
	MOVSS (R12), X0
	MOVSS X0, 16(DI)
	MOVSS (R13), X0
	MOVSS X0, 20(DI)
	ADDQ  $4, SI
	ADDQ  $4, R9
	ADDQ  $4, R10
	ADDQ  $4, R11
	ADDQ  $4, R12
	ADDQ  $4, R13
	ADDQ  $24, DI
	DECQ  CX
	JNZ   loop6n1

done6n:
	RET

// func packA6T(dst, src *float32, kc, ld int)
// dst[q*6+r] = src[q*ld+r] for r < 6, q < kc.
TEXT ·packA6T(SB), NOSPLIT, $0-32
	PACK_ARGS

loop6t:
	MOVUPS (SI), X0
	MOVQ   16(SI), X1
	MOVUPS X0, (DI)
	MOVQ   X1, 16(DI)
	ADDQ   R8, SI
	ADDQ   $24, DI
	DECQ   CX
	JNZ    loop6t
	RET

// func packB16N(dst, src *float32, kc, ld int)
// dst[q*16+c] = src[q*ld+c] for c < 16, q < kc. Needs AVX.
TEXT ·packB16N(SB), NOSPLIT, $0-32
	PACK_ARGS

loop16:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ    R8, SI
	ADDQ    $64, DI
	DECQ    CX
	JNZ     loop16
	VZEROUPPER
	RET
