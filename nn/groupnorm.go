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

// channelSums adds, over the hw positions of one sample's HWC values, each
// channel's sum of a into sa and, if b is not nil, of a·b into sab.
func channelSums(a, b []float32, hw, c int, sa, sab []float64) {
	clear(sa)
	clear(sab)
	for p := range hw {
		row := a[p*c : (p+1)*c]
		if b == nil {
			for ch, v := range row {
				sa[ch] += float64(v)
				sab[ch] += float64(v) * float64(v)
			}
			continue
		}
		rb := b[p*c : (p+1)*c]
		for ch, v := range row {
			sa[ch] += float64(v)
			sab[ch] += float64(v) * float64(rb[ch])
		}
	}
}

// affine writes y = x·scale[c] + shift[c] over one sample's HWC values.
func affine(x, y []float32, hw int, scale, shift []float32) {
	c := len(scale)
	for p := range hw {
		xs, ys := x[p*c:(p+1)*c], y[p*c:(p+1)*c]
		for ch, v := range xs {
			ys[ch] = v*scale[ch] + shift[ch]
		}
	}
}

// The statistics are accumulated per channel in one pass (float64 sums of
// x and x², from which each group's mean and variance follow), and the
// normalisation is then one per-channel affine map: two passes over the
// activations where the textbook formula takes four.
func (g *groupNorm) forward(e env, x, y []float32, batch int) {
	if n := batch * g.groups; cap(g.mean) < n {
		g.mean, g.rstd = make([]float64, n), make([]float64, n)
	}
	in := g.in
	hw, cg := in.H*in.W, in.C/g.groups
	count := float64(hw * cg)
	parallelFor(e.workers, batch, func(lo, hi int) {
		s1, s2 := make([]float64, in.C), make([]float64, in.C)
		scale, shift := make([]float32, in.C), make([]float32, in.C)
		for s := lo; s < hi; s++ {
			xs := x[s*in.Size() : (s+1)*in.Size()]
			channelSums(xs, nil, hw, in.C, s1, s2)
			for q := range g.groups {
				var sum, sq float64
				for ch := q * cg; ch < (q+1)*cg; ch++ {
					sum += s1[ch]
					sq += s2[ch]
				}
				mean := sum / count
				rstd := 1 / math.Sqrt(max(sq/count-mean*mean, 0)+groupNormEpsilon)
				g.mean[s*g.groups+q], g.rstd[s*g.groups+q] = mean, rstd
				for ch := q * cg; ch < (q+1)*cg; ch++ {
					a := rstd * float64(g.gamma[ch])
					scale[ch] = float32(a)
					shift[ch] = float32(float64(g.bet[ch]) - mean*a)
				}
			}
			affine(xs, y[s*in.Size():(s+1)*in.Size()], hw, scale, shift)
		}
	})
}

// backward uses per-channel sums of dy and dy·x: with x̂ = (x − μ)ρ,
// dγ_c = ρ(Σdy·x − μΣdy), dβ_c = Σdy, and
// dx = ρ(γ_c dy − mean(γdy) − x̂·mean(γdy·x̂)), which is again one
// per-channel affine map of dy plus a per-group multiple of x.
func (g *groupNorm) backward(e env, x, _, dy, dx []float32, batch int) {
	in := g.in
	hw, cg := in.H*in.W, in.C/g.groups
	count := float64(hw * cg)
	if n := batch * 2 * in.C; cap(g.partial) < n {
		g.partial = make([]float64, n)
	}
	parallelFor(e.workers, batch, func(lo, hi int) {
		sd, sdx := make([]float64, in.C), make([]float64, in.C)
		a, b, c := make([]float32, in.C), make([]float32, in.C), make([]float32, in.C)
		for s := lo; s < hi; s++ {
			xs := x[s*in.Size() : (s+1)*in.Size()]
			dys := dy[s*in.Size() : (s+1)*in.Size()]
			channelSums(dys, xs, hw, in.C, sd, sdx)
			pg := g.partial[s*2*in.C : s*2*in.C+in.C]
			pb := g.partial[s*2*in.C+in.C : (s+1)*2*in.C]
			for q := range g.groups {
				mean, rstd := g.mean[s*g.groups+q], g.rstd[s*g.groups+q]
				var sumD, sumDX float64 // Σ γdy and Σ γdy·x̂ over the group
				for ch := q * cg; ch < (q+1)*cg; ch++ {
					dxh := rstd * (sdx[ch] - mean*sd[ch]) // Σ dy·x̂ of the channel
					pg[ch], pb[ch] = dxh, sd[ch]
					gm := float64(g.gamma[ch])
					sumD += gm * sd[ch]
					sumDX += gm * dxh
				}
				mD, mDX := sumD/count, sumDX/count
				// dx = ρ γ_c dy − ρ² mDX·x + ρ(ρ μ mDX − mD)
				k := float32(-rstd * rstd * mDX)
				k0 := float32(rstd * (rstd*mean*mDX - mD))
				for ch := q * cg; ch < (q+1)*cg; ch++ {
					a[ch] = float32(rstd * float64(g.gamma[ch]))
					b[ch], c[ch] = k, k0
				}
			}
			if dx == nil {
				continue
			}
			dxs := dx[s*in.Size() : (s+1)*in.Size()]
			for p := range hw {
				o := p * in.C
				for ch := range in.C {
					dxs[o+ch] = a[ch]*dys[o+ch] + b[ch]*xs[o+ch] + c[ch]
				}
			}
		}
	})
	if e.dp != nil {
		g.clipDP(e, batch) // keeps the per-sample gradients for the clipped sum
		return
	}
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
