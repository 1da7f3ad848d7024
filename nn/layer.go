package nn

import (
	"math"
	"math/rand/v2"

	"github.com/ptopofl/ptopofl/nn/sgemm"
)

// Shape is the shape of one sample's activations: H rows, W columns and C
// channels, stored HWC. A flat vector of n features has Shape{1, 1, n}.
type Shape struct {
	H, W, C int
}

// Size returns the number of values in one sample, H·W·C.
func (s Shape) Size() int { return s.H * s.W * s.C }

// env is what a layer needs to know about the call beyond its data.
type env struct {
	workers int // goroutines for matrix products and per-sample loops
	// dp, if not nil, makes backward a DP-SGD pass: layers with parameters
	// record per-example gradient norms and what the clipped sum needs
	// (dpclip.go) instead of writing their gradient views.
	dp *dpClip
}

// layer is one differentiable step of a network. Its parameters and their
// gradients are views into the network's slabs; its scratch buffers grow
// with the largest batch it has seen.
type layer interface {
	// setup fixes the input shape and returns the output shape and the
	// number of parameters the layer needs.
	setup(in Shape) (out Shape, nParams int)
	// bind gives the layer its parameter and gradient views, each of
	// length nParams.
	bind(p, g []float32)
	// init draws the initial parameters.
	init(rng *rand.Rand)
	// forward computes y (batch × out.Size()) from x (batch × in.Size()).
	forward(e env, x, y []float32, batch int)
	// backward writes the parameter gradients of the batch's summed loss
	// into its gradient view (overwriting it) and, if dx is not nil, the
	// gradient with respect to x into dx. x and y are the forward pass's.
	backward(e env, x, y, dy, dx []float32, batch int)
}

// heNormal fills w with N(0, 2/fanIn) draws: He et al. (2015) for layers
// followed by a ReLU.
func heNormal(rng *rand.Rand, w []float32, fanIn int) {
	normal(rng, w, math.Sqrt(2/float64(fanIn)))
}

func normal(rng *rand.Rand, w []float32, std float64) {
	for i := range w {
		w[i] = float32(rng.NormFloat64() * std)
	}
}

// dense is a fully connected layer y = x·W + b with W stored in×out.
type dense struct {
	in, out int
	last    bool // the output layer: initialised with variance 1/fanIn
	w, b    []float32
	gw, gb  []float32
	dxT     []float32 // the input gradient transposed (in×batch)
	dyT     []float32 // the output gradient transposed (out×batch)
}

func (d *dense) setup(in Shape) (Shape, int) {
	d.in = in.Size()
	return Shape{1, 1, d.out}, d.in*d.out + d.out
}

func (d *dense) bind(p, g []float32) {
	n := d.in * d.out
	d.w, d.b = p[:n], p[n:]
	d.gw, d.gb = g[:n], g[n:]
}

func (d *dense) init(rng *rand.Rand) {
	if d.last {
		normal(rng, d.w, math.Sqrt(1/float64(d.in)))
	} else {
		heNormal(rng, d.w, d.in)
	}
	clear(d.b)
}

func (d *dense) forward(e env, x, y []float32, batch int) {
	fillRows(y[:batch*d.out], d.b)
	sgemm.Gemm(e.workers, false, false, batch, d.out, d.in, x, d.in, d.w, d.out, y, d.out, true)
}

func (d *dense) backward(e env, x, _, dy, dx []float32, batch int) {
	if e.dp != nil {
		d.backwardDP(e, x, dy, dx, batch)
		return
	}
	columnSums(d.gb, dy, batch)
	sgemm.Gemm(e.workers, true, false, d.in, d.out, batch, x, d.in, dy, d.out, d.gw, d.out, false)
	d.inputGrad(e, dy, dx, batch)
}

