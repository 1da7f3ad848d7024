package sgemm

import (
	"runtime"
	"sync"

	"github.com/ptopofl/ptopofl/nn/internal/parallel"
)

// Register and cache blocking. MR×NR is the micro-kernel's register tile
// (12 of the 16 YMM registers hold it); an MR×KC panel of A and a KC×NR panel
// of B are what one kernel call streams (6 KiB and 16 KiB: both stay in L1);
// an MC×KC block of A (120 KiB) stays in L2 while the kernel sweeps it,
// and a KC×NC block of B (512 KiB) is shared by the MC blocks. NC = 512
// measured faster here than 256 or 1024 at the ConvNet-2 shapes (dense
// 64×2048×3136: 65 against 38 GFLOP/s at 1024, one thread).
const (
	MR = 6
	NR = 16
	KC = 256
	MC = 120
	NC = 512
)

// chunksPerWorker is the number of pieces of C per worker, see Gemm.
const chunksPerWorker = 4

// minParallelWork is the number of multiply-adds below which Gemm does not
// start goroutines: the start-up costs more than it saves.
const minParallelWork = 1 << 18

// Gemm computes C = op(A)·op(B), or C += op(A)·op(B) if accumulate is true,
// for row-major matrices. op(A) is m×k and is A (m×k, leading dimension
// lda) or, if transA, Aᵀ with A stored k×m; op(B) is k×n and is B (k×n,
// leading dimension ldb) or, if transB, Bᵀ with B stored n×k. C is m×n with
// leading dimension ldc.
//
// Gemm splits C among at most workers goroutines (workers < 1 means
// runtime.GOMAXPROCS(0)); the result does not depend on the split, see the
// package documentation. It panics if a slice is too short for its
// dimensions: those are programmer errors.
func Gemm(workers int, transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, accumulate bool) {
	if m < 0 || n < 0 || k < 0 {
		panic("sgemm: negative dimension")
	}
	if m == 0 || n == 0 {
		return
	}
	checkMatrix("A", a, transA, m, k, lda)
	checkMatrix("B", b, transB, k, n, ldb)
	if ldc < n || len(c) < (m-1)*ldc+n {
		panic("sgemm: C too short for its dimensions")
	}
	if workers < 1 {
		workers = runtime.GOMAXPROCS(0)
	}
	if m*n*k < minParallelWork {
		workers = 1
	}
	g := gemm{transA: transA, transB: transB, k: k, a: a, lda: lda, b: b, ldb: ldb, c: c, ldc: ldc, acc: accumulate}
	// Cut the longer side of C into contiguous pieces of whole register
	// tiles, chunksPerWorker per worker, which the workers take as they
	// become free: no tile is shared, and a descheduled goroutine (the cores
	// are shared) delays only a small piece. Each piece packs its own panels,
	// so more pieces would cost more packing.
	splitRows := m >= n
	extent, unit := n, NR
	if splitRows {
		extent, unit = m, MR
	}
	tiles := (extent + unit - 1) / unit
	chunks := min(tiles, chunksPerWorker*workers)
	if workers <= 1 || chunks <= 1 {
		g.region(0, m, 0, n)
		return
	}
	parallel.Run(workers, chunks, func(ch int) {
		lo := tiles * ch / chunks * unit
		hi := min(tiles*(ch+1)/chunks*unit, extent)
		if splitRows {
			g.region(lo, hi, 0, n)
		} else {
			g.region(0, m, lo, hi)
		}
	})
}

func checkMatrix(name string, x []float32, trans bool, rows, cols, ld int) {
	if trans {
		rows, cols = cols, rows
	}
	if rows == 0 || cols == 0 {
		return
	}
	if ld < cols || len(x) < (rows-1)*ld+cols {
		panic("sgemm: " + name + " too short for its dimensions")
	}
}

type gemm struct {
	transA, transB bool
	k              int
	a              []float32
	lda            int
	b              []float32
	ldb            int
	c              []float32
	ldc            int
	acc            bool
}

