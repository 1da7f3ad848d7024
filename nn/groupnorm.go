package nn

import (
	"math"
	"math/rand/v2"
)

// groupNormEpsilon is added to the variance, as PyTorch's GroupNorm default.
const groupNormEpsilon = 1e-5

// groupNorm is Group Normalization (Wu and He 2018): per sample, the C
// channels are split into groups of C/groups consecutive channels, each
// group is standardised over its rows, columns and channels, then scaled
// by γ[c] and shifted by β[c] per channel. Its statistics are those of
// one sample, so unlike BatchNorm it has no running averages that sites
// would train on their own data and the server could not average.
type groupNorm struct {
	groups     int
	in         Shape
	gamma, bet []float32
	gg, gb     []float32
	mean, rstd []float64 // per (sample, group) of the last forward
	partial    []float64 // per sample, that sample's dγ then dβ
}

func (g *groupNorm) setup(in Shape) (Shape, int) {
	g.in = in
	return in, 2 * in.C
}

func (g *groupNorm) bind(p, gr []float32) {
	c := g.in.C
	g.gamma, g.bet = p[:c], p[c:]
	g.gg, g.gb = gr[:c], gr[c:]
}

func (g *groupNorm) init(*rand.Rand) {
	for i := range g.gamma {
		g.gamma[i] = 1
	}
	clear(g.bet)
}

func (g *groupNorm) forward(e env, x, y []float32, batch int) {
	if n := batch * g.groups; cap(g.mean) < n {
		g.mean, g.rstd = make([]float64, n), make([]float64, n)
	}
	in := g.in
	hw, cg := in.H*in.W, in.C/g.groups
	count := float64(hw * cg)
	parallelFor(e.workers, batch, func(lo, hi int) {
		for s := lo; s < hi; s++ {
			xs := x[s*in.Size() : (s+1)*in.Size()]
			ys := y[s*in.Size() : (s+1)*in.Size()]
			for q := range g.groups {
				var sum, sq float64
				for p := range hw {
					for _, v := range xs[p*in.C+q*cg : p*in.C+(q+1)*cg] {
						sum += float64(v)
					}
				}
				mean := sum / count
				for p := range hw {
					for _, v := range xs[p*in.C+q*cg : p*in.C+(q+1)*cg] {
						d := float64(v) - mean
						sq += d * d
					}
				}
				rstd := 1 / math.Sqrt(sq/count+groupNormEpsilon)
				g.mean[s*g.groups+q], g.rstd[s*g.groups+q] = mean, rstd
				m32, r32 := float32(mean), float32(rstd)
				for p := range hw {
					o := p*in.C + q*cg
					for c := o; c < o+cg; c++ {
						ch := c - p*in.C
						ys[c] = (xs[c]-m32)*r32*g.gamma[ch] + g.bet[ch]
					}
				}
			}
		}
	})
}

func (g *groupNorm) backward(e env, x, _, dy, dx []float32, batch int) {
	in := g.in
	hw, cg := in.H*in.W, in.C/g.groups
	count := float64(hw * cg)
	if n := batch * 2 * in.C; cap(g.partial) < n {
		g.partial = make([]float64, n)
	}
	parallelFor(e.workers, batch, func(lo, hi int) {
		for s := lo; s < hi; s++ {
			xs := x[s*in.Size() : (s+1)*in.Size()]
			dys := dy[s*in.Size() : (s+1)*in.Size()]
			pg := g.partial[s*2*in.C : s*2*in.C+in.C]
			pb := g.partial[s*2*in.C+in.C : (s+1)*2*in.C]
			clear(pg)
			clear(pb)
			for q := range g.groups {
				mean, rstd := g.mean[s*g.groups+q], g.rstd[s*g.groups+q]
				// dx = rstd·(dx̂ − mean(dx̂) − x̂·mean(dx̂·x̂)) with dx̂ = dy·γ.
				var sumD, sumDX float64
				for p := range hw {
					o := p * in.C
					for ch := q * cg; ch < (q+1)*cg; ch++ {
						xh := (float64(xs[o+ch]) - mean) * rstd
						d := float64(dys[o+ch])
						pg[ch] += d * xh
						pb[ch] += d
						dh := d * float64(g.gamma[ch])
						sumD += dh
						sumDX += dh * xh
					}
				}
				if dx == nil {
					continue
				}
				mD, mDX := sumD/count, sumDX/count
				dxs := dx[s*in.Size() : (s+1)*in.Size()]
				for p := range hw {
					o := p * in.C
					for ch := q * cg; ch < (q+1)*cg; ch++ {
						xh := (float64(xs[o+ch]) - mean) * rstd
						dh := float64(dys[o+ch]) * float64(g.gamma[ch])
						dxs[o+ch] = float32(rstd * (dh - mD - xh*mDX))
					}
				}
			}
		}
	})
	// Sum the per-sample parameter gradients in sample order.
	for c := range in.C {
		var sg, sb float64
		for s := range batch {
			sg += g.partial[s*2*in.C+c]
			sb += g.partial[s*2*in.C+in.C+c]
		}
		g.gg[c], g.gb[c] = float32(sg), float32(sb)
	}
}
