package main

import (
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
)

// privacyJSON runs `starter privacy ARGS --format json` in process and
// decodes its one JSON object.
func privacyJSON(t *testing.T, args ...string) map[string]float64 {
	t.Helper()
	code, stdout, stderr := runCLI(append(append([]string{"privacy"}, args...), "--format", "json")...)
	if code != exitOK {
		t.Fatalf("%v: exit %d\nstderr: %s", args, code, stderr)
	}
	var raw map[string]any
	dec := json.NewDecoder(strings.NewReader(stdout))
	if err := dec.Decode(&raw); err != nil || dec.More() {
		t.Fatalf("%v: not one JSON object (%v):\n%s", args, err, stdout)
	}
	out := map[string]float64{}
	for k, v := range raw {
		switch v := v.(type) {
		case float64:
			out[k] = v
		case string:
			out[k+"="+v] = 1 // "accountant=rdp"
		default:
			t.Fatalf("%v: key %q has %T", args, k, v)
		}
	}
	return out
}

func keys(m map[string]float64) []string { return slices.Sorted(maps.Keys(m)) }

// TestPrivacyEpsilonJSON: the contract of `starter privacy epsilon --format
// json`, on the vectors of package privacy's tests: Opacus's
// tests/accountants_test.py (ε = 7.32911117143 at order 3.9) and the research
// note's cross-silo table (privacy.md §2.4, z = 1, 10 rounds: 17.86 exact,
// 19.05 RDP, 2 decimals).
func TestPrivacyEpsilonJSON(t *testing.T) {
	cases := []struct {
		args     []string
		keys     []string
		eps, tol float64 // tol relative
		order    float64
	}{
		{[]string{"--noise-multiplier", "1.5", "--sampling-rate", "0.04", "--steps", "2250", "--delta", "1e-5"}, // 0
			[]string{"accountant=rdp", "epsilon", "order"}, 7.32911117143, 1e-9, 3.9},
		{[]string{"--noise-multiplier", "1", "--sampling-rate", "1", "--steps", "10", "--delta", "1e-5"}, // 1: gdp by default
			[]string{"accountant=gdp", "epsilon"}, 17.86, 0.005 / 17.86, 0},
		{[]string{"--noise-multiplier=1", "--sampling-rate=1", "--steps=10", "--delta=1e-5", "--accountant=rdp"}, // 2
			[]string{"accountant=rdp", "epsilon", "order"}, 19.05, 0.005 / 19.05, 2.5},
		{[]string{"--accountant", "gdp", "--noise-multiplier", "1", "--sampling-rate", "1", "--steps", "10", "--delta", "1e-5"}, // 3
			[]string{"accountant=gdp", "epsilon"}, 17.86, 0.005 / 17.86, 0},
	}
	for i, c := range cases {
		out := privacyJSON(t, append([]string{"epsilon"}, c.args...)...)
		if got := keys(out); !slices.Equal(got, c.keys) {
			t.Errorf("%d: keys %v, want %v", i, got, c.keys)
		}
		if math.Abs(out["epsilon"]-c.eps) > c.tol*c.eps || out["order"] != c.order {
			t.Errorf("%d: epsilon %.13g at order %v, want %v at %v", i, out["epsilon"], out["order"], c.eps, c.order)
		}
	}
}

// TestPrivacyNoiseJSON: `starter privacy noise --format json`: Opacus's
// get_noise_multiplier test (ε = 8, δ = 1e-5, q = 0.04, 2000 steps → 1.3562;
// its exact bisection output 1.356201171875) and the research note's exact
// GDP z = 7.6 for ε = 3 over 30 full-batch steps.
func TestPrivacyNoiseJSON(t *testing.T) {
	cases := []struct {
		args      []string
		keys      []string
		z, tol    float64 // tol absolute
		targetEps float64
	}{
		{[]string{"--target-epsilon", "8", "--delta", "1e-5", "--sampling-rate", "0.04", "--steps", "2000"}, // 0
			[]string{"accountant=rdp", "epsilon", "noise_multiplier", "order"}, 1.356201171875, 1e-12, 8},
		{[]string{"--target-epsilon", "3", "--delta", "1e-5", "--sampling-rate", "1", "--steps", "30"}, // 1
			[]string{"accountant=gdp", "epsilon", "noise_multiplier"}, 7.6, 0.05, 3},
	}
	for i, c := range cases {
		out := privacyJSON(t, append([]string{"noise"}, c.args...)...)
		if got := keys(out); !slices.Equal(got, c.keys) {
			t.Errorf("%d: keys %v, want %v", i, got, c.keys)
		}
		if math.Abs(out["noise_multiplier"]-c.z) > c.tol {
			t.Errorf("%d: noise_multiplier %.13g, want %v", i, out["noise_multiplier"], c.z)
		}
		// RDP: Opacus stops within 0.01 below the target; GDP is exact.
		if eps := out["epsilon"]; eps > c.targetEps*(1+1e-9) || eps < c.targetEps-0.01 {
			t.Errorf("%d: epsilon %v for a target of %v", i, eps, c.targetEps)
		}
	}
}

func TestPrivacyText(t *testing.T) {
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"epsilon", "--noise-multiplier", "1.5", "--sampling-rate", "0.04", "--steps", "2250", "--delta", "1e-5"}, // 0
			[]string{"ε = 7.3291 at δ = 1e-05", "rdp accountant, optimal Rényi order 3.9"}},
		{[]string{"noise", "--target-epsilon", "3", "--delta", "1e-5", "--sampling-rate", "1", "--steps", "30"}, // 1
			[]string{"noise multiplier 7.61", "gdp accountant, exact"}},
		{[]string{"-h"}, []string{"starter privacy epsilon --noise-multiplier Z"}}, // 2
	}
	for i, c := range cases {
		code, stdout, stderr := runCLI(append([]string{"privacy"}, c.args...)...)
		if code != exitOK {
			t.Fatalf("%d: exit %d: %s", i, code, stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(stdout, w) {
				t.Errorf("%d: output lacks %q:\n%s", i, w, stdout)
			}
		}
	}
}

