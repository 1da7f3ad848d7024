package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/internal/devstack"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/store"
)

// TestControl drives a running campaign from a second "terminal": status,
// pause (acknowledged, then rejected when repeated), resume, stop; the
// campaign ends as stopped with every committed round kept.
func TestControl(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack")
	}
	fed := smallFederation(t)
	dataDir := filepath.Join(t.TempDir(), "local")
	type result struct {
		code           int
		stdout, stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errOut := runCLI("run", "--local", "--data-dir", dataDir, "--federation", fed,
			"--method", "fedavg", "--rounds", "200", "--campaign", "ctl", "--format", "json")
		done <- result{code, out, errOut}
	}()

	// The run serves the stack; this "terminal" reaches it like a deployment.
	var ep devstack.Endpoints
	deadline := time.Now().Add(2 * time.Minute)
	for {
		b, err := os.ReadFile(filepath.Join(dataDir, devstack.EndpointsFile))
		if err == nil && json.Unmarshal(b, &ep) == nil && ep.Temporal != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the local stack did not come up")
		}
		time.Sleep(100 * time.Millisecond)
	}
	ak, sk, err := devstack.ReadCredentials(ep.CredentialsFile)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(store.EnvAccessKey, ak)
	t.Setenv(store.EnvSecretKey, sk)
	// The stack's payload key: results and queries are encrypted with it.
	conn := []string{"--temporal", ep.Temporal, "--namespace", ep.Namespace, "--s3", ep.S3URL, "--bucket", ep.Bucket,
		"--payload-key-file", ep.PayloadKeyFile, "--format", "json"}
	cli := func(args ...string) (int, string, string) { return runCLI(append(args, conn...)...) }

	var st pipeline.CampaignStatus
	for {
		code, out, _ := cli("status", "ctl")
		if code == exitOK && json.Unmarshal([]byte(out), &st) == nil && st.RoundsDone >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("campaign never reached round 2: %+v", st)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if code, out, errOut := cli("pause", "ctl", "--reason", "maintenance"); code != exitOK || !strings.Contains(out, `"accepted":true`) {
		t.Fatalf("pause: exit %d %s %s", code, out, errOut)
	}
	if code, out, _ := cli("pause", "ctl"); code != exitFailure || !strings.Contains(out, `"accepted":false`) {
		t.Errorf("second pause: exit %d %s; want a rejection (exit 1)", code, out)
	}
	code, out, _ := cli("status", "ctl")
	if json.Unmarshal([]byte(out), &st); code != exitOK || st.State != pipeline.StatePaused || st.PauseReason != "maintenance" {
		t.Errorf("status after pause: exit %d %+v", code, st)
	}
	if code, out, errOut := cli("resume", "ctl"); code != exitOK || !strings.Contains(out, `"accepted":true`) {
		t.Fatalf("resume: exit %d %s %s", code, out, errOut)
	}
	if code, out, errOut := cli("stop", "ctl", "--reason", "enough"); code != exitOK || !strings.Contains(out, `"accepted":true`) {
		t.Fatalf("stop: exit %d %s %s", code, out, errOut)
	}
	r := <-done
	if r.code != exitOK {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	var res campaign.Result
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.State != pipeline.StateStopped || res.RoundsDone < 2 || res.RoundsDone >= 200 {
		t.Fatalf("run result: %v %s", err, r.stdout)
	}
	if len(res.AUCCurve) != res.RoundsDone {
		t.Errorf("%d AUC points for %d rounds", len(res.AUCCurve), res.RoundsDone)
	}
}
