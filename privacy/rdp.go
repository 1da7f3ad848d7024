package privacy

import (
	"fmt"
	"math"
)

// seriesCutoff ends the fractional-order series once both of a step's terms
// are below e^seriesCutoff; A_α ≥ 1, so what is left out is relatively
// negligible. It is Opacus's and dp_accounting's cut-off.
const seriesCutoff = -30

// maxSeriesTerms bounds the fractional-order series; no input met in the
// tests comes near it, and reaching it gives +Inf (no bound) rather than an
// underestimate.
const maxSeriesTerms = 10_000_000

// maxOrder is the largest finite Rényi order SampledGaussianRDP takes: an
// integer order sums that many terms.
const maxOrder = 1_000_000

// RDPOrders returns the Rényi orders the RDP accountant minimises over, a
// new slice each call: Opacus's grid (RDPAccountant.DEFAULT_ALPHAS),
// 1 + x/10 for x = 1…99 and the integers 12…63, followed by 128, 256, 512
// and 1024 from dp_accounting's DEFAULT_RDP_ORDERS for small ε. The extra
// orders only matter when the optimal order exceeds 63; below that the
// accountant gives Opacus's ε exactly.
func RDPOrders() []float64 {
	orders := make([]float64, 0, 99+52+4)
	for x := 1; x <= 99; x++ {
		orders = append(orders, 1+float64(x)/10)
	}
	for a := 12; a <= 63; a++ {
		orders = append(orders, float64(a))
	}
	return append(orders, 128, 256, 512, 1024)
}

// SampledGaussianRDP returns, for each order α in orders, the Rényi DP
// ε(α) of steps compositions of the Poisson-subsampled Gaussian mechanism
// with sampling rate q and noise multiplier z = σ/Δ, for the add/remove-one
// relation: ε(α) = steps · log(A_α)/(α − 1) with A_α as in Mironov, Talwar,
// Zhang 2019 (arXiv 1908.10530) §3.3.
//
// Integer orders sum the binomial expansion of A_α in log space (lgamma);
// fractional orders sum the two-sided series with log erfc, with the signed
// generalised binomial coefficients (log-add and log-subtract) and stopping
// rule of Opacus (opacus/accountants/analysis/rdp.py), whose values the tests
// reproduce. Should a subtraction ever go below zero in floating point, that
// order falls back to the series over |C(α, i)| (dp_accounting ≥ 0.4.4), a
// valid upper bound. q = 1 gives α/(2z²) per step exactly, q = 0 gives 0,
// z = 0 (with q > 0), a z so small that 1/z² overflows, and α = +Inf give
// +Inf; rounding errors below 0 (at tiny q) are clamped to 0.
//
// It fails when q is not in [0, 1], z is negative or NaN, steps is negative
// or an order is not in (1, 1e6] or +Inf.
func SampledGaussianRDP(q, z float64, steps int, orders []float64) ([]float64, error) {
	if !(q >= 0 && q <= 1) {
		return nil, fmt.Errorf("privacy: sampling rate %v: must be in [0, 1]", q)
	}
	if !(z >= 0) {
		return nil, fmt.Errorf("privacy: noise multiplier %v: must be ≥ 0", z)
	}
	if steps < 0 {
		return nil, fmt.Errorf("privacy: steps = %d: must be ≥ 0", steps)
	}
	rdp := make([]float64, len(orders))
	for k, alpha := range orders {
		if !(alpha > 1 && (alpha <= maxOrder || math.IsInf(alpha, 1))) {
			return nil, fmt.Errorf("privacy: Rényi order %v: must be in (1, %g] or +Inf", alpha, float64(maxOrder))
		}
		if steps == 0 {
			continue
		}
		// A_α ≥ 1, so RDP ≥ 0; a tiny q can leave log A_α a rounding
		// error below 0.
		rdp[k] = float64(steps) * max(sampledGaussianRDP(q, z, alpha), 0)
	}
	return rdp, nil
}

// sampledGaussianRDP is SampledGaussianRDP for one step and one order α > 1.
func sampledGaussianRDP(q, z, alpha float64) float64 {
	switch {
	case q == 0:
		return 0
	case math.IsInf(1/(z*z), 1) || math.IsInf(alpha, 1):
		return math.Inf(1) // no noise, or so little that 1/z² overflows
	case q == 1:
		return alpha / (2 * z * z)
	}
	if alpha == math.Trunc(alpha) {
		return logAInt(q, z, int(alpha)) / (alpha - 1)
	}
	logA, ok := logAFrac(q, z, alpha, true)
	if !ok {
		logA, _ = logAFrac(q, z, alpha, false)
	}
	return logA / (alpha - 1)
}

// logAInt returns log A_α for an integer order:
// A_α = Σ_{i=0}^{α} C(α, i) q^i (1−q)^{α−i} exp((i² − i)/(2z²)).
func logAInt(q, z float64, alpha int) float64 {
	a := float64(alpha)
	lgA, _ := math.Lgamma(a + 1)
	lq, l1q := math.Log(q), math.Log1p(-q)
	logA := math.Inf(-1)
	for i := 0; i <= alpha; i++ {
		fi := float64(i)
		lgI, _ := math.Lgamma(fi + 1)
		lgJ, _ := math.Lgamma(a - fi + 1)
		term := lgA - lgI - lgJ + fi*lq + (a-fi)*l1q + (fi*fi-fi)/(2*z*z)
		logA = logAdd(logA, term)
	}
	return logA
}

