package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/internal/devstack"
	"github.com/ptopofl/ptopofl/pipeline"
)

// binDir holds the binaries TestMain builds; empty when the build failed,
// with buildErr saying why.
var (
	binDir   string
	buildErr error
)

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "ptopofl-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if !testing.Short() {
		// go build, not go run: go run does not forward signals, and the test
		// must kill exactly the process it means to.
		cmd := exec.Command("go", "build", "-o", dir+string(os.PathSeparator),
			"../cmd/devstack", "../cmd/worker", "../cmd/starter", "../cmd/gendata", "../examples/trainers/gotrainer")
		cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		} else {
			binDir = dir
		}
	}
	// The processes the tests start keep what they keep in the user's
	// configuration directory (a site worker's default secret and privacy
	// ledger, ~/.config/ptopofl/site-secrets) in one of the run's own:
	// nothing reaches the home directory, and no ledger carries spending
	// from one run to the next.
	conf, err := os.MkdirTemp("", "ptopofl-e2e-config-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_CONFIG_HOME", conf)
	code := m.Run()
	os.RemoveAll(dir)
	os.RemoveAll(conf)
	os.Exit(code)
}

func bin(t *testing.T, name string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: builds and runs the real binaries")
	}
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, name)
}

// proc is a started process the test owns; it is killed at cleanup.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
}

func start(t *testing.T, logDir, name string, env []string, path string, args ...string) *proc {
	t.Helper()
	lf, err := os.OpenFile(filepath.Join(logDir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: lf, done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.kill(); lf.Close() })
	return p
}

// kill sends SIGKILL (kill -9) to the process, by PID, and waits for it.
func (p *proc) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// freeRun finds n consecutive free ports on 127.0.0.1 below the
// ephemeral range (devstack.FreePortRun): the stack must come back on them.
func freeRun(t *testing.T, n int) int {
	t.Helper()
	p, err := devstack.FreePortRun(n)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// waitFor polls cond every 100 ms until it holds or the deadline passes.
func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitForFile waits for path to exist, failing at once when p (the process
// that writes it) exits first: its log says why (a port taken, say).
func waitForFile(t *testing.T, ctx context.Context, p *proc, path string) {
	t.Helper()
	waitFor(t, ctx, filepath.Base(path), func() bool {
		select {
		case <-p.done:
			t.Fatalf("%s exited before writing %s", p.name, path)
		default:
		}
		_, err := os.Stat(path)
		return err == nil
	})
}

func readEnvFile(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var env []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimPrefix(strings.TrimSpace(sc.Text()), "export "); strings.Contains(l, "=") {
			env = append(env, l)
		}
	}
	return env
}

func readManifest(t *testing.T, path string) (pipeline.RoundManifest, []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m pipeline.RoundManifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m, b
}

// manifestDiff names the top-level fields in which two manifests differ,
// or says that only their bytes (order, spacing) do.
func manifestDiff(t *testing.T, a, b []byte) string {
	t.Helper()
	var ma, mb map[string]json.RawMessage
	if err := json.Unmarshal(a, &ma); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &mb); err != nil {
		t.Fatal(err)
	}
	var fields []string
	for k, v := range ma {
		if !bytes.Equal(v, mb[k]) {
			fields = append(fields, fmt.Sprintf("%s (crash run %.120s, reference %.120s)", k, v, mb[k]))
		}
	}
	for k := range mb {
		if _, ok := ma[k]; !ok {
			fields = append(fields, k+" (absent from the crash run)")
		}
	}
	if len(fields) == 0 {
		return "its bytes only (field order or spacing)"
	}
	sort.Strings(fields)
	return strings.Join(fields, "; ")
}

// modelHashes lists the model artifacts of a manifest's outputs: role,
// site or name, sha256.
func modelHashes(m pipeline.RoundManifest) []string {
	var out []string
	for _, a := range m.Outputs {
		out = append(out, fmt.Sprintf("%s %s%s %s", a.Role, a.Site, a.Name, a.Ref.SHA256))
	}
	return out
}

const crashCampaign = `campaign: crash
method: fedprox
rounds: 15
seed: 7
site_activity_timeout: 4s
train_heartbeat: 2s
round_deadline: 5m
continue_as_new_every: 4
keep_site_models: 3
`

