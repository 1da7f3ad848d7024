package privacy

import (
	"fmt"
	"math"
)

// The root finders below stop when the bracket is this narrow relative to
// its upper end, or after maxBisections halvings.
const (
	rootRelTol    = 1e-12
	maxBisections = 200
)

// GaussianDelta returns the smallest δ for which a μ-GDP mechanism (a
// Gaussian mechanism with sensitivity Δ and noise σ has μ = Δ/σ) is
// (ε, δ)-DP:
//
//	δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)
//
// (Balle and Wang 2018, Theorem 8; Dong, Roth, Su 2019, Corollary 2.13).
// Φ is computed from math.Erfc, and e^ε Φ(·) in log space once either
// factor would overflow or underflow, so large ε and small μ neither
// overflow nor cancel to a negative value; the result is clamped at 0. μ = 0
// gives 0 and μ = +Inf gives 1. It returns NaN for μ < 0, ε < 0 or NaN
// arguments.
func GaussianDelta(mu, eps float64) float64 {
	switch {
	case math.IsNaN(mu) || math.IsNaN(eps) || mu < 0 || eps < 0:
		return math.NaN()
	case mu == 0 || math.IsInf(eps, 1):
		return 0
	case math.IsInf(mu, 1):
		return 1
	}
	a, b := mu/2, eps/mu
	first := normalCDF(a - b)
	if first == 0 {
		return 0 // the second term is smaller still
	}
	var second float64
	if x := -a - b; eps < 700 && x > -37 {
		second = math.Exp(eps) * normalCDF(x)
	} else {
		second = math.Exp(eps + logNormalCDF(x))
	}
	return max(first-second, 0)
}

// GaussianSigmaDelta returns GaussianDelta for the Gaussian mechanism with
// noise standard deviation sigma on a query of L2 sensitivity sensitivity,
// that is for μ = sensitivity/sigma. It returns NaN when either is negative
// or NaN.
func GaussianSigmaDelta(sigma, sensitivity, eps float64) float64 {
	if !(sigma >= 0 && sensitivity >= 0) {
		return math.NaN()
	}
	return GaussianDelta(sensitivity/sigma, eps)
}

// GaussianEpsilon returns the smallest ε ≥ 0 for which a μ-GDP mechanism is
// (ε, delta)-DP, the inverse of GaussianDelta in ε, found by bisection to a
// relative precision of 1e-12 (the ε returned always satisfies
// GaussianDelta(mu, ε) ≤ delta). μ = +Inf gives ε = +Inf. It fails when
// μ < 0 or μ is NaN, or delta is not in (0, 1).
func GaussianEpsilon(mu, delta float64) (float64, error) {
	if !(mu >= 0) {
		return 0, fmt.Errorf("privacy: μ = %v: must be ≥ 0", mu)
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	if math.IsInf(mu, 1) {
		return math.Inf(1), nil
	}
	if GaussianDelta(mu, 0) <= delta {
		return 0, nil
	}
	// δ(ε) decreases in ε: bracket the root, then halve the bracket.
	lo, hi := 0.0, 1.0
	for GaussianDelta(mu, hi) > delta {
		lo, hi = hi, 2*hi
		if math.IsInf(hi, 1) {
			return math.Inf(1), nil
		}
	}
	for i := 0; i < maxBisections && hi-lo > rootRelTol*hi; i++ {
		mid := lo + (hi-lo)/2
		if GaussianDelta(mu, mid) > delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi, nil
}

// GaussianMu returns the largest μ for which μ-GDP is (eps, delta)-DP, the
// inverse of GaussianDelta in μ, found by bisection to a relative precision
// of 1e-12 (the μ returned always satisfies GaussianDelta(μ, eps) ≤ delta).
// A Gaussian mechanism of sensitivity Δ meets (eps, delta) with σ = Δ/μ, and
// T equal releases with noise multiplier √T/μ. It fails when eps is negative
// or not finite, or delta is not in (0, 1).
func GaussianMu(eps, delta float64) (float64, error) {
	if !(eps >= 0) || math.IsInf(eps, 1) {
		return 0, fmt.Errorf("privacy: ε = %v: must be a finite number ≥ 0", eps)
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	// δ increases in μ, from 0 at μ = 0 towards 1.
	lo, hi := 0.0, 1.0
	for GaussianDelta(hi, eps) <= delta {
		lo, hi = hi, 2*hi
	}
	for i := 0; i < maxBisections && hi-lo > rootRelTol*hi; i++ {
		mid := lo + (hi-lo)/2
		if GaussianDelta(mid, eps) <= delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// checkDelta reports a δ outside (0, 1).
func checkDelta(delta float64) error {
	if !(delta > 0 && delta < 1) {
		return fmt.Errorf("privacy: δ = %v: must be in (0, 1)", delta)
	}
	return nil
}

// normalCDF returns Φ(x), accurate to a few ulps deep into the lower tail
// (down to Φ(x) ≈ 1e-308), which 1 + erf would not be.
func normalCDF(x float64) float64 {
	return 0.5 * math.Erfc(-x/math.Sqrt2)
}

// logNormalCDF returns log Φ(x) for any x, including where Φ(x) underflows.
func logNormalCDF(x float64) float64 {
	return logErfc(-x/math.Sqrt2) - math.Ln2
}

// logErfc returns log erfc(x). Below x = 25 math.Erfc is still a normal
// float64 and accurate; beyond, the asymptotic expansion
// erfc(x) = e^{−x²}/(x√π) · Σ_k (−1)^k (2k−1)!!/(2x²)^k (Abramowitz and
// Stegun 7.1.23), whose 9th term is below 1e-20 there.
func logErfc(x float64) float64 {
	if x < 25 {
		return math.Log(math.Erfc(x))
	}
	twoX2 := 2 * x * x
	sum, term := 1.0, 1.0
	for k := 1; k <= 8; k++ {
		term *= -float64(2*k-1) / twoX2
		sum += term
	}
	return -x*x - math.Log(x) - 0.5*math.Log(math.Pi) + math.Log(sum)
}
