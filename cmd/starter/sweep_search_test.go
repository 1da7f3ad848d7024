package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/internal/connect"
	"github.com/ptopofl/ptopofl/internal/stackconn"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/report"
	"github.com/ptopofl/ptopofl/searchview"
)

// TestSearchSweepLocal runs an ASHA sweep over β and the clusters of
// pTopoFL on the authors' healthcare federation on the embedded stack and
// checks the sweep's contract (strategy, rounds_spent, trials, best), the
// results' search columns, that a promoted campaign trained each of its
// rounds once and verifies, `sweep status` of the finished sweep, that
// an edited file under its name is refused naming the fields, that
// re-running the file re-attaches, and that `sweep extend` continues the
// finished sweep within the new budget.
func TestSearchSweepLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded stack")
	}
	fed, err := filepath.Abs("../../testdata/paper/healthcare")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	file := filepath.Join(tmp, "search.yaml")
	if err := os.WriteFile(file, []byte(`sweep: live-search
rounds: 9
seeds: [1]
methods: [ptopofl]
federations: [{name: hc, path: `+fed+`}]
hyperparameters: {validation_fraction: 0.2}
concurrency: 2
search:
  - {name: beta, uniform: [0, 1]}
  - {name: clusters, choice: [1, 2, 3]}
strategy: asha
budget: {campaign_rounds: 30}
seed: 3
`), 0o644); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(tmp, "stack")
	sweep := func(args ...string) campaign.SweepOutput {
		t.Helper()
		code, stdout, stderr := runCLI(append(args, "--local", "--data-dir", dataDir, "--format", "json")...)
		if code != exitOK {
			t.Fatalf("%v: exit %d\nstderr: %s", args, code, stderr)
		}
		var out campaign.SweepOutput
		if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			t.Fatalf("json output: %v\n%s", err, stdout)
		}
		return out
	}
	out := sweep("sweep", file)
	check := func(out campaign.SweepOutput, budget int) {
		t.Helper()
		spent, settings := 0, map[string]bool{}
		for _, r := range out.Rows {
			spent += r.RoundsDone
			settings[r.Setting] = true
			if r.Strategy != "asha" || r.RoundsTrained != r.RoundsDone || r.Trial != len(settings)-1 {
				t.Errorf("row %s: strategy %q, rounds %d/%d trained, trial %d", r.Campaign, r.Strategy, r.RoundsDone, r.RoundsTrained, r.Trial)
			}
			switch r.Status {
			case "complete":
				if r.RoundsDone != 9 || r.PrunedAtRound != 0 {
					t.Errorf("row %s: complete after %d rounds, pruned at %d", r.Campaign, r.RoundsDone, r.PrunedAtRound)
				}
			case "pruned":
				if r.RoundsDone >= 9 || r.PrunedAtRound != r.RoundsDone {
					t.Errorf("row %s: pruned at %d after %d rounds", r.Campaign, r.PrunedAtRound, r.RoundsDone)
				}
			default:
				t.Errorf("row %s: status %q", r.Campaign, r.Status)
			}
		}
		if out.Strategy != "asha" || out.RoundsSpent != spent || spent > budget || out.Trials != len(settings) || out.State != pipeline.SweepDone {
			t.Errorf("strategy %s, %d rounds spent (rows: %d, budget %d), %d trials (rows: %d), state %s",
				out.Strategy, out.RoundsSpent, spent, budget, out.Trials, len(settings), out.State)
		}
		b := out.Best
		if b == nil || len(b.Campaigns) != 1 || b.Setting["beta"] == nil || b.Setting["clusters"] == nil || !(b.ValAUC > 0.5 && b.FinalAUC > 0.5) {
			t.Fatalf("best %+v", b)
		}
	}
	check(out, 30)
	if out.Rows[0].Status != "complete" {
		t.Fatalf("trial 0 (the first promoted to the top) is %s", out.Rows[0].Status)
	}

	// The promoted campaign: rounds 1..9, each once (no attempt-2 keys),
	// and its chain verifies.
	promoted := out.Rows[0].Campaign
	conn := stackconn.Flags{Local: true, DataDir: dataDir, Remote: connect.Flags{Bucket: connect.DefaultBucket}, Format: "json"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := conn.Connect(ctx, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := e.Svc.Store.List(ctx, artifact.CampaignPrefix(promoted))
	e.Close()
	if err != nil {
		t.Fatal(err)
	}
	manifests := 0
	for _, k := range keys {
		if strings.HasSuffix(k, "/manifest.json") {
			manifests++
		}
	}
	if manifests != 9 {
		t.Errorf("campaign %s: %d manifests; want 9, one per round", promoted, manifests)
	}
	if code, stdout, stderr := runCLI("verify", promoted, "--local", "--data-dir", dataDir); code != exitOK || strings.Contains(stdout+stderr, "not checked against Temporal") {
		t.Errorf("verify %s: exit %d: %s%s", promoted, code, stdout, stderr)
	}
	// status finds a search sweep's campaign by its name alone.
	if code, stdout, stderr := runCLI("status", promoted, "--local", "--data-dir", dataDir, "--format", "json"); code != exitOK || !strings.Contains(stdout, `"rounds_done":9`) {
		t.Errorf("status %s: exit %d: %s%s", promoted, code, stdout, stderr)
	}

	// The report: its curve ends at the rounds spent on the best trial;
	// report.html and the figure are written.
	repDir := filepath.Join(tmp, "report")
	code, stdout, stderr := runCLI("sweep", "report", "live-search", "--out", repDir, "--local", "--data-dir", dataDir, "--format", "json")
	if code != exitOK {
		t.Fatalf("sweep report: exit %d: %s", code, stderr)
	}
	var rep report.SearchInput
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("sweep report json: %v\n%s", err, stdout)
	}
	if n := len(rep.Curve); n == 0 || rep.Spent != out.RoundsSpent || rep.Curve[n-1].Spent != out.RoundsSpent ||
		pipeline.SearchTrialLabel(rep.Curve[n-1].Trial) != out.Rows[0].Setting || len(rep.Trials) != out.Trials {
		t.Errorf("report: spent %d, %d trials, curve %+v; sweep: %d rounds, %d trials, best %s", rep.Spent, len(rep.Trials), rep.Curve, out.RoundsSpent, out.Trials, out.Rows[0].Setting)
	}
	for _, f := range []string{"report.html", "report.md", "fig_search_best.png", "fig_search_best.svg"} {
		if _, err := os.Stat(filepath.Join(repDir, f)); err != nil {
			t.Errorf("report: %v", err)
		}
	}
	if code, _, stderr := runCLI("sweep", "report", "no-such-sweep", "--local", "--data-dir", dataDir); code != exitInput || !strings.Contains(stderr, "no search record") {
		t.Errorf("report of a missing sweep: exit %d: %s", code, stderr)
	}

	// sweep status of the finished sweep: read from its result, the
	// incumbent the output's best.
	code, stdout, stderr = runCLI("sweep", "status", "live-search", "--local", "--data-dir", dataDir, "--format", "json")
	var st searchview.Status
	if code != exitOK || json.Unmarshal([]byte(stdout), &st) != nil {
		t.Fatalf("sweep status: exit %d: %s%s", code, stdout, stderr)
	}
	if st.State != pipeline.SweepDone || st.Source != "result" || st.TrialsStarted != out.Trials || st.RoundsSpent != out.RoundsSpent || st.Budget != 30 ||
		st.Incumbent == nil || st.Incumbent.Config["beta"] != out.Best.Setting["beta"] || st.Incumbent.Value != out.Best.ValAUC || len(st.Rungs) == 0 {
		t.Errorf("sweep status %+v; sweep output %d trials, %d rounds, best %+v", st, out.Trials, out.RoundsSpent, out.Best)
	}
	if code, stdout, _ := runCLI("sweep", "status", "live-search", "--local", "--data-dir", dataDir); code != exitOK || !strings.Contains(stdout, "incumbent  trial") {
		t.Errorf("sweep status (text): exit %d\n%s", code, stdout)
	}

	// The same name with an edited file is refused, naming the fields.
	edited := filepath.Join(tmp, "edited.yaml")
	b, _ := os.ReadFile(file)
	os.WriteFile(edited, []byte(strings.ReplaceAll(strings.ReplaceAll(string(b), "strategy: asha", "strategy: random"), "campaign_rounds: 30", "campaign_rounds: 40")), 0o644)
	for _, args := range [][]string{{"sweep", edited}, {"sweep", "extend", edited, "--campaign-rounds", "5"}} {
		code, _, stderr := runCLI(append(args, "--local", "--data-dir", dataDir)...)
		if code != exitInput || !strings.Contains(stderr, "sweep live-search exists with a different file: strategy asha → random, budget.campaign_rounds 30 → 40") {
			t.Errorf("%v: exit %d, %s; want the edit refused naming strategy and budget", args, code, stderr)
		}
	}

	// Re-running the file re-attaches to the finished sweep.
	again := sweep("sweep", file)
	if again.RoundsSpent != out.RoundsSpent || again.Trials != out.Trials || again.Best.Setting["beta"] != out.Best.Setting["beta"] {
		t.Errorf("re-run: %d rounds, %d trials; first run %d, %d", again.RoundsSpent, again.Trials, out.RoundsSpent, out.Trials)
	}

	// Extend: 12 more campaign-rounds; the trials so far keep their place.
	ext := sweep("sweep", "extend", file, "--campaign-rounds", "12")
	check(ext, 42)
	if ext.RoundsSpent <= out.RoundsSpent || ext.Trials < out.Trials {
		t.Errorf("extended: %d rounds, %d trials; before %d, %d", ext.RoundsSpent, ext.Trials, out.RoundsSpent, out.Trials)
	}
	for i, r := range out.Rows {
		if ext.Rows[i].Campaign != r.Campaign || ext.Rows[i].RoundsDone < r.RoundsDone {
			t.Errorf("extended row %d: %s after %d rounds; before %s after %d", i, ext.Rows[i].Campaign, ext.Rows[i].RoundsDone, r.Campaign, r.RoundsDone)
		}
	}
	for i, c := range []struct {
		args []string
		want string
	}{
		0: {[]string{"sweep", "extend", "live-search", "--campaign-rounds", "5", "--local", "--data-dir", dataDir}, "with --local, give the sweep file"},
		1: {[]string{"sweep", "extend", file, "--local", "--data-dir", dataDir}, "give --campaign-rounds N"},
		2: {[]string{"sweep", "extend", file, "--trials", "2", "--local", "--data-dir", dataDir}, "it has no trials cap"},
	} {
		code, _, stderr := runCLI(c.args...)
		if code != exitInput || !strings.Contains(stderr, c.want) {
			t.Errorf("case %d: exit %d, stderr %q; want %d and %q", i, code, stderr, exitInput, c.want)
		}
	}
}
