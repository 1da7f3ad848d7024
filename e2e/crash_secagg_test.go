//go:build faults

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

const secaggCampaign = `campaign: crash-secagg
method: ptopofl
rounds: 7
seed: 7
site_activity_timeout: 8s
train_heartbeat: 2s
round_deadline: 5m
continue_as_new_every: 4
hyperparameters: {secure_aggregation: secagg+}
`

// TestCrashRecoverySecAgg runs a 7-round pTopoFL campaign under
// secure_aggregation secagg+ with the devstack, the server worker and one
// worker per site as separate processes, and kills -9 one of them during
// each stage of the secure aggregation, the stage told by the objects the
// round has written so far (each site activity of rounds 2 to 7 is held
// 2 s by --fault-delay, so a stage lasts at least that long): a site
// worker while the sites share their keys (round 2), the server worker
// while they mask (round 3), a site worker while they reveal (round 4),
// the devstack while they share (round 5), the server worker while they
// reveal (round 6) and a site worker while they mask (round 7). Each
// process is restarted on the same data, secrets, keeps and ports. Every
// round manifest (the groups' records and the sha256 of every masked
// input, reveal and sum among them) must be identical byte for byte to an
// uninterrupted run of the same spec with the same site secrets.
func TestCrashRecoverySecAgg(t *testing.T) {
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
	spec := filepath.Join(tmp, "crash-secagg.yaml")
	os.WriteFile(spec, []byte(secaggCampaign), 0o644)

	// The sites' secrets, created once and given to both runs (the
	// reference's in-process workers keep them under
	// <data-dir>/site-secrets).
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
	}
	if err := json.Unmarshal(out, &ref); err != nil || ref.State != pipeline.StateDone || ref.RoundsDone != 7 {
		t.Fatalf("reference run: %s (%v)", out, err)
	}
	t.Logf("reference run: %v", time.Since(t0).Round(time.Millisecond))

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
			"--secret-dir", secrets, "--fault-delay", "2s", "--fault-rounds", "2,3,4,5,6,7"}, conn...)...)
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
	roundDir := func(r int) string {
		return filepath.Join(dataDir, "s3", "ptopofl", artifact.RoundKeys{Campaign: "crash-secagg", Round: r}.Prefix())
	}
	manifest := func(r int) string { return filepath.Join(roundDir(r), "manifest.json") }
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	// during waits until round r's secure aggregation has written an
	// object under secagg/<group>/<dir>/ (the stage before the one to
	// kill in has ended), then a little more, so that the kill lands
	// while the next stage's site activities are held.
	during := func(r int, dir, stage string, settle time.Duration) {
		waitFor(t, ctx, "round "+strconv.Itoa(r)+" "+stage, func() bool {
			m, _ := filepath.Glob(filepath.Join(roundDir(r), "secagg", "*", dir, "*"))
			return len(m) > 0
		})
		time.Sleep(settle)
		if exists(manifest(r)) {
			t.Fatalf("round %d committed before its kill while the sites %s", r, stage)
		}
	}

	during(2, "view", "share their keys", 300*time.Millisecond)
	procs["site1"].kill()
	t.Log("killed site1's worker while the sites shared their keys in round 2")
	time.Sleep(time.Second)
	procs["site1"] = startSite("site1", 2)

	during(3, "inbox", "mask their inputs", 300*time.Millisecond)
	server.kill()
	t.Log("killed the server worker while the sites masked their inputs in round 3")
	time.Sleep(time.Second)
	server = startServer(2)

	during(4, "masked", "reveal their shares", 700*time.Millisecond)
	procs["site2"].kill()
	t.Log("killed site2's worker while the sites revealed their shares in round 4")
	time.Sleep(time.Second)
	procs["site2"] = startSite("site2", 2)

	during(5, "view", "share their keys", 300*time.Millisecond)
	stack.kill()
	t.Log("killed the devstack while the sites shared their keys in round 5")
	time.Sleep(time.Second)
	stack = start(t, logs, "devstack-2", nil, devstackBin, stackArgs...)

	during(6, "masked", "reveal their shares", 700*time.Millisecond)
	server.kill()
	t.Log("killed the server worker while the sites revealed their shares in round 6")
	time.Sleep(time.Second)
	server = startServer(3)

	during(7, "inbox", "mask their inputs", 300*time.Millisecond)
	procs["site0"].kill()
	t.Log("killed site0's worker while the sites masked their inputs in round 7")
	time.Sleep(time.Second)
	procs["site0"] = startSite("site0", 2)

	waitFor(t, ctx, "round 7", func() bool { return exists(manifest(7)) })
	for r := 1; r <= 7; r++ {
		got, a := readManifest(t, manifest(r))
		_, b := readManifest(t, filepath.Join(refDir, "s3", "ptopofl", artifact.ManifestKey("crash-secagg", r)))
		if !bytes.Equal(a, b) {
			t.Errorf("round %d: manifest differs from the uninterrupted run's in %s", r, manifestDiff(t, a, b))
		}
		if got.SecAgg == nil || got.Outcome != pipeline.OutcomeCommitted {
			t.Errorf("round %d: %s, secure aggregation record %+v", r, got.Outcome, got.SecAgg)
		}
	}
	if !t.Failed() {
		t.Logf("all 7 manifests identical byte for byte to the uninterrupted run")
	}
	_ = server
	_ = stack
}
