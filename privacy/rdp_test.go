package privacy

import (
	"math"
	"slices"
	"testing"
)

const (
	// rdpTol is dp_accounting's rtol for its sampled-Gaussian RDP values.
	rdpTol = 1e-4
	// seriesTol bounds the RDP series against numerical integration. The
	// worst case, 9e-9, is the tiny RDP (1.3e-8) of case 7, where both lose
	// relative precision: log A_α ≈ 6e-9 is a sum of terms near 1 that the
	// series truncates at e^-30 ≈ 1e-13 (Opacus's cut-off).
	seriesTol = 1e-7
)

// opacusOrders is Opacus's RDPAccountant.DEFAULT_ALPHAS.
func opacusOrders() []float64 { return RDPOrders()[:151] }

func TestRDPOrders(t *testing.T) {
	o := RDPOrders()
	if len(o) != 99+52+4 || o[0] != 1.1 || o[28] != 3.9 || o[98] != 10.9 || o[99] != 12 || o[150] != 63 || o[151] != 128 || o[154] != 1024 {
		t.Errorf("RDPOrders() = %v", o)
	}
	if !slices.IsSorted(o) {
		t.Error("RDPOrders() is not sorted")
	}
	o[0] = 7
	if RDPOrders()[0] != 1.1 {
		t.Error("RDPOrders() shares its slice")
	}
}

func TestSampledGaussianRDP(t *testing.T) {
	// q = 0.01, z = 2.5, 50 steps: dp_accounting's
	// rdp_privacy_accountant_test.py, test_compute_rdp_poisson_sampled_gaussian,
	// rtol 1e-4. Its values at the fractional orders depend on the series:
	// versions up to 0.4.3 used Opacus's signed series (6.5007e-04 at α = 1.5,
	// what this package computes), 0.4.4 switched to |C(α, i)| and to
	// 6.70579741e-04 (an upper bound; abs below). At α = 2.5 the two agree to
	// rtol 1e-4; integer orders have no series.
	orders := []float64{1.5, 2.5, 5, 50, 100, math.Inf(1)}
	signed := []float64{6.5007e-04, 1.0854e-03, 2.1808e-03, 2.3846e-02, 1.6742e+02, math.Inf(1)}    // dp_accounting ≤ 0.4.3
	abs := []float64{6.70579741e-04, 1.08548710e-03, 2.18075656e-03, 2.38460375e-02, 1.67416308e02} // dp_accounting 0.4.4
	got, err := SampledGaussianRDP(0.01, 2.5, 50, orders)
	if err != nil {
		t.Fatal(err)
	}
	for i := range orders {
		if relErr(got[i], signed[i]) > rdpTol {
			t.Errorf("%d: RDP at α = %v: %.9g, want %.9g", i, orders[i], got[i], signed[i])
		}
	}
	for i, want := range abs {
		a := orders[i]
		r := got[i]
		if a != math.Trunc(a) {
			logA, _ := logAFrac(0.01, 2.5, a, false)
			r = 50 * logA / (a - 1)
		}
		if relErr(r, want) > rdpTol {
			t.Errorf("%d: |C| series at α = %v: %.9g, want %.9g", i, a, r, want)
		}
	}

	// Edge cases by the definition (Opacus's _compute_rdp).
	edges := []struct {
		q, z  float64
		steps int
		alpha float64
		want  float64
	}{
		{1, 2, 3, 4.5, 3 * 4.5 / 8},                     // 0: Gaussian, α/(2z²) per step
		{0, 2, 3, 4.5, 0},                               // 1: nothing sampled
		{0, 0, 3, 4.5, 0},                               // 2
		{0.5, 0, 3, 4.5, math.Inf(1)},                   // 3: no noise
		{0.5, 1, 0, 4.5, 0},                             // 4: no steps
		{1, 1e-200, 3, 2, math.Inf(1)},                  // 5: overflows to +Inf
		{0.5, 1, 2, 2, 2 * math.Log(1+0.25*(math.E-1))}, // 6: A₂ = 1 + q²(e^{1/z²} − 1)
	}
	for i, c := range edges {
		got, err := SampledGaussianRDP(c.q, c.z, c.steps, []float64{c.alpha})
		if err != nil || relErr(got[0], c.want) > closedFormTol {
			t.Errorf("edge %d: SampledGaussianRDP(%v, %v, %d, %v) = %v, %v; want %v", i, c.q, c.z, c.steps, c.alpha, got, err, c.want)
		}
	}
}

