package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/campaign"
)

// TestSweepReplay runs a 2 × 2 grid sweep with validation_fraction on the
// embedded stack, then replays strategies against its per-round table:
// the grid strategy with the whole grid's budget picks the grid's own best
// on validation (gap 0), ASHA at a third of the budget spends at most
// that, and a sweep run without validation_fraction is refused (a replay
// never ranks on the test split).
func TestSweepReplay(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded stack")
	}
	tmp := t.TempDir()
	tinyFederation(t, tmp, "fed", 3)
	for name, extra := range map[string]string{"val-grid": "hyperparameters: {n_sub: 20, validation_fraction: 0.2}\n", "test-grid": "hyperparameters: {n_sub: 20}\n"} {
		file := filepath.Join(tmp, name+".yaml")
		os.WriteFile(file, []byte("sweep: "+name+"\nrounds: 4\nseeds: [1]\nmethods: [ptopofl]\nfederations: [{name: tiny, path: fed}]\n"+extra+
			"grid:\n  beta: [0, 1]\n  lr: [0.05, 0.1]\nconcurrency: 2\n"), 0o644)
		code, stdout, stderr := runCLI("sweep", file, "--local", "--data-dir", filepath.Join(tmp, "stack"), "--format", "json")
		if code != 0 {
			t.Fatalf("sweep %s: exit %d\n%s", name, code, stderr)
		}
		// The contract of a sweep's JSON (issue 23): strategy,
		// rounds_spent, trials and best; best only with a validation
		// metric (never selected on test).
		var out struct {
			Strategy    string `json:"strategy"`
			RoundsSpent int    `json:"rounds_spent"`
			Trials      int    `json:"trials"`
			Best        *struct {
				Setting   map[string]any `json:"setting"`
				ValAUC    float64        `json:"val_auc"`
				FinalAUC  float64        `json:"final_auc"`
				Campaigns []string       `json:"campaigns"`
			} `json:"best"`
		}
		if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			t.Fatalf("sweep %s: %v", name, err)
		}
		if out.Strategy != "grid" || out.RoundsSpent != 16 || out.Trials != 4 {
			t.Errorf("sweep %s: strategy %q, rounds_spent %d, trials %d; want grid, 4 × 4, 4", name, out.Strategy, out.RoundsSpent, out.Trials)
		}
		switch {
		case name == "test-grid" && out.Best != nil:
			t.Errorf("sweep without validation: best %+v, want none", out.Best)
		case name == "val-grid" && (out.Best == nil || len(out.Best.Setting) != 2 || len(out.Best.Campaigns) != 1 || !(out.Best.ValAUC > 0)):
			t.Errorf("sweep with validation: best %+v, want a setting of beta and lr from one campaign", out.Best)
		}
	}
	replay := func(args ...string) campaign.ReplayReport {
		t.Helper()
		code, stdout, stderr := runCLI(append([]string{"sweep", "replay", "--from", "val-grid", "--local", "--data-dir", filepath.Join(tmp, "stack"), "--format", "json"}, args...)...)
		if code != 0 {
			t.Fatalf("replay %v: exit %d\n%s", args, code, stderr)
		}
		var out campaign.ReplayReport
		if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			t.Fatalf("replay %v: %v\n%s", args, err, stdout)
		}
		return out
	}
	grid := replay("--strategy", "grid", "--seeds", "1", "--budget-fraction", "1")
	if grid.GridSize != 4 || grid.GridRounds != 16 || len(grid.Seeds) != 1 || grid.Seeds[0].Gap != 0 || grid.Seeds[0].Spent != 16 ||
		grid.Seeds[0].Incumbent.Config.String() != grid.GridBest.Config.String() {
		t.Errorf("grid replay %+v: want the grid's best, 16 rounds spent", grid)
	}
	asha := replay("--strategy", "asha", "--seeds", "3")
	if asha.Budget != 5 || len(asha.Seeds) != 3 {
		t.Fatalf("asha replay %+v: want a budget of ⌊16/3⌋ = 5 and 3 seeds", asha)
	}
	for _, s := range asha.Seeds {
		if s.Spent > asha.Budget || s.Spent < 1 {
			t.Errorf("seed %d spent %d rounds of a budget of %d", s.Seed, s.Spent, asha.Budget)
		}
	}
	code, _, stderr := runCLI("sweep", "replay", "--from", "test-grid", "--local", "--data-dir", filepath.Join(tmp, "stack"))
	if code != exitInput || !strings.Contains(stderr, "validation_fraction") {
		t.Errorf("replay of a grid without validation: exit %d, %s", code, stderr)
	}
}
