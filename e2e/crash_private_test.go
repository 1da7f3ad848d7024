package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/privacy/noise"
)

const privateCampaign = `campaign: crash-dp
method: ptopofl
rounds: 10
seed: 7
site_activity_timeout: 8s
train_heartbeat: 2s
round_deadline: 5m
continue_as_new_every: 4
hyperparameters: {dp: record, dp_epsilon: 8}
`

// TestCrashRecoveryPrivate runs a 10-round pTopoFL campaign under dp record
// (ε = 8) with the devstack, the server worker and one worker per site as
// separate processes, and kills -9 each of them, once mid-round and once
// between rounds: a site worker mid-round 3 and after round 4, the server
// worker after round 5 and mid-round 6, the devstack mid-round 8 and after
// round 9. Every site activity of rounds 3, 6 and 8 is held 2 s
// (--fault-delay), so that a kill in those rounds lands while the round is
// running. Each process is restarted on the same data, secrets and ports.
// Every round manifest, the privacy ledger's record of every site's ε
// included, must be identical byte for byte to an uninterrupted run of the
// same spec with the same site secrets; the ε of every manifest is within
// the budget.
func TestCrashRecoveryPrivate(t *testing.T) {
	devstackBin, workerBin, starterBin, gendataBin := bin(t, "devstack"), bin(t, "worker"), bin(t, "starter"), bin(t, "gendata")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	tmp := t.TempDir()
	logs := filepath.Join(tmp, "logs")
	os.MkdirAll(logs, 0o755)
	t.Cleanup(func() { dumpLogsOnFailure(t, logs) })

	fed := filepath.Join(tmp, "fed")
	if out, err := exec.CommandContext(ctx, gendataBin, "healthcare", "--seed", "5", "--sites", "4", "--adversarial", "1", "--out", fed).CombinedOutput(); err != nil {
		t.Fatalf("gendata: %v\n%s", err, out)
	}
	sites := []string{"site0", "site1", "site2", "site3"}
	spec := filepath.Join(tmp, "crash-dp.yaml")
	os.WriteFile(spec, []byte(privateCampaign), 0o644)

	// The sites' secrets, created once and given to both runs: the
	// reference's in-process workers keep them under <data-dir>/site-secrets.
	secrets := filepath.Join(tmp, "secrets")
	refDir := filepath.Join(tmp, "ref")
	for _, s := range sites {
		if _, _, err := noise.LoadOrCreateSecret(filepath.Join(secrets, s+".secret")); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(secrets, s+".secret"))
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Join(refDir, "site-secrets"), 0o700)
		if err := os.WriteFile(filepath.Join(refDir, "site-secrets", s+".secret"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	t0 := time.Now()
	out, err := exec.CommandContext(ctx, starterBin, "run", spec, "--local", "--data-dir", refDir, "--federation", fed, "--format", "json").Output()
	if err != nil {
		t.Fatalf("reference run: %v", err)
	}
	var ref struct {
		State      string `json:"state"`
		RoundsDone int    `json:"rounds_done"`
		Privacy    *struct {
			Epsilon float64 `json:"epsilon"`
			Delta   float64 `json:"delta"`
			PerSite []struct {
				Site    string  `json:"site"`
				Epsilon float64 `json:"epsilon"`
			} `json:"per_site"`
		} `json:"privacy"`
	}
	if err := json.Unmarshal(out, &ref); err != nil || ref.State != pipeline.StateDone || ref.RoundsDone != 10 || ref.Privacy == nil ||
		ref.Privacy.Epsilon > 8 || len(ref.Privacy.PerSite) != len(sites) || ref.Privacy.Delta != 1e-5 {
		t.Fatalf("reference run: %s (%v)", out, err)
	}
	t.Logf("reference run: %v, largest ε %.4f", time.Since(t0).Round(time.Millisecond), ref.Privacy.Epsilon)

	dataDir := filepath.Join(tmp, "stack")
	tport, s3port := freeRun(t, 4), freeRun(t, 1)
	stackArgs := []string{"--data", dataDir, "--temporal-port", strconv.Itoa(tport), "--s3-port", strconv.Itoa(s3port)}
	stack := start(t, logs, "devstack", nil, devstackBin, stackArgs...)
	waitForFile(t, ctx, stack, filepath.Join(dataDir, "endpoints.json"))
	env := readEnvFile(t, filepath.Join(dataDir, "credentials.env"))
	conn := []string{"--temporal", "127.0.0.1:" + strconv.Itoa(tport), "--namespace", "default", "--s3", "http://127.0.0.1:" + strconv.Itoa(s3port), "--bucket", "ptopofl"}
	startServer := func(n int) *proc {
		return start(t, logs, "server-"+strconv.Itoa(n), env, workerBin, append([]string{"--role", "server"}, conn...)...)
	}
	startSite := func(site string, n int) *proc {
		return start(t, logs, "site-"+site+"-"+strconv.Itoa(n), env, workerBin, append([]string{"--role", "site", "--site", site, "--data", fed,
			"--secret-dir", secrets, "--fault-delay", "2s", "--fault-rounds", "3,6,8"}, conn...)...)
	}
	server := startServer(1)
	procs := map[string]*proc{}
	for _, s := range sites {
		procs[s] = startSite(s, 1)
	}
	cmd := exec.CommandContext(ctx, starterBin, append([]string{"run", spec, "--federation", fed, "--detach", "--format", "json"}, conn...)...)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("starter run --detach: %v\n%s", err, out)
	}
	manifest := func(round int) string {
		return filepath.Join(dataDir, "s3", "ptopofl", artifact.ManifestKey("crash-dp", round))
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	after := func(r int) {
		waitFor(t, ctx, "round "+strconv.Itoa(r), func() bool { return exists(manifest(r)) })
	}
	midRound := func(r int) {
		after(r - 1)
		time.Sleep(700 * time.Millisecond) // round r's first phase is held 2 s at every site
		if exists(manifest(r)) {
			t.Fatalf("round %d committed before its mid-round kill", r)
		}
	}

	midRound(3)
	procs["site1"].kill()
	t.Log("killed site1's worker mid-round 3")
	time.Sleep(time.Second)
	procs["site1"] = startSite("site1", 2)

	after(4)
	procs["site2"].kill()
	t.Log("killed site2's worker after round 4")
	procs["site2"] = startSite("site2", 2)

	after(5)
	server.kill()
	t.Log("killed the server worker after round 5")
	server = startServer(2)

	midRound(6)
	server.kill()
	t.Log("killed the server worker mid-round 6")
	time.Sleep(time.Second)
	server = startServer(3)

	midRound(8)
	stack.kill()
	t.Log("killed the devstack mid-round 8")
	time.Sleep(time.Second)
	stack = start(t, logs, "devstack-2", nil, devstackBin, stackArgs...)

	after(9)
	stack.kill()
	t.Log("killed the devstack after round 9")
	time.Sleep(time.Second)
	stack = start(t, logs, "devstack-3", nil, devstackBin, stackArgs...)

	after(10)
	for r := 1; r <= 10; r++ {
		got, a := readManifest(t, manifest(r))
		_, b := readManifest(t, filepath.Join(refDir, "s3", "ptopofl", artifact.ManifestKey("crash-dp", r)))
		if !bytes.Equal(a, b) {
			t.Errorf("round %d: manifest differs from the uninterrupted run's in %s", r, manifestDiff(t, a, b))
		}
		if got.Privacy == nil || got.Privacy.Epsilon() > 8 {
			t.Errorf("round %d: privacy record %+v", r, got.Privacy)
		}
	}
	if !t.Failed() {
		t.Logf("all 10 manifests, every site's ε among them, identical byte for byte to the uninterrupted run")
	}
	_ = server
}
