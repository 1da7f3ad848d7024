package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/searchview"
)

// TestSweepReplay runs a 2 × 2 grid sweep with validation_fraction on the
// embedded stack, then replays strategies against its per-round table:
// the grid strategy with the whole grid's budget picks the grid's own best
// on validation (gap 0), ASHA at a third of the budget spends at most
// that, and a sweep run without validation_fraction is refused (a replay
// never ranks on the test split). Then a search warm-started from the
// grid trains only the configurations the grid did not, and a warm start
// from a grid of another problem (a base hyper-parameter differs), from
// no grid, or from one without validation is refused.
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

	// warm_start: a search over the grid's space and one more β starts
	// only the two configurations the grid did not train, then ends
	// with the space exhausted; the grid's four are its first trials.
	warm := func(name, hyper, from string) (int, string, string) {
		file := filepath.Join(tmp, name+".yaml")
		os.WriteFile(file, []byte("sweep: "+name+"\nrounds: 4\nseeds: [1]\nmethods: [ptopofl]\nfederations: [{name: tiny, path: fed}]\n"+
			"hyperparameters: "+hyper+"\nconcurrency: 2\nsearch: {beta: [0, 1, 0.5], lr: [0.05, 0.1]}\nstrategy: random\nbudget: {trials: 10}\nwarm_start: "+from+"\n"), 0o644)
		return runCLI("sweep", file, "--local", "--data-dir", filepath.Join(tmp, "stack"), "--format", "json")
	}
	code, stdout, stderr := warm("warm", "{n_sub: 20, validation_fraction: 0.2}", "val-grid")
	var out campaign.SweepOutput
	if code != exitOK || json.Unmarshal([]byte(stdout), &out) != nil {
		t.Fatalf("warm-started sweep: exit %d\n%s", code, stderr)
	}
	if out.Trials != 2 || len(out.Rows) != 2 || out.RoundsSpent != 8 || out.Best == nil {
		t.Errorf("warm-started sweep: %d trials, %d rows, %d rounds, best %+v; want 2, 2, 8 and a best", out.Trials, len(out.Rows), out.RoundsSpent, out.Best)
	}
	for _, r := range out.Rows {
		if r.Beta != 0.5 {
			t.Errorf("warm-started sweep trained %s (beta %v): a configuration the grid trained", r.Campaign, r.Beta)
		}
	}
	code, stdout, stderr = runCLI("sweep", "status", "warm", "--local", "--data-dir", filepath.Join(tmp, "stack"), "--format", "json")
	var st searchview.Status
	if code != exitOK || json.Unmarshal([]byte(stdout), &st) != nil {
		t.Fatalf("status: exit %d %s", code, stderr)
	}
	warmTrials := 0
	for _, tr := range st.Trials {
		if tr.Warm {
			warmTrials++
		}
	}
	if st.WarmStart != "val-grid" || warmTrials != 4 || st.TrialsStarted != 2 || st.Ended != "space exhausted" || st.RoundsSpent != 8 {
		t.Errorf("status %+v; want 4 warm trials from val-grid, 2 started, space exhausted after 8 rounds", st)
	}
	for i, c := range []struct{ name, hyper, from, want string }{
		0: {"warm-other", "{n_sub: 30, validation_fraction: 0.2}", "val-grid", "differs from this search's trial beta=0 lr=0.05: n_sub 20 → 30"},
		1: {"warm-none", "{n_sub: 20, validation_fraction: 0.2}", "no-grid", "warm_start: grid sweep no-grid: not found"},
		2: {"warm-test", "{n_sub: 20, validation_fraction: 0.2}", "test-grid", "validation_fraction"},
	} {
		if code, _, stderr := warm(c.name, c.hyper, c.from); code != exitInput || !strings.Contains(stderr, c.want) {
			t.Errorf("case %d: exit %d, %s; want %q", i, code, stderr, c.want)
		}
	}
}
