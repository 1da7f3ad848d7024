package privacy

import (
	"math"
	"strings"
	"testing"
)

// crossSiloTol is the absolute tolerance on values published to 2 decimals.
const crossSiloTol = 0.005

// TestEpsilonCrossSilo: the research note's table "Cross-silo values, q=1,
// exact vs RDP, ε at δ=1e-5 (calc)" (privacy.md §2.4), 2 decimals; taken as
// regression values.
func TestEpsilonCrossSilo(t *testing.T) {
	cases := []struct {
		z        float64
		rounds   int
		gdp, rdp float64
	}{
		{1, 10, 17.86, 19.05},  // 0
		{2, 10, 7.51, 8.08},    // 1
		{5, 10, 2.59, 2.81},    // 2
		{5, 100, 10.00, 10.73}, // 3
		{10, 100, 4.38, 4.73},  // 4
	}
	for i, c := range cases {
		events := []Event{{Z: c.z, Q: 1, Count: c.rounds}}
		for _, want := range []struct {
			acc Accountant
			eps float64
		}{{GDP, c.gdp}, {RDP, c.rdp}, {Auto, c.gdp}} {
			s, err := Epsilon(events, 1e-5, want.acc)
			if err != nil {
				t.Fatalf("%d: %v", i, err)
			}
			if math.Abs(s.Epsilon-want.eps) > crossSiloTol || s.Delta != 1e-5 {
				t.Errorf("%d: %q: ε = %.4f, want %.2f", i, want.acc, s.Epsilon, want.eps)
			}
			if wantAcc := cmpOr(want.acc, GDP); s.Accountant != wantAcc || (s.Order != 0) != (wantAcc == RDP) {
				t.Errorf("%d: %q: spent by %q at order %v", i, want.acc, s.Accountant, s.Order)
			}
		}
	}
}

func cmpOr(a, b Accountant) Accountant {
	if a == Auto {
		return b
	}
	return a
}

// TestEpsilonComposition: GDP composes heterogeneous events exactly into one
// μ; RDP adds per-event RDP, so splitting an event's count changes nothing;
// Count 0 events are ignored.
func TestEpsilonComposition(t *testing.T) {
	mixed := []Event{{Z: 2, Q: 1, Count: 30}, {Z: 8, Q: 1, Count: 4}, {Z: 0.1, Q: 0.5, Count: 0}}
	got, err := Epsilon(mixed, 1e-6, Auto)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := GaussianEpsilon(math.Sqrt(30.0/4+4.0/64), 1e-6)
	if got.Accountant != GDP || relErr(got.Epsilon, want) > closedFormTol {
		t.Errorf("mixed q = 1 ledger: %+v, want GDP ε = %v", got, want)
	}

	whole, _ := Epsilon([]Event{{Z: 1.1, Q: 0.01, Count: 1000}}, 1e-5, Auto)
	split, _ := Epsilon([]Event{{Z: 1.1, Q: 0.01, Count: 400}, {Z: 1.1, Q: 0.01, Count: 600}, {Z: 3, Q: 1, Count: 0}}, 1e-5, Auto)
	if whole.Accountant != RDP || relErr(split.Epsilon, whole.Epsilon) > closedFormTol || split.Order != whole.Order {
		t.Errorf("split ledger %+v differs from %+v", split, whole)
	}

	for i, events := range [][]Event{nil, {{Z: 1, Q: 0.5, Count: 0}}} {
		for _, acc := range []Accountant{Auto, GDP, RDP} {
			s, err := Epsilon(events, 1e-5, acc)
			if err != nil || s.Epsilon != 0 || s.Order != 0 {
				t.Errorf("empty ledger %d, %q: %+v, %v", i, acc, s, err)
			}
		}
	}
}

// TestRDPOverReports: for q = 1, RDP's ε is an upper bound on the exact GDP ε
// (it over-reports), and both decrease as the noise grows; so does RDP's for
// q < 1.
func TestRDPOverReports(t *testing.T) {
	for _, rounds := range []int{1, 10, 300} {
		prevGDP, prevRDP, prevSub := math.Inf(1), math.Inf(1), math.Inf(1)
		for _, z := range []float64{0.3, 0.7, 1, 1.5, 2.5, 4, 8, 20, 60} {
			events := []Event{{Z: z, Q: 1, Count: rounds}}
			gdp, err1 := Epsilon(events, 1e-5, GDP)
			rdp, err2 := Epsilon(events, 1e-5, RDP)
			sub, err3 := Epsilon([]Event{{Z: z, Q: 0.05, Count: rounds}}, 1e-5, RDP)
			if err1 != nil || err2 != nil || err3 != nil {
				t.Fatal(err1, err2, err3)
			}
			if rdp.Epsilon < gdp.Epsilon {
				t.Errorf("z = %v, T = %d: RDP ε %v < GDP ε %v", z, rounds, rdp.Epsilon, gdp.Epsilon)
			}
			if !(gdp.Epsilon < prevGDP && rdp.Epsilon < prevRDP && sub.Epsilon < prevSub) {
				t.Errorf("z = %v, T = %d: ε does not decrease (%v %v %v after %v %v %v)", z, rounds,
					gdp.Epsilon, rdp.Epsilon, sub.Epsilon, prevGDP, prevRDP, prevSub)
			}
			if sub.Epsilon > rdp.Epsilon {
				t.Errorf("z = %v, T = %d: sampling at 5%% spends more than every record (%v > %v)", z, rounds, sub.Epsilon, rdp.Epsilon)
			}
			prevGDP, prevRDP, prevSub = gdp.Epsilon, rdp.Epsilon, sub.Epsilon
		}
	}
}

