// Package sgemm multiplies float32 matrices fast and deterministically: a
// blocked, packed single-precision GEMM with an AVX2/FMA micro-kernel in Go
// assembly on amd64 and a pure-Go kernel everywhere else (and on amd64 CPUs
// without AVX2 and FMA).
//
// Determinism is part of the contract, not an accident of scheduling. Every
// element of C is computed by exactly one goroutine, by the same sequence of
// floating-point operations whatever the number of goroutines and whichever
// of them takes it: the k dimension is cut into blocks that depend on k
// alone, each block's dot product runs in k order inside one micro-kernel
// call, and the blocks are added to C in k order. Edge tiles run the same micro-kernel on zero-padded panels. So
// Gemm gives the same bits on 1 or 2 threads (GOMAXPROCS or Workers), and
// differs between the assembly and the pure-Go kernel only by FMA rounding.
//
// The layout follows the well-known GotoBLAS/BLIS scheme (Goto and van de
// Geijn 2008, "Anatomy of high-performance matrix multiplication"): B is
// packed into KC×NR column panels, A into MR×KC row panels, and a register
// tile of MR×NR outputs is accumulated by the micro-kernel. With the
// assembly kernel a non-transposed A is not packed but read in place, six
// rows at a time (same operations, same bits): for the tall, narrow products
// of convolutions packing A would cost a pass over it as large as the
// product's own.
//
// Matrices are row-major, as everywhere in package nn.
package sgemm
