package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/ptopofl/ptopofl/internal/devstack"
)

// TestKillAndRestart runs the built binary, kills it with SIGKILL while a
// workflow is open, restarts it on the same directory and ports, and checks
// the workflow is still there; then stops it with SIGTERM and expects exit 0.
func TestKillAndRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the devstack binary")
	}
	bin := devstackBinary(t)
	dir := filepath.Join(t.TempDir(), "stack")
	tport, sport := freePortRun(t, 4), freePortRun(t, 1)
	args := []string{"--data", dir, "--temporal-port", strconv.Itoa(tport), "--s3-port", strconv.Itoa(sport)}

	cmd, ep, took := startDevstack(t, bin, args)
	t.Logf("first start ready in %v: %+v", took, ep)
	var onDisk devstack.Endpoints
	if b, err := os.ReadFile(filepath.Join(dir, devstack.EndpointsFile)); err != nil || json.Unmarshal(b, &onDisk) != nil || onDisk != ep {
		t.Errorf("endpoints.json %+v (err %v), stdout %+v", onDisk, err, ep)
	}
	if fi, err := os.Stat(ep.CredentialsFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("credentials file: %v %v", fi, err)
	}

	ctx := context.Background()
	c, err := client.Dial(client.Options{HostPort: ep.Temporal, Namespace: ep.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "crash-check", TaskQueue: "nobody-polls"}, "NoSuchWorkflow")
	c.Close()
	if err != nil {
		t.Fatal(err)
	}

	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	cmd.Wait()

	cmd, ep2, took := startDevstack(t, bin, args)
	t.Logf("restart after kill -9 ready in %v", took)
	if ep2.Temporal != ep.Temporal || ep2.S3URL != ep.S3URL {
		t.Errorf("endpoints changed across restart: %+v vs %+v", ep2, ep)
	}
	c, err = client.Dial(client.Options{HostPort: ep2.Temporal, Namespace: ep2.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	desc, err := c.DescribeWorkflowExecution(ctx, "crash-check", run.GetRunID())
	c.Close()
	if err != nil {
		t.Fatalf("workflow after kill -9 and restart: %v", err)
	}
	if s := desc.WorkflowExecutionInfo.Status; s != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		t.Errorf("status %v, want RUNNING", s)
	}

	stopDevstack(t, cmd)
}

// built is the devstack binary the tests of this package share, built
// once (a link of the Temporal server takes a while on a loaded machine).
var built struct {
	once sync.Once
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// devstackBinary builds this command once per test binary and returns its
// path.
func devstackBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "devstack-test-"); built.err != nil {
			return
		}
		build := exec.Command("go", "build", "-o", filepath.Join(built.dir, "devstack"), ".")
		build.Stderr = os.Stderr
		built.err = build.Run()
	})
	if built.err != nil {
		t.Fatalf("go build: %v", built.err)
	}
	return filepath.Join(built.dir, "devstack")
}

func startDevstack(t *testing.T, bin string, args []string) (*exec.Cmd, devstack.Endpoints, time.Duration) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var ep devstack.Endpoints
	select {
	case line, ok := <-lines:
		if !ok {
			t.Fatal("devstack exited without printing its endpoints")
		}
		if err := json.Unmarshal([]byte(line), &ep); err != nil {
			t.Fatalf("stdout line %q: %v", line, err)
		}
	case <-time.After(3 * time.Minute):
		t.Fatal("devstack not ready within 3 minutes")
	}
	return cmd, ep, time.Since(t0)
}

// freePortRun finds n consecutive free ports on 127.0.0.1.
func freePortRun(t *testing.T, n int) int {
	t.Helper()
	p, err := devstack.FreePortRun(n)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
