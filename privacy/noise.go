package privacy

import (
	"fmt"
	"math"
)

// Opacus's get_noise_multiplier (opacus/accountants/utils.py): it stops
// bisecting once the ε reached is within opacusEpsTolerance below the
// target, and gives up once σ passes opacusMaxSigma.
const (
	opacusEpsTolerance = 0.01
	opacusMaxSigma     = 1e6
)

// SolveNoise brackets z within [solveMinZ, solveMaxZ] and bisects it to a
// relative width of solveRelTol.
const (
	solveRelTol = 1e-9
	solveMinZ   = 1e-6
	solveMaxZ   = 1e6
)

// NoiseMultiplier returns a noise multiplier z = σ/Δ with which steps
// Poisson-sampled Gaussian releases at rate q spend less than targetEps at
// delta.
//
// With RDP it is Opacus's get_noise_multiplier, step for step, so that it
// returns Opacus's value: σ_hi starts at 10 and doubles until ε(σ_hi) <
// targetEps, then [0, σ_hi] is bisected until targetEps − ε(σ_hi) ≤ 0.01,
// and σ_hi is returned; it fails, as Opacus does, once σ_hi passes 1e6. Its
// ε is Epsilon's, on RDPOrders, which is Opacus's whenever the optimal order
// is at most 63. With GDP (q must be 1) the answer is exact: z = √steps/μ
// with μ = GaussianMu(targetEps, delta). Auto picks GDP when q = 1, RDP
// otherwise.
//
// It fails, naming the argument, when targetEps is not a positive finite
// number, delta is not in (0, 1), q not in (0, 1] or steps < 1, and when
// GDP is asked for with q < 1.
func NoiseMultiplier(targetEps, delta, q float64, steps int, acc Accountant) (float64, error) {
	if err := checkTarget(targetEps); err != nil {
		return 0, err
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	if !(q > 0 && q <= 1) {
		return 0, fmt.Errorf("privacy: sampling rate %v: must be in (0, 1]", q)
	}
	if steps < 1 {
		return 0, fmt.Errorf("privacy: steps = %d: must be ≥ 1", steps)
	}
	if err := acc.Validate(); err != nil {
		return 0, err
	}
	if acc == Auto || acc == "auto" {
		acc = DefaultAccountant([]Event{{Q: q, Count: steps}})
	}
	if acc == GDP {
		if q != 1 {
			return 0, fmt.Errorf("privacy: sampling rate %v: the GDP accountant needs 1 (use %s)", q, RDP)
		}
		mu, err := GaussianMu(targetEps, delta)
		if err != nil {
			return 0, err
		}
		return math.Sqrt(float64(steps)) / mu, nil
	}
	epsAt := func(z float64) (float64, error) {
		s, err := Epsilon([]Event{{Z: z, Q: q, Count: steps}}, delta, RDP)
		return s.Epsilon, err
	}
	lo, hi, epsHi := 0.0, 10.0, math.Inf(1)
	for epsHi > targetEps {
		hi *= 2
		var err error
		if epsHi, err = epsAt(hi); err != nil {
			return 0, err
		}
		if hi > opacusMaxSigma {
			return 0, fmt.Errorf("privacy: target ε = %v is too low: even z = %v spends ε = %.4g", targetEps, hi, epsHi)
		}
	}
	for i := 0; i < maxBisections && targetEps-epsHi > opacusEpsTolerance; i++ {
		mid := (lo + hi) / 2
		eps, err := epsAt(mid)
		if err != nil {
			return 0, err
		}
		if eps < targetEps {
			hi, epsHi = mid, eps
		} else {
			lo = mid
		}
	}
	return hi, nil
}

// SolveNoise returns the smallest noise multiplier z for which the ledger
// plan(z) spends at most targetEps at delta with acc (see Epsilon), for
// plans that mix events of several kinds: z is the knob (say the DP-SGD
// steps' noise) and plan may hold events that do not depend on it (say
// descriptors released with a noise of their own). plan's ε must not
// increase with z.
//
// z is bracketed between 1e-6 and 1e6 by doubling or halving from 1, then
// bisected until the bracket is narrower than 1e-9 of z; the z returned
// always meets the target, and z·(1 − 1e-9) may not. It fails when even
// z = 1e6 spends more than targetEps (the events that do not depend on z
// alone exceed the target), when z = 1e-6 already meets it (plan ignores z),
// on the errors of Epsilon for a plan, and when targetEps is not a positive
// finite number or delta is not in (0, 1).
func SolveNoise(targetEps, delta float64, plan func(z float64) []Event, acc Accountant) (float64, error) {
	if err := checkTarget(targetEps); err != nil {
		return 0, err
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	if err := acc.Validate(); err != nil {
		return 0, err
	}
	meets := func(z float64) (bool, float64, error) {
		s, err := Epsilon(plan(z), delta, acc)
		if err != nil {
			return false, 0, fmt.Errorf("plan(z = %v): %w", z, err)
		}
		return s.Epsilon <= targetEps, s.Epsilon, nil
	}
	lo, hi := 0.0, 1.0
	ok, eps, err := meets(hi)
	for ; err == nil && !ok; ok, eps, err = meets(hi) {
		if hi >= solveMaxZ {
			return 0, fmt.Errorf("privacy: even z = %v spends ε = %.4g > %v: the events that do not depend on z exceed the target", hi, eps, targetEps)
		}
		lo, hi = hi, 2*hi
	}
	if err != nil {
		return 0, err
	}
	for lo == 0 {
		if hi/2 < solveMinZ {
			return 0, fmt.Errorf("privacy: z = %v already spends ε = %.4g ≤ %v: the plan does not depend on z", hi, eps, targetEps)
		}
		ok, eps, err = meets(hi / 2)
		switch {
		case err != nil:
			return 0, err
		case ok:
			hi /= 2
		default:
			lo = hi / 2
		}
	}
	for i := 0; i < maxBisections && hi-lo > solveRelTol*hi; i++ {
		mid := lo + (hi-lo)/2
		ok, _, err := meets(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, nil
}

// checkTarget reports a target ε that is not a positive finite number.
func checkTarget(eps float64) error {
	if !(eps > 0) || math.IsInf(eps, 1) {
		return fmt.Errorf("privacy: target ε = %v: must be a positive finite number", eps)
	}
	return nil
}