// buffers holds one goroutine's packed panels.
type buffers struct {
	a    [MC * KC]float32
	b    [KC * NC]float32
	tile [MR * NR]float32
}

var bufferPool = sync.Pool{New: func() any { return new(buffers) }}

// region computes C[i0:i1, j0:j1].
func (g *gemm) region(i0, i1, j0, j1 int) {
	if g.k == 0 {
		if !g.acc {
			for i := i0; i < i1; i++ {
				clear(g.c[i*g.ldc+j0 : i*g.ldc+j1])
			}
		}
		return
	}
	buf := bufferPool.Get().(*buffers)
	defer bufferPool.Put(buf)
	// A non-transposed A is read in place by the kernel, panel by panel,
	// except for a last panel of fewer than MR rows: packing it would cost
	// a pass over A as large as the product's own reads when n is small
	// (convolutions: n = output channels).
	direct := !g.transA && directA()
	// k is cut into equal blocks of at most KC (800 = 4×200, not
	// 3×256 + 32: a short last block wastes the kernel's fixed costs). The
	// cut depends on k alone, so every element sums the same blocks in the
	// same order whatever the split among goroutines.
	blocks := (g.k + KC - 1) / KC
	kStep := (g.k + blocks - 1) / blocks
	for jc := j0; jc < j1; jc += NC {
		nc := min(NC, j1-jc)
		for pc := 0; pc < g.k; pc += kStep {
			kc := min(kStep, g.k-pc)
			g.packB(buf.b[:], pc, kc, jc, nc)
			for ic := i0; ic < i1; ic += MC {
				mc := min(MC, i1-ic)
				if !direct {
					g.packA(buf.a[:], ic, mc, pc, kc)
				} else if rem := mc % MR; rem != 0 {
					last := mc - rem
					g.packA(buf.a[last*kc:], ic+last, rem, pc, kc)
				}
				g.macro(buf, ic, mc, jc, nc, pc, kc, direct)
			}
		}
	}
}

// macro runs the micro-kernel over an mc×nc block of C whose panels are
// packed in buf (or, if direct, whose full A panels are read in place). The
// first k block of a product that does not accumulate overwrites C instead
// of adding to it, which spares a clearing pass over C.
func (g *gemm) macro(buf *buffers, ic, mc, jc, nc, pc, kc int, direct bool) {
	first := pc == 0 && !g.acc
	for jr := 0; jr < nc; jr += NR {
		nr := min(NR, nc-jr)
		pb := buf.b[jr*kc : jr*kc+kc*NR]
		for ir := 0; ir < mc; ir += MR {
			mr := min(MR, mc-ir)
			pa := buf.a[ir*kc : ir*kc+kc*MR]
			off := (ic+ir)*g.ldc + jc + jr
			if direct && mr == MR {
				a := g.a[(ic+ir)*g.lda+pc:]
				if nr == NR {
					kernelDirect(kc, a, g.lda, pb, g.c[off:], g.ldc, first)
					continue
				}
				t := buf.tile[:]
				kernelDirect(kc, a, g.lda, pb, t, NR, true)
				addTile(g.c[off:], g.ldc, t, mr, nr, first)
				continue
			}
			if mr == MR && nr == NR {
				kernel(kc, pa, pb, g.c[off:], g.ldc, first)
				continue
			}
			// An edge tile: the same kernel into a scratch tile, whose
			// valid part is then added to (or copied over) C, so the
			// arithmetic of every element is that of a full tile.
			t := buf.tile[:]
			kernel(kc, pa, pb, t, NR, true)
			addTile(g.c[off:], g.ldc, t, mr, nr, first)
		}
	}
}

