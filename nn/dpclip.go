package nn

import (
	"math"

	"github.com/ptopofl/ptopofl/nn/sgemm"
)

// Per-example clipping for DP-SGD in one forward and one backward pass.
//
// The clipped sum Σ_i c_i·g_i, c_i = min(1, C/‖g_i‖), needs every
// example's gradient norm ‖g_i‖ over the whole parameter vector before any
// layer's sum can be formed. Running one backward pass per example would
// cost a batch's worth of tiny passes; instead the DP backward pass
// (env.dp set) propagates the input gradients exactly as the plain pass
// does, and each layer with parameters, instead of writing its gradient
// view, adds its share of every example's squared norm to dpClip.sq and
// keeps what it needs to form its part of Σ_i c_i·g_i afterwards. Because
// a layer's parameter gradient is linear in its output gradient δ_i and
// examples do not interact (no batch statistics), the re-weighted loss
// Σ_i c_i·L_i has output gradient c_i·δ_i at every layer, so the clipped
// sum needs no second backward pass: this is the "book-keeping" of Bu et
// al. (2023, "Differentially private optimization on large model at small
// cost"), with the norms of ghost clipping (Goodfellow 2015, "Efficient
// per-example gradient computations"; Lee and Kifer 2021; Li et al. 2022,
// "Large language models can be strong differentially private learners")
// or of explicit per-example gradients, whichever a layer's shape favours:
//
//   - dense y = xW + b: g_i = x_i ⊗ δ_i, so ‖g_i‖² = (‖x_i‖² + 1)·‖δ_i‖²
//     (the 1 for the bias) from the layer's input and output gradient
//     alone; the clipped sum is the plain weight gradient with δ_i scaled
//     by c_i (x and a copy of δ are kept).
//   - convolution: with A_i the example's im2col patches (P×k²C_in) and
//     D_i its output gradient (P×C_out), the weight gradient is A_iᵀD_i.
//     It is computed per example (the same products as the batch's weight
//     gradient, split by example) and kept, its bias gradient being the
//     column sums of D_i, and the clipped sum is Σ_i c_i·(A_iᵀD_i). When
//     keeping them would take the pass's kept gradients past
//     convStoreBytes they are not kept: the norm comes from the per-example product or, when
//     P·(k²C_in + C_out) < k²C_in·C_out (few output pixels, many
//     channels), from the Gram identity ‖A_iᵀD_i‖² = ⟨A_iA_iᵀ, D_iD_iᵀ⟩
//     (Li et al. 2022, §4), and the clipped sum is the plain weight
//     gradient recomputed with D_i scaled by c_i.
//   - GroupNorm: the backward pass already forms each example's dγ and dβ
//     (groupNorm.partial); they give the norm and the clipped sum directly.
//
// Every per-example quantity is computed by one goroutine in a fixed order
// and the cross-example sums run in example order, so the result does not
// depend on the number of threads.

// convStoreBytes bounds the per-example gradients the convolutions of one
// DP backward pass keep for the clipped sum (13 MB for ConvNet-2's at
// batch 64; 180 MB would keep all of the default ResNet's). The layers
// keep theirs in backward order while they fit; the others recompute
// their weight gradient. The choice depends on the layers and the sample
// size only, never on the threads.
const convStoreBytes = 64 << 20

// gramPolicy selects how an unkept convolution computes its per-example
// norms; tests force each way.
type gramPolicy int

const (
	gramAuto   gramPolicy = iota // the cheaper of the two by operation count
	gramNever                    // per-example products
	gramAlways                   // the Gram identity
)

// dpClip is the state of DP-SGD's clipping, reused from step to step.
type dpClip struct {
	storeBytes int // convStoreBytes, or less in tests
	keptBytes  int // kept by this pass's convolutions so far
	gram       gramPolicy
	sq         []float64 // per example, its squared gradient norm so far
	scale      []float32 // per example, its clip factor c_i
	recs       []clipRecord
	next       int // records registered in this pass
	params     int // parameters the registered records cover
}

