package nn

import (
	"math/rand/v2"

	"github.com/ptopofl/ptopofl/nn/internal/parallel"
	"github.com/ptopofl/ptopofl/nn/sgemm"
)

// conv is a 2-D convolution (cross-correlation, as in every deep-learning
// library) with a k×k kernel, a stride and zero padding, computed as im2col
// followed by one matrix product for the whole batch. Its weights are
// stored (k·k·inC)×outC, row index (kh·k + kw)·inC + c, so that the im2col
// matrix (one row per output pixel) times the weights is the NHWC output.
type conv struct {
	k, stride, pad int
	outC           int
	bias           bool
	in, out        Shape
	w, b           []float32
	gw, gb         []float32
	cols           [][]float32 // per worker, im2col of a chunk of samples; then its input-gradient columns
	wT             []float32   // the weights transposed (outC×kk), for the input gradient
	partial        []float32   // per chunk, its weight gradient
}

// pointwise reports whether the convolution is a plain matrix product of
// the input (1×1 kernel, stride 1, no padding): im2col would copy x.
func (c *conv) pointwise() bool { return c.k == 1 && c.stride == 1 && c.pad == 0 }

func (c *conv) setup(in Shape) (Shape, int) {
	c.in = in
	c.out = Shape{(in.H+2*c.pad-c.k)/c.stride + 1, (in.W+2*c.pad-c.k)/c.stride + 1, c.outC}
	n := c.k * c.k * in.C * c.outC
	if c.bias {
		n += c.outC
	}
	return c.out, n
}

func (c *conv) bind(p, g []float32) {
	n := c.k * c.k * c.in.C * c.outC
	c.w, c.gw = p[:n], g[:n]
	if c.bias {
		c.b, c.gb = p[n:], g[n:]
	}
}

func (c *conv) init(rng *rand.Rand) {
	heNormal(rng, c.w, c.k*c.k*c.in.C)
	clear(c.b)
}

// colsBytes bounds an im2col buffer: the batch is processed in chunks of
// samples whose columns fit, so that the columns written by im2col are
// still in cache when the product reads them (a whole ConvNet-2 batch would
// take 40 MB, written to memory and read back) and the buffers stay small.
const colsBytes = 4 << 20

// minChunks is the number of chunks a batch of at least that many samples
// is cut into at the least, so that the workers have pieces to share.
const minChunks = 8

// chunk returns the number of samples per chunk. It depends on the batch
// size and the layer's shape only, never on the number of workers: the
// weight gradient is summed chunk by chunk, and its bits must not depend
// on the threads.
func (c *conv) chunk(batch int) int {
	per := c.out.H * c.out.W * c.k * c.k * c.in.C * 4
	return max(1, min(colsBytes/per, (batch+minChunks-1)/minChunks))
}

func (c *conv) forward(e env, x, y []float32, batch int) {
	rows := batch * c.out.H * c.out.W
	kk := c.k * c.k * c.in.C
	if c.bias {
		fillRows(y[:rows*c.outC], c.b)
	}
	if c.pointwise() {
		sgemm.Gemm(e.workers, false, false, rows, c.outC, kk, x, kk, c.w, c.outC, y, c.outC, c.bias)
		return
	}
	c.chunks(e, x, batch, func(ch, s0, n int, cols []float32) {
		r0, r := s0*c.out.H*c.out.W, n*c.out.H*c.out.W
		sgemm.Gemm(1, false, false, r, c.outC, kk, cols, kk, c.w, c.outC, y[r0*c.outC:], c.outC, c.bias)
	})
}

// chunks cuts the batch into chunks of c.chunk(batch) samples and, on the
// workers, runs im2col on each chunk into a buffer of the worker's and
// calls fn with the chunk's index, first sample, size and columns. A chunk
// is the unit of parallel work: everything fn does for it runs on one
// goroutine and writes only the chunk's own outputs.
func (c *conv) chunks(e env, x []float32, batch int, fn func(ch, s0, n int, cols []float32)) {
	per := c.out.H * c.out.W * c.k * c.k * c.in.C
	size := c.chunk(batch)
	nch := (batch + size - 1) / size
	workers := min(e.workers, nch)
	free := make(chan []float32, workers)
	for len(c.cols) < workers {
		c.cols = append(c.cols, nil)
	}
	for w := range workers {
		c.cols[w] = grow(c.cols[w], size*per)
		free <- c.cols[w]
	}
	parallel.Run(workers, nch, func(ch int) {
		buf := <-free
		defer func() { free <- buf }()
		s0 := ch * size
		n := min(size, batch-s0)
		cols := buf[:n*per]
		for s := range n {
			c.im2col(x[s0*c.in.Size():], cols, s)
		}
		fn(ch, s0, n, cols)
	})
}