// TestCrashRecovery runs a 15-round campaign on cmd/devstack with a server
// worker and one worker per site as separate processes, kills -9 a site
// worker mid-campaign and later the devstack itself, restarts both on the
// same data directory and ports, and checks that the campaign completes with
// final models bit-identical to an uninterrupted run of the same spec and
// every round manifest identical to it byte for byte.
func TestCrashRecovery(t *testing.T) {
	devstackBin, workerBin, starterBin, gendataBin := bin(t, "devstack"), bin(t, "worker"), bin(t, "starter"), bin(t, "gendata")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tmp := t.TempDir()
	logs := filepath.Join(tmp, "logs")
	os.MkdirAll(logs, 0o755)
	t.Cleanup(func() {
		if t.Failed() {
			entries, _ := os.ReadDir(logs)
			for _, e := range entries {
				b, _ := os.ReadFile(filepath.Join(logs, e.Name()))
				if len(b) > 3000 {
					b = b[len(b)-3000:]
				}
				t.Logf("--- %s (tail)\n%s", e.Name(), b)
			}
		}
	})

	fed := filepath.Join(tmp, "fed")
	if out, err := exec.CommandContext(ctx, gendataBin, "healthcare", "--seed", "3", "--sites", "4", "--adversarial", "1", "--out", fed).CombinedOutput(); err != nil {
		t.Fatalf("gendata: %v\n%s", err, out)
	}
	sites := []string{"site0", "site1", "site2", "site3"}
	spec := filepath.Join(tmp, "crash.yaml")
	os.WriteFile(spec, []byte(crashCampaign), 0o644)

	// The uninterrupted reference: the same spec and campaign name (the name
	// is in every artifact) on a stack of its own, in process.
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
	t.Logf("reference run: %v", time.Since(t0).Round(time.Millisecond))

	// The crash run: every component a separate process.
	dataDir := filepath.Join(tmp, "stack")
	tport, s3port := freeRun(t, 4), freeRun(t, 1)
	stackArgs := []string{"--data", dataDir, "--temporal-port", strconv.Itoa(tport), "--s3-port", strconv.Itoa(s3port)}
	stack := start(t, logs, "devstack", nil, devstackBin, stackArgs...)
	endpoints := filepath.Join(dataDir, "endpoints.json")
	waitForFile(t, ctx, stack, endpoints)
	env := readEnvFile(t, filepath.Join(dataDir, "credentials.env"))
	hostPort := "127.0.0.1:" + strconv.Itoa(tport)
	s3URL := "http://127.0.0.1:" + strconv.Itoa(s3port)
	conn := []string{"--temporal", hostPort, "--namespace", "default", "--s3", s3URL, "--bucket", "ptopofl"}

	startServer := func() *proc {
		return start(t, logs, "server", env, workerBin, append([]string{"--role", "server"}, conn...)...)
	}
	startSite := func(site string) *proc {
		return start(t, logs, "site-"+site, env, workerBin, append([]string{"--role", "site", "--site", site, "--data", fed}, conn...)...)
	}
	server := startServer()
	siteProcs := map[string]*proc{}
	for _, s := range sites {
		siteProcs[s] = startSite(s)
	}
	t1 := time.Now()
	cmd := exec.CommandContext(ctx, starterBin, append([]string{"run", spec, "--federation", fed, "--detach", "--format", "json"}, conn...)...)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("starter run --detach: %v\n%s", err, out)
	}

	manifest := func(round int) string {
		return filepath.Join(dataDir, "s3", "ptopofl", artifact.ManifestKey("crash", round))
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }

	// kill -9 a site worker mid-campaign, restart it a moment later.
	waitFor(t, ctx, "round 3", func() bool { return exists(manifest(3)) })
	siteProcs["site2"].kill()
	t.Logf("killed site2 worker after round 3 (%v)", time.Since(t1).Round(time.Millisecond))
	time.Sleep(time.Second)
	if exists(manifest(5)) {
		t.Fatal("rounds went on without site2: it should have been waited for")
	}
	siteProcs["site2"] = startSite("site2")

	// kill -9 the whole stack (Temporal and S3) later on.
	waitFor(t, ctx, "round 8", func() bool { return exists(manifest(8)) })
	stack.kill()
	t.Logf("killed devstack after round 8 (%v)", time.Since(t1).Round(time.Millisecond))
	time.Sleep(time.Second)
	stack = start(t, logs, "devstack-2", nil, devstackBin, stackArgs...)

	waitFor(t, ctx, "round 15", func() bool { return exists(manifest(15)) })
	// The campaign workflow closes as done.
	var st pipeline.CampaignStatus
	waitFor(t, ctx, "campaign done", func() bool {
		cmd := exec.CommandContext(ctx, starterBin, append([]string{"status", "crash", "--format", "json"}, conn...)...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.Output()
		return err == nil && json.Unmarshal(out, &st) == nil && st.State == pipeline.StateDone
	})
	t.Logf("crash run done: %v", time.Since(t1).Round(time.Millisecond))
	if st.RoundsDone != 15 {
		t.Fatalf("rounds done = %d, want 15", st.RoundsDone)
	}

	got, gotBytes := readManifest(t, manifest(15))
	want, wantBytes := readManifest(t, filepath.Join(refDir, "s3", "ptopofl", artifact.ManifestKey("crash", 15)))
	gh, wh := modelHashes(got), modelHashes(want)
	if len(gh) == 0 {
		t.Fatal("last manifest lists no outputs")
	}
	if strings.Join(gh, "\n") != strings.Join(wh, "\n") {
		t.Fatalf("final models differ from the uninterrupted run:\ncrash run:\n  %s\nreference:\n  %s", strings.Join(gh, "\n  "), strings.Join(wh, "\n  "))
	}
	t.Logf("final round: %d output artifacts, sha256 identical to the uninterrupted run", len(gh))
	if len(got.Dropped) != 0 {
		t.Errorf("round 15 dropped %v after recovery", got.Dropped)
	}
	// The whole chain (README: every manifest is byte-identical): every
	// round's manifest, compared byte for byte, so that a crash which
	// changed a drop reason, a metric or the chain's hashes fails too.
	for r := 1; r <= 15; r++ {
		a, b := gotBytes, wantBytes
		if r < 15 {
			_, a = readManifest(t, manifest(r))
			_, b = readManifest(t, filepath.Join(refDir, "s3", "ptopofl", artifact.ManifestKey("crash", r)))
		}
		if !bytes.Equal(a, b) {
			t.Errorf("round %d: manifest differs from the uninterrupted run's in %s", r, manifestDiff(t, a, b))
		}
	}
	if !t.Failed() {
		t.Logf("all 15 round manifests identical byte for byte to the uninterrupted run")
	}
	// The retention policy (keep_site_models: 3) pruned the local models
	// of rounds 1–12 through the crashes, and kept those of rounds 13–15.
	for r := 1; r <= 15; r++ {
		for _, s := range sites {
			kept := exists(filepath.Join(dataDir, "s3", "ptopofl", artifact.ModelKey("crash", r, s)))
			if kept != (r > 12) {
				t.Errorf("round %d: %s's local model in S3 %v, want %v (keep the last 3 rounds)", r, s, kept, r > 12)
			}
		}
	}
	_ = server
}
