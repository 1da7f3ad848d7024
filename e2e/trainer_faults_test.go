//go:build faults

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
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

// serveProxy is a serve-mode trainer (PTOPOFL_SERVE=1): it reads one
// task.json path a line and does each task with the Go example trainer
// (one process for the task, per-task mode: PTOPOFL_SERVE cleared), then
// prints its done line, as the protocol asks. At site2's round-2 training, the first time, it records its pid
// and waits (in a child of its own, in its process group) for the test to
// kill it with -9, mid-task.
const serveProxy = `#!/bin/sh
while read -r path; do
  if grep -q '"site": "site2"' "$path" && grep -q '"task": "train"' "$path" &&
     grep -q '"round": 2,' "$path" && [ ! -e %[1]s/hung ]; then
    touch %[1]s/hung
    echo $$ > %[1]s/serve-pid
    sleep 3600
  fi
  PTOPOFL_SERVE= PTOPOFL_TASK="$path" %[2]s </dev/null
  code=$?
  if [ "$code" -ne 0 ]; then
    printf '{"kind": "exit_%%d", "message": "the Go trainer failed", "status": 75}' "$code" > "$(dirname "$path")/error.json"
  fi
  echo "ptopofl:done $path"
done
`

// TestTrainerServeKilled runs a campaign whose sites train with a
// serve-mode program (worker --trainer-serve), each under a real `worker
// --role site` process. Mid-training in round 2, site2's serve-mode
// process is killed with -9 while it holds the task: the task fails as
// transient, is retried on a fresh process, and the campaign's manifests
// equal, byte for byte, those of an uninterrupted run of the same campaign
// (in the starter's process, `starter run --local --trainer-serve`).
func TestTrainerServeKilled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	r := newFaultRig(t, ctx)
	fed := faultsHealthcareFed(t, ctx, r.tmp, 3)
	spec := faultsWriteSpec(t, r.tmp, "serve-killed", strings.Replace(trainerSpec, "campaign: own-trainer", "campaign: serve-killed", 1))
	state := filepath.Join(r.tmp, "state")
	os.MkdirAll(state, 0o755)
	script := filepath.Join(r.tmp, "serve-proxy.sh")
	if err := os.WriteFile(script, []byte(fmt.Sprintf(serveProxy, state, bin(t, "gotrainer"))), 0o755); err != nil {
		t.Fatal(err)
	}
	// The reference: the same campaign, uninterrupted, its sites served
	// by the Go example trainer in serve mode in the starter's process.
	t0 := time.Now()
	refDir := filepath.Join(t.TempDir(), "ref")
	out, err := exec.CommandContext(ctx, bin(t, "starter"), "run", spec, "--local", "--data-dir", refDir, "--federation", fed,
		"--format", "json", "--trainer-serve", "go="+bin(t, "gotrainer")).Output()
	if err != nil {
		t.Fatalf("reference run: %v\n%s", err, out)
	}
	t.Logf("reference run (uninterrupted, in process): %v", time.Since(t0).Round(time.Millisecond))

	r.startWorker("server", "--role", "server")
	for i := range 3 {
		site := "site" + strconv.Itoa(i)
		prog := bin(t, "gotrainer")
		if site == "site2" {
			prog = script
		}
		r.startWorker(site, "--role", "site", "--site", site, "--data", fed, "--trainer-serve", "go="+prog,
			"--secret-dir", filepath.Join(r.tmp, "secrets"))
	}
	r.runDetached(spec, fed)
	waitFor(t, ctx, "site2's serve-mode program to take its round-2 training", func() bool {
		_, err := os.Stat(filepath.Join(state, "serve-pid"))
		return err == nil
	})
	pid := readPid(t, filepath.Join(state, "serve-pid"))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed site2's serve-mode program (pid %d) mid-task", pid)
	r.waitDone("serve-killed", 3)
	faultsSameManifests(t, r, filepath.Join(refDir, "s3", "ptopofl"), "serve-killed", 3)
	m, _ := readManifest(t, r.object(artifact.ManifestKey("serve-killed", 2)))
	if strings.Join(m.Participants, ",") != "site0,site1,site2" {
		t.Errorf("round 2: participants %v, dropped %+v; want every site", m.Participants, m.Dropped)
	}
	b, _ := os.ReadFile(filepath.Join(r.logs, "site2.log"))
	if !strings.Contains(string(b), "exited (signal killed)") || strings.Count(string(b), "started (pid") < 2 {
		t.Errorf("site2's log does not show its program killed and started afresh:\n%s", tail(string(b), 3000))
	}
}

// dumpTask and dumpServe are trainers that write their environment to a
// file, then do their tasks with the Go example trainer: one process per
// task, and a serve-mode process.
const (
	dumpTask = `#!/bin/sh
env > %[1]s/env-task-$$
exec %[2]s
`
	dumpServe = `#!/bin/sh
env > %[1]s/env-serve-$$
while read -r path; do
  PTOPOFL_SERVE= PTOPOFL_TASK="$path" %[2]s </dev/null || printf '{"kind": "failed", "status": 75}' > "$(dirname "$path")/error.json"
  echo "ptopofl:done $path"
done
`
)

