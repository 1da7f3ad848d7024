package learn

import "math"

// InitialParams returns the round-1 parameters of the reference's
// gradient-descent baselines for a model with nCoef coefficients: the
// coefficients are numpy.random.RandomState(seed).randn(1, nCoef)·scale and
// the intercept is 0 (expected.json FedProx/SCAFFOLD/pFedMe `notes`: "w =
// numpy RandomState(seed+k).randn(1,20)*0.01, b = 0"). The generator is a
// re-implementation of numpy's legacy MT19937 seeding (init_genrand) and its
// polar Box–Muller `legacy_gauss`, so the values are bit-identical to
// numpy's; seed must be in [0, 2³²).
func InitialParams(nCoef int, seed uint32, scale float64) []float64 {
	r := newMT19937(seed)
	out := make([]float64, nCoef+1)
	for j := 0; j < nCoef; j++ {
		out[j] = r.gauss() * scale
	}
	return out
}

// mt19937 is the Mersenne Twister of Matsumoto and Nishimura (1998) with
// numpy's legacy normal generator on top.
type mt19937 struct {
	mt       [624]uint32
	mti      int
	hasGauss bool
	gaussVal float64
}

func newMT19937(seed uint32) *mt19937 {
	r := &mt19937{}
	r.mt[0] = seed
	for i := 1; i < 624; i++ {
		r.mt[i] = 1812433253*(r.mt[i-1]^(r.mt[i-1]>>30)) + uint32(i)
	}
	r.mti = 624
	return r
}

func (r *mt19937) uint32() uint32 {
	const upper, lower = 0x80000000, 0x7fffffff
	if r.mti >= 624 {
		mag := [2]uint32{0, 0x9908b0df}
		var kk int
		for ; kk < 624-397; kk++ {
			y := (r.mt[kk] & upper) | (r.mt[kk+1] & lower)
			r.mt[kk] = r.mt[kk+397] ^ (y >> 1) ^ mag[y&1]
		}
		for ; kk < 623; kk++ {
			y := (r.mt[kk] & upper) | (r.mt[kk+1] & lower)
			r.mt[kk] = r.mt[kk+(397-624)] ^ (y >> 1) ^ mag[y&1]
		}
		y := (r.mt[623] & upper) | (r.mt[0] & lower)
		r.mt[623] = r.mt[396] ^ (y >> 1) ^ mag[y&1]
		r.mti = 0
	}
	y := r.mt[r.mti]
	r.mti++
	y ^= y >> 11
	y ^= (y << 7) & 0x9d2c5680
	y ^= (y << 15) & 0xefc60000
	y ^= y >> 18
	return y
}

// double is numpy's legacy_double: 53 random bits in [0, 1).
func (r *mt19937) double() float64 {
	a := r.uint32() >> 5
	b := r.uint32() >> 6
	return (float64(a)*67108864 + float64(b)) / 9007199254740992
}

// gauss is numpy's legacy_gauss (Marsaglia's polar method, caching the
// second variate).
func (r *mt19937) gauss() float64 {
	if r.hasGauss {
		r.hasGauss = false
		return r.gaussVal
	}
	var x1, x2, r2 float64
	for {
		x1 = 2*r.double() - 1
		x2 = 2*r.double() - 1
		r2 = x1*x1 + x2*x2
		if r2 < 1 && r2 != 0 {
			break
		}
	}
	f := math.Sqrt(-2 * math.Log(r2) / r2)
	r.gaussVal = f * x1
	r.hasGauss = true
	return f * x2
}
