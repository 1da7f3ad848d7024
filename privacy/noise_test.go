package privacy

import (
	"math"
	"strings"
	"testing"
)

func TestNoiseMultiplier(t *testing.T) {
	cases := []struct {
		eps, delta, q float64
		steps         int
		acc           Accountant
		want, tol     float64 // tol absolute
	}{
		// 0, 1: Opacus tests/accountants_test.py, test_get_noise_multiplier_rdp_steps
		// and _epochs (1.3562 and 1.416 at places=4 and 3); the research note
		// reproduced Opacus's bisection exactly as 1.356201171875 and
		// 1.416015625 (epochs = 90 is 2250 steps at q = 0.04).
		{8, 1e-5, 0.04, 2000, RDP, 1.356201171875, 1e-12},
		{8, 1e-5, 0.04, 2250, Auto, 1.416015625, 1e-12},
		// 2–4: the note's "Full-batch DP-GD … For T=30 steps that is z = 20.4,
		// 7.6 and 3.3" for ε = 1, 3, 8 at δ = 1e-5: √30/μ exactly.
		{1, 1e-5, 1, 30, GDP, 20.4, 0.05},
		{3, 1e-5, 1, 30, Auto, 7.6, 0.05},
		{8, 1e-5, 1, 30, GDP, 3.3, 0.05},
	}
	for i, c := range cases {
		z, err := NoiseMultiplier(c.eps, c.delta, c.q, c.steps, c.acc)
		if err != nil || math.Abs(z-c.want) > c.tol {
			t.Errorf("%d: NoiseMultiplier(%v, %v, %v, %d, %q) = %.12g, %v; want %v", i, c.eps, c.delta, c.q, c.steps, c.acc, z, err, c.want)
		}
	}
	// GDP's answer is exact: it spends the target to the bisection's precision.
	z, _ := NoiseMultiplier(3, 1e-5, 1, 30, GDP)
	if s, _ := Epsilon([]Event{{Z: z, Q: 1, Count: 30}}, 1e-5, GDP); relErr(s.Epsilon, 3) > 1e-9 {
		t.Errorf("GDP z = %v spends ε = %v, want 3", z, s.Epsilon)
	}
}

func TestNoiseMultiplierErrors(t *testing.T) {
	cases := []struct {
		eps, delta, q float64
		steps         int
		acc           Accountant
		want          string
	}{
		{0, 1e-5, 0.5, 10, RDP, "target ε = 0"},                      // 0
		{math.Inf(1), 1e-5, 0.5, 10, RDP, "target ε = +Inf"},         // 1
		{math.NaN(), 1e-5, 0.5, 10, RDP, "target ε = NaN"},           // 2
		{1, 1.5, 0.5, 10, RDP, "δ = 1.5"},                            // 3
		{1, 1e-5, 0, 10, RDP, "sampling rate 0"},                     // 4
		{1, 1e-5, 1.5, 10, RDP, "sampling rate 1.5"},                 // 5
		{1, 1e-5, 0.5, 0, RDP, "steps = 0"},                          // 6
		{1, 1e-5, 0.5, 10, GDP, "sampling rate 0.5: the GDP"},        // 7
		{1, 1e-5, 0.5, 10, "prv", `accountant "prv"`},                // 8
		{1e-6, 1e-5, 1, 1000000, RDP, "target ε = 1e-06 is too low"}, // 9: Opacus's MAX_SIGMA
	}
	for i, c := range cases {
		_, err := NoiseMultiplier(c.eps, c.delta, c.q, c.steps, c.acc)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d: error %v, want one naming %q", i, err, c.want)
		}
	}
}

func TestSolveNoise(t *testing.T) {
	// 0–2: the research note's "Poisson DP-SGD with q=0.05 and 600 steps …
	// needs z = 5.08, 2.03 and 1.07 for ε = 1, 3 and 8" (δ = 1e-5, 2
	// decimals).
	// 3: one GDP event: SolveNoise finds NoiseMultiplier's exact √T/μ.
	// 4: a mixed plan, DP-SGD steps plus 30 descriptor releases with a fixed
	// z = 20 on every record; its z must exceed case 1's.
	dpsgd := func(z float64) []Event { return []Event{{Z: z, Q: 0.05, Count: 600}} }
	gdpZ, err := NoiseMultiplier(3, 1e-5, 1, 30, GDP)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		eps  float64
		plan func(z float64) []Event
		acc  Accountant
		want float64
		tol  float64 // absolute; NaN: checked by the minimality test only
	}{
		{1, dpsgd, RDP, 5.08, 0.005},  // 0
		{3, dpsgd, Auto, 2.03, 0.005}, // 1
		{8, dpsgd, RDP, 1.07, 0.005},  // 2
		{3, func(z float64) []Event { return []Event{{Z: z, Q: 1, Count: 30}} }, GDP, gdpZ, 1e-8 * gdpZ},             // 3
		{3, func(z float64) []Event { return append(dpsgd(z), Event{Z: 20, Q: 1, Count: 30}) }, Auto, math.NaN(), 0}, // 4
	}
	for i, c := range cases {
		z, err := SolveNoise(c.eps, 1e-5, c.plan, c.acc)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if math.Abs(z-c.want) > c.tol {
			t.Errorf("%d: z = %.6f, want %v", i, z, c.want)
		}
		at, _ := Epsilon(c.plan(z), 1e-5, c.acc)
		below, _ := Epsilon(c.plan(z*(1-1e-7)), 1e-5, c.acc)
		if at.Epsilon > c.eps || below.Epsilon <= c.eps {
			t.Errorf("%d: z = %v is not the smallest: ε(z) = %v, ε(z − 1e-7 z) = %v, target %v", i, z, at.Epsilon, below.Epsilon, c.eps)
		}
	}
	z1, _ := SolveNoise(3, 1e-5, dpsgd, RDP)
	z4, _ := SolveNoise(3, 1e-5, cases[4].plan, Auto)
	if !(z4 > z1) {
		t.Errorf("the descriptors' releases cost nothing: z = %v, without them %v", z4, z1)
	}
}

func TestSolveNoiseErrors(t *testing.T) {
	cases := []struct {
		eps   float64
		delta float64
		plan  func(z float64) []Event
		acc   Accountant
		want  string
	}{
		{1, 1e-5, func(z float64) []Event { return []Event{{Z: z, Q: 1, Count: 10}, {Z: 0.5, Q: 1, Count: 10}} }, GDP, "exceed the target"}, // 0: fixed events alone spend more
		{1, 1e-5, func(z float64) []Event { return []Event{{Z: 50, Q: 1, Count: 1}} }, GDP, "does not depend on z"},                         // 1
		{1, 1e-5, func(z float64) []Event { return []Event{{Z: z, Q: 0.1, Count: 10}} }, GDP, "event 0: Q = 0.1"},                           // 2
		{1, 1e-5, func(z float64) []Event { return []Event{{Z: z, Q: 1, Count: -1}} }, GDP, "Count = -1"},                                   // 3
		{-1, 1e-5, nil, GDP, "target ε = -1"}, // 4
		{1, 0, nil, GDP, "δ = 0"},             // 5
		{1, 1e-5, nil, "x", `accountant "x"`}, // 6
	}
	for i, c := range cases {
		_, err := SolveNoise(c.eps, c.delta, c.plan, c.acc)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d: error %v, want one naming %q", i, err, c.want)
		}
	}
}