// TestTrainerEnvironmentSealed starts site0's worker as
// docs/how-to/deploy.md starts a site's: in a clean environment holding
// only the connection settings, its S3 identity, the payload keys (here
// the keys themselves, PTOPOFL_PAYLOAD_KEYS) and its secret directory
// (--secret-dir and PTOPOFL_SECRET_DIR), with trainers that write their
// environment to a file, per task and in serve mode, and
// --trainer-env CUDA_VISIBLE_DEVICES. A campaign in each mode completes,
// and no program saw a PTOPOFL_ variable but the protocol's, nor any
// value of the worker's S3 credentials, payload keys or secret directory;
// it saw PATH, HOME (its own directory), LANG and CUDA_VISIBLE_DEVICES.
func TestTrainerEnvironmentSealed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	r := newFaultRig(t, ctx)
	keyFile := filepath.Join(r.data, "payload-keys")
	keys, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	r.env = append(r.env, "PTOPOFL_PAYLOAD_KEY_FILE="+keyFile) // the coordinator's parties
	fed := faultsHealthcareFed(t, ctx, r.tmp, 3)
	state := filepath.Join(r.tmp, "state")
	os.MkdirAll(state, 0o755)
	gotr := bin(t, "gotrainer")
	scripts := map[string]string{}
	for name, body := range map[string]string{"dump-task.sh": dumpTask, "dump-serve.sh": dumpServe} {
		scripts[name] = filepath.Join(r.tmp, name)
		if err := os.WriteFile(scripts[name], []byte(fmt.Sprintf(body, state, gotr)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r.startWorker("server", "--role", "server")
	secretDir := filepath.Join(r.tmp, "site0-secret")
	home := filepath.Join(r.tmp, "site0-home")
	os.MkdirAll(home, 0o700)
	// site0: a clean environment, as deploy.md's `set -a; . ./coordinator.env; . ./site.env`.
	var keyLines []string // the key file's keys, without its comments
	for _, l := range strings.Split(string(keys), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			keyLines = append(keyLines, l)
		}
	}
	secrets := map[string]string{"PTOPOFL_PAYLOAD_KEYS": strings.Join(keyLines, ","), "PTOPOFL_SECRET_DIR": secretDir}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8", "CUDA_VISIBLE_DEVICES=0",
		"PTOPOFL_TEMPORAL=127.0.0.1:" + strconv.Itoa(r.tport), "PTOPOFL_NAMESPACE=default",
		"PTOPOFL_S3=http://127.0.0.1:" + strconv.Itoa(r.s3port), "PTOPOFL_BUCKET=ptopofl"}
	for _, kv := range r.env {
		if name, v, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "PTOPOFL_S3_") {
			secrets[name] = v
		}
	}
	for k, v := range secrets {
		env = append(env, k+"="+v)
	}
	lf, err := os.Create(filepath.Join(r.logs, "site0.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	w := exec.Command(r.worker, "--role", "site", "--site", "site0", "--data", fed, "--secret-dir", secretDir,
		"--trainer", "dump="+scripts["dump-task.sh"], "--trainer-serve", "dump-serve="+scripts["dump-serve.sh"],
		"--trainer-env", "CUDA_VISIBLE_DEVICES")
	w.Env, w.Stdout, w.Stderr = env, lf, lf
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Process.Kill(); w.Wait() })
	for i := 1; i < 3; i++ {
		site := "site" + strconv.Itoa(i)
		r.startWorker(site, "--role", "site", "--site", site, "--data", fed, "--secret-dir", filepath.Join(r.tmp, "secrets"),
			"--trainer", "dump="+gotr, "--trainer-serve", "dump-serve="+gotr)
	}
	for _, tr := range []string{"dump", "dump-serve"} {
		spec := faultsWriteSpec(t, r.tmp, "env-"+tr, fmt.Sprintf("campaign: env-%s\nmethod: fedavg\nrounds: 1\nseed: 3\nhyperparameters:\n  model: external\n  trainer: %s\n", tr, tr))
		r.runDetached(spec, fed)
		r.waitDone("env-"+tr, 1)
	}
	files, _ := filepath.Glob(filepath.Join(state, "env-*"))
	var nTask, nServe int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		serve := strings.Contains(f, "env-serve-")
		if serve {
			nServe++
		} else {
			nTask++
		}
		vars := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			name, v, _ := strings.Cut(line, "=")
			vars[name] = v
			switch name {
			case "PTOPOFL_TASK", "PTOPOFL_SERVE", "PTOPOFL_SERVE_DIR":
			default:
				if strings.HasPrefix(name, "PTOPOFL_") {
					t.Errorf("%s: the program sees %s", filepath.Base(f), name)
				}
			}
			for k, secret := range secrets {
				if strings.Contains(line, secret) || strings.Contains(line, filepath.Base(secretDir)) {
					t.Errorf("%s: the program sees the value of the worker's %s in %s", filepath.Base(f), k, name)
				}
			}
		}
		dir := vars["PTOPOFL_SERVE_DIR"]
		if !serve {
			dir = filepath.Dir(vars["PTOPOFL_TASK"])
		}
		if vars["HOME"] != dir || dir == "" || vars["HOME"] == home || vars["LANG"] != "C.UTF-8" || vars["CUDA_VISIBLE_DEVICES"] != "0" ||
			vars["PATH"] != os.Getenv("PATH") || serve != (vars["PTOPOFL_SERVE"] == "1") {
			t.Errorf("%s: environment %v", filepath.Base(f), vars)
		}
	}
	// site0 runs init (the first site), train and evaluate per task, and
	// one serve-mode process.
	if nTask != 3 || nServe != 1 {
		t.Errorf("%d per-task and %d serve-mode environments written, want 3 and 1", nTask, nServe)
	}
}