// addTile adds the mr×nr valid part of a kernel tile t (leading dimension
// NR) to C, or copies it over C if overwrite.
func addTile(c []float32, ldc int, t []float32, mr, nr int, overwrite bool) {
	for r := range mr {
		row := c[r*ldc : r*ldc+nr]
		if overwrite {
			copy(row, t[r*NR:r*NR+nr])
			continue
		}
		for j := range row {
			row[j] += t[r*NR+j]
		}
	}
}

// packA copies op(A)[ic:ic+mc, pc:pc+kc] into MR-row panels, each stored
// k-major (MR values per k), padding the last panel with zeros.
func (g *gemm) packA(dst []float32, ic, mc, pc, kc int) {
	a, lda := g.a, g.lda
	for ir := 0; ir < mc; ir += MR {
		mr := min(MR, mc-ir)
		p := dst[ir*kc : ir*kc+kc*MR]
		if mr == MR {
			if g.transA {
				packPanelA(p, a[pc*lda+ic+ir:], kc, lda, true)
			} else {
				packPanelA(p, a[(ic+ir)*lda+pc:], kc, lda, false)
			}
			continue
		}
		clear(p)
		for r := range mr {
			for q := range kc {
				if g.transA {
					p[q*MR+r] = a[(pc+q)*lda+ic+ir+r]
				} else {
					p[q*MR+r] = a[(ic+ir+r)*lda+pc+q]
				}
			}
		}
	}
}

// packB copies op(B)[pc:pc+kc, jc:jc+nc] into NR-column panels, each stored
// k-major (NR values per k), padding the last panel with zeros.
func (g *gemm) packB(dst []float32, pc, kc, jc, nc int) {
	b, ldb := g.b, g.ldb
	for jr := 0; jr < nc; jr += NR {
		nr := min(NR, nc-jr)
		p := dst[jr*kc : jr*kc+kc*NR]
		if !g.transB {
			if nr == NR {
				packPanelB(p, b[pc*ldb+jc+jr:], kc, ldb)
				continue
			}
			for q := range kc {
				d := p[q*NR : q*NR+NR]
				copy(d, b[(pc+q)*ldb+jc+jr:(pc+q)*ldb+jc+jr+nr])
				clear(d[nr:])
			}
			continue
		}
		if nr < NR {
			clear(p)
		}
		// B is stored n×k: row j of the storage holds op(B)[:, j].
		for c := range nr {
			src := b[(jc+jr+c)*ldb+pc : (jc+jr+c)*ldb+pc+kc]
			for q, v := range src {
				p[q*NR+c] = v
			}
		}
	}
}

// packPanelAGo is the portable packPanelA.
func packPanelAGo(dst, src []float32, kc, ld int, transA bool) {
	for q := range kc {
		d := dst[q*MR : q*MR+MR]
		for r := range d {
			if transA {
				d[r] = src[q*ld+r]
			} else {
				d[r] = src[r*ld+q]
			}
		}
	}
}

// packPanelBGo is the portable packPanelB.
func packPanelBGo(dst, src []float32, kc, ld int) {
	for q := range kc {
		copy(dst[q*NR:q*NR+NR], src[q*ld:q*ld+NR])
	}
}

// kernelGo is the portable micro-kernel: C[0:MR, 0:NR] += Σ_q a[q]ᵀ b[q]
// (or C = Σ_q a[q]ᵀ b[q] if overwrite) for packed panels a (kc×MR) and b
// (kc×NR), C with leading dimension ldc. Like the assembly kernel it sums
// the k products first and adds the sum to C last.
func kernelGo(kc int, a, b, c []float32, ldc int, overwrite bool) {
	var acc [MR * NR]float32
	a = a[:kc*MR]
	b = b[:kc*NR]
	for q := range kc {
		bq := b[q*NR : q*NR+NR : q*NR+NR]
		aq := a[q*MR : q*MR+MR : q*MR+MR]
		for r, av := range aq {
			row := acc[r*NR : r*NR+NR : r*NR+NR]
			for j, bv := range bq {
				row[j] += av * bv
			}
		}
	}
	addTile(c, ldc, acc[:], MR, NR, overwrite)
}
