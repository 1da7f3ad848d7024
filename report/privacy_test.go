package report

import (
	"encoding/json"
	"math"
	"testing"
)

// TestPrivacyResults: results.json holds the four lists scripts read, with
// the contract's keys; without DP an ε is null, a utility row has the
// metric it was scored with (final_auc or final_acc) and its mean.
func TestPrivacyResults(t *testing.T) {
	in := privacyFixture(t)
	in.Utility = append(in.Utility, UtilityRow{Method: "fedavg", Scenario: "deep-small", Metric: "final_acc", Epsilon: 3, Values: []float64{0.5, 0.7}, Released: []float64{0.4}})
	b, err := PrivacyResults(in)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string][]map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		list string
		keys []string
	}{
		{"audit", []string{"epsilon", "epsilon_lower_bound"}},                                       // 0
		{"reconstruction", []string{"dp", "epsilon", "relative_error"}},                             // 1
		{"membership", []string{"target", "epsilon", "auc", "tpr_at_fpr_0_001", "tpr_at_fpr_0_01"}}, // 2
		{"utility", []string{"method", "scenario", "epsilon"}},                                      // 3
	} {
		if len(got[c.list]) == 0 {
			t.Fatalf("%d: %s is empty", i, c.list)
		}
		for _, row := range got[c.list] {
			for _, k := range c.keys {
				if _, ok := row[k]; !ok {
					t.Errorf("%d: %s row %v lacks %q", i, c.list, row, k)
				}
			}
		}
	}
	if r := got["reconstruction"][0]; r["dp"] != false || r["epsilon"] != nil || r["relative_error"] != 1e-15 {
		t.Errorf("reconstruction without DP: %v", r)
	}
	if r := got["reconstruction"][1]; r["dp"] != true || r["epsilon"] != 8.0 {
		t.Errorf("reconstruction at ε 8: %v", r)
	}
	// fedavg healthcare without DP: 0.80 0.84, mean 0.82; deep-small at ε 3: 0.5 0.7, mean 0.6.
	if u := got["utility"][0]; u["epsilon"] != nil || math.Abs(u["final_auc"].(float64)-0.82) > 1e-12 {
		t.Errorf("utility without DP: %v", u)
	}
	if u := got["utility"][2]; u["epsilon"] != 3.0 || math.Abs(u["final_acc"].(float64)-0.6) > 1e-12 || u["final_auc"] != nil {
		t.Errorf("deep utility: %v", u)
	}
	if m := got["membership"][2]; m["target"] != "descriptor" || m["canary"] != "outlier" {
		t.Errorf("descriptor membership: %v", m)
	}
}
