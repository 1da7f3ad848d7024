package privacy

import (
	"math"
	"testing"
)

// Tolerances, relative unless said otherwise.
const (
	closedFormTol  = 1e-9  // published values of closed forms and of bisections to 1e-12
	integrationTol = 1e-11 // against Simpson's rule on a fine grid
)

// relErr is |got − want|/|want|, NaN-aware: two NaNs or two equal
// infinities agree exactly.
func relErr(got, want float64) float64 {
	switch {
	case math.IsNaN(got) && math.IsNaN(want), got == want:
		return 0
	case want == 0:
		return math.Abs(got)
	}
	return math.Abs(got-want) / math.Abs(want)
}

func TestGaussianSigmaDelta(t *testing.T) {
	// Cases 0–3: Google's Go DP library, go/noise/gaussian_noise_test.go
	// (TestDeltaForGaussian, deltaForGaussian(σ, l0 = 1, lInf = Δ, ε)).
	// Cases 4–8: edge cases by the definition.
	cases := []struct {
		sigma, sens, eps float64
		want             float64
	}{
		{10, 1, 0.1, 0.008751768145810},            // 0
		{10, 5, math.Log(3), 0.004159742234000802}, // 1
		{0.5, 1, 0, 0.6826894921370859},            // 2: 2Φ(1) − 1
		{1, 1, math.Log(3), 0.10985556344445052},   // 3
		{1, 0, 1, 0},                               // 4: no sensitivity, nothing to hide
		{0, 1, 1, 1},                               // 5: no noise
		{1, 1, math.Inf(1), 0},                     // 6
		{-1, 1, 1, math.NaN()},                     // 7
		{1, 1, -1, math.NaN()},                     // 8
	}
	for i, c := range cases {
		got := GaussianSigmaDelta(c.sigma, c.sens, c.eps)
		if relErr(got, c.want) > closedFormTol {
			t.Errorf("%d: GaussianSigmaDelta(%v, %v, %v) = %.16g, want %.16g", i, c.sigma, c.sens, c.eps, got, c.want)
		}
	}
}

// hockeyStick integrates δ(ε) = ∫ max(0, φ(x−μ) − e^ε φ(x)) dx, the
// definition of δ for the pair N(μ, 1), N(0, 1), with Simpson's rule from the
// point x* = ε/μ + μ/2 where the integrand turns positive; it uses neither
// erfc nor the closed form.
func hockeyStick(mu, eps float64) float64 {
	const n, width = 200000, 40.0
	phi := func(x float64) float64 { return math.Exp(-x*x/2) / math.Sqrt(2*math.Pi) }
	f := func(x float64) float64 { return phi(x-mu) - math.Exp(eps-x*x/2)/math.Sqrt(2*math.Pi) }
	a := eps/mu + mu/2
	h := width / n
	sum := f(a) + f(a+width)
	for k := 1; k < n; k++ {
		w := 2.0
		if k%2 == 1 {
			w = 4
		}
		sum += w * f(a+float64(k)*h)
	}
	return sum * h / 3
}

func TestGaussianDeltaIntegration(t *testing.T) {
	cases := []struct{ mu, eps float64 }{
		{0.1, 0.1}, // 0
		{0.5, 0.3}, // 1
		{1, 1},     // 2
		{2, 0},     // 3
		{3, 5},     // 4
		{0.8, 2},   // 5: δ ≈ 1e-3
		{40, 750},  // 6: e^ε overflows float64; δ = Φ(1.25) − e^750 Φ(−38.75) ≈ 0.8943 − 0.0047
	}
	for i, c := range cases {
		got, want := GaussianDelta(c.mu, c.eps), hockeyStick(c.mu, c.eps)
		if relErr(got, want) > integrationTol {
			t.Errorf("%d: GaussianDelta(%v, %v) = %.12g, integral %.12g", i, c.mu, c.eps, got, want)
		}
	}
}

// TestGaussianDeltaExtremes: far in the tails δ stays in [0, 1], finite and
// non-increasing in ε, where the naive formula overflows (e^ε for ε > 709) or
// cancels to a negative number.
func TestGaussianDeltaExtremes(t *testing.T) {
	for i, mu := range []float64{1e-4, 0.01, 1, 30, 1e3} {
		prev := 1.0
		for _, eps := range []float64{0, 1e-8, 0.5, 1, 10, 100, 700, 710, 1e4, 1e6, 1e9} {
			d := GaussianDelta(mu, eps)
			if !(d >= 0 && d <= prev) {
				t.Errorf("%d: GaussianDelta(%v, %v) = %v after %v", i, mu, eps, d, prev)
			}
			prev = d
		}
	}
}

