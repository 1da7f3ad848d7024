package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

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
// server worker and one worker per site as separate processes, every
// connection over TLS with certificates of a test CA made at start
// (Temporal with mutual TLS and the per-site policy, S3 over HTTPS; see
// checkTLSRefusals for what is refused); kills -9
// the devstack (the Temporal server and S3) after round 4 and the
// PostgreSQL postmaster after round 9, restarts each on the same
// directories and ports, and checks that every round manifest is
// byte-identical to an uninterrupted run of the same spec on the embedded
// SQLite stack. Then it opens the devstack's Temporal Web UI in headless
// Chromium (checkWebUI).
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

	// A test CA with the stack's, the server worker's, the starter's and
	// each site's certificate; and another CA with a site certificate of
	// the same name, which must be refused.
	certs, rogue := filepath.Join(tmp, "certs"), filepath.Join(tmp, "rogue-certs")
	for _, d := range []string{certs, rogue} {
		if out, err := exec.CommandContext(ctx, devstackBin, "certs", "--dir", d, "--sites", strings.Join(sites, ",")).CombinedOutput(); err != nil {
			t.Fatalf("devstack certs: %v\n%s", err, out)
		}
	}

	dataDir := filepath.Join(tmp, "stack")
	tport, s3port := freeRun(t, 4), freeRun(t, 1)
	stackArgs := []string{"--data", dataDir, "--temporal-port", strconv.Itoa(tport), "--s3-port", strconv.Itoa(s3port),
		"--persistence", "postgres", "--postgres-url", pg.URL, "--tls-dir", certs}
	endpoints := filepath.Join(dataDir, "endpoints.json")
	startStack := func(name string) *proc {
		os.Remove(endpoints)
		p := start(t, logs, name, nil, devstackBin, stackArgs...)
		waitFor(t, ctx, name+" endpoints.json", func() bool { _, err := os.Stat(endpoints); return err == nil })
		return p
	}
	stack := startStack("devstack")
	env := readEnvFile(t, filepath.Join(dataDir, "credentials.env"))
	hostPort := "127.0.0.1:" + strconv.Itoa(tport)
	// conn is the connection of the client whose certificate is name in
	// dir: Temporal over mutual TLS, S3 over HTTPS, both verified
	// against the test CA.
	conn := func(dir, name string) []string {
		return []string{"--temporal", hostPort, "--namespace", "default",
			"--s3", "https://127.0.0.1:" + strconv.Itoa(s3port), "--bucket", "ptopofl", "--s3-tls-ca", filepath.Join(certs, "ca.pem"),
			"--temporal-tls-ca", filepath.Join(certs, "ca.pem"),
			"--temporal-tls-cert", filepath.Join(dir, name+".pem"), "--temporal-tls-key", filepath.Join(dir, name+"-key.pem")}
	}
	starterConn := conn(certs, "ptopofl-starter")

	checkTLSRefusals(t, ctx, logs, env, workerBin, fed, hostPort, s3port, certs, rogue, conn)

	start(t, logs, "server", env, workerBin, append([]string{"--role", "server"}, conn(certs, "ptopofl-server")...)...)
	// Each site with its own S3 identity, as docs/how-to/deploy.md has
	// it: devstack --grant-sites on the running TLS stack.
	if out, err := exec.CommandContext(ctx, devstackBin, "--data", dataDir, "--grant-sites", strings.Join(sites, ",")).CombinedOutput(); err != nil {
		t.Fatalf("devstack --grant-sites: %v\n%s", err, out)
	}
	for _, s := range sites {
		siteEnv := readEnvFile(t, filepath.Join(dataDir, "sites", s+".env"))
		start(t, logs, "site-"+s, siteEnv, workerBin, append([]string{"--role", "site", "--site", s, "--data", fed}, conn(certs, "ptopofl-site-"+s)...)...)
	}
	t1 := time.Now()
	cmd := exec.CommandContext(ctx, starterBin, append([]string{"run", spec, "--federation", fed, "--detach", "--format", "json"}, starterConn...)...)
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
		cmd := exec.CommandContext(ctx, starterBin, append([]string{"status", "deploy", "--format", "json"}, starterConn...)...)
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

	// The devstack's Web UI, reading this Temporal over mutual TLS with
	// the stack's certificate.
	var ep struct {
		UI string `json:"ui"`
	}
	if b, err := os.ReadFile(endpoints); err != nil || json.Unmarshal(b, &ep) != nil || ep.UI == "" {
		t.Fatalf("endpoints.json names no web UI: %s (%v)", b, err)
	}
	// A budget of its own: the campaign's may be spent by a slow run.
	uctx, ucancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer ucancel()
	// The UI lets in only the starter's certificate, which the browser
	// has not: it goes through a proxy of the test's that presents it.
	starterTLS, err := tlsClient(filepath.Join(certs, "ca.pem"), filepath.Join(certs, "ptopofl-starter.pem"), filepath.Join(certs, "ptopofl-starter-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	checkWebUI(t, uctx, operatorProxy(t, ep.UI, starterTLS), "deploy", 15, testOut(t))
	_ = stack
}

// checkTLSRefusals checks, before the campaign, that the stack refuses
// what mutual TLS and the per-site policy must refuse: a site worker with
// a certificate of another CA, or with none, does not get in; a site's
// certificate cannot poll another site's task queue nor workflow tasks;
// S3 does not answer plain HTTP. And that a site's own certificate can
// poll its own queue, so the refusals are the policy's and not a broken
// set-up's.
func checkTLSRefusals(t *testing.T, ctx context.Context, logs string, env []string, workerBin, fed, hostPort string, s3port int,
	certs, rogue string, conn func(dir, name string) []string) {
	t.Helper()
	// Real worker processes: with another CA's certificate, and with a
	// CA but no certificate. Both must exit with an error.
	noCert := conn(certs, "ptopofl-site-site0")
	noCert = noCert[:len(noCert)-4]
	for i, c := range []struct {
		name string
		args []string
	}{
		{"worker-rogue-ca", conn(rogue, "ptopofl-site-site0")},
		{"worker-no-cert", noCert},
	} {
		wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
		cmd := exec.CommandContext(wctx, workerBin, append([]string{"--role", "site", "--site", "site0", "--data", fed}, c.args...)...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		timedOut := wctx.Err() != nil
		cancel()
		if err == nil || timedOut {
			t.Fatalf("case %d (%s): the worker was not refused (err %v, timed out %v):\n%s", i, c.name, err, timedOut, out)
		}
		t.Logf("case %d (%s) refused: %s", i, c.name, lastLine(out))
	}

	site0, err := tlsClient(filepath.Join(certs, "ca.pem"), filepath.Join(certs, "ptopofl-site-site0.pem"), filepath.Join(certs, "ptopofl-site-site0-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.DialContext(ctx, client.Options{HostPort: hostPort, Namespace: "default", ConnectionOptions: client.ConnectionOptions{TLS: site0}})
	if err != nil {
		t.Fatalf("site0's own certificate: %v", err)
	}
	defer c.Close()
	poll := func(queue string, workflow bool) error {
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		tq := &taskqueuepb.TaskQueue{Name: queue, Kind: enumspb.TASK_QUEUE_KIND_NORMAL}
		if workflow {
			_, err := c.WorkflowService().PollWorkflowTaskQueue(pctx, &workflowservice.PollWorkflowTaskQueueRequest{Namespace: "default", TaskQueue: tq, Identity: "e2e"})
			return err
		}
		_, err := c.WorkflowService().PollActivityTaskQueue(pctx, &workflowservice.PollActivityTaskQueueRequest{Namespace: "default", TaskQueue: tq, Identity: "e2e"})
		return err
	}
	for i, q := range []struct {
		queue    string
		workflow bool
		allowed  bool
	}{
		{"ptopofl-site-site0", false, true},
		{"ptopofl-site-site1", false, false},
		{"ptopofl-server", false, false},
		{"ptopofl-server", true, false},
	} {
		err := poll(q.queue, q.workflow)
		var pd *serviceerror.PermissionDenied
		denied := errors.As(err, &pd)
		if denied == q.allowed {
			t.Fatalf("case %d: site0 polling %s (workflow tasks %v): err %v, want allowed %v", i, q.queue, q.workflow, err, q.allowed)
		}
		if denied {
			t.Logf("case %d: site0 polling %s (workflow tasks %v): denied: %s", i, q.queue, q.workflow, pd.Reason)
		} else {
			t.Logf("case %d: site0 polling %s: allowed (%v)", i, q.queue, err)
		}
	}

	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(s3port) + "/healthz")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("S3 answered plain HTTP")
		}
	}
}

// operatorProxy serves, on a loopback port of the test's own, the Web UI
// at target (https://…, mutual TLS) as a browser holding the certificate
// of tc would see it, and returns its http:// address.
func operatorProxy(t *testing.T, target string, tc *tls.Config) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := &httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(u) },
		Transport: &http.Transport{TLSClientConfig: tc},
		// A request the browser gave up on is not the test's concern.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: rp}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String()
}

