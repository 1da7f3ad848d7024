package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/pipeline"
)

// EnvDeployTest, set to 1, runs the deployment tests (make test-deploy).
// They need Debian's postgresql and take minutes, so `go test ./...`
// skips them.
const EnvDeployTest = "PTOPOFL_TEST_DEPLOY"

func deployTest(t *testing.T) {
	t.Helper()
	if os.Getenv(EnvDeployTest) != "1" {
		t.Skip("deployment test: run with " + EnvDeployTest + "=1 (make test-deploy); needs Debian's postgresql")
	}
}

const deployCampaign = `campaign: deploy
method: fedprox
rounds: 15
seed: 7
site_activity_timeout: 4s
train_heartbeat: 2s
round_deadline: 5m
continue_as_new_every: 4
`

// postgresInfo is what `devstack postgres` prints and writes to
// DIR/postgres.json.
type postgresInfo struct {
	URL string `json:"url"`
	PID int    `json:"pid"`
}

// startPostgres runs `devstack postgres` on dir and port and waits until it
// has written postgres.json for this start (a fresh PID).
func startPostgres(t *testing.T, ctx context.Context, logs, name, devstackBin, dir string, port, oldPID int) (*proc, postgresInfo) {
	t.Helper()
	info := filepath.Join(dir, "postgres.json")
	p := start(t, logs, name, nil, devstackBin, "postgres", "--dir", dir, "--port", strconv.Itoa(port))
	var pi postgresInfo
	waitFor(t, ctx, name+" postgres.json", func() bool {
		b, err := os.ReadFile(info)
		return err == nil && json.Unmarshal(b, &pi) == nil && pi.PID != 0 && pi.PID != oldPID
	})
	return p, pi
}