// TestEpsilonExtremes: inputs at the edges of float64 give a bound, not an
// error or a hang: a sampling rate so small that log A_α rounds below 0
// spends nothing, a noise multiplier so small that 1/z² overflows spends
// +Inf, and a huge one next to nothing.
func TestEpsilonExtremes(t *testing.T) {
	cases := []struct {
		e    Event
		want func(eps float64) bool
	}{
		{Event{Z: 1, Q: 1e-9, Count: 100}, func(eps float64) bool { return eps == 0 }},                                   // 0
		{Event{Z: 1, Q: 1e-300, Count: 100}, func(eps float64) bool { return eps == 0 }},                                 // 1
		{Event{Z: 1e-200, Q: 0.5, Count: 100}, func(eps float64) bool { return math.IsInf(eps, 1) }},                     // 2
		{Event{Z: 1e-160, Q: 0.3, Count: 100}, func(eps float64) bool { return math.IsInf(eps, 1) }},                     // 3
		{Event{Z: 1e-200, Q: 1, Count: 100}, func(eps float64) bool { return math.IsInf(eps, 1) }},                       // 4
		{Event{Z: 1e5, Q: 0.5, Count: 100}, func(eps float64) bool { return eps > 0 && eps < 0.01 }},                     // 5
		{Event{Z: 0.01, Q: 0.999999999, Count: 100}, func(eps float64) bool { return eps > 1e5 && !math.IsInf(eps, 1) }}, // 6
	}
	for i, c := range cases {
		for _, acc := range []Accountant{RDP, Auto} {
			s, err := Epsilon([]Event{c.e}, 1e-5, acc)
			if err != nil || !c.want(s.Epsilon) {
				t.Errorf("%d: %q: %+v spends %v, %v", i, acc, c.e, s.Epsilon, err)
			}
		}
	}
}

func TestEpsilonErrors(t *testing.T) {
	ok := Event{Z: 1, Q: 1, Count: 1}
	cases := []struct {
		events []Event
		delta  float64
		acc    Accountant
		want   string // in the error
	}{
		{[]Event{ok, {Z: 0, Q: 1, Count: 1}}, 1e-5, Auto, "event 1: Z = 0"},               // 0
		{[]Event{{Z: -2, Q: 1, Count: 1}}, 1e-5, Auto, "event 0: Z = -2"},                 // 1
		{[]Event{{Z: math.NaN(), Q: 1, Count: 1}}, 1e-5, Auto, "Z = NaN"},                 // 2
		{[]Event{{Z: math.Inf(1), Q: 1, Count: 1}}, 1e-5, Auto, "Z = +Inf"},               // 3
		{[]Event{{Z: 1, Q: 0, Count: 1}}, 1e-5, Auto, "event 0: Q = 0"},                   // 4
		{[]Event{{Z: 1, Q: 1.5, Count: 1}}, 1e-5, Auto, "Q = 1.5"},                        // 5
		{[]Event{{Z: 1, Q: 1, Count: -3}}, 1e-5, Auto, "Count = -3"},                      // 6
		{[]Event{ok}, 0, Auto, "δ = 0"},                                                   // 7
		{[]Event{ok}, 1, Auto, "δ = 1"},                                                   // 8
		{[]Event{ok}, math.NaN(), Auto, "δ = NaN"},                                        // 9
		{[]Event{ok}, 1e-5, "pld", `accountant "pld"`},                                    // 10
		{[]Event{ok, {Z: 1, Q: 0.04, Count: 5}}, 1e-5, GDP, "event 1: Q = 0.04: the GDP"}, // 11
	}
	for i, c := range cases {
		_, err := Epsilon(c.events, c.delta, c.acc)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d: error %v, want one naming %q", i, err, c.want)
		}
	}
}

func TestDefaultAccountant(t *testing.T) {
	cases := []struct {
		events []Event
		want   Accountant
	}{
		{nil, GDP},                                                         // 0
		{[]Event{{Z: 1, Q: 1, Count: 3}}, GDP},                             // 1
		{[]Event{{Z: 1, Q: 0.5, Count: 3}}, RDP},                           // 2
		{[]Event{{Z: 1, Q: 0.5, Count: 0}}, GDP},                           // 3: ignored
		{[]Event{{Z: 1, Q: 1, Count: 3}, {Z: 1, Q: 0.999, Count: 1}}, RDP}, // 4
	}
	for i, c := range cases {
		if got := DefaultAccountant(c.events); got != c.want {
			t.Errorf("%d: %q, want %q", i, got, c.want)
		}
	}
}