// logAIntegral integrates A_α = E_{x∼N(0, z²)}[(1 − q + q e^{(2x−1)/(2z²)})^α]
// (Mironov, Talwar, Zhang 2019, §3.3) with Simpson's rule, independently of
// the series. Where A_α is moderate it integrates A_α − 1 =
// E[expm1(α log1p(q expm1(u)))], which keeps the precision of a tiny log A_α;
// where that would overflow, it integrates in log space.
func logAIntegral(q, z, alpha float64) float64 {
	const n = 400000
	lo, hi := -30*z, max(alpha, 1)+30*z
	h := (hi - lo) / n
	pdf := func(x float64) float64 { return math.Exp(-x*x/(2*z*z)) / (z * math.Sqrt(2*math.Pi)) }
	u := func(x float64) float64 { return (2*x - 1) / (2 * z * z) }
	simpson := func(f func(x float64) float64) float64 {
		sum := f(lo) + f(hi)
		for k := 1; k < n; k++ {
			w := 2.0
			if k%2 == 1 {
				w = 4
			}
			sum += w * f(lo+float64(k)*h)
		}
		return sum * h / 3
	}
	logF := func(x float64) float64 {
		return -x*x/(2*z*z) - math.Log(z*math.Sqrt(2*math.Pi)) + alpha*logAdd(math.Log1p(-q), math.Log(q)+u(x))
	}
	peak := math.Inf(-1)
	for k := 0; k <= n; k++ {
		peak = max(peak, logF(lo+float64(k)*h))
	}
	if peak < 600 {
		return math.Log1p(simpson(func(x float64) float64 {
			if l := alpha * math.Log1p(q*math.Expm1(u(x))); l < 700 {
				return pdf(x) * math.Expm1(l)
			}
			return math.Exp(logF(x)) // pdf(x) is negligible here

		}))
	}
	return peak + math.Log(simpson(func(x float64) float64 { return math.Exp(logF(x) - peak) }))
}

func TestSampledGaussianRDPIntegration(t *testing.T) {
	cases := []struct{ q, z, alpha float64 }{
		{0.01, 2.5, 1.5},  // 0: dp_accounting's vector
		{0.01, 2.5, 2.5},  // 1
		{0.01, 2.5, 50},   // 2
		{0.04, 1.5, 3.9},  // 3: Opacus's optimal order
		{0.5, 1, 1.1},     // 4
		{0.2, 0.5, 7.5},   // 5
		{0.9, 0.8, 12},    // 6
		{1e-4, 1, 1.5},    // 7
		{0.04, 1.5, 1024}, // 8
		{0.3, 3, 17.3},    // 9
	}
	for i, c := range cases {
		want := logAIntegral(c.q, c.z, c.alpha) / (c.alpha - 1)
		got, err := SampledGaussianRDP(c.q, c.z, 1, []float64{c.alpha})
		if err != nil {
			t.Fatal(err)
		}
		if relErr(got[0], want) > seriesTol {
			t.Errorf("%d: RDP(q = %v, z = %v, α = %v) = %.12g, integral %.12g", i, c.q, c.z, c.alpha, got[0], want)
		}
		if c.alpha != math.Trunc(c.alpha) {
			abs, _ := logAFrac(c.q, c.z, c.alpha, false)
			if abs/(c.alpha-1) < want*(1-1e-8) {
				t.Errorf("%d: the |C| series %.12g is below the integral %.12g", i, abs/(c.alpha-1), want)
			}
		}
	}
}

