package nn

import "math/rand/v2"

// basicBlock is ResNet's basic residual block (He et al. 2016, Fig. 2 left)
// with GroupNorm in place of BatchNorm: y = relu(gn2(conv2(relu(gn1(conv1
// x)))) + shortcut(x)), the shortcut being x itself or, when the block
// changes the stride or the width, a 1×1 convolution and a GroupNorm.
type basicBlock struct {
	conv1, conv2 *conv
	gn1, gn2     *groupNorm
	act          relu
	proj         *conv // nil for the identity shortcut
	projGN       *groupNorm
	in, out      Shape
	nParams      []int // of conv1, gn1, conv2, gn2, proj, projGN

	a1, a2, a3, a4, a5 []float32 // conv1, gn1, relu, conv2, gn2 outputs
	s1, s2             []float32 // proj, projGN outputs
	d1, d2             []float32 // gradient scratch of the block's size
	dIn                []float32 // the shortcut's input gradient
}

func newBasicBlock(width, stride, groups int) *basicBlock {
	return &basicBlock{
		conv1: &conv{k: 3, stride: stride, pad: 1, outC: width},
		gn1:   &groupNorm{groups: groups},
		conv2: &conv{k: 3, stride: 1, pad: 1, outC: width},
		gn2:   &groupNorm{groups: groups},
	}
}

func (b *basicBlock) parts() []layer {
	p := []layer{b.conv1, b.gn1, b.conv2, b.gn2}
	if b.proj != nil {
		p = append(p, b.proj, b.projGN)
	}
	return p
}

func (b *basicBlock) setup(in Shape) (Shape, int) {
	b.in = in
	s1, n1 := b.conv1.setup(in)
	_, n2 := b.gn1.setup(s1)
	b.act.setup(s1)
	out, n3 := b.conv2.setup(s1)
	_, n4 := b.gn2.setup(out)
	b.out = out
	b.nParams = []int{n1, n2, n3, n4}
	if out != in {
		b.proj = &conv{k: 1, stride: b.conv1.stride, outC: out.C}
		b.projGN = &groupNorm{groups: b.gn2.groups}
		ps, n5 := b.proj.setup(in)
		_, n6 := b.projGN.setup(ps)
		b.nParams = append(b.nParams, n5, n6)
	}
	total := 0
	for _, n := range b.nParams {
		total += n
	}
	return out, total
}

func (b *basicBlock) bind(p, g []float32) {
	off := 0
	for i, l := range b.parts() {
		n := b.nParams[i]
		l.bind(p[off:off+n], g[off:off+n])
		off += n
	}
}

func (b *basicBlock) init(rng *rand.Rand) {
	for _, l := range b.parts() {
		l.init(rng)
	}
}

func (b *basicBlock) forward(e env, x, y []float32, batch int) {
	n := batch * b.out.Size()
	b.a1, b.a2, b.a3 = grow(b.a1, n), grow(b.a2, n), grow(b.a3, n)
	b.a4, b.a5 = grow(b.a4, n), grow(b.a5, n)
	b.conv1.forward(e, x, b.a1, batch)
	b.gn1.forward(e, b.a1, b.a2, batch)
	b.act.forward(e, b.a2, b.a3, batch)
	b.conv2.forward(e, b.a3, b.a4, batch)
	b.gn2.forward(e, b.a4, b.a5, batch)
	short := x
	if b.proj != nil {
		b.s1, b.s2 = grow(b.s1, n), grow(b.s2, n)
		b.proj.forward(e, x, b.s1, batch)
		b.projGN.forward(e, b.s1, b.s2, batch)
		short = b.s2
	}
	size := b.out.Size()
	parallelFor(e.workers, batch, func(lo, hi int) {
		for i := lo * size; i < hi*size; i++ {
			y[i] = max(b.a5[i]+short[i], 0)
		}
	})
}

func (b *basicBlock) backward(e env, x, y, dy, dx []float32, batch int) {
	n := batch * b.out.Size()
	size := b.out.Size()
	b.d1, b.d2 = grow(b.d1, n), grow(b.d2, n)
	dz := b.d1 // gradient at the sum, before the final ReLU
	parallelFor(e.workers, batch, func(lo, hi int) {
		reluBackward(y[lo*size:hi*size], dy[lo*size:hi*size], dz[lo*size:hi*size])
	})
	// Main path, back to front, alternating two scratch buffers.
	b.gn2.backward(e, b.a4, b.a5, dz, b.d2, batch)
	da3 := b.a5 // a5 is no longer needed
	b.conv2.backward(e, b.a3, b.a4, b.d2, da3, batch)
	parallelFor(e.workers, batch, func(lo, hi int) {
		reluBackward(b.a3[lo*size:hi*size], da3[lo*size:hi*size], da3[lo*size:hi*size])
	})
	b.gn1.backward(e, b.a1, b.a2, da3, b.d2, batch)
	if b.proj == nil {
		b.conv1.backward(e, x, b.a1, b.d2, dx, batch)
		if dx != nil {
			for i := range dx[:batch*b.in.Size()] {
				dx[i] += dz[i]
			}
		}
		return
	}
	b.conv1.backward(e, x, b.a1, b.d2, dx, batch)
	b.projGN.backward(e, b.s1, b.s2, dz, b.d2, batch)
	if dx == nil {
		b.proj.backward(e, x, b.s1, b.d2, nil, batch)
		return
	}
	b.dIn = grow(b.dIn, batch*b.in.Size())
	b.proj.backward(e, x, b.s1, b.d2, b.dIn, batch)
	for i := range dx[:batch*b.in.Size()] {
		dx[i] += b.dIn[i]
	}
}
