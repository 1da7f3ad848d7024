package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/campaign"
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

// TestSweepPrivate: a sweep whose grid varies dp_epsilon under dp record
// plans each setting's noise before it starts (the workflow does no float
// arithmetic), and every campaign's last manifest records an ε within its
// own budget, by its own plan.
func TestSweepPrivate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded stack")
	}
	tmp := t.TempDir()
	tinyFederation(t, tmp, "fed", 3)
	file := filepath.Join(tmp, "sweep.yaml")
	os.WriteFile(file, []byte(`sweep: dp-sweep
rounds: 2
seeds: [1]
methods: [ptopofl, fedavg]
federations: [{name: tiny, path: fed}]
hyperparameters: {dp: record, n_sub: 20}
grid: {dp_epsilon: [3, 8]}
concurrency: 2
`), 0o644)
	dataDir := filepath.Join(tmp, "stack")
	code, stdout, stderr := runCLI("sweep", file, "--local", "--data-dir", dataDir, "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d\nstderr: %s", code, stderr)
	}
	var out campaign.SweepOutput
	if err := json.Unmarshal([]byte(stdout), &out); err != nil || out.CampaignsDone != 4 {
		t.Fatalf("output: %v\n%s", err, stdout)
	}
	for _, r := range out.Rows {
		budget := 3.0
		if strings.Contains(r.Setting, "8") {
			budget = 8
		}
		code, hist, stderr := runCLI("history", r.Campaign, "--local", "--data-dir", dataDir, "--format", "json")
		if code != exitOK {
			t.Fatalf("history %s: %s", r.Campaign, stderr)
		}
		var h struct {
			Rounds []campaign.HistoryRow `json:"rounds"`
		}
		if err := json.Unmarshal([]byte(hist), &h); err != nil || len(h.Rounds) != 2 {
			t.Fatalf("history %s: %v", r.Campaign, err)
		}
		p := h.Rounds[1].Privacy
		if p == nil || p.Budget != budget || p.Epsilon() > budget || p.Epsilon() < 0.95*budget {
			t.Errorf("%s (%s): privacy %+v, want ε just within %v", r.Campaign, r.Setting, p, budget)
		}
	}
}

// TestRunDeepPrivate runs deep-small FedAvg and pTopoFL under dp record (ε
// = 8) over the tiny image federation: DP-SGD with Poisson sampling at q =
// 32/48, the descriptor of the penultimate activations noised, top-1
// counts noised; the ledger composes them by RDP (the training releases
// are subsampled), every manifest's ε stays within the budget, and each
// site releases its model, its descriptor (pTopoFL, round 1: the deep
// presets measure descriptors once) and two accuracies.
func TestRunDeepPrivate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack")
	}
	fed := tinyImageFederation(t)
	for i, m := range []string{"fedavg", "ptopofl"} {
		dataDir := filepath.Join(t.TempDir(), "local")
		code, stdout, stderr := runCLI("run", "--local", "--data-dir", dataDir, "--federation", fed, "--method", m,
			"--preset", "deep-small", "--rounds", "3", "--seed", "5", "--set", "dp=record", "--set", "dp_epsilon=8", "--format", "json")
		if code != exitOK {
			t.Fatalf("case %d (%s): exit %d\nstderr: %s", i, m, code, stderr)
		}
		var r struct {
			Campaign string  `json:"campaign"`
			State    string  `json:"state"`
			FinalAcc float64 `json:"final_acc"`
			Privacy  *struct {
				Epsilon float64 `json:"epsilon"`
			} `json:"privacy"`
		}
		if err := json.Unmarshal([]byte(stdout), &r); err != nil || r.Privacy == nil || r.State != "done" {
			t.Fatalf("case %d: %v\n%s", i, err, stdout)
		}
		if r.Privacy.Epsilon > 8 || r.Privacy.Epsilon < 7 {
			t.Errorf("case %d (%s): ε %v, want just within 8", i, m, r.Privacy.Epsilon)
		}
		code, hist, stderr := runCLI("history", r.Campaign, "--local", "--data-dir", dataDir, "--format", "json")
		if code != exitOK {
			t.Fatalf("history: %s", stderr)
		}
		var h struct {
			Rounds []campaign.HistoryRow `json:"rounds"`
		}
		if err := json.Unmarshal([]byte(hist), &h); err != nil || len(h.Rounds) != 3 {
			t.Fatalf("history: %v", err)
		}
		// The CNN at 8×8 inputs has 14,538 parameters; the update's and
		// the held model's accuracies are two releases of one number.
		want := "model:14538 metrics:1 metrics:1"
		if m == "ptopofl" {
			want = "descriptor:48 " + want
		}
		for _, row := range h.Rounds {
			for _, s := range row.Privacy.Sites {
				if s.Accountant != "rdp" || s.Epsilon > 8 {
					t.Errorf("case %d round %d site %s: ε %v by %s, want within 8 by rdp", i, row.Round, s.Site, s.Epsilon, s.Accountant)
				}
			}
			for _, sr := range row.Released {
				text, _ := campaign.ReleasedText(sr.Items)
				if row.Round == 1 && text != want || row.Round > 1 && text != "model:14538 metrics:1 metrics:1" {
					t.Errorf("case %d round %d site %s released %q", i, row.Round, sr.Site, text)
				}
			}
		}
		t.Logf("%s under dp record (ε %.3f): final top-1 %.3f", m, r.Privacy.Epsilon, r.FinalAcc)
	}
}