func TestRDPToEpsilon(t *testing.T) {
	// 0: dp_accounting test_compute_epsilon_delta_pure_dp: constant RDP 1.1
	// on orders 2…32, δ = 1e-5 → ε = 1.32783806176 (assertAlmostEqual, 7
	// places), α = 32.
	var orders, rdp []float64
	for a := 2; a <= 32; a++ {
		orders = append(orders, float64(a))
		rdp = append(rdp, 1.1)
	}
	eps, order, err := RDPToEpsilon(orders, rdp, 1e-5)
	if err != nil || relErr(eps, 1.32783806176) > closedFormTol || order != 32 {
		t.Errorf("0: pure DP: ε = %.12g at α = %v, %v; want 1.32783806176 at 32", eps, order, err)
	}

	// 1: dp_accounting test_compute_epsilon_delta_gaussian: q = 1, z =
	// 4.530877117 "chosen to obtain exactly (1, 1e-6)-DP" on orders 1.001…
	// 99.999 by 0.001 (dp_accounting starts at 1.0, where this package's
	// RDP is undefined and the conversion unused) → ε = 1 to 7 places.
	orders = orders[:0]
	for i := 1001; i < 100000; i++ {
		orders = append(orders, 0.001*float64(i))
	}
	rdp, err = SampledGaussianRDP(1, 4.530877117, 1, orders)
	if err != nil {
		t.Fatal(err)
	}
	if eps, _, err := RDPToEpsilon(orders, rdp, 1e-6); err != nil || math.Abs(eps-1) > 5e-8 {
		t.Errorf("1: Gaussian on dense orders: ε = %.10g, %v; want 1", eps, err)
	}

	// 2: the KL rule: RDP so small that δ² + expm1(−rdp) > 0 gives ε = 0.
	if eps, _, _ := RDPToEpsilon([]float64{2, 3}, []float64{1e-12, 1e-12}, 1e-5); eps != 0 {
		t.Errorf("2: tiny RDP: ε = %v, want 0", eps)
	}
	// 3: orders at or below 1.01 are not used; +Inf is pure DP.
	if eps, order, _ := RDPToEpsilon([]float64{1, 1.005, math.Inf(1)}, []float64{0.5, 0.5, 2}, 1e-5); eps != 2 || !math.IsInf(order, 1) {
		t.Errorf("3: ε = %v at α = %v, want 2 at +Inf", eps, order)
	}
	// 4: +Inf RDP everywhere: ε = +Inf.
	if eps, _, _ := RDPToEpsilon([]float64{2}, []float64{math.Inf(1)}, 1e-5); !math.IsInf(eps, 1) {
		t.Errorf("4: ε = %v, want +Inf", eps)
	}

	bad := []struct {
		orders, rdp []float64
		delta       float64
	}{
		{[]float64{2}, []float64{1}, 0},             // 0
		{[]float64{2}, []float64{1}, 1},             // 1
		{[]float64{0.5}, []float64{1}, 1e-5},        // 2
		{[]float64{2}, []float64{-1}, 1e-5},         // 3
		{[]float64{2}, []float64{math.NaN()}, 1e-5}, // 4
		{nil, nil, 1e-5},                            // 5
	}
	for i, c := range bad {
		if _, _, err := RDPToEpsilon(c.orders, c.rdp, c.delta); err == nil {
			t.Errorf("bad %d: no error", i)
		}
	}
}

// TestOpacusEpsilon: Opacus's tests/accountants_test.py (test_rdp_accountant):
// z = 1.5, q = 0.04, 2250 steps, δ = 1e-5 → ε = 7.32911117143, reproduced by
// the research note's port as 7.329111171438516 at α = 3.9. The orders
// RDPOrders adds to Opacus's grid do not change it.
func TestOpacusEpsilon(t *testing.T) {
	for i, orders := range [][]float64{opacusOrders(), RDPOrders()} {
		rdp, err := SampledGaussianRDP(0.04, 1.5, 2250, orders)
		if err != nil {
			t.Fatal(err)
		}
		eps, order, err := RDPToEpsilon(orders, rdp, 1e-5)
		if err != nil || relErr(eps, 7.32911117143) > closedFormTol || order != 3.9 {
			t.Errorf("%d: ε = %.13g at α = %v, %v; want 7.32911117143 at 3.9", i, eps, order, err)
		}
	}
}

func TestSampledGaussianRDPErrors(t *testing.T) {
	cases := []struct {
		q, z   float64
		steps  int
		orders []float64
	}{
		{-0.1, 1, 1, []float64{2}},         // 0
		{1.1, 1, 1, []float64{2}},          // 1
		{math.NaN(), 1, 1, []float64{2}},   // 2
		{0.5, -1, 1, []float64{2}},         // 3
		{0.5, math.NaN(), 1, []float64{2}}, // 4
		{0.5, 1, -1, []float64{2}},         // 5
		{0.5, 1, 1, []float64{1}},          // 6
		{0.5, 1, 1, []float64{math.NaN()}}, // 7
		{0.5, 1, 1, []float64{1e7}},        // 8
	}
	for i, c := range cases {
		if _, err := SampledGaussianRDP(c.q, c.z, c.steps, c.orders); err == nil {
			t.Errorf("%d: no error", i)
		}
	}
}

func BenchmarkOpacusEpsilon(b *testing.B) {
	events := []Event{{Z: 1.5, Q: 0.04, Count: 2250}}
	for b.Loop() {
		if _, err := Epsilon(events, 1e-5, RDP); err != nil {
			b.Fatal(err)
		}
	}
}
