package sgemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// naive returns op(A)·op(B) (+ C0) computed in float64: the reference every
// kernel is compared with.
func naive(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c0 []float32, ldc int) []float64 {
	out := make([]float64, m*n)
	for i := range m {
		for j := range n {
			var s float64
			if c0 != nil {
				s = float64(c0[i*ldc+j])
			}
			for p := range k {
				var av, bv float32
				if transA {
					av = a[p*lda+i]
				} else {
					av = a[i*lda+p]
				}
				if transB {
					bv = b[j*ldb+p]
				} else {
					bv = b[p*ldb+j]
				}
				s += float64(av) * float64(bv)
			}
			out[i*n+j] = s
		}
	}
	return out
}

func randomSlice(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

type gemmCase struct {
	transA, transB bool
	m, n, k        int
	pad            int // extra leading-dimension padding
	accumulate     bool
}

// gemmCases cover full tiles, edge tiles in both directions, k below,
// at and above KC, m above MC, n above NC, every transpose combination and
// leading dimensions larger than the matrix width.
var gemmCases = []gemmCase{
	{m: 1, n: 1, k: 1},                                     // 0
	{m: 6, n: 16, k: 8},                                    // 1: one full tile
	{m: 7, n: 17, k: 3},                                    // 2: edges both ways
	{m: 13, n: 5, k: 300, transA: true},                    // 3: k > KC
	{m: 130, n: 40, k: 257, transB: true},                  // 4: m > MC
	{m: 50, n: 1100, k: 20, transA: true, transB: true},    // 5: n > NC, split by columns
	{m: 64, n: 256, k: 784, pad: 3},                        // 6: MLP forward shape
	{m: 200, n: 33, k: 65, accumulate: true, pad: 1},       // 7
	{m: 31, n: 29, k: 0},                                   // 8: empty sum zeroes C
	{m: 31, n: 29, k: 0, accumulate: true},                 // 9: empty sum keeps C
	{m: 97, n: 64, k: 800, transA: true, accumulate: true}, // 10: conv weight-gradient shape
}

// gemmTol bounds |got − exact| / (Σ|a||b| + |c0|): float32 accumulation of
// up to ~1000 products with rounding unit 6e-8 stays well under it.
const gemmTol = 1e-5

func runCase(t *testing.T, tc gemmCase, workers int, rng *rand.Rand) ([]float32, []float64, []float64) {
	t.Helper()
	ar, ac := tc.m, tc.k
	if tc.transA {
		ar, ac = tc.k, tc.m
	}
	br, bc := tc.k, tc.n
	if tc.transB {
		br, bc = tc.n, tc.k
	}
	lda, ldb, ldc := ac+tc.pad, bc+tc.pad, tc.n+tc.pad
	a := randomSlice(rng, max(ar*lda, 1))
	b := randomSlice(rng, max(br*ldb, 1))
	c := randomSlice(rng, tc.m*ldc)
	var c0 []float32
	if tc.accumulate {
		c0 = slices.Clone(c)
	}
	abs := func(x []float32) []float32 {
		y := make([]float32, len(x))
		for i, v := range x {
			y[i] = float32(math.Abs(float64(v)))
		}
		return y
	}
	want := naive(tc.transA, tc.transB, tc.m, tc.n, tc.k, a, lda, b, ldb, c0, ldc)
	var c0abs []float32
	if c0 != nil {
		c0abs = abs(c0)
	}
	scale := naive(tc.transA, tc.transB, tc.m, tc.n, tc.k, abs(a), lda, abs(b), ldb, c0abs, ldc)
	Gemm(workers, tc.transA, tc.transB, tc.m, tc.n, tc.k, a, lda, b, ldb, c, ldc, tc.accumulate)
	return c, want, scale
}

func checkClose(t *testing.T, tc gemmCase, c []float32, want, scale []float64) {
	t.Helper()
	ldc := tc.n + tc.pad
	for i := range tc.m {
		for j := range tc.n {
			got := float64(c[i*ldc+j])
			if d := math.Abs(got - want[i*tc.n+j]); d > gemmTol*(scale[i*tc.n+j]+1e-30) {
				t.Fatalf("C[%d,%d] = %v, want %v (error %.3g of scale %.3g)", i, j, got, want[i*tc.n+j], d, scale[i*tc.n+j])
			}
		}
	}
}

func TestGemm(t *testing.T) {
	kernels := []struct {
		name string
		asm  bool
	}{{"go", false}, {"asm", true}}
	for _, kn := range kernels {
		if kn.asm && !HasAsm {
			t.Logf("no assembly kernel on this CPU: skipping the asm variant")
			continue
		}
		saved := HasAsm
		HasAsm = kn.asm
		for i, tc := range gemmCases {
			for _, workers := range []int{1, 2, 3} {
				rng := rand.New(rand.NewPCG(uint64(i), 7))
				c, want, scale := runCase(t, tc, workers, rng)
				t.Run(fmt.Sprintf("%s/case%d/workers%d", kn.name, i, workers), func(t *testing.T) {
					checkClose(t, tc, c, want, scale)
				})
			}
		}
		HasAsm = saved
	}
}

// TestGemmDeterministic checks the package's contract that the result does
// not depend on the number of goroutines: the same bits for 1, 2 and 5.
func TestGemmDeterministic(t *testing.T) {
	for i, tc := range gemmCases {
		var first []float32
		for _, workers := range []int{1, 2, 5} {
			rng := rand.New(rand.NewPCG(uint64(i), 11))
			c, _, _ := runCase(t, tc, workers, rng)
			if first == nil {
				first = c
				continue
			}
			for j := range c {
				if math.Float32bits(c[j]) != math.Float32bits(first[j]) {
					t.Fatalf("case %d: workers %d: C[%d] = %v, with 1 worker %v", i, workers, j, c[j], first[j])
				}
			}
		}
	}
}

// TestKernelsAgree compares the assembly and the Go micro-kernel on one
// tile: they differ only by FMA rounding.
func TestKernelsAgree(t *testing.T) {
	if !HasAsm {
		t.Skip("no assembly kernel on this CPU")
	}
	rng := rand.New(rand.NewPCG(3, 3))
	for _, kc := range []int{1, 2, 3, 4, 5, 17, 256} {
		a := randomSlice(rng, kc*MR)
		b := randomSlice(rng, kc*NR)
		c0 := randomSlice(rng, MR*20)
		cg, ca := slices.Clone(c0), slices.Clone(c0)
		kernelGo(kc, a, b, cg, 20, false)
		kernel(kc, a, b, ca, 20, false)
		for i := range cg {
			if math.Abs(float64(cg[i]-ca[i])) > 1e-5*float64(kc) {
				t.Fatalf("kc %d: element %d: go %v, asm %v", kc, i, cg[i], ca[i])
			}
		}
		// Overwriting gives the sum alone: C − C0, up to rounding.
		ow := slices.Clone(c0)
		kernel(kc, a, b, ow, 20, true)
		for r := range MR {
			for j := range NR {
				if d := float64(ow[r*20+j]) - (float64(ca[r*20+j]) - float64(c0[r*20+j])); math.Abs(d) > 1e-4*float64(kc) {
					t.Fatalf("kc %d: overwrite (%d,%d) = %v, want %v", kc, r, j, ow[r*20+j], ca[r*20+j]-c0[r*20+j])
				}
			}
		}
		// Columns 16..19 lie outside the tile and must be untouched.
		for r := range MR {
			for j := NR; j < 20; j++ {
				if ca[r*20+j] != c0[r*20+j] {
					t.Fatalf("kc %d: wrote outside the tile at row %d column %d", kc, r, j)
				}
			}
		}
	}
}

func TestGemmPanicsOnShortSlices(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for a too-short A")
		}
	}()
	Gemm(1, false, false, 4, 4, 4, make([]float32, 15), 4, make([]float32, 16), 4, make([]float32, 16), 4, false)
}