// logAFrac returns log A_α for a fractional order, the sum of the two
// integrals of A_α over (−∞, z₀] and [z₀, ∞), z₀ = z² log(1/q − 1) + ½,
// each expanded as a series over the generalised binomial C(α, i). With
// signed, terms carry the sign of C(α, i) (Opacus); ok is false when a
// partial sum would go negative, which exact arithmetic rules out. Without
// signed, all terms are added (an upper bound).
func logAFrac(q, z, alpha float64, signed bool) (logA float64, ok bool) {
	a0, a1 := math.Inf(-1), math.Inf(-1)
	z0 := z*z*math.Log(1/q-1) + 0.5
	lq, l1q := math.Log(q), math.Log1p(-q)
	lgA, _ := math.Lgamma(alpha + 1)
	twoZ2, sqrt2Z := 2*z*z, math.Sqrt2*z
	for i := 0; ; i++ {
		fi := float64(i)
		j := alpha - fi
		lgI, _ := math.Lgamma(fi + 1)
		lgJ, sign := math.Lgamma(j + 1) // Γ(α+1) and i! are positive: C(α, i) has the sign of Γ(α−i+1)
		logCoef := lgA - lgI - lgJ
		s0 := logCoef + fi*lq + j*l1q + (fi*fi-fi)/twoZ2 + logErfc((fi-z0)/sqrt2Z) - math.Ln2
		s1 := logCoef + j*lq + fi*l1q + (j*j-j)/twoZ2 + logErfc((z0-j)/sqrt2Z) - math.Ln2
		if sign > 0 || !signed {
			a0, a1 = logAdd(a0, s0), logAdd(a1, s1)
		} else {
			if s0 > a0 || s1 > a1 {
				return 0, false
			}
			a0, a1 = logSub(a0, s0), logSub(a1, s1)
		}
		if max(s0, s1) < seriesCutoff {
			break
		}
		if math.IsNaN(s0) || math.IsNaN(s1) || i == maxSeriesTerms {
			return math.Inf(1), true
		}
	}
	return logAdd(a0, a1), true
}

// logAdd returns log(e^x + e^y).
func logAdd(x, y float64) float64 {
	lo, hi := min(x, y), max(x, y)
	if math.IsInf(lo, -1) {
		return hi
	}
	return hi + math.Log1p(math.Exp(lo-hi))
}

// logSub returns log(e^x − e^y) for x ≥ y.
func logSub(x, y float64) float64 {
	switch {
	case math.IsInf(y, -1):
		return x
	case x == y:
		return math.Inf(-1)
	}
	return x + math.Log1p(-math.Exp(y-x))
}

// RDPToEpsilon converts RDP guarantees rdp[k] at orders[k] into the
// smallest ε, over the orders, for which the mechanism is (ε, delta)-DP, and
// returns the order that attains it. Each order gives
//
//	ε(α) = rdp + log((α−1)/α) − (log δ + log α)/(α−1)
//
// (Balle et al. 2020, arXiv 1905.09982, Theorem 21; Canonne, Kamath, Steinke
// 2020, Proposition 12), with dp_accounting's rules (compute_epsilon): the
// bound is used only for α > 1.01, where it is numerically stable; an order
// whose rdp satisfies δ² + expm1(−rdp) > 0 gives ε = 0 through the KL bound
// δ ≤ √(1 − e^{−rdp}); the result is clamped at 0. On the first minimum
// the earliest order wins. Every order must be at least 1 (+Inf is pure DP)
// and every rdp ≥ 0 or +Inf; delta must be in (0, 1). It panics if the slices differ in length.
func RDPToEpsilon(orders, rdp []float64, delta float64) (eps, order float64, err error) {
	if len(orders) != len(rdp) {
		panic("privacy: orders and RDP values differ in length")
	}
	if len(orders) == 0 {
		return 0, 0, fmt.Errorf("privacy: no Rényi orders")
	}
	if err := checkDelta(delta); err != nil {
		return 0, 0, err
	}
	best, bestOrder := math.Inf(1), orders[0]
	for k, a := range orders {
		r := rdp[k]
		if !(a >= 1) {
			return 0, 0, fmt.Errorf("privacy: Rényi order %v: must be ≥ 1", a)
		}
		if !(r >= 0) {
			return 0, 0, fmt.Errorf("privacy: RDP %v at order %v: must be ≥ 0", r, a)
		}
		e := math.Inf(1)
		switch {
		case delta*delta+math.Expm1(-r) > 0:
			e = 0
		case math.IsInf(a, 1):
			e = r // the limit of the bound: pure ε-DP
		case a > 1.01:
			e = r + math.Log1p(-1/a) - math.Log(delta*a)/(a-1)
		}
		if e < best {
			best, bestOrder = e, a
		}
	}
	return max(best, 0), bestOrder, nil
}
