#include "textflag.h"

// STEP does one k step of the 6x16 tile: two 8-wide loads of the B panel
// row, six broadcasts of the A panel column, twelve FMAs into Y0..Y11.
// off is the step's index within the unrolled group.
#define STEP(off) \
	VMOVUPS (off*64)(DI), Y12 \
	VMOVUPS (off*64+32)(DI), Y13 \
	VBROADCASTSS (off*24)(SI), Y14 \
	VBROADCASTSS (off*24+4)(SI), Y15 \
	VFMADD231PS Y12, Y14, Y0 \
	VFMADD231PS Y13, Y14, Y1 \
	VFMADD231PS Y12, Y15, Y2 \
	VFMADD231PS Y13, Y15, Y3 \
	VBROADCASTSS (off*24+8)(SI), Y14 \
	VBROADCASTSS (off*24+12)(SI), Y15 \
	VFMADD231PS Y12, Y14, Y4 \
	VFMADD231PS Y13, Y14, Y5 \
	VFMADD231PS Y12, Y15, Y6 \
	VFMADD231PS Y13, Y15, Y7 \
	VBROADCASTSS (off*24+16)(SI), Y14 \
	VBROADCASTSS (off*24+20)(SI), Y15 \
	VFMADD231PS Y12, Y14, Y8 \
	VFMADD231PS Y13, Y14, Y9 \
	VFMADD231PS Y12, Y15, Y10 \
	VFMADD231PS Y13, Y15, Y11

// ROWW writes two accumulators over one 16-wide row of C and moves to the
// next (the first k block of a product that does not accumulate).
#define ROWW(lo, hi) \
	VMOVUPS lo, (DX) \
	VMOVUPS hi, 32(DX) \
	ADDQ R8, DX

// ZEROACC clears the twelve accumulators Y0..Y11.
#define ZEROACC \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3 \
	VXORPS Y4, Y4, Y4 \
	VXORPS Y5, Y5, Y5 \
	VXORPS Y6, Y6, Y6 \
	VXORPS Y7, Y7, Y7 \
	VXORPS Y8, Y8, Y8 \
	VXORPS Y9, Y9, Y9 \
	VXORPS Y10, Y10, Y10 \
	VXORPS Y11, Y11, Y11

// STORE writes the tile's six rows with ROW or ROWW and returns.
#define STORE(op) \
	op(Y0, Y1) \
	op(Y2, Y3) \
	op(Y4, Y5) \
	op(Y6, Y7) \
	op(Y8, Y9) \
	op(Y10, Y11) \
	VZEROUPPER \
	RET

// ROW adds two accumulators to one 16-wide row of C and moves to the next.
#define ROW(lo, hi) \
	VADDPS (DX), lo, lo \
	VADDPS 32(DX), hi, hi \
	VMOVUPS lo, (DX) \
	VMOVUPS hi, 32(DX) \
	ADDQ R8, DX

// func kernel6x16(kc int, a, b, c *float32, ldc int, overwrite bool)
TEXT ·kernel6x16(SB), NOSPLIT, $0-41
	MOVQ kc+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ c+24(FP), DX
	MOVQ ldc+32(FP), R8
	SHLQ $2, R8
	ZEROACC
	MOVQ CX, BX
	SHRQ $2, BX
	JZ   tail

loop4:
	STEP(0)
	STEP(1)
	STEP(2)
	STEP(3)
	ADDQ $96, SI
	ADDQ $256, DI
	DECQ BX
	JNZ  loop4

tail:
	ANDQ $3, CX
	JZ   store

loop1:
	STEP(0)
	ADDQ $24, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  loop1

store:
	MOVBLZX overwrite+40(FP), AX
	TESTQ   AX, AX
	JNZ     storew
	STORE(ROW)

storew:
	STORE(ROWW)

// DSTEP is STEP reading A unpacked: the six values of column off come from
// six rows of stride R8 bytes, rows 0, 1, 2, 4 addressed from SI and rows 3
// and 5 from R11 = SI + 3 rows.
#define DSTEP(off) \
	VMOVUPS (off*64)(DI), Y12 \
	VMOVUPS (off*64+32)(DI), Y13 \
	VBROADCASTSS (off*4)(SI), Y14 \
	VBROADCASTSS (off*4)(SI)(R8*1), Y15 \
	VFMADD231PS Y12, Y14, Y0 \
	VFMADD231PS Y13, Y14, Y1 \
	VFMADD231PS Y12, Y15, Y2 \
	VFMADD231PS Y13, Y15, Y3 \
	VBROADCASTSS (off*4)(SI)(R8*2), Y14 \
	VBROADCASTSS (off*4)(R11), Y15 \
	VFMADD231PS Y12, Y14, Y4 \
	VFMADD231PS Y13, Y14, Y5 \
	VFMADD231PS Y12, Y15, Y6 \
	VFMADD231PS Y13, Y15, Y7 \
	VBROADCASTSS (off*4)(SI)(R8*4), Y14 \
	VBROADCASTSS (off*4)(R11)(R8*2), Y15 \
	VFMADD231PS Y12, Y14, Y8 \
	VFMADD231PS Y13, Y14, Y9 \
	VFMADD231PS Y12, Y15, Y10 \
	VFMADD231PS Y13, Y15, Y11

// func kernel6x16Direct(kc int, a *float32, lda int, b, c *float32, ldc int, overwrite bool)
// kernel6x16 with A read in place: a points at A[0][0] of six rows of
// stride lda. The floating-point operations are those of kernel6x16, in the
// same order, so the results are bit-identical.
TEXT ·kernel6x16Direct(SB), NOSPLIT, $0-49
	MOVQ kc+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R8
	MOVQ b+24(FP), DI
	MOVQ c+32(FP), DX
	MOVQ ldc+40(FP), R9
	SHLQ $2, R8
	SHLQ $2, R9
	LEAQ (SI)(R8*2), R11
	ADDQ R8, R11
	ZEROACC
	MOVQ CX, BX
	SHRQ $2, BX
	JZ   dtail

dloop4:
	DSTEP(0)
	DSTEP(1)
	DSTEP(2)
	DSTEP(3)
	ADDQ $16, SI
	ADDQ $16, R11
	ADDQ $256, DI
	DECQ BX
	JNZ  dloop4

dtail:
	ANDQ $3, CX
	JZ   dstore

dloop1:
	DSTEP(0)
	ADDQ $4, SI
	ADDQ $4, R11
	ADDQ $64, DI
	DECQ CX
	JNZ  dloop1

dstore:
	MOVQ    R9, R8
	MOVBLZX overwrite+48(FP), AX
	TESTQ   AX, AX
	JNZ     dstorew
	STORE(ROW)

dstorew:
	STORE(ROWW)