// The shapes of a ConvNet-2 training step (batch 64) and of the MLP.
var benchShapes = []struct {
	name           string
	transA, transB bool
	m, n, k        int
}{
	{"square512", false, false, 512, 512, 512},
	{"conv2fwd_12544x64x800", false, false, 12544, 64, 800},
	{"conv2wgrad_800x64x12544", true, false, 800, 64, 12544},
	{"conv2igrad_12544x800x64", false, true, 12544, 800, 64},
	{"dense1fwd_64x2048x3136", false, false, 64, 2048, 3136},
	{"dense1wgrad_3136x2048x64", true, false, 3136, 2048, 64},
	{"mlp_64x256x784", false, false, 64, 256, 784},
}

func BenchmarkGemm(b *testing.B) {
	for _, s := range benchShapes {
		for _, workers := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/workers=%d", s.name, workers), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, 1))
				a := randomSlice(rng, s.m*s.k)
				bb := randomSlice(rng, s.k*s.n)
				c := make([]float32, s.m*s.n)
				lda, ldb := s.k, s.n
				if s.transA {
					lda = s.m
				}
				if s.transB {
					ldb = s.k
				}
				b.ResetTimer()
				for b.Loop() {
					Gemm(workers, s.transA, s.transB, s.m, s.n, s.k, a, lda, bb, ldb, c, s.n, false)
				}
				b.ReportMetric(2*float64(s.m)*float64(s.n)*float64(s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// TestDirectMatchesPacked checks that reading A in place (transA false)
// gives the same bits as packing the same matrix stored transposed: both
// run the same operations in the same order.
func TestDirectMatchesPacked(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for _, s := range [][3]int{{13, 37, 300}, {120, 16, 7}, {7, 50, 1}, {250, 64, 800}} {
		m, n, k := s[0], s[1], s[2]
		a := randomSlice(rng, m*k)
		at := make([]float32, k*m)
		for i := range m {
			for p := range k {
				at[p*m+i] = a[i*k+p]
			}
		}
		b := randomSlice(rng, k*n)
		c1 := make([]float32, m*n)
		c2 := make([]float32, m*n)
		Gemm(2, false, false, m, n, k, a, k, b, n, c1, n, false)
		Gemm(2, true, false, m, n, k, at, m, b, n, c2, n, false)
		for i := range c1 {
			if math.Float32bits(c1[i]) != math.Float32bits(c2[i]) {
				t.Fatalf("%v: C[%d] in place %v, packed %v", s, i, c1[i], c2[i])
			}
		}
	}
}
