package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/pipeline"
)

// crashDeepCampaign is a deep-small pTopoFL campaign (the anchor's CNN,
// 'same' padding) on 8×8 images of 3 classes: descriptors of the
// penultimate activations, clustering and float32 parquet models, small
// enough that a round takes well under a second of CPU.
const crashDeepCampaign = `campaign: crash-deep
method: ptopofl
preset: deep-small
rounds: 8
seed: 11
site_activity_timeout: 6s
train_heartbeat: 2s
round_deadline: 5m
continue_as_new_every: 3
hyperparameters: {classes: 3, n_sub: 30}
`

// stripeImages returns n deterministic 8×8 grey images of 3 classes: class
// y brightens rows 3y to 3y+2 over uniform noise (an LCG seeded by seed).
func stripeImages(n int, seed uint64) *dataset.Images {
	const side, classes = 8, 3
	im := &dataset.Images{N: n, H: side, W: side, C: 1, Classes: classes, Pixels: make([]float32, n*side*side), Labels: make([]int, n)}
	x := seed
	for i := range n {
		x = x*6364136223846793005 + 1442695040888963407
		y := int(x>>33) % classes
		im.Labels[i] = y
		for p := range side * side {
			x = x*6364136223846793005 + 1442695040888963407
			v := int(x >> 59) // noise 0..31
			if row := p / side; row >= 3*y && row < 3*y+3 {
				v += 160
			}
			im.Pixels[i*side*side+p] = float32(v) / 255
		}
	}
	return im
}