// clipRecord is what one layer with parameters keeps from the DP backward
// pass to form its part of the clipped sum.
type clipRecord interface {
	owner() layer
	// clippedSum writes Σ_i scale[i]·g_i into the layer's gradient view.
	clippedSum(e env, scale []float32)
}

// record returns the next record of the pass, reusing last step's (and
// its buffers) when it belongs to the same layer, which it does on every
// step but the first: the layers run in the same order each time.
func (p *dpClip) record(l layer, fresh func() clipRecord) clipRecord {
	if p.next < len(p.recs) && p.recs[p.next].owner() == l {
		p.next++
		return p.recs[p.next-1]
	}
	r := fresh()
	p.recs = append(p.recs[:p.next], r)
	p.next++
	return r
}

// clippedSum runs net forward on the batch (len(labels) ≥ 1 samples of
// x) and writes into net's gradient slab the sum over the examples of
// their gradients of the data loss w_i·CE_i (w_i = 1 if weights is nil),
// each clipped to L2 norm clip. dLogits is scratch of batch × Classes. It
// returns the summed data loss.
func (p *dpClip) clippedSum(net *Network, x []float32, labels []int, weights []float32, dLogits []float32, clip float64) float64 {
	b, k := len(labels), net.cfg.Classes
	logits := net.Forward(x, b)
	var loss float64
	for i := range b {
		// One call per example: its gradient w_i(softmax − onehot), not
		// divided by the batch size.
		var w []float32
		if weights != nil {
			w = weights[i : i+1]
		}
		loss += SoftmaxCrossEntropy(logits[i*k:(i+1)*k], k, labels[i:i+1], w, dLogits[i*k:(i+1)*k])
	}
	if cap(p.sq) < b {
		p.sq = make([]float64, b)
	}
	p.sq = p.sq[:b]
	clear(p.sq)
	p.next, p.params, p.keptBytes = 0, 0, 0
	net.backward(env{workers: net.workers, dp: p}, dLogits)
	if p.params != net.NumParams() {
		panic("nn: DP clipping: a layer with parameters kept no per-example gradients")
	}
	p.scale = grow(p.scale, b)
	for i, sq := range p.sq {
		p.scale[i] = 1
		if norm := math.Sqrt(sq); norm > clip {
			p.scale[i] = float32(clip / norm)
		}
	}
	plain := env{workers: net.workers}
	for _, r := range p.recs[:p.next] {
		r.clippedSum(plain, p.scale)
	}
	return loss
}

// sumSquares returns Σ v_j² in float64, in a fixed order (four running
// sums, then their total).
func sumSquares(v []float32) float64 {
	var s0, s1, s2, s3 float64
	j := 0
	for ; j+4 <= len(v); j += 4 {
		a, b, c, d := float64(v[j]), float64(v[j+1]), float64(v[j+2]), float64(v[j+3])
		s0 += a * a
		s1 += b * b
		s2 += c * c
		s3 += d * d
	}
	for ; j < len(v); j++ {
		a := float64(v[j])
		s0 += a * a
	}
	return (s0 + s1) + (s2 + s3)
}

// scaleRows multiplies row i of m (rows of n values) by scale[i].
func scaleRows(e env, m []float32, n int, scale []float32) {
	parallelFor(e.workers, len(scale), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			s := scale[i]
			row := m[i*n : (i+1)*n]
			for j := range row {
				row[j] *= s
			}
		}
	})
}

// weightedSum writes dst[j] = Σ_i scale[i]·src[i·stride + off + j], the
// terms added in example order whatever the split of j over goroutines.
func weightedSum(e env, dst, src []float32, stride, off int, scale []float32) {
	const chunk = 1 << 12
	parallelFor(e.workers, (len(dst)+chunk-1)/chunk, func(clo, chi int) {
		lo, hi := clo*chunk, min(chi*chunk, len(dst))
		d := dst[lo:hi]
		for i, s := range scale {
			row := src[i*stride+off+lo : i*stride+off+hi]
			if i == 0 {
				for j, v := range row {
					d[j] = s * v
				}
				continue
			}
			for j, v := range row {
				d[j] += s * v
			}
		}
	})
}

