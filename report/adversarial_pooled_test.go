package report

import (
	"strings"
	"testing"
)

// TestPooledSettings: pTopoFL at τ = 1.8 against its τ = 2 setting, pooled
// over two levels of two seeds each: differences 0.01, 0.03 (level 1) and
// 0.02, 0.00 (level 2), mean 0.015, sample std √(0.0005/3) = 0.01291;
// FedAvg, another method, is not pooled.
func TestPooledSettings(t *testing.T) {
	runs := func(aucs ...float64) []Run {
		var out []Run
		for i, a := range aucs {
			out = append(out, Run{Seed: int64(i + 1), FinalAUC: a})
		}
		return out
	}
	levels := []AttackLevel{
		{Methods: []MethodRuns{{Method: "ptopofl", Runs: runs(0.81, 0.83)}, {Method: "ptopofl (τ = 2)", Runs: runs(0.80, 0.80)}, {Method: "fedavg", Runs: runs(0.7, 0.7)}}},
		{Methods: []MethodRuns{{Method: "ptopofl", Runs: runs(0.72, 0.70)}, {Method: "ptopofl (τ = 2)", Runs: runs(0.70, 0.70)}}},
	}
	got := pooledSettings("ptopofl", levels)
	if len(got) != 1 || !strings.HasPrefix(got[0], "Pooled over every level and seed (4 paired federations), ptopofl − ptopofl (τ = 2) in final AUC: +0.01500 ± 0.01291, paired t-test p = ") {
		t.Errorf("%q", got)
	}
}