func tlsClient(ca, cert, key string) (*tls.Config, error) {
	pemCA, err := os.ReadFile(ca)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemCA)
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return nil, err
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
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

// TestComposeConfig checks deploy/temporal/docker-compose.yml with Debian's
// docker-compose (`config -q`: the file's syntax and its schema, without a
// Docker engine), which make test-deploy installs. The images are not
// pulled and nothing is started: there is no Docker engine here.
func TestComposeConfig(t *testing.T) {
	deployTest(t)
	dc, err := exec.LookPath("docker-compose")
	if err != nil {
		t.Fatalf("docker-compose not found (make test-deploy installs Debian's docker-compose): %v", err)
	}
	file, err := filepath.Abs("../deploy/temporal/docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(dc, "-f", file, "config", "-q")
	cmd.Env = append(os.Environ(), "PTOPOFL_S3_ACCESS_KEY=check", "PTOPOFL_S3_SECRET_KEY=check", "POSTGRES_PASSWORD=check",
		"SITE_HOSPITAL_A_S3_SECRET_KEY=check", "SITE_HOSPITAL_B_S3_SECRET_KEY=check", "PTOPOFL_PAYLOAD_KEYS=k1:check")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docker-compose config: %v\n%s", err, out)
	}
	// The variables the file requires are required: without them the
	// check fails, naming one.
	cmd = exec.Command(dc, "-f", file, "config", "-q")
	cmd.Env = append(os.Environ(), "PTOPOFL_S3_ACCESS_KEY=", "PTOPOFL_S3_SECRET_KEY=", "POSTGRES_PASSWORD=")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "set ") {
		t.Errorf("docker-compose config without the secrets: err %v, output %s", err, out)
	}
}