// TestDeployPostgres runs a 15-round campaign with the Temporal server on
// PostgreSQL (Debian's, started by `devstack postgres`), the devstack, the
// server worker and one worker per site as separate processes; kills -9
// the devstack (the Temporal server and S3) after round 4 and the
// PostgreSQL postmaster after round 9, restarts each on the same
// directories and ports, and checks that every round manifest is
// byte-identical to an uninterrupted run of the same spec on the embedded
// SQLite stack.
func TestDeployPostgres(t *testing.T) {
	deployTest(t)
	devstackBin, workerBin, starterBin, gendataBin := bin(t, "devstack"), bin(t, "worker"), bin(t, "starter"), bin(t, "gendata")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	tmp := t.TempDir()
	logs := filepath.Join(tmp, "logs")
	os.MkdirAll(logs, 0o755)
	dumpLogsOnFailure(t, logs)

	fed := filepath.Join(tmp, "fed")
	if out, err := exec.CommandContext(ctx, gendataBin, "healthcare", "--seed", "3", "--sites", "4", "--adversarial", "1", "--out", fed).CombinedOutput(); err != nil {
		t.Fatalf("gendata: %v\n%s", err, out)
	}
	sites := []string{"site0", "site1", "site2", "site3"}
	spec := filepath.Join(tmp, "deploy.yaml")
	os.WriteFile(spec, []byte(deployCampaign), 0o644)

	// The reference: the same spec on the embedded SQLite stack, in process.
	t0 := time.Now()
	refDir := filepath.Join(tmp, "ref")
	out, err := exec.CommandContext(ctx, starterBin, "run", spec, "--local", "--data-dir", refDir, "--federation", fed, "--format", "json").Output()
	if err != nil {
		t.Fatalf("reference run: %v", err)
	}
	var ref struct {
		State      string `json:"state"`
		RoundsDone int    `json:"rounds_done"`
	}
	if err := json.Unmarshal(out, &ref); err != nil || ref.State != pipeline.StateDone || ref.RoundsDone != 15 {
		t.Fatalf("reference run: %s (%v)", out, err)
	}
	t.Logf("reference run (SQLite, in process): %v", time.Since(t0).Round(time.Millisecond))

	// PostgreSQL's directory must be reachable by the postgres account
	// when the test runs as root: t.TempDir() is not (mode 0700).
	pgDir, err := os.MkdirTemp("", "ptopofl-deploy-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(pgDir) })
	pgPort := freeRun(t, 1)
	pgProc, pg := startPostgres(t, ctx, logs, "postgres", devstackBin, pgDir, pgPort, 0)
	t.Logf("postgres ready: pid %d", pg.PID)

	dataDir := filepath.Join(tmp, "stack")
	tport, s3port := freeRun(t, 4), freeRun(t, 1)
	stackArgs := []string{"--data", dataDir, "--temporal-port", strconv.Itoa(tport), "--s3-port", strconv.Itoa(s3port),
		"--persistence", "postgres", "--postgres-url", pg.URL}
	endpoints := filepath.Join(dataDir, "endpoints.json")
	startStack := func(name string) *proc {
		os.Remove(endpoints)
		p := start(t, logs, name, nil, devstackBin, stackArgs...)
		waitFor(t, ctx, name+" endpoints.json", func() bool { _, err := os.Stat(endpoints); return err == nil })
		return p
	}
	stack := startStack("devstack")
	env := readEnvFile(t, filepath.Join(dataDir, "credentials.env"))
	conn := []string{"--temporal", "127.0.0.1:" + strconv.Itoa(tport), "--namespace", "default",
		"--s3", "http://127.0.0.1:" + strconv.Itoa(s3port), "--bucket", "ptopofl"}

	start(t, logs, "server", env, workerBin, append([]string{"--role", "server"}, conn...)...)
	for _, s := range sites {
		start(t, logs, "site-"+s, env, workerBin, append([]string{"--role", "site", "--site", s, "--data", fed}, conn...)...)
	}
	t1 := time.Now()
	cmd := exec.CommandContext(ctx, starterBin, append([]string{"run", spec, "--federation", fed, "--detach", "--format", "json"}, conn...)...)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("starter run --detach: %v\n%s", err, out)
	}
	manifest := func(round int) string {
		return filepath.Join(dataDir, "s3", "ptopofl", artifact.ManifestKey("deploy", round))
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }

	// kill -9 the Temporal server (the devstack process, with S3).
	waitFor(t, ctx, "round 4", func() bool { return exists(manifest(4)) })
	stack.kill()
	t.Logf("killed the devstack (Temporal, S3) after round 4 (%v)", time.Since(t1).Round(time.Millisecond))
	time.Sleep(time.Second)
	stack = startStack("devstack-2")

	// kill -9 the PostgreSQL postmaster; `devstack postgres` then exits.
	waitFor(t, ctx, "round 9", func() bool { return exists(manifest(9)) })
	if err := syscall.Kill(pg.PID, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 postgres %d: %v", pg.PID, err)
	}
	t.Logf("killed postgres (pid %d) after round 9 (%v)", pg.PID, time.Since(t1).Round(time.Millisecond))
	select {
	case <-pgProc.done:
	case <-ctx.Done():
		t.Fatal("devstack postgres did not exit after its server was killed")
	}
	time.Sleep(time.Second)
	_, pg2 := startPostgres(t, ctx, logs, "postgres-2", devstackBin, pgDir, pgPort, pg.PID)
	if pg2.URL != pg.URL {
		t.Fatalf("postgres came back at another URL or with another password")
	}
	t.Logf("postgres restarted: pid %d", pg2.PID)

	waitFor(t, ctx, "round 15", func() bool { return exists(manifest(15)) })
	var st pipeline.CampaignStatus
	waitFor(t, ctx, "campaign done", func() bool {
		cmd := exec.CommandContext(ctx, starterBin, append([]string{"status", "deploy", "--format", "json"}, conn...)...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.Output()
		return err == nil && json.Unmarshal(out, &st) == nil && st.State == pipeline.StateDone
	})
	t.Logf("postgres run done: %v", time.Since(t1).Round(time.Millisecond))
	if st.RoundsDone != 15 {
		t.Fatalf("rounds done = %d, want 15", st.RoundsDone)
	}
	compareManifests(t, "deploy", func(r int) string { return manifest(r) },
		func(r int) string { return filepath.Join(refDir, "s3", "ptopofl", artifact.ManifestKey("deploy", r)) })
	_ = stack
}

// compareManifests checks that rounds 1-15 of campaign have manifests
// byte-identical at got(r) and want(r), naming the differing fields.
func compareManifests(t *testing.T, campaign string, got, want func(int) string) {
	t.Helper()
	m, _ := readManifest(t, got(15))
	if len(modelHashes(m)) == 0 {
		t.Fatalf("%s: the last manifest lists no outputs", campaign)
	}
	for r := 1; r <= 15; r++ {
		_, a := readManifest(t, got(r))
		_, b := readManifest(t, want(r))
		if !bytes.Equal(a, b) {
			t.Errorf("%s round %d: manifest differs from the reference run's in %s", campaign, r, manifestDiff(t, a, b))
		}
	}
	if !t.Failed() {
		t.Logf("%s: all 15 round manifests identical byte for byte to the reference run", campaign)
	}
}

// dumpLogsOnFailure prints the tail of every process log in dir when the
// test fails.
func dumpLogsOnFailure(t *testing.T, dir string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			if len(b) > 3000 {
				b = b[len(b)-3000:]
			}
			t.Logf("--- %s (tail)\n%s", e.Name(), strings.TrimSpace(string(b)))
		}
	})
}