// TestCrashRecoveryDeep is TestCrashRecovery for a deep model: an 8-round
// deep-small pTopoFL campaign on a 3-site image federation, with cmd/devstack,
// the server worker and one worker per site as separate processes. It kills
// -9 a site worker after round 2 and the devstack after round 5, restarts
// both on the same data directory and ports, and requires every round
// manifest (float32 parquet models, descriptors, clustering, metrics with
// the sites' update accuracy) to equal an uninterrupted run's byte for byte.
func TestCrashRecoveryDeep(t *testing.T) {
	devstackBin, workerBin, starterBin := bin(t, "devstack"), bin(t, "worker"), bin(t, "starter")
	const rounds, killSiteAfter, killStackAfter = 8, 2, 5
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
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

	fed := filepath.Join(tmp, "images")
	sites := []string{"site0", "site1", "site2"}
	var imgs []dataset.ImageSite
	for k, s := range sites {
		imgs = append(imgs, dataset.ImageSite{Name: s, Train: stripeImages(40+8*k, uint64(100+k)), Test: stripeImages(20, uint64(200+k))})
	}
	if err := dataset.WriteImageFederation(fed, imgs, dataset.ImageManifest{Generator: "e2e", Classes: 3}); err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(tmp, "crash-deep.yaml")
	os.WriteFile(spec, []byte(crashDeepCampaign), 0o644)

	// The uninterrupted reference, in process on a stack of its own.
	t0 := time.Now()
	refDir := filepath.Join(tmp, "ref")
	out, err := exec.CommandContext(ctx, starterBin, "run", spec, "--local", "--data-dir", refDir, "--federation", fed, "--format", "json").Output()
	if err != nil {
		t.Fatalf("reference run: %v", err)
	}
	var ref struct {
		State             string    `json:"state"`
		RoundsDone        int       `json:"rounds_done"`
		AccCurve          []float64 `json:"acc_curve"`
		AccCurveAggregate []float64 `json:"acc_curve_aggregate"`
	}
	if err := json.Unmarshal(out, &ref); err != nil || ref.State != pipeline.StateDone || ref.RoundsDone != rounds {
		t.Fatalf("reference run: %s (%v)", out, err)
	}
	// A deep campaign's final_acc is the sites' update accuracy; the
	// after-aggregation one comes with it (campaign.Result).
	if len(ref.AccCurve) != rounds || len(ref.AccCurveAggregate) != rounds {
		t.Fatalf("reference run: acc_curve %v, acc_curve_aggregate %v: want %d rounds each", ref.AccCurve, ref.AccCurveAggregate, rounds)
	}
	t.Logf("reference run: %v, update accuracy %v, after aggregation %v", time.Since(t0).Round(time.Millisecond), ref.AccCurve, ref.AccCurveAggregate)

	dataDir := filepath.Join(tmp, "stack")
	tport, s3port := freeRun(t, 4), freeRun(t, 1)
	stackArgs := []string{"--data", dataDir, "--temporal-port", strconv.Itoa(tport), "--s3-port", strconv.Itoa(s3port)}
	stack := start(t, logs, "devstack", nil, devstackBin, stackArgs...)
	waitForFile(t, ctx, stack, filepath.Join(dataDir, "endpoints.json"))
	env := readEnvFile(t, filepath.Join(dataDir, "credentials.env"))
	conn := []string{"--temporal", "127.0.0.1:" + strconv.Itoa(tport), "--namespace", "default",
		"--s3", "http://127.0.0.1:" + strconv.Itoa(s3port), "--bucket", "ptopofl"}
	start(t, logs, "server", env, workerBin, append([]string{"--role", "server"}, conn...)...)
	startSite := func(site string) *proc {
		return start(t, logs, "site-"+site, env, workerBin, append([]string{"--role", "site", "--site", site, "--data", fed}, conn...)...)
	}
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
	manifest := func(dir string, round int) string {
		return filepath.Join(dir, "s3", "ptopofl", artifact.ManifestKey("crash-deep", round))
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }

	waitFor(t, ctx, fmt.Sprintf("round %d", killSiteAfter), func() bool { return exists(manifest(dataDir, killSiteAfter)) })
	siteProcs["site2"].kill()
	t.Logf("killed site2 worker after round %d (%v)", killSiteAfter, time.Since(t1).Round(time.Millisecond))
	time.Sleep(time.Second)
	siteProcs["site2"] = startSite("site2")

	waitFor(t, ctx, fmt.Sprintf("round %d", killStackAfter), func() bool { return exists(manifest(dataDir, killStackAfter)) })
	stack.kill()
	t.Logf("killed devstack after round %d (%v)", killStackAfter, time.Since(t1).Round(time.Millisecond))
	time.Sleep(time.Second)
	start(t, logs, "devstack-2", nil, devstackBin, stackArgs...)

	var st pipeline.CampaignStatus
	waitFor(t, ctx, "campaign done", func() bool {
		cmd := exec.CommandContext(ctx, starterBin, append([]string{"status", "crash-deep", "--format", "json"}, conn...)...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.Output()
		return err == nil && json.Unmarshal(out, &st) == nil && st.State == pipeline.StateDone
	})
	t.Logf("crash run done: %v", time.Since(t1).Round(time.Millisecond))
	if st.RoundsDone != rounds {
		t.Fatalf("rounds done = %d, want %d", st.RoundsDone, rounds)
	}
	for r := 1; r <= rounds; r++ {
		got, a := readManifest(t, manifest(dataDir, r))
		_, b := readManifest(t, manifest(refDir, r))
		if !bytes.Equal(a, b) {
			t.Errorf("round %d: manifest differs from the uninterrupted run's in %s", r, manifestDiff(t, a, b))
		}
		if len(got.Metrics) != len(sites) || got.Mean.UpdateAccuracy == nil {
			t.Errorf("round %d: %d site metrics, mean update accuracy %v: want %d sites and an update accuracy", r, len(got.Metrics), got.Mean.UpdateAccuracy, len(sites))
		}
	}
	last, _ := readManifest(t, manifest(dataDir, rounds))
	if len(modelHashes(last)) == 0 {
		t.Error("last manifest lists no outputs")
	}
	if !t.Failed() {
		t.Logf("all %d round manifests identical byte for byte to the uninterrupted run", rounds)
	}
}
