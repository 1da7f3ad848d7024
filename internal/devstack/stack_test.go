package devstack

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/store"
)

// freePortRun finds n consecutive free ports on 127.0.0.1.
func freePortRun(t *testing.T, n int) int {
	t.Helper()
	p, err := FreePortRun(n)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestStackResumes starts the stack, leaves a workflow and an object in it,
// stops it, starts it again on the same directory and ports, and checks that
// both are still there and that the restart is fast (static hosts: no wait
// for stale membership rows).
func TestStackResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real servers")
	}
	dir := t.TempDir()
	cfg := Config{Dir: dir, TemporalPort: freePortRun(t, 4), S3Port: freePortRun(t, 1), ReadyTimeout: 2 * time.Minute}
	ctx := context.Background()

	t0 := time.Now()
	stack, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cold start: %v", time.Since(t0))
	ep := stack.Endpoints()
	if ep.Temporal != "127.0.0.1:"+strconv.Itoa(cfg.TemporalPort) || ep.Namespace != DefaultNamespace || ep.Bucket != DefaultBucket {
		t.Errorf("endpoints %+v", ep)
	}

	c, err := client.Dial(client.Options{HostPort: ep.Temporal, Namespace: ep.Namespace, Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "resume-check", TaskQueue: "nobody-polls"}, "NoSuchWorkflow")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()

	st, err := store.New(stack.StoreConfig(""))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := st.Put(ctx, artifact.SpecKey("resume"), []byte(`{"rounds":3}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := stack.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}

	t0 = time.Now()
	stack, err = Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	restart := time.Since(t0)
	t.Logf("restart on the same dir and ports: %v", restart)
	defer stack.Stop()
	if restart > 30*time.Second {
		t.Errorf("restart took %v; expected seconds (are static hosts in effect?)", restart)
	}

	c, err = client.Dial(client.Options{HostPort: stack.Endpoints().Temporal, Namespace: DefaultNamespace, Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	desc, err := c.DescribeWorkflowExecution(ctx, "resume-check", run.GetRunID())
	if err != nil {
		t.Fatalf("workflow from before the restart: %v", err)
	}
	if s := desc.WorkflowExecutionInfo.Status; s != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		t.Errorf("workflow status %v, want RUNNING", s)
	}
	var nf *serviceerror.NotFound
	if _, err := c.DescribeWorkflowExecution(ctx, "never-started", ""); !errors.As(err, &nf) {
		t.Errorf("unknown workflow: err %v, want NotFound", err)
	}

	st, err = store.New(stack.StoreConfig(""))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := st.Get(ctx, ref); err != nil || string(b) != `{"rounds":3}` {
		t.Errorf("object from before the restart: %q, %v", b, err)
	}

	// The data directory is locked while the stack runs.
	if _, err := Start(ctx, Config{Dir: dir}); err == nil {
		t.Error("second Start on a running data dir succeeded")
	}
}

// TestFreePortRunBelowEphemeral: a run of four ports is free, lies below
// the kernel's ephemeral range (so no outgoing connection can take one of
// them before the stack binds it or comes back on it), and is refused for
// n < 1.
func TestFreePortRunBelowEphemeral(t *testing.T) {
	for i := range 20 {
		p, err := FreePortRun(4)
		if err != nil {
			t.Fatal(err)
		}
		if p < 10000 || p+4 > ephemeralLow() {
			t.Fatalf("%d: run %d-%d, want within [10000, %d)", i, p, p+3, ephemeralLow())
		}
		if !runFree(p, 4) {
			t.Errorf("%d: run at %d is not free", i, p)
		}
	}
	if _, err := FreePortRun(0); err == nil {
		t.Error("n = 0: no error")
	}
}