// TestPrivacyBadInput: every bad value exits 2 before computing anything,
// with a message naming the flag.
func TestPrivacyBadInput(t *testing.T) {
	eps := func(over ...string) []string {
		flags := map[string]string{"--noise-multiplier": "1.5", "--sampling-rate": "0.04", "--steps": "100", "--delta": "1e-5"}
		for i := 0; i < len(over); i += 2 {
			flags[over[i]] = over[i+1]
		}
		args := []string{"privacy", "epsilon"}
		for _, k := range slices.Sorted(maps.Keys(flags)) {
			if flags[k] != "" {
				args = append(args, k, flags[k])
			}
		}
		return args
	}
	noise := func(over ...string) []string {
		args := eps(append([]string{"--noise-multiplier", ""}, over...)...)
		args[1] = "noise"
		if !slices.Contains(over, "--target-epsilon") {
			args = append(args, "--target-epsilon", "3")
		}
		return args
	}
	cases := []struct {
		args []string
		want string // in stderr
	}{
		{eps("--sampling-rate", "1.5"), "epsilon: --sampling-rate 1.5: must be in (0, 1]"},         // 0
		{eps("--sampling-rate", "0"), "--sampling-rate 0: must be in (0, 1]"},                      // 1
		{eps("--sampling-rate", "-0.1"), "--sampling-rate -0.1"},                                   // 2
		{eps("--sampling-rate", "NaN"), "--sampling-rate NaN"},                                     // 3
		{eps("--delta", "0"), "--delta 0: must be in (0, 1)"},                                      // 4
		{eps("--delta", "1"), "--delta 1: must be in (0, 1)"},                                      // 5
		{eps("--delta", "1.5"), "--delta 1.5"},                                                     // 6
		{eps("--noise-multiplier", "0"), "--noise-multiplier 0: must be a positive"},               // 7
		{eps("--noise-multiplier", "-2"), "--noise-multiplier -2"},                                 // 8
		{eps("--noise-multiplier", "+Inf"), "--noise-multiplier +Inf"},                             // 9
		{eps("--steps", "0"), "--steps 0: must be ≥ 1"},                                            // 10
		{eps("--steps", "-3"), "--steps -3"},                                                       // 11
		{eps("--steps", "1.5"), "-steps"},                                                          // 12: not an integer
		{eps("--delta", "abc"), "-delta"},                                                          // 13
		{eps("--noise-multiplier", ""), "--noise-multiplier is required"},                          // 14
		{eps("--sampling-rate", ""), "--sampling-rate is required"},                                // 15
		{eps("--steps", ""), "--steps is required"},                                                // 16
		{eps("--delta", ""), "--delta is required"},                                                // 17
		{eps("--accountant", "gdp"), "--accountant gdp: needs --sampling-rate 1"},                  // 18
		{eps("--accountant", "pld"), `--accountant "pld"`},                                         // 19
		{eps("--format", "xml"), `--format "xml"`},                                                 // 20
		{append(eps(), "extra"), `unexpected argument "extra"`},                                    // 21
		{noise("--target-epsilon", "0"), "noise: --target-epsilon 0: must be a positive"},          // 22
		{noise("--target-epsilon", "-1"), "--target-epsilon -1"},                                   // 23
		{noise("--target-epsilon", ""), "--target-epsilon is required"},                            // 24
		{noise("--sampling-rate", "2"), "noise: --sampling-rate 2"},                                // 25
		{noise("--delta", "0"), "noise: --delta 0"},                                                // 26
		{noise("--steps", "0"), "noise: --steps 0"},                                                // 27
		{noise("--accountant", "gdp"), "--accountant gdp"},                                         // 28
		{[]string{"privacy"}, "epsilon, noise or ledger"},                                          // 29
		{[]string{"privacy", "budget"}, `"budget"`},                                                // 30
		{[]string{"privacy", "ledger", "--data-dir", "/tmp"}, "--local"},                           // 31: a deployed site's ledger is at the site
		{[]string{"privacy", "ledger", "--local", "--data-dir", "/nonexistent/dir"}, "--data-dir"}, // 32
		{[]string{"privacy", "ledger", "--local", "--format", "xml"}, `--format "xml"`},            // 33
	}
	for i, c := range cases {
		code, stdout, stderr := runCLI(c.args...)
		if code != exitInput || !strings.Contains(stderr, c.want) || stdout != "" {
			t.Errorf("%d: %v: exit %d, stderr %q, stdout %q; want exit 2 naming %q", i, c.args, code, stderr, stdout, c.want)
		}
	}
}

// TestPrivacyUnbounded: a noise multiplier too small for ε to be finite is
// a failure (exit 1), not a JSON object with +Inf.
func TestPrivacyUnbounded(t *testing.T) {
	code, stdout, stderr := runCLI("privacy", "epsilon", "--noise-multiplier", "1e-300", "--sampling-rate", "1", "--steps", "10", "--delta", "1e-5", "--format", "json")
	if code != exitFailure || !strings.Contains(stderr, "unbounded") || stdout != "" {
		t.Errorf("exit %d, stderr %q, stdout %q; want exit 1, unbounded", code, stderr, stdout)
	}
}