func TestGaussianEpsilonMu(t *testing.T) {
	// μ for (ε, 1e-5), from the research note privacy.md §2.4 (its stdlib
	// port of the formulas): "Full-batch DP-GD (q=1, exact) needs μ = 0.268,
	// 0.719 and 1.666" for ε = 1, 3, 8 (3 decimals), and vector 10, the
	// analytic Gaussian σ/Δ = 1/μ = 3.7306, 1.9938, 0.6002 for ε = 1, 2, 8
	// (4 decimals). NaN: not published.
	nan := math.NaN()
	cases := []struct {
		eps, mu, inv float64
	}{
		{1, 0.268, 3.7306}, // 0
		{2, nan, 1.9938},   // 1
		{3, 0.719, nan},    // 2
		{8, 1.666, 0.6002}, // 3
	}
	for i, c := range cases {
		mu, err := GaussianMu(c.eps, 1e-5)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if math.Abs(mu-c.mu) > 0.0005 || math.Abs(1/mu-c.inv) > 0.00005 {
			t.Errorf("%d: GaussianMu(%v, 1e-5) = %.6f (1/μ = %.6f), want %.3f (%.4f)", i, c.eps, mu, 1/mu, c.mu, c.inv)
		}
	}
	// Both inverses agree with GaussianDelta to the bisection's precision,
	// and with each other.
	for i, mu := range []float64{1e-3, 0.05, 0.268051, 1, 4, 20} {
		for _, delta := range []float64{1e-12, 1e-5, 0.01, 0.3} {
			eps, err := GaussianEpsilon(mu, delta)
			if err != nil {
				t.Fatal(err)
			}
			if d := GaussianDelta(mu, eps); d > delta {
				t.Errorf("%d: δ(GaussianEpsilon(%v, %v)) = %v", i, mu, delta, d)
			}
			if eps == 0 {
				continue
			}
			if d := GaussianDelta(mu, eps*(1-1e-9)); d <= delta {
				t.Errorf("%d: GaussianEpsilon(%v, %v) = %v is not the smallest", i, mu, delta, eps)
			}
			back, err := GaussianMu(eps, delta)
			if err != nil || relErr(back, mu) > 1e-6 {
				t.Errorf("%d: GaussianMu(GaussianEpsilon(%v, %v)) = %v, %v", i, mu, delta, back, err)
			}
		}
	}
	// ε = 0: δ(0) = 2Φ(μ/2) − 1, so μ = 2Φ⁻¹((1+δ)/2) = 2√2·erfinv(δ).
	if mu, _ := GaussianMu(0, 0.1); relErr(mu, 2*math.Sqrt2*math.Erfinv(0.1)) > closedFormTol {
		t.Errorf("GaussianMu(0, 0.1) = %v, want %v", mu, 2*math.Sqrt2*math.Erfinv(0.1))
	}
	if eps, err := GaussianEpsilon(math.Inf(1), 1e-5); err != nil || !math.IsInf(eps, 1) {
		t.Errorf("GaussianEpsilon(+Inf) = %v, %v; want +Inf", eps, err)
	}
}

func TestGaussianErrors(t *testing.T) {
	for i, delta := range []float64{0, 1, -1, math.NaN()} {
		if _, err := GaussianEpsilon(1, delta); err == nil {
			t.Errorf("%d: GaussianEpsilon(1, %v): no error", i, delta)
		}
		if _, err := GaussianMu(1, delta); err == nil {
			t.Errorf("%d: GaussianMu(1, %v): no error", i, delta)
		}
	}
	for i, v := range []float64{-1, math.NaN()} {
		if _, err := GaussianEpsilon(v, 1e-5); err == nil {
			t.Errorf("%d: GaussianEpsilon(%v, 1e-5): no error", i, v)
		}
		if _, err := GaussianMu(v, 1e-5); err == nil {
			t.Errorf("%d: GaussianMu(%v, 1e-5): no error", i, v)
		}
	}
	if _, err := GaussianMu(math.Inf(1), 1e-5); err == nil {
		t.Error("GaussianMu(+Inf, 1e-5): no error")
	}
}
