package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/store"
)

// TestRunPrivateJSON runs a 3-round FedAvg campaign under dp record with a
// budget (--set dp=record --set dp_epsilon=3) on the local stack and
// checks what a user sees of its privacy: `run --format json` has privacy
// with epsilon (within the budget), delta and per_site; history prints
// each round's releases and ε; export has the released and epsilon
// columns; verify reports the ε and passes. Bad privacy settings exit 2
// naming the field before anything starts.
func TestRunPrivateJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack")
	}
	fed := smallFederation(t)
	dataDir := filepath.Join(t.TempDir(), "local")
	args := []string{"run", "--local", "--data-dir", dataDir, "--federation", fed, "--method", "fedavg",
		"--rounds", "3", "--seed", "11", "--set", "dp=record", "--set", "dp_epsilon=3", "--campaign", "dp-json", "--format", "json"}
	code, stdout, stderr := runCLI(args...)
	if code != exitOK {
		t.Fatalf("exit %d\nstderr: %s", code, stderr)
	}
	var r struct {
		State   string `json:"state"`
		Privacy *struct {
			Epsilon float64 `json:"epsilon"`
			Delta   float64 `json:"delta"`
			Budget  float64 `json:"budget"`
			PerSite []struct {
				Site         string  `json:"site"`
				Epsilon      float64 `json:"epsilon"`
				EpsilonRound float64 `json:"epsilon_round"`
			} `json:"per_site"`
		} `json:"privacy"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || r.Privacy == nil {
		t.Fatalf("run output: %v\n%s", err, stdout)
	}
	p := r.Privacy
	if r.State != "done" || p.Epsilon > 3 || p.Epsilon < 2.9 || p.Delta != 1e-5 || p.Budget != 3 || len(p.PerSite) != 3 {
		t.Errorf("privacy %+v (state %s), want ε just within 3 at δ 1e-5 for 3 sites", *p, r.State)
	}
	for _, s := range p.PerSite {
		if s.Epsilon > p.Epsilon || !(s.EpsilonRound > 0) {
			t.Errorf("site %+v", s)
		}
	}

	code, hist, stderr := runCLI("history", "dp-json", "--local", "--data-dir", dataDir)
	if code != exitOK || !strings.Contains(hist, "released  site0,site1,site2: model:21 metrics:2 (23 numbers)") ||
		!strings.Contains(hist, "ε (δ 1e-05, budget 3)") {
		t.Errorf("history: exit %d\n%s\n%s", code, hist, stderr)
	}
	out := filepath.Join(t.TempDir(), "dp.parquet")
	if code, _, stderr := runCLI("export", "dp-json", "--out", out, "--local", "--data-dir", dataDir); code != exitOK {
		t.Fatalf("export: exit %d\n%s", code, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := store.DecodeExport(b)
	if err != nil || len(rows) != 9 {
		t.Fatalf("export: %d rows, %v", len(rows), err)
	}
	for _, row := range rows {
		if row.Released != "model:21 metrics:2" || row.ReleasedNumbers != 23 || row.Epsilon == nil || *row.Epsilon > 3 || row.EpsilonRound == nil {
			t.Errorf("export row round %d %s: released %q (%d), ε %v", row.Round, row.Site, row.Released, row.ReleasedNumbers, row.Epsilon)
		}
	}
	code, ver, stderr := runCLI("verify", "dp-json", "--local", "--data-dir", dataDir)
	if code != exitOK || !strings.Contains(ver, "privacy: largest ε of any site") {
		t.Errorf("verify: exit %d\n%s\n%s", code, ver, stderr)
	}

	for i, c := range []struct {
		set  []string
		want string
	}{
		{[]string{"dp=record"}, "set dp_epsilon"},                                                   // 0
		{[]string{"dp=record", "dp_epsilon=3", "local_solver=lbfgs"}, "local_solver"},               // 1
		{[]string{"dp=record", "dp_epsilon=3", "dp_delta=0.5"}, "dp_delta"},                         // 2: above 1/n
		{[]string{"dp_epsilon=3"}, "applies only under dp"},                                         // 3
		{[]string{"dp=everything"}, `hyperparameters.dp = "everything": must be "off" or "record"`}, // 4
	} {
		args := []string{"run", "--local", "--data-dir", dataDir, "--federation", fed, "--method", "fedavg", "--rounds", "2"}
		for _, s := range c.set {
			args = append(args, "--set", s)
		}
		code, _, stderr := runCLI(args...)
		if code != exitInput || !strings.Contains(stderr, c.want) {
			t.Errorf("%d: %v: exit %d, stderr %q; want exit 2 naming %q", i, c.set, code, stderr, c.want)
		}
	}
}
