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
)

const crashSweep = `sweep: crash-search
rounds: 9
seeds: [1]
methods: [ptopofl]
federations: [{name: hc, path: %s}]
hyperparameters: {validation_fraction: 0.2}
concurrency: 2
search:
  - {name: beta, uniform: [0, 1]}
  - {name: clusters, choice: [1, 2, 3]}
strategy: tpe+asha
tpe: {startup_trials: 4}
budget: {campaign_rounds: 60}
seed: 11
`

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

// TestSweepSurvivesKills: an adaptive sweep (tpe+asha, two trials at
// once, promotions resuming paused campaigns) whose process (the embedded
// Temporal and S3, the server and every site worker: `starter sweep
// --local`) is killed with SIGKILL three times at random moments and
// started again each time ends with the same trials, rungs, statuses,
// metrics and incumbent as an uninterrupted run with the same seed, and
// no campaign has a round committed twice.
func TestSweepSurvivesKills(t *testing.T) {
	starterBin := bin(t, "starter")
	fed, err := filepath.Abs("../testdata/paper/healthcare")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	file := filepath.Join(tmp, "sweep.yaml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(crashSweep, fed)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	run := func(dataDir string) (sweepOut, error) {
		cmd := exec.CommandContext(ctx, starterBin, "sweep", file, "--local", "--data-dir", dataDir, "--format", "json")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		b, err := cmd.Output()
		if err != nil {
			return sweepOut{}, fmt.Errorf("%v\n%s", err, stderr.String())
		}
		var out sweepOut
		return out, json.Unmarshal(b, &out)
	}
	t0 := time.Now()
	ref, err := run(filepath.Join(tmp, "ref"))
	if err != nil {
		t.Fatalf("uninterrupted sweep: %v", err)
	}
	t.Logf("uninterrupted sweep: %d trials, %d campaign-rounds in %v", ref.Trials, ref.RoundsSpent, time.Since(t0).Round(time.Millisecond))

	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("kill moments drawn with seed %d", seed)
	dataDir := filepath.Join(tmp, "crash")
	manifests := filepath.Join(dataDir, "s3", "ptopofl", "campaigns")
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
		committed := func() int {
			n, _ := filepath.Glob(filepath.Join(manifests, "*", "*", "manifest.json"))
			return len(n)
		}
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
	got, err := run(dataDir)
	if err != nil {
		t.Fatalf("sweep after the kills: %v", err)
	}
	t.Logf("sweep after three kills finished in %v", time.Since(t1).Round(time.Millisecond))

	if got.State != "done" || got.Strategy != ref.Strategy || got.Trials != ref.Trials || got.RoundsSpent != ref.RoundsSpent {
		t.Errorf("after kills: %s %s, %d trials, %d rounds; uninterrupted: %s %s, %d trials, %d rounds",
			got.State, got.Strategy, got.Trials, got.RoundsSpent, ref.State, ref.Strategy, ref.Trials, ref.RoundsSpent)
	}
	if len(got.Rows) != len(ref.Rows) {
		t.Fatalf("after kills %d campaigns; uninterrupted %d", len(got.Rows), len(ref.Rows))
	}
	for i := range ref.Rows {
		if got.Rows[i] != ref.Rows[i] {
			t.Errorf("campaign %d after kills\n  %+v\nuninterrupted\n  %+v", i, got.Rows[i], ref.Rows[i])
		}
	}
	if got.Best == nil || ref.Best == nil || fmt.Sprint(got.Best) != fmt.Sprint(ref.Best) {
		t.Errorf("incumbent after kills %+v; uninterrupted %+v", got.Best, ref.Best)
	}
	// No round committed twice, no campaign started twice: one manifest
	// per round a campaign trained, under its first attempt's keys.
	for _, r := range got.Rows {
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
