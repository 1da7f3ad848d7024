package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/searchview"
)

// crashGrid and crashSweep share a space of 4 × 3 choices (β, then the
// clusters: the grid's names in sorted order, which is the order its
// replay table gives them). The adaptive sweep trains three trials at
// once and continues as new after every second campaign it starts, so
// that each cut falls with trials in flight.
const (
	crashGrid = `sweep: crash-grid
rounds: 9
seeds: [1]
methods: [ptopofl]
federations: [{name: hc, path: %s}]
hyperparameters: {validation_fraction: 0.2}
grid: {beta: [0, 0.3, 0.6, 1], clusters: [1, 2, 3]}
concurrency: 3
`
	crashSweep = `sweep: crash-search
rounds: 9
seeds: [1]
methods: [ptopofl]
federations: [{name: hc, path: %s}]
hyperparameters: {validation_fraction: 0.2}
concurrency: 3
continue_as_new_every: 2
search:
  beta: [0, 0.3, 0.6, 1]
  clusters: [1, 2, 3]
strategy: asha
budget: {campaign_rounds: 48}
seed: 1
`
	crashBudget = 48
)

// sweepRow is the part of a results row the crash test compares.
type sweepRow struct {
	Campaign      string  `json:"campaign"`
	Setting       string  `json:"setting"`
	Beta          float64 `json:"beta"`
	Clusters      int     `json:"clusters"`
	Status        string  `json:"status"`
	Rung          int     `json:"rung"`
	RoundsDone    int     `json:"rounds_done"`
	PrunedAtRound int     `json:"pruned_at_round"`
	FinalAUC      float64 `json:"final_auc"`
	FinalValAUC   float64 `json:"final_val_auc"`
}

type sweepOut struct {
	State       string     `json:"state"`
	Strategy    string     `json:"strategy"`
	RoundsSpent int        `json:"rounds_spent"`
	Trials      int        `json:"trials"`
	Rows        []sweepRow `json:"rows"`
	Best        *struct {
		Setting  map[string]any `json:"setting"`
		ValAUC   float64        `json:"val_auc"`
		FinalAUC float64        `json:"final_auc"`
	} `json:"best"`
}

