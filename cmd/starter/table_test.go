package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestTableIsASweep runs a two-method table with one ablation row on the
// local stack: it runs as one sweep, each row's numbers equal those of
// the same campaign run alone with `starter run` (the table only labels
// them), and running the table again re-attaches to the same sweep.
func TestTableIsASweep(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack")
	}
	fed := smallFederation(t)
	dataDir := filepath.Join(t.TempDir(), "local")
	args := []string{"table", "--local", "--data-dir", dataDir, "--federation", fed, "--methods", "fedavg,ptopofl",
		"--variant", "ptopofl_M1:ptopofl:clusters=1", "--rounds", "2", "--seed", "11", "--format", "json"}
	code, stdout, stderr := runCLI(args...)
	if code != exitOK {
		t.Fatalf("table: exit %d\n%s", code, stderr)
	}
	type row struct {
		Label    string  `json:"label"`
		Campaign string  `json:"campaign"`
		State    string  `json:"state"`
		FinalAUC float64 `json:"final_auc"`
		FinalAcc float64 `json:"final_acc"`
	}
	var out struct {
		Sweep   string `json:"sweep"`
		Results []row  `json:"results"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("table JSON: %v\n%s", err, stdout)
	}
	byLabel := map[string]row{}
	for _, r := range out.Results {
		byLabel[r.Label] = r
	}
	if len(out.Results) != 3 || !strings.HasPrefix(out.Sweep, "table-") {
		t.Fatalf("sweep %q rows %+v: want a table-… sweep with 3 rows", out.Sweep, out.Results)
	}
	for i, c := range []struct {
		label string
		run   []string
	}{
		{"fedavg", []string{"--method", "fedavg"}},                             // 0
		{"ptopofl_M1", []string{"--method", "ptopofl", "--set", "clusters=1"}}, // 1
	} {
		r, ok := byLabel[c.label]
		if !ok || r.State != "done" || !strings.HasPrefix(r.Campaign, out.Sweep+"-") {
			t.Errorf("%d: row %s: %+v", i, c.label, r)
			continue
		}
		code, single, stderr := runCLI(append([]string{"run", "--local", "--data-dir", dataDir, "--federation", fed,
			"--rounds", "2", "--seed", "11", "--format", "json"}, c.run...)...)
		if code != exitOK {
			t.Fatalf("%d: run: exit %d\n%s", i, code, stderr)
		}
		var s row
		if err := json.Unmarshal([]byte(single), &s); err != nil {
			t.Fatal(err)
		}
		if s.FinalAUC != r.FinalAUC || s.FinalAcc != r.FinalAcc {
			t.Errorf("%d: row %s AUC %v acc %v; the same campaign alone %v %v", i, c.label, r.FinalAUC, r.FinalAcc, s.FinalAUC, s.FinalAcc)
		}
	}
	code, again, stderr := runCLI(args...)
	if code != exitOK {
		t.Fatalf("second table: exit %d\n%s", code, stderr)
	}
	var out2 struct {
		Sweep string `json:"sweep"`
	}
	json.Unmarshal([]byte(again), &out2)
	if out2.Sweep != out.Sweep {
		t.Errorf("re-running the table started sweep %s, want the same sweep %s", out2.Sweep, out.Sweep)
	}
}
