package noise

import (
	"math"
)

// GridSlack is how much the Gaussian mechanism's grid may widen the
// sensitivity, as a fraction of it: the grid γ is chosen so that rounding
// a d-dimensional value to it moves the value by at most
// γ·√d/2 ≤ Δ·GridSlack/2 (see Gaussian).
const GridSlack = 0x1p-10

// Grid returns the grid γ of the Gaussian mechanism for a d-dimensional
// value of L2 sensitivity Δ: the largest power of two with γ·√d ≤
// Δ·GridSlack. A power of two keeps every multiple of γ exact in floating
// point over the range the values live in.
func Grid(sensitivity float64, d int) float64 {
	if !(sensitivity > 0) || d < 1 {
		panic("noise: Grid needs a positive sensitivity and dimension")
	}
	target := sensitivity * GridSlack / math.Sqrt(float64(d))
	_, exp := math.Frexp(target) // target = frac·2^exp, frac ∈ [0.5, 1)
	g := math.Ldexp(1, exp-1)    // the largest power of two ≤ target
	if g > target {
		g /= 2
	}
	return g
}

// Sigma is the standard deviation the Gaussian mechanism adds for
// sensitivity Δ and noise multiplier z: z·Δ·(1 + GridSlack). The factor
// covers the grid: the grid-rounded values of two neighbouring inputs are
// at most Δ + γ√d ≤ Δ(1 + GridSlack) apart, so the mechanism is exactly the
// Gaussian mechanism with noise multiplier z on the rounded value, and an
// accountant may charge it as z (μ = 1/z in Gaussian DP).
func Sigma(sensitivity, z float64) float64 { return z * sensitivity * (1 + GridSlack) }

// Gaussian applies the Gaussian mechanism to v in place: every coordinate
// becomes
//
//	γ·(round(v_i/γ) + round(σ·N_i/γ)),  N_i ~ N(0, 1) from the stream,
//
// with γ = Grid(Δ, len(v)) and σ = Sigma(Δ, z). Because round(v_i/γ) is an
// integer, this equals γ·round((γ·round(v_i/γ) + σN_i)/γ): a rounding (post-
// processing) of the continuous Gaussian mechanism applied to the
// grid-rounded value, whose sensitivity is at most Δ(1 + GridSlack). So the
// release is (ε, δ)-DP exactly as the Gaussian mechanism with noise
// multiplier z is (Balle & Wang 2018; Dong, Roth & Su 2019: μ = 1/z).
//
// Why the grid: a floating-point value x + N, computed in float64, can take
// only the doubles near x that x's own low-order bits allow, so the set of
// possible outputs reveals x (Mironov 2012 for the Laplace mechanism;
// Jin et al. 2022 for Gaussian samplers, Box–Muller included). Here every
// output is a multiple of γ and depends on v only through round(v/γ): the
// outputs of two inputs with the same rounded value have exactly the same
// distribution, and two inputs that round differently differ by a shift of
// the same integer lattice, as in the ideal mechanism. γ is far coarser
// than the spacing of doubles near the values (a 2⁻¹⁰ share of the
// sensitivity divided by √d), and far finer than σ, so the noise keeps its
// Gaussian shape: round(σN/γ) is the continuous Gaussian rounded to the
// grid. What remains of the sampler's own imperfection is the resolution
// of Normal's values (about 2⁻²⁹σ, at least 2⁸ times finer than the grid
// for the noise multipliers and dimensions a campaign uses: σ/γ ≥
// z·2¹⁰·√d); this package does not add it to δ.
//
// z = 0 adds no noise (the value is only rounded to the grid); a negative
// z or a non-positive Δ is a programmer error and panics.
func (s *Stream) Gaussian(v []float64, sensitivity, z float64) {
	if len(v) == 0 {
		return
	}
	g, sigma := mechanism(sensitivity, z, len(v))
	inv, scale := 1/g, sigma/g // exact: g is a power of two
	for i, x := range v {
		v[i] = g * (math.RoundToEven(x*inv) + s.noiseUnits(scale))
	}
}

// Gaussian32 is Gaussian for a float32 vector (a network's clipped
// gradient sum): the mechanism runs in float64 and each coordinate is then
// rounded to float32, which is post-processing of the release.
func (s *Stream) Gaussian32(v []float32, sensitivity, z float64) {
	if len(v) == 0 {
		return
	}
	g, sigma := mechanism(sensitivity, z, len(v))
	inv, scale := 1/g, sigma/g
	for i, x := range v {
		v[i] = float32(g * (math.RoundToEven(float64(x)*inv) + s.noiseUnits(scale)))
	}
}

func mechanism(sensitivity, z float64, d int) (grid, sigma float64) {
	if !(z >= 0) || math.IsInf(z, 0) {
		panic("noise: Gaussian needs a finite noise multiplier z >= 0")
	}
	return Grid(sensitivity, d), Sigma(sensitivity, z)
}

// noiseUnits draws round(σN/γ), the noise in grid units, given σ/γ.
func (s *Stream) noiseUnits(scale float64) float64 {
	if scale == 0 {
		return 0
	}
	return math.RoundToEven(scale * s.rng.NormFloat64())
}

// Perturb32 is Gaussian32 under the name package nn's DP-SGD asks its
// randomness for.
func (s *Stream) Perturb32(v []float32, sensitivity, z float64) { s.Gaussian32(v, sensitivity, z) }
