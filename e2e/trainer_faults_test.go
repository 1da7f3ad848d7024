//go:build faults

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ptopofl/ptopofl/artifact"
)

// trainerSpec runs FedAvg with the sites' own program (model "external").
// A short heartbeat: the training attempt that the killed worker held
// times out and is retried on the restarted worker within seconds.
const trainerSpec = `campaign: own-trainer
method: fedavg
rounds: 3
seed: 11
site_activity_timeout: 2m
train_heartbeat: 6s
round_deadline: 5m
hyperparameters:
  model: external
  trainer: go
`

// hangOnce is site2's trainer: at its round-2 training, the first time,
// it starts a child of its own (in its process group) and waits; every
// other task is the Go example trainer.
const hangOnce = `#!/bin/sh
if grep -q '"site": "site2"' "$PTOPOFL_TASK" && grep -q '"task": "train"' "$PTOPOFL_TASK" &&
   grep -q '"round": 2,' "$PTOPOFL_TASK" && [ ! -e %[1]s/hung ]; then
  touch %[1]s/hung
  sleep 3600 &
  echo $! > %[1]s/child
  echo $$ > %[1]s/leader
  wait
fi
exec %[2]s
`

// TestTrainerWorkerKilled runs a campaign whose sites train with their own
// program, each under a real `worker --role site --trainer go=...`
// process. Mid-training in round 2, site2's worker is killed with -9
// while its program's process tree (a shell and a child it started) runs:
// the kernel kills the program's leader at once (Pdeathsig), the child
// outlives it, and the site's restarted worker, over the same
// --trainer-dir, kills it before it polls (trainer.SweepOrphans); the
// round's training is retried there and the campaign completes with every
// site in every round.
func TestTrainerWorkerKilled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	r := newFaultRig(t, ctx)
	fed := faultsHealthcareFed(t, ctx, r.tmp, 3)
	spec := faultsWriteSpec(t, r.tmp, "own-trainer", trainerSpec)
	state := filepath.Join(r.tmp, "state")
	os.MkdirAll(state, 0o755)
	script := filepath.Join(r.tmp, "hang-once.sh")
	if err := os.WriteFile(script, []byte(fmt.Sprintf(hangOnce, state, bin(t, "gotrainer"))), 0o755); err != nil {
		t.Fatal(err)
	}
	taskDir := filepath.Join(r.tmp, "site2-tasks")
	r.startWorker("server", "--role", "server")
	for i := range 2 {
		site := "site" + strconv.Itoa(i)
		r.startWorker(site, "--role", "site", "--site", site, "--data", fed, "--trainer", "go="+bin(t, "gotrainer"),
			"--secret-dir", filepath.Join(r.tmp, "secrets"))
	}
	site2 := func(log string) *proc {
		return r.startWorker(log, "--role", "site", "--site", "site2", "--data", fed, "--trainer", "go="+script,
			"--trainer-dir", taskDir, "--secret-dir", filepath.Join(r.tmp, "secrets"))
	}
	w := site2("site2")
	r.runDetached(spec, fed)

	waitFor(t, ctx, "site2's program to start its child", func() bool {
		_, err := os.Stat(filepath.Join(state, "child"))
		return err == nil
	})
	leader, child := readPid(t, filepath.Join(state, "leader")), readPid(t, filepath.Join(state, "child"))
	w.kill()
	killed := time.Now()
	waitFor(t, ctx, "the program's leader to die with its worker", func() bool { return gone(leader) })
	if gone(child) {
		t.Fatal("the child died with the worker: the test no longer shows the sweep")
	}
	t.Logf("worker killed; its program's leader gone after %v, its child %d still running", time.Since(killed).Round(time.Millisecond), child)

	restarted := time.Now()
	site2("site2-restarted")
	waitFor(t, ctx, "the restarted worker to kill the orphaned child", func() bool { return gone(child) })
	t.Logf("orphaned child killed %v after the worker restarted", time.Since(restarted).Round(time.Millisecond))

	r.waitDone("own-trainer", 3)
	for n := 1; n <= 3; n++ {
		m, _ := readManifest(t, r.object(artifact.ManifestKey("own-trainer", n)))
		if strings.Join(m.Participants, ",") != "site0,site1,site2" || len(m.Dropped) != 0 {
			t.Errorf("round %d: participants %v, dropped %+v; want every site", n, m.Participants, m.Dropped)
		}
	}
	entries, _ := os.ReadDir(taskDir)
	for _, e := range entries {
		t.Errorf("left in the task root: %s", e.Name())
	}
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return pid
}

// gone reports whether pid has exited (a zombie counts: it runs nothing).
func gone(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return true
	}
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(st)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] == "Z"
}