// TestSweepSurvivesKills: an adaptive sweep (asha, three trials at once,
// promotions resuming paused campaigns, continuing as new after every
// second campaign) whose process (the embedded Temporal and S3, the
// server and every site worker: `starter sweep --local`) is killed with
// SIGKILL three times at random moments and started again each time
// takes exactly the actions of the offline replay (`sweep replay
// --concurrency 3`) over a grid sweep of the same space: the same starts
// and promotions, in the same order, at the same virtual times, across at
// least three continue-as-new; its complete trials score exactly what the
// grid's campaigns of the same configuration score; and no campaign has a
// round committed twice.
func TestSweepSurvivesKills(t *testing.T) {
	starterBin := bin(t, "starter")
	fed, err := filepath.Abs("../testdata/paper/healthcare")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	write := func(name, body string) string {
		file := filepath.Join(tmp, name)
		if err := os.WriteFile(file, []byte(fmt.Sprintf(body, fed)), 0o644); err != nil {
			t.Fatal(err)
		}
		return file
	}
	gridFile, file := write("grid.yaml", crashGrid), write("sweep.yaml", crashSweep)
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	defer cancel()
	dataDir := filepath.Join(tmp, "stack")
	starter := func(out any, args ...string) error {
		cmd := exec.CommandContext(ctx, starterBin, append(args, "--local", "--data-dir", dataDir, "--format", "json")...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		b, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("%v: %v\n%s", args, err, stderr.String())
		}
		return json.Unmarshal(b, out)
	}

	// The reference: the grid, and the strategy replayed over it.
	t0 := time.Now()
	var grid sweepOut
	if err := starter(&grid, "sweep", gridFile); err != nil {
		t.Fatalf("grid sweep: %v", err)
	}
	var rep campaign.ReplayReport
	if err := starter(&rep, "sweep", "replay", "--from", "crash-grid", "--strategy", "asha", "--seeds", "1",
		"--budget", fmt.Sprint(crashBudget), "--concurrency", "3"); err != nil {
		t.Fatalf("replay: %v", err)
	}
	if len(rep.Seeds) != 1 || len(rep.Seeds[0].Events) < 8 {
		t.Fatalf("replay %+v: want one seed of at least 8 actions (4 runs at 2 campaigns each)", rep.Seeds)
	}
	t.Logf("grid (%d campaigns) and replay (%d actions, %d rounds, ended %q) in %v", len(grid.Rows), len(rep.Seeds[0].Events), rep.Seeds[0].Spent, rep.Seeds[0].Ended, time.Since(t0).Round(time.Millisecond))

	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("kill moments drawn with seed %d", seed)
	manifests := filepath.Join(dataDir, "s3", "ptopofl", "campaigns")
	committed := func() int {
		n, _ := filepath.Glob(filepath.Join(manifests, "crash-search-*", "*", "manifest.json"))
		return len(n)
	}
	for k := 1; k <= 3; k++ {
		cmd := exec.CommandContext(ctx, starterBin, "sweep", file, "--local", "--data-dir", dataDir, "--format", "json")
		cmd.Stdout, cmd.Stderr = nil, nil
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		// Each kill falls while the sweep makes progress: a random
		// moment up to 1.5 s after this run has committed a round of its
		// own (a restart first waits out the attempts the kill lost).
		before, t2 := committed(), time.Now()
		for committed() == before {
			select {
			case err := <-done:
				t.Fatalf("kill %d: the sweep ended (%v) before it could be killed; give it more work", k, err)
			case <-ctx.Done():
				t.Fatalf("kill %d: no round committed in %v", k, time.Since(t2))
			case <-time.After(100 * time.Millisecond):
			}
		}
		wait := time.Duration(rng.IntN(1500)) * time.Millisecond
		select {
		case err := <-done:
			t.Fatalf("kill %d: the sweep ended (%v) before its kill; give it more work", k, err)
		case <-time.After(wait):
		}
		syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
		<-done
		t.Logf("kill -9 %d: %v after this run's first commit (%v after its start): %d round manifests so far",
			k, wait, time.Since(t2).Round(time.Millisecond), committed())
	}
	t1 := time.Now()
	var got sweepOut
	if err := starter(&got, "sweep", file); err != nil {
		t.Fatalf("sweep after the kills: %v", err)
	}
	t.Logf("sweep after three kills finished in %v", time.Since(t1).Round(time.Millisecond))

	// Its actions are the replay's, in order.
	var rec pipeline.SearchRecord
	b, err := os.ReadFile(filepath.Join(dataDir, "s3", "ptopofl", artifact.SweepSearchKey("crash-search")))
	if err != nil || json.Unmarshal(b, &rec) != nil {
		t.Fatalf("search.json: %v", err)
	}
	var live, replayed []string
	for _, ev := range rec.Events {
		live = append(live, fmt.Sprintf("%s t%d %d→%d @%d", ev.Kind, ev.Trial, ev.From, ev.To, ev.Start))
	}
	for _, ev := range rep.Seeds[0].Events {
		a := ev.Action
		replayed = append(replayed, fmt.Sprintf("%s t%d %d→%d @%d", a.Kind, a.Trial, a.FromRound, a.ToRound, ev.Start))
	}
	if strings.Join(live, "\n") != strings.Join(replayed, "\n") {
		t.Errorf("the killed sweep's actions\n%s\nthe replay's\n%s", strings.Join(live, "\n"), strings.Join(replayed, "\n"))
	}
	if got.State != "done" || got.Strategy != "asha" || got.Trials != rep.Seeds[0].Trials || got.RoundsSpent != rep.Seeds[0].Spent || rec.Ended != rep.Seeds[0].Ended {
		t.Errorf("after kills: %s %s, %d trials, %d rounds, ended %q; replay: %d trials, %d rounds, ended %q",
			got.State, got.Strategy, got.Trials, got.RoundsSpent, rec.Ended, rep.Seeds[0].Trials, rep.Seeds[0].Spent, rep.Seeds[0].Ended)
	}
	inc := rep.Seeds[0].Incumbent
	if got.Best == nil || fmt.Sprint(got.Best.Setting["beta"]) != fmt.Sprint(inc.Config[0].Value) || fmt.Sprint(got.Best.Setting["clusters"]) != fmt.Sprint(inc.Config[1].Value) {
		t.Errorf("incumbent after kills %+v; replay's %s", got.Best, inc.Config)
	}
	var st searchview.Status
	if err := starter(&st, "sweep", "status", "crash-search"); err != nil || st.ContinuedAsNew < 3 {
		t.Errorf("status: %v; %d continue-as-new, want at least 3", err, st.ContinuedAsNew)
	}
	t.Logf("%d continue-as-new, %d actions", st.ContinuedAsNew, len(rec.Events))

	// A complete trial scores what the grid's campaign of its
	// configuration scores; no round committed twice, no campaign
	// started twice: one manifest per round a campaign trained, under
	// its first attempt's keys.
	for _, r := range got.Rows {
		if r.Status == "complete" {
			for _, g := range grid.Rows {
				if g.Beta == r.Beta && g.Clusters == r.Clusters && (g.FinalValAUC != r.FinalValAUC || g.FinalAUC != r.FinalAUC) {
					t.Errorf("campaign %s: validation %v, test %v; the grid's %s: %v, %v", r.Campaign, r.FinalValAUC, r.FinalAUC, g.Campaign, g.FinalValAUC, g.FinalAUC)
				}
			}
		}
		keys, _ := filepath.Glob(filepath.Join(manifests, r.Campaign, "round-*", "manifest.json"))
		all, _ := filepath.Glob(filepath.Join(manifests, r.Campaign, "*", "manifest.json"))
		if len(keys) != r.RoundsDone || len(all) != r.RoundsDone {
			t.Errorf("campaign %s: %d round manifests (%d in all); want %d", r.Campaign, len(keys), len(all), r.RoundsDone)
		}
		if _, err := os.Stat(filepath.Join(dataDir, "s3", "ptopofl", artifact.ManifestKey(r.Campaign, r.RoundsDone))); err != nil {
			t.Errorf("campaign %s: last manifest: %v", r.Campaign, err)
		}
	}
}
