package e2e

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/privacy/ledger"
	"github.com/ptopofl/ptopofl/siteledger"
)

const ledgerCampaign = `campaign: crash-ledger
method: fedavg
rounds: 4
seed: 9
site_activity_timeout: 8s
train_heartbeat: 2s
round_deadline: 5m
hyperparameters: {dp: record, dp_epsilon: 4}
`

// TestLedgerSurvivesKills runs a 4-round FedAvg campaign under dp record
// with the devstack, the server worker and three site workers as separate
// processes, and kills -9 site1's worker twice inside a private release:
// in round 2 while its training is charged to the ledger and nothing has
// left (worker --fault-hold charged), and in round 3 after its model was
// written to S3 and before the activity returned (--fault-hold released).
// At each kill and at the end, the ledger never shows less than was
// released: every model of site1 in S3 has its charge in the ledger. The
// retried activities (same key, same noise, same bytes) are charged
// nothing more: at the end each site's ledger holds exactly one training
// and one metrics release a round, its ε equals the campaign's ε of the
// site in the last manifest, and so does the lifetime ε the manifest
// records.
func TestLedgerSurvivesKills(t *testing.T) {
	devstackBin, workerBin, starterBin, gendataBin := bin(t, "devstack"), bin(t, "worker"), bin(t, "starter"), bin(t, "gendata")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	tmp := t.TempDir()
	logs := filepath.Join(tmp, "logs")
	os.MkdirAll(logs, 0o755)
	t.Cleanup(func() { dumpLogsOnFailure(t, logs) })

	fed := filepath.Join(tmp, "fed")
	if out, err := exec.CommandContext(ctx, gendataBin, "healthcare", "--seed", "5", "--sites", "3", "--adversarial", "1", "--out", fed).CombinedOutput(); err != nil {
		t.Fatalf("gendata: %v\n%s", err, out)
	}
	sites := []string{"site0", "site1", "site2"}
	spec := filepath.Join(tmp, "crash-ledger.yaml")
	os.WriteFile(spec, []byte(ledgerCampaign), 0o644)
	secrets := filepath.Join(tmp, "secrets")

	dataDir := filepath.Join(tmp, "stack")
	tport, s3port := freeRun(t, 4), freeRun(t, 1)
	stack := start(t, logs, "devstack", nil, devstackBin, "--data", dataDir, "--temporal-port", strconv.Itoa(tport), "--s3-port", strconv.Itoa(s3port))
	waitForFile(t, ctx, stack, filepath.Join(dataDir, "endpoints.json"))
	env := readEnvFile(t, filepath.Join(dataDir, "credentials.env"))
	conn := []string{"--temporal", "127.0.0.1:" + strconv.Itoa(tport), "--namespace", "default", "--s3", "http://127.0.0.1:" + strconv.Itoa(s3port), "--bucket", "ptopofl"}
	start(t, logs, "server", env, workerBin, append([]string{"--role", "server"}, conn...)...)
	startSite := func(site, log string, extra ...string) *proc {
		args := append([]string{"--role", "site", "--site", site, "--data", fed, "--secret-dir", secrets}, extra...)
		return start(t, logs, log, env, workerBin, append(args, conn...)...)
	}
	startSite("site0", "site0")
	startSite("site2", "site2")
	site1 := startSite("site1", "site1-1", "--fault-hold", "charged", "--fault-delay", "4s", "--fault-rounds", "2")
	cmd := exec.CommandContext(ctx, starterBin, append([]string{"run", spec, "--federation", fed, "--detach", "--format", "json"}, conn...)...)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("starter run --detach: %v\n%s", err, out)
	}

	object := func(key string) bool {
		_, err := os.Stat(filepath.Join(dataDir, "s3", "ptopofl", key))
		return err == nil
	}
	model := func(round int) bool {
		return object(artifact.RoundKeys{Campaign: "crash-ledger", Round: round}.Model("site1"))
	}
	ledgerOf := func(site string) *ledger.Ledger {
		l, err := siteledger.Read(siteledger.LedgerFile(secrets, site))
		if err != nil {
			return &ledger.Ledger{}
		}
		return l
	}
	charged := func(l *ledger.Ledger, round int, purpose string) int {
		n := 0
		for _, r := range l.Releases {
			if r.Campaign == "crash-ledger" && r.Round == round && r.Purpose == purpose {
				n++
			}
		}
		return n
	}
	// neverLess: every model of site1 in S3 is charged in its ledger.
	neverLess := func(when string) {
		l := ledgerOf("site1")
		for r := 1; r <= 4; r++ {
			if model(r) && charged(l, r, "train") == 0 {
				t.Errorf("%s: site1's round %d model is in S3 and not in its ledger", when, r)
			}
		}
	}

	waitFor(t, ctx, "site1's round 2 training charged", func() bool { return charged(ledgerOf("site1"), 2, "train") == 1 })
	if model(2) {
		t.Fatal("site1's round 2 model left before the hold")
	}
	site1.kill()
	neverLess("killed between charging and releasing")
	t.Log("killed site1's worker between charging its round 2 training and releasing it")
	time.Sleep(time.Second)
	site1 = startSite("site1", "site1-2", "--fault-hold", "released", "--fault-delay", "4s", "--fault-rounds", "3")

	waitFor(t, ctx, "site1's round 3 model written", func() bool { return model(3) })
	if object(artifact.ManifestKey("crash-ledger", 3)) {
		t.Fatal("round 3 committed before the kill")
	}
	site1.kill()
	neverLess("killed during a release")
	t.Log("killed site1's worker after writing its round 3 model, before its activity returned")
	time.Sleep(time.Second)
	startSite("site1", "site1-3")

	last := artifact.ManifestKey("crash-ledger", 4)
	waitFor(t, ctx, "round 4", func() bool { return object(last) })
	neverLess("at the end")
	m, _ := readManifest(t, filepath.Join(dataDir, "s3", "ptopofl", last))
	if m.Privacy == nil || len(m.Privacy.Sites) != 3 {
		t.Fatalf("round 4 privacy record %+v", m.Privacy)
	}
	for i, site := range sites {
		l := ledgerOf(site)
		for r := 1; r <= 4; r++ {
			if charged(l, r, "train") != 1 || charged(l, r, "metrics") != 1 {
				t.Errorf("%s round %d: %d training and %d metrics releases in the ledger, want one each (retries are free)",
					site, r, charged(l, r, "train"), charged(l, r, "metrics"))
			}
		}
		if len(l.Releases) != 8 {
			t.Errorf("%s: %d releases in the ledger, want 8", site, len(l.Releases))
		}
		eps, err := l.Epsilon()
		if err != nil {
			t.Fatal(err)
		}
		p := m.Privacy.Sites[i]
		if math.Abs(eps-p.Epsilon) > 1e-9 || p.Lifetime == nil || math.Abs(p.Lifetime.Epsilon-eps) > 1e-9 {
			t.Errorf("%s: ledger ε %v, campaign ε %v, manifest lifetime %+v; want all equal", site, eps, p.Epsilon, p.Lifetime)
		}
	}
	if !t.Failed() {
		t.Log(fmt.Sprintf("every site's ledger holds each release once; site1 ε %.4f = the campaign's", m.Privacy.Sites[1].Epsilon))
	}
}