// denseRecord keeps a dense layer's input and a copy of its output
// gradient (the pass reuses its gradient buffers).
type denseRecord struct {
	d     *dense
	batch int
	x, dy []float32
}

func (r *denseRecord) owner() layer { return r.d }

func (r *denseRecord) clippedSum(e env, scale []float32) {
	d := r.d
	scaleRows(e, r.dy, d.out, scale)
	columnSums(d.gb, r.dy, r.batch)
	sgemm.Gemm(e.workers, true, false, d.in, d.out, r.batch, r.x, d.in, r.dy, d.out, d.gw, d.out, false)
}

// backwardDP is dense's DP backward pass: each example's squared norm
// (‖x_i‖² + 1)·‖δ_i‖², then the input gradient as in backward.
func (d *dense) backwardDP(e env, x, dy, dx []float32, batch int) {
	p := e.dp
	r := p.record(d, func() clipRecord { return &denseRecord{d: d} }).(*denseRecord)
	r.batch, r.x = batch, x[:batch*d.in]
	r.dy = grow(r.dy, batch*d.out)
	copy(r.dy, dy[:batch*d.out])
	parallelFor(e.workers, batch, func(lo, hi int) {
		for s := lo; s < hi; s++ {
			g := sumSquares(dy[s*d.out : (s+1)*d.out])
			p.sq[s] += (sumSquares(x[s*d.in:(s+1)*d.in]) + 1) * g
		}
	})
	p.params += len(d.w) + len(d.b)
	d.inputGrad(e, dy, dx, batch)
}

// convRecord keeps a convolution's per-example gradients (stored) or its
// input and a copy of its output gradient for the weighted recomputation.
type convRecord struct {
	c       *conv
	batch   int
	stored  bool
	per     []float32 // stored: example i's weight then bias gradient at i·(nw+nb)
	x, dy   []float32 // not stored
	scratch [][]float32
}

func (r *convRecord) owner() layer { return r.c }

func (r *convRecord) clippedSum(e env, scale []float32) {
	c := r.c
	if !r.stored {
		scaleRows(e, r.dy, c.out.Size(), scale)
		c.backward(e, r.x, nil, r.dy, nil, r.batch)
		return
	}
	nw, nb := len(c.w), len(c.b)
	weightedSum(e, c.gw, r.per, nw+nb, 0, scale)
	if nb > 0 {
		weightedSum(e, c.gb, r.per, nw+nb, nw, scale)
	}
}

// useGram reports whether the Gram identity is cheaper than the explicit
// per-example product for the convolution's norms: P²(kk + C_out)
// operations against P·kk·C_out.
func (c *conv) useGram(policy gramPolicy) bool {
	switch policy {
	case gramNever:
		return false
	case gramAlways:
		return true
	}
	kk := c.k * c.k * c.in.C
	return c.out.H*c.out.W*(kk+c.outC) < kk*c.outC
}