// inputGrad writes the gradient with respect to the input into dx, if dx
// is not nil.
func (d *dense) inputGrad(e env, dy, dx []float32, batch int) {
	if dx == nil {
		return
	}
	// dxᵀ = W·dyᵀ rather than dx = dy·Wᵀ: the product then packs the large
	// W by rows, which is fast, instead of transposing it column by column.
	d.dxT = grow(d.dxT, d.in*batch)
	d.dyT = transpose(d.dyT, dy, batch, d.out)
	sgemm.Gemm(e.workers, false, false, d.in, batch, d.out, d.w, d.out, d.dyT, batch, d.dxT, batch, false)
	parallelFor(e.workers, batch, func(lo, hi int) {
		for s := lo; s < hi; s++ {
			row := dx[s*d.in : (s+1)*d.in]
			for j := range row {
				row[j] = d.dxT[j*batch+s]
			}
		}
	})
}

// transpose returns the cols×rows transpose of the rows×cols matrix m,
// in buf if it is large enough.
func transpose(buf, m []float32, rows, cols int) []float32 {
	buf = grow(buf, rows*cols)
	for r := range rows {
		for c, v := range m[r*cols : (r+1)*cols] {
			buf[c*rows+r] = v
		}
	}
	return buf
}

// fillRows fills dst, a whole number of rows of len(row), with copies of
// row, doubling the filled part with each copy (a few large copies instead
// of one per row).
func fillRows(dst, row []float32) {
	if len(dst) == 0 {
		return
	}
	n := copy(dst, row)
	for n < len(dst) {
		n += copy(dst[n:], dst[:n])
	}
}

// columnSums writes into dst the sums over rows of the rows×len(dst)
// matrix m, row by row in order (a fixed reduction order).
func columnSums(dst, m []float32, rows int) {
	clear(dst)
	n := len(dst)
	for r := range rows {
		addVec(dst, m[r*n:(r+1)*n])
	}
}

// relu is max(x, 0) elementwise.
type relu struct{ size int }

func (r *relu) setup(in Shape) (Shape, int) { r.size = in.Size(); return in, 0 }
func (r *relu) bind(_, _ []float32)         {}
func (r *relu) init(*rand.Rand)             {}

func (r *relu) forward(e env, x, y []float32, batch int) {
	parallelFor(e.workers, batch, func(lo, hi int) {
		xs, ys := x[lo*r.size:hi*r.size], y[lo*r.size:hi*r.size]
		for i, v := range xs {
			ys[i] = max(v, 0)
		}
	})
}

func (r *relu) backward(e env, _, y, dy, dx []float32, batch int) {
	if dx == nil {
		return
	}
	parallelFor(e.workers, batch, func(lo, hi int) {
		reluBackward(y[lo*r.size:hi*r.size], dy[lo*r.size:hi*r.size], dx[lo*r.size:hi*r.size])
	})
}

// reluBackward writes dy masked by y > 0 (y is the ReLU's output) into dx.
// y is never negative, so y > 0 exactly when its bits are not zero; the
// mask is computed without a branch, which the unpredictable signs of
// activations would mispredict half the time.
func reluBackward(y, dy, dx []float32) {
	dy = dy[:len(y)]
	dx = dx[:len(y)]
	for i, v := range y {
		bits := math.Float32bits(v)
		mask := uint32(int32(-bits) >> 31) // all ones if bits in (0, 2³¹)
		dx[i] = math.Float32frombits(math.Float32bits(dy[i]) & mask)
	}
}

// maxPool is 2×2 max pooling with stride 2; an odd last row or column is
// dropped, as in PyTorch's MaxPool2d(2) and TensorFlow's 'valid' pooling.
// The forward pass keeps no arg-max: backward finds, per window, the first
// input (in row-major window order) equal to the output, which is the one
// the forward pass picked, and routes the gradient to it. The forward loop
// is then free of data-dependent branches.
type maxPool struct {
	in, out Shape
}

