package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/internal/devstack"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/report"
	"github.com/ptopofl/ptopofl/searchview"
)

// TestSweepSteering steers a running adaptive sweep on the embedded stack
// (random search over a continuous space, two trials at once): `sweep
// status` shows its trials while it runs; `sweep report` reads the record
// it writes as it goes; `sweep pause` holds its running campaigns (their
// own status says paused) and starts no trial until `sweep resume`; the
// sweep's file edited is refused under its running name, naming the
// field; `sweep stop` ends it (state stopped), and its status is then
// read from its result.
func TestSweepSteering(t *testing.T) {
	starterBin := bin(t, "starter")
	fed, err := filepath.Abs("../testdata/paper/healthcare")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	file := filepath.Join(tmp, "steer.yaml")
	body := `sweep: steer
rounds: 6
seeds: [1]
methods: [ptopofl]
federations: [{name: hc, path: ` + fed + `}]
hyperparameters: {validation_fraction: 0.2}
concurrency: 2
search:
  beta: {uniform: [0, 1]}
  clusters: [1, 2, 3]
strategy: random
budget: {campaign_rounds: 600}
seed: 5
`
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(tmp, "stack")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	// Every command is a process of its own: the sweep's serves the
	// embedded stack, the others attach to it.
	const exitOK, exitFailure, exitInput = 0, 1, 2
	cli := func(args ...string) (int, string, string) {
		cmd := exec.CommandContext(ctx, starterBin, append(args, "--local", "--data-dir", dataDir)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			code = -1
		}
		return code, stdout.String(), stderr.String()
	}
	type result struct {
		code   int
		stdout string
		stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, stdout, stderr := cli("sweep", file, "--format", "json")
		done <- result{code, stdout, stderr}
	}()
	// The sweep's process serves the stack: wait for it before another
	// process attaches (two would each start one).
	waitFor(t, ctx, "the sweep's stack", func() bool {
		b, err := os.ReadFile(filepath.Join(dataDir, devstack.EndpointsFile))
		return err == nil && len(b) > 0
	})
	status := func() searchview.Status {
		t.Helper()
		code, stdout, stderr := cli("sweep", "status", "steer", "--format", "json")
		var st searchview.Status
		if code != exitOK || json.Unmarshal([]byte(stdout), &st) != nil {
			return searchview.Status{State: "error: " + stderr}
		}
		return st
	}
	waitStatus := func(what string, ok func(searchview.Status) bool) searchview.Status {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for {
			st := status()
			if ok(st) {
				return st
			}
			select {
			case r := <-done:
				t.Fatalf("waiting for %s: the sweep ended: exit %d\n%s\n%s", what, r.code, r.stderr, r.stdout)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("waiting for %s: last status %+v", what, st)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	// A trial has reported (a record exists) and two campaigns run.
	st := waitStatus("a reported trial and running campaigns", func(st searchview.Status) bool {
		return st.Source == "query" && st.State == pipeline.SweepRunning && len(st.Running) > 0 && st.Incumbent != nil
	})
	if st.Strategy != "random" || st.Budget != 600 || st.RoundsSpent == 0 || st.MaxRounds != 6 || st.PerTrial != 1 {
		t.Errorf("running status %+v", st)
	}
	code, stdout, stderr := cli("sweep", "report", "steer", "--format", "json")
	var rep report.SearchInput
	if code != exitOK || json.Unmarshal([]byte(stdout), &rep) != nil || len(rep.Curve) == 0 {
		t.Errorf("report of the running sweep: exit %d %s%s", code, stdout, stderr)
	}

	// Pause: the running campaigns pause between rounds, no trial starts.
	if code, stdout, stderr := cli("sweep", "pause", "steer", "--reason", "maintenance"); code != exitOK || !strings.Contains(stdout, "pause sweep steer: accepted; state paused") {
		t.Fatalf("sweep pause: exit %d %s%s", code, stdout, stderr)
	}
	st = waitStatus("the pause", func(st searchview.Status) bool {
		return st.State == pipeline.SweepPaused && st.PauseReason == "maintenance"
	})
	paused := 0
	deadline := time.Now().Add(90 * time.Second)
	for _, c := range st.Running {
		for time.Now().Before(deadline) {
			code, stdout, _ := cli("status", "steer/"+c, "--format", "json")
			var cs pipeline.CampaignStatus
			if code == exitOK && json.Unmarshal([]byte(stdout), &cs) == nil && (cs.State == pipeline.StatePaused || cs.State != pipeline.StateRunning) {
				if cs.State == pipeline.StatePaused {
					paused++
				}
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	if paused == 0 {
		t.Errorf("none of the running campaigns %v paused", st.Running)
	}
	held := status()
	time.Sleep(3 * time.Second)
	if after := status(); after.TrialsStarted != held.TrialsStarted || after.State != pipeline.SweepPaused {
		t.Errorf("paused sweep: %d trials, then %d (%s); want none started", held.TrialsStarted, after.TrialsStarted, after.State)
	}

	// The file edited, under the running sweep's name: refused.
	edited := filepath.Join(tmp, "edited.yaml")
	os.WriteFile(edited, []byte(strings.Replace(body, "clusters: [1, 2, 3]", "clusters: [1, 2]", 1)), 0o644)
	if code, _, stderr := cli("sweep", edited); code != exitInput || !strings.Contains(stderr, "sweep steer exists with a different file: search.clusters.choice [1,2,3] → [1,2]") {
		t.Errorf("edited file: exit %d, %s", code, stderr)
	}

	// Resume, then stop.
	if code, stdout, stderr := cli("sweep", "resume", "steer"); code != exitOK || !strings.Contains(stdout, "accepted; state running") {
		t.Fatalf("sweep resume: exit %d %s%s", code, stdout, stderr)
	}
	waitStatus("trials after the resume", func(st searchview.Status) bool {
		return st.State == pipeline.SweepRunning && st.TrialsStarted > held.TrialsStarted
	})
	if code, stdout, stderr := cli("sweep", "stop", "steer", "--reason", "enough", "--format", "json"); code != exitOK || !strings.Contains(stdout, `"accepted":true`) {
		t.Fatalf("sweep stop: exit %d %s%s", code, stdout, stderr)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(3 * time.Minute):
		t.Fatal("the stopped sweep did not end")
	}
	var out campaign.SweepOutput
	if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &out) != nil || out.State != pipeline.SweepStopped || out.RoundsSpent >= 600 {
		t.Fatalf("stopped sweep: exit %d, %+v\n%s", r.code, out, r.stderr)
	}
	if st := status(); st.Source != "result" || st.State != pipeline.SweepStopped || st.StopReason != "enough" || st.TrialsStarted != out.Trials {
		t.Errorf("status after the stop: %+v; output %d trials", st, out.Trials)
	}
	if code, _, stderr := cli("sweep", "pause", "steer"); code != exitFailure || !strings.Contains(stderr, "rejected") {
		t.Errorf("pause of a stopped sweep: exit %d %s", code, stderr)
	}
}