// backwardDP is conv's DP backward pass: per chunk of examples, im2col,
// each example's gradient (kept or only measured), then the chunk's input
// gradient from the same columns as in backward.
func (c *conv) backwardDP(e env, x, dy, dx []float32, batch int) {
	p := e.dp
	r := p.record(c, func() clipRecord { return &convRecord{c: c} }).(*convRecord)
	pix := c.out.H * c.out.W
	kk := c.k * c.k * c.in.C
	nw, nb := len(c.w), len(c.b)
	per := nw + nb
	r.batch = batch
	r.stored = p.keptBytes+batch*per*4 <= p.storeBytes
	if r.stored {
		p.keptBytes += batch * per * 4
	}
	gram := !r.stored && c.useGram(p.gram)
	scratch := 0
	switch {
	case r.stored:
		r.per = grow(r.per, batch*per)
	case gram:
		scratch = 2*pix*pix + nb
	default:
		scratch = per
	}
	if !r.stored {
		r.x = x[:batch*c.in.Size()]
		r.dy = grow(r.dy, batch*c.out.Size())
		copy(r.dy, dy[:batch*c.out.Size()])
	}
	var free chan []float32
	if scratch > 0 {
		size := c.chunk(batch)
		workers := min(e.workers, (batch+size-1)/size)
		free = make(chan []float32, workers)
		for len(r.scratch) < workers {
			r.scratch = append(r.scratch, nil)
		}
		for w := range workers {
			r.scratch[w] = grow(r.scratch[w], scratch)
			free <- r.scratch[w]
		}
	}
	if dx != nil {
		c.wT = transpose(c.wT, c.w, kk, c.outC)
	}
	c.chunks(e, x, batch, func(_, s0, n int, cols []float32) {
		var buf []float32
		if free != nil {
			buf = <-free
			defer func() { free <- buf }()
		}
		for s := range n {
			i := s0 + s
			a := cols[s*pix*kk : (s+1)*pix*kk]
			d := dy[i*pix*c.outC : (i+1)*pix*c.outC]
			g := buf
			if r.stored {
				g = r.per[i*per : (i+1)*per]
			}
			var sq float64
			if gram {
				sq = gramNormSq(a, d, pix, kk, c.outC, buf)
				g = buf[2*pix*pix:]
			} else {
				sgemm.Gemm(1, true, false, kk, c.outC, pix, a, kk, d, c.outC, g, c.outC, false)
				sq = sumSquares(g[:nw])
				g = g[nw:]
			}
			if nb > 0 {
				columnSums(g[:nb], d, pix)
				sq += sumSquares(g[:nb])
			}
			p.sq[i] += sq
		}
		if dx == nil {
			return
		}
		r0, rows := s0*pix, n*pix
		sgemm.Gemm(1, false, false, rows, kk, c.outC, dy[r0*c.outC:(r0+rows)*c.outC], c.outC, c.wT, kk, cols, kk, false)
		for s := range n {
			c.col2im(cols, dx[s0*c.in.Size():], s)
		}
	})
	p.params += per
}

// gramNormSq returns ‖AᵀD‖²_F = Σ_pq (AAᵀ)_pq·(DDᵀ)_pq for A (rows×ka)
// and D (rows×kd), in 2·rows² values of buf: the ghost norm of a
// convolution's per-example weight gradient from its patches and output
// gradient without forming the gradient.
func gramNormSq(a, d []float32, rows, ka, kd int, buf []float32) float64 {
	n := rows * rows
	ga, gd := buf[:n], buf[n:2*n]
	sgemm.Gemm(1, false, true, rows, rows, ka, a, ka, a, ka, ga, rows, false)
	sgemm.Gemm(1, false, true, rows, rows, kd, d, kd, d, kd, gd, rows, false)
	var s float64
	for j, v := range ga {
		s += float64(v) * float64(gd[j])
	}
	return s
}

// groupNormRecord uses the per-example dγ, dβ its layer's backward pass
// left in groupNorm.partial.
type groupNormRecord struct {
	g     *groupNorm
	batch int
}

func (r *groupNormRecord) owner() layer { return r.g }

func (r *groupNormRecord) clippedSum(_ env, scale []float32) {
	g := r.g
	n := 2 * g.in.C
	for c := range g.in.C {
		var sg, sb float64
		for s, f := range scale {
			sg += float64(f) * g.partial[s*n+c]
			sb += float64(f) * g.partial[s*n+g.in.C+c]
		}
		g.gg[c], g.gb[c] = float32(sg), float32(sb)
	}
}

// clipDP adds each example's squared dγ, dβ norm, which backward has just
// written into g.partial, and keeps them for the clipped sum.
func (g *groupNorm) clipDP(e env, batch int) {
	p := e.dp
	r := p.record(g, func() clipRecord { return &groupNormRecord{g: g} }).(*groupNormRecord)
	r.batch = batch
	n := 2 * g.in.C
	parallelFor(e.workers, batch, func(lo, hi int) {
		for s := lo; s < hi; s++ {
			var sq float64
			for _, v := range g.partial[s*n : (s+1)*n] {
				sq += v * v
			}
			p.sq[s] += sq
		}
	})
	p.params += n
}
