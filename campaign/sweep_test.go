package campaign

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGridSettings(t *testing.T) {
	s, err := GridSettings(map[string][]any{"beta": {0, 0.3}, "clusters": {1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, x := range s {
		labels = append(labels, x.Label)
	}
	if got := strings.Join(labels, " "); got != "beta0_clusters1 beta0_clusters2 beta0.3_clusters1 beta0.3_clusters2" {
		t.Errorf("labels %s", got)
	}
}

// TestSweepQuotedNumbers: a number quoted in a sweep file ("0.3", which
// YAML reads as text) is the number it spells, in the grid and in the base
// hyper-parameters alike, and labels its grid point as the bare number
// would; text that is not a number is refused for a numeric parameter,
// naming it. (Quoted numbers were once read as 0.)
func TestSweepQuotedNumbers(t *testing.T) {
	dir := t.TempDir()
	for _, site := range []string{"a", "b"} {
		for _, split := range []string{"train", "test"} {
			if err := os.WriteFile(filepath.Join(dir, site+"_"+split+".csv"), []byte("x1,x2,y\n1,2,0\n3,1,1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	const head = "sweep: quoted\nrounds: 2\nseeds: [1]\nmethods: [ptopofl]\nfederations: [{name: f, path: .}]\n"
	for i, tc := range []struct {
		body  string
		beta  float64 // of the first campaign
		label string  // of the first setting
		err   string  // the error's end; "" for none
	}{
		{`grid: {beta: ["0.3"]}`, 0.3, "beta0.3", ""},       // 0
		{`grid: {beta: [0.3]}`, 0.3, "beta0.3", ""},         // 1: the same sweep, unquoted
		{`hyperparameters: {beta: "0.3"}`, 0.3, "base", ""}, // 2: no grid
		{`grid: {beta: ["0.3", "0.5"], clusters: ["2"]}`, 0.3, "beta0.3_clusters2", ""},
		{`grid: {beta: ["abc"]}`, 0, "", `sweep file: grid: hyperparameter beta = "abc": want a number`}, // 4
		{`hyperparameters: {beta: "abc"}`, 0, "", `sweep file: hyperparameters: hyperparameter beta = "abc": want a number`},
		{`hyperparameters: {beta: ""}`, 0, "", `sweep file: hyperparameters: hyperparameter beta = "": want a number`}, // 6
	} {
		file := filepath.Join(dir, fmt.Sprintf("sweep%d.yaml", i))
		if err := os.WriteFile(file, []byte(head+tc.body+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		sf, err := ReadSweepFile(file)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		plan, err := BuildSweepPlan(sf, file, "b", false)
		if tc.err != "" {
			if err == nil || !errors.Is(err, ErrInput) || !strings.HasSuffix(err.Error(), tc.err) {
				t.Errorf("%d: error %v, want an input error ending %q", i, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%d: %v", i, err)
			continue
		}
		campaigns, err := plan.Spec.Campaigns()
		if err != nil || len(campaigns) == 0 {
			t.Fatalf("%d: campaigns %v, %v", i, campaigns, err)
		}
		if got, label := campaigns[0].Spec.Hyperparameters.Beta, campaigns[0].Setting; got != tc.beta || label != tc.label {
			t.Errorf("%d: beta %v, label %q; want %v, %q", i, got, label, tc.beta, tc.label)
		}
	}
}