// backward recomputes each chunk's columns (cheaper than keeping the whole
// batch's), computes each chunk's weight gradient on its own and sums them
// in chunk order, and reuses the columns' buffer for the gradient with
// respect to them.
func (c *conv) backward(e env, x, _, dy, dx []float32, batch int) {
	if e.dp != nil {
		c.backwardDP(e, x, dy, dx, batch)
		return
	}
	rows := batch * c.out.H * c.out.W
	kk := c.k * c.k * c.in.C
	if c.bias {
		columnSums(c.gb, dy, rows)
	}
	if c.pointwise() {
		sgemm.Gemm(e.workers, true, false, kk, c.outC, rows, x, kk, dy, c.outC, c.gw, c.outC, false)
		if dx != nil {
			sgemm.Gemm(e.workers, false, true, rows, kk, c.outC, dy, c.outC, c.w, c.outC, dx, kk, false)
		}
		return
	}
	if dx != nil {
		// Every chunk multiplies by Wᵀ: transposing W once lets each of
		// them pack it by rows.
		c.wT = transpose(c.wT, c.w, kk, c.outC)
	}
	nw := kk * c.outC
	nch := (batch + c.chunk(batch) - 1) / c.chunk(batch)
	c.partial = grow(c.partial, nch*nw)
	c.chunks(e, x, batch, func(ch, s0, n int, cols []float32) {
		r0, r := s0*c.out.H*c.out.W, n*c.out.H*c.out.W
		dyc := dy[r0*c.outC : (r0+r)*c.outC]
		sgemm.Gemm(1, true, false, kk, c.outC, r, cols, kk, dyc, c.outC, c.partial[ch*nw:], c.outC, false)
		if dx == nil {
			return
		}
		sgemm.Gemm(1, false, false, r, kk, c.outC, dyc, c.outC, c.wT, kk, cols, kk, false)
		for s := range n {
			c.col2im(cols, dx[s0*c.in.Size():], s)
		}
	})
	copy(c.gw, c.partial[:nw])
	for ch := 1; ch < nch; ch++ {
		addVec(c.gw, c.partial[ch*nw:(ch+1)*nw])
	}
}

// im2col writes sample s's rows of the column matrix: for output pixel
// (oh, ow), the k×k×inC input patch it sees, zeros where it lies in the
// padding.
func (c *conv) im2col(x, cols []float32, s int) {
	in, out, k := c.in, c.out, c.k
	kk := k * k * in.C
	xs := x[s*in.Size() : (s+1)*in.Size()]
	row := s * out.H * out.W
	for oh := range out.H {
		for ow := range out.W {
			dst := cols[row*kk : (row+1)*kk]
			row++
			for kh := range k {
				ih := oh*c.stride - c.pad + kh
				seg := dst[kh*k*in.C : (kh+1)*k*in.C]
				if ih < 0 || ih >= in.H {
					clear(seg)
					continue
				}
				// The kernel row's columns inside the image, [lo, hi), are
				// contiguous in x: one copy, zeros either side.
				iw0 := ow*c.stride - c.pad
				lo, hi := max(0, -iw0), min(k, in.W-iw0)
				if lo >= hi {
					clear(seg)
					continue
				}
				if lo > 0 {
					clear(seg[:lo*in.C])
				}
				if hi < k {
					clear(seg[hi*in.C:])
				}
				copyShort(seg[lo*in.C:hi*in.C], xs[(ih*in.W+iw0+lo)*in.C:(ih*in.W+iw0+hi)*in.C])
			}
		}
	}
}

// copyShort copies src to dst, by a plain loop when short: a single-channel
// input gives im2col segments of a few values, too short for a call.
func copyShort(dst, src []float32) {
	if len(src) > 16 {
		copy(dst, src)
		return
	}
	dst = dst[:len(src)]
	for j, v := range src {
		dst[j] = v
	}
}

// col2im adds sample s's rows of the column-gradient matrix back onto the
// input pixels they were copied from (the adjoint of im2col), in a fixed
// order.
func (c *conv) col2im(cols, dx []float32, s int) {
	in, out, k := c.in, c.out, c.k
	kk := k * k * in.C
	dxs := dx[s*in.Size() : (s+1)*in.Size()]
	clear(dxs)
	row := s * out.H * out.W
	for oh := range out.H {
		for ow := range out.W {
			src := cols[row*kk : (row+1)*kk]
			row++
			iw0 := ow*c.stride - c.pad
			for kh := range k {
				ih := oh*c.stride - c.pad + kh
				if ih < 0 || ih >= in.H {
					continue
				}
				// The kernel row's columns inside the image, [lo, hi),
				// are contiguous in dx and in the columns: one vector add
				// (the segments touch distinct inputs, so each input
				// still receives its terms in the same order).
				lo, hi := max(0, -iw0), min(k, in.W-iw0)
				if lo < hi {
					addVec(dxs[(ih*in.W+iw0+lo)*in.C:(ih*in.W+iw0+hi)*in.C], src[(kh*k+lo)*in.C:(kh*k+hi)*in.C])
				}
			}
		}
	}
}