func (m *maxPool) setup(in Shape) (Shape, int) {
	m.in = in
	m.out = Shape{in.H / 2, in.W / 2, in.C}
	return m.out, 0
}
func (m *maxPool) bind(_, _ []float32) {}
func (m *maxPool) init(*rand.Rand)     {}

func (m *maxPool) forward(e env, x, y []float32, batch int) {
	in, out := m.in, m.out
	parallelFor(e.workers, batch, func(lo, hi int) {
		for s := lo; s < hi; s++ {
			xs := x[s*in.Size() : (s+1)*in.Size()]
			ys := y[s*out.Size() : (s+1)*out.Size()]
			for oh := range out.H {
				for ow := range out.W {
					o := (oh*out.W + ow) * out.C
					i00 := ((2*oh)*in.W + 2*ow) * in.C
					i10 := i00 + in.W*in.C
					r0 := xs[i00 : i00+2*in.C]
					r1 := xs[i10 : i10+2*in.C]
					dst := ys[o : o+out.C]
					for c := range dst {
						dst[c] = max(max(r0[c], r0[in.C+c]), max(r1[c], r1[in.C+c]))
					}
				}
			}
		}
	})
}

func (m *maxPool) backward(e env, x, y, dy, dx []float32, batch int) {
	if dx == nil {
		return
	}
	in, out := m.in, m.out
	parallelFor(e.workers, batch, func(lo, hi int) {
		for s := lo; s < hi; s++ {
			xs := x[s*in.Size() : (s+1)*in.Size()]
			dxs := dx[s*in.Size() : (s+1)*in.Size()]
			clear(dxs)
			ys := y[s*out.Size() : (s+1)*out.Size()]
			dys := dy[s*out.Size() : (s+1)*out.Size()]
			for oh := range out.H {
				for ow := range out.W {
					o := (oh*out.W + ow) * out.C
					i00 := ((2*oh)*in.W + 2*ow) * in.C
					i10 := i00 + in.W*in.C
					for c := range out.C {
						// Candidates in reverse order, so that the first
						// match wins; integer selects compile to
						// conditional moves rather than branches.
						v := ys[o+c]
						i := i10 + in.C + c
						if xs[i10+c] == v {
							i = i10 + c
						}
						if xs[i00+in.C+c] == v {
							i = i00 + in.C + c
						}
						if xs[i00+c] == v {
							i = i00 + c
						}
						dxs[i] = dys[o+c] // windows do not overlap
					}
				}
			}
		}
	})
}

// globalAvgPool averages each channel over the rows and columns.
type globalAvgPool struct{ in Shape }

func (g *globalAvgPool) setup(in Shape) (Shape, int) { g.in = in; return Shape{1, 1, in.C}, 0 }
func (g *globalAvgPool) bind(_, _ []float32)         {}
func (g *globalAvgPool) init(*rand.Rand)             {}

func (g *globalAvgPool) forward(e env, x, y []float32, batch int) {
	in := g.in
	hw := in.H * in.W
	parallelFor(e.workers, batch, func(lo, hi int) {
		for s := lo; s < hi; s++ {
			ys := y[s*in.C : (s+1)*in.C]
			clear(ys)
			xs := x[s*in.Size() : (s+1)*in.Size()]
			for p := range hw {
				for c, v := range xs[p*in.C : (p+1)*in.C] {
					ys[c] += v
				}
			}
			for c := range ys {
				ys[c] /= float32(hw)
			}
		}
	})
}

func (g *globalAvgPool) backward(e env, _, _, dy, dx []float32, batch int) {
	if dx == nil {
		return
	}
	in := g.in
	hw := in.H * in.W
	parallelFor(e.workers, batch, func(lo, hi int) {
		for s := lo; s < hi; s++ {
			dys := dy[s*in.C : (s+1)*in.C]
			dxs := dx[s*in.Size() : (s+1)*in.Size()]
			for p := range hw {
				for c, v := range dys {
					dxs[p*in.C+c] = v / float32(hw)
				}
			}
		}
	})
}
