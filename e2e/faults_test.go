//go:build faults

// The fault tests run the real binaries through outages, a straggler and
// random activity failures. They take minutes (two of them wait out a
// 60-second outage), so they are built only with -tags faults: `make
// test-faults`, which CI runs after `make test`.

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/pipeline"
)

// outageLength is how long the tests keep a server down.
const outageLength = 60 * time.Second

// faultRig is a stack run as two devstack processes over one data directory
// (S3 and Temporal apart, so either can go down alone), with the workers
// and starter calls of one test.
type faultRig struct {
	t                *testing.T
	ctx              context.Context
	tmp, logs, data  string
	tport, s3port    int
	env, conn        []string
	devstack, worker string
	starter          string
	s3, temporal     *proc
}

func newFaultRig(t *testing.T, ctx context.Context) *faultRig {
	r := &faultRig{t: t, ctx: ctx, tmp: t.TempDir(),
		devstack: bin(t, "devstack"), worker: bin(t, "worker"), starter: bin(t, "starter")}
	r.logs = filepath.Join(r.tmp, "logs")
	r.data = filepath.Join(r.tmp, "stack")
	os.MkdirAll(r.logs, 0o755)
	t.Cleanup(func() {
		if t.Failed() {
			entries, _ := os.ReadDir(r.logs)
			for _, e := range entries {
				b, _ := os.ReadFile(filepath.Join(r.logs, e.Name()))
				if len(b) > 3000 {
					b = b[len(b)-3000:]
				}
				t.Logf("--- %s (tail)\n%s", e.Name(), b)
			}
		}
	})
	r.tport, r.s3port = freeRun(t, 4), freeRun(t, 1)
	// S3 first: it creates the credentials both the workers and the
	// starter read.
	r.s3 = r.startService("s3", "devstack-s3")
	r.temporal = r.startService("temporal", "devstack-temporal")
	r.env = readEnvFile(t, filepath.Join(r.data, "credentials.env"))
	r.conn = []string{"--temporal", "127.0.0.1:" + strconv.Itoa(r.tport), "--namespace", "default",
		"--s3", "http://127.0.0.1:" + strconv.Itoa(r.s3port), "--bucket", "ptopofl"}
	return r
}

// startService starts `devstack --services svc` on the rig's directory and
// ports, and waits until it has written its endpoints file (it does so once
// its server answers).
func (r *faultRig) startService(svc, logName string) *proc {
	r.t.Helper()
	ep := filepath.Join(r.data, "endpoints-"+svc+".json")
	os.Remove(ep)
	p := start(r.t, r.logs, logName, nil, r.devstack, "--data", r.data, "--services", svc,
		"--temporal-port", strconv.Itoa(r.tport), "--s3-port", strconv.Itoa(r.s3port))
	waitFor(r.t, r.ctx, "devstack --services "+svc, func() bool { _, err := os.Stat(ep); return err == nil })
	return p
}

func (r *faultRig) startWorker(name string, args ...string) *proc {
	return start(r.t, r.logs, name, r.env, r.worker, append(args, r.conn...)...)
}

// runDetached starts the campaign of specPath over fed and returns at once.
func (r *faultRig) runDetached(specPath, fed string) {
	r.t.Helper()
	cmd := exec.CommandContext(r.ctx, r.starter, append([]string{"run", specPath, "--federation", fed, "--detach", "--format", "json"}, r.conn...)...)
	cmd.Env = append(os.Environ(), r.env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		r.t.Fatalf("starter run --detach: %v\n%s", err, out)
	}
}

// waitDone waits until the campaign's workflow reports done with all its
// rounds.
func (r *faultRig) waitDone(campaign string, rounds int) {
	r.t.Helper()
	var st pipeline.CampaignStatus
	waitFor(r.t, r.ctx, "campaign "+campaign+" done", func() bool {
		cmd := exec.CommandContext(r.ctx, r.starter, append([]string{"status", campaign, "--format", "json"}, r.conn...)...)
		cmd.Env = append(os.Environ(), r.env...)
		out, err := cmd.Output()
		return err == nil && json.Unmarshal(out, &st) == nil && st.State == pipeline.StateDone
	})
	if st.RoundsDone != rounds {
		r.t.Fatalf("campaign %s: %d rounds done, want %d", campaign, st.RoundsDone, rounds)
	}
}

func (r *faultRig) object(key string) string { return filepath.Join(r.data, "s3", "ptopofl", key) }

// stillRunning fails the test for every process of procs that has exited: the
// outages must be survived by the workers as they are, never restarted.
func stillRunning(t *testing.T, procs ...*proc) {
	t.Helper()
	for _, p := range procs {
		select {
		case <-p.done:
			t.Errorf("%s exited (%v); workers must survive the outage without a restart", p.name, p.cmd.ProcessState)
		default:
		}
	}
}

// faultsReferenceRun runs spec over fed, uninterrupted and without faults, on a
// stack of its own in the starter's process, and returns the S3 directory
// of its bucket.
func faultsReferenceRun(t *testing.T, ctx context.Context, specPath, fed string, rounds int) string {
	t.Helper()
	t0 := time.Now()
	dir := filepath.Join(t.TempDir(), "ref")
	out, err := exec.CommandContext(ctx, bin(t, "starter"), "run", specPath, "--local", "--data-dir", dir, "--federation", fed, "--format", "json").Output()
	if err != nil {
		t.Fatalf("reference run: %v", err)
	}
	var ref struct {
		State      string `json:"state"`
		RoundsDone int    `json:"rounds_done"`
	}
	if err := json.Unmarshal(out, &ref); err != nil || ref.State != pipeline.StateDone || ref.RoundsDone != rounds {
		t.Fatalf("reference run: %s (%v)", out, err)
	}
	t.Logf("reference run (uninterrupted, in process): %v", time.Since(t0).Round(time.Millisecond))
	return filepath.Join(dir, "s3", "ptopofl")
}

// faultsSameManifests fails the test for every round whose manifest under the
// rig differs in any byte from the one under refBucket.
func faultsSameManifests(t *testing.T, r *faultRig, refBucket, campaign string, rounds int) {
	t.Helper()
	for n := 1; n <= rounds; n++ {
		_, a := readManifest(t, r.object(artifact.ManifestKey(campaign, n)))
		_, b := readManifest(t, filepath.Join(refBucket, artifact.ManifestKey(campaign, n)))
		if !bytes.Equal(a, b) {
			t.Errorf("round %d: manifest differs from the uninterrupted run's in %s", n, manifestDiff(t, a, b))
		}
	}
	if !t.Failed() {
		t.Logf("all %d round manifests identical byte for byte to the uninterrupted run", rounds)
	}
}

func faultsWriteSpec(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func faultsHealthcareFed(t *testing.T, ctx context.Context, dir string, sites int) string {
	t.Helper()
	fed := filepath.Join(dir, "fed")
	if out, err := exec.CommandContext(ctx, bin(t, "gendata"), "healthcare", "--seed", "3", "--sites", strconv.Itoa(sites), "--adversarial", "1", "--out", fed).CombinedOutput(); err != nil {
		t.Fatalf("gendata: %v\n%s", err, out)
	}
	return fed
}

// outageSpec: the round deadline (5 min) outlasts a 60-second outage plus
// the site activities' retry backoff (at most a minute between attempts);
// one attempt may take 30 s, more than the 10-second fault delay and the
// S3 client's own retries (about 8 s) together.
const outageSpec = `campaign: %s
method: fedprox
rounds: 8
seed: 7
site_activity_timeout: 30s
train_heartbeat: 10s
round_deadline: 5m
continue_as_new_every: 4
`

// outageRound is the round during which the server goes down. Its site
// activities are held 10 s each (worker --fault-delay), so that the kill,
// made once the round's aggregate exists, lands in its evaluation phase:
// mid-round, with site activities in flight that need the server. (With
// 3 s, a test process starved of CPU on a loaded machine once killed S3
// after the evaluations had read from it.)
const outageRound = 4

// runOutage runs an 8-round campaign on the two-process stack with a server
// worker and four site workers, takes one server (svc) down for
// outageLength in the middle of round outageRound, brings it back on the
// same data directory and ports, and checks that the campaign completes
// with no worker restarted and every manifest byte-identical to an
// uninterrupted run's.
func runOutage(t *testing.T, svc string) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	r := newFaultRig(t, ctx)
	campaign := "outage-" + svc
	fed := faultsHealthcareFed(t, ctx, r.tmp, 4)
	spec := faultsWriteSpec(t, r.tmp, campaign, fmt.Sprintf(outageSpec, campaign))
	ref := faultsReferenceRun(t, ctx, spec, fed, 8)

	procs := []*proc{r.startWorker("server", "--role", "server")}
	for i := range 4 {
		site := "site" + strconv.Itoa(i)
		procs = append(procs, r.startWorker(site, "--role", "site", "--site", site, "--data", fed,
			"--fault-delay", "10s", "--fault-rounds", strconv.Itoa(outageRound)))
	}
	t0 := time.Now()
	r.runDetached(spec, fed)

	aggregate := r.object(artifact.RoundPrefix(campaign, outageRound) + "aggregate")
	manifest := r.object(artifact.ManifestKey(campaign, outageRound))
	waitFor(t, ctx, fmt.Sprintf("round %d's aggregate", outageRound), func() bool { _, err := os.Stat(aggregate); return err == nil })
	victim := map[string]*proc{"s3": r.s3, "temporal": r.temporal}[svc]
	victim.kill()
	down := time.Now()
	if _, err := os.Stat(manifest); err == nil {
		t.Fatalf("round %d was committed before the kill: the outage is not mid-round", outageRound)
	}
	t.Logf("%s killed (kill -9) in round %d's evaluation, %v after the start", svc, outageRound, down.Sub(t0).Round(time.Millisecond))
	if svc == "s3" {
		if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(r.s3port)); err == nil {
			c.Close()
			t.Fatal("S3's port still accepts connections after the kill")
		}
	}

	time.Sleep(outageLength)
	stillRunning(t, procs...)
	if svc == "s3" {
		r.s3 = r.startService("s3", "devstack-s3-2")
	} else {
		r.temporal = r.startService("temporal", "devstack-temporal-2")
	}
	t.Logf("%s back after %v down", svc, time.Since(down).Round(time.Millisecond))

	r.waitDone(campaign, 8)
	t.Logf("campaign done %v after the start (outage of %v included)", time.Since(t0).Round(time.Millisecond), outageLength)
	stillRunning(t, procs...)
	recs, failed := roundAttempts(t, ctx, "127.0.0.1:"+strconv.Itoa(r.tport), campaign, outageRound)
	retried := 0
	for _, a := range recs {
		if a.Attempt > 1 {
			retried++
			t.Logf("round %d: %s on %s completed at attempt %d after: %.200s", outageRound, a.Activity, a.Queue, a.Attempt, a.LastFailure)
		}
	}
	if failed != 0 {
		t.Errorf("round %d: %d site activities failed or timed out for good", outageRound, failed)
	}
	// The evaluations in flight when S3 went down read the round's
	// aggregate from it after their delay: each must have been retried.
	if svc == "s3" && retried == 0 {
		t.Errorf("round %d: no site activity was retried, yet S3 was down during its evaluation", outageRound)
	}
	for n := 1; n <= 8; n++ {
		m, _ := readManifest(t, r.object(artifact.ManifestKey(campaign, n)))
		if len(m.Dropped) != 0 || len(m.Participants) != 4 {
			t.Errorf("round %d: participants %v, dropped %+v; the outage must drop no site", n, m.Participants, m.Dropped)
		}
	}
	faultsSameManifests(t, r, ref, campaign, 8)
}

// TestOutageS3 takes the S3 server down for 60 s mid-round: site and
// server activities fail to reach it and are retried (an unreachable store
// is a transient error, never bad site data) until it is back, within the
// round deadline; the campaign carries on and every manifest is
// byte-identical to an uninterrupted run's.
func TestOutageS3(t *testing.T) {
	t.Parallel()
	runOutage(t, "s3")
}

// TestOutageTemporal takes the Temporal server down for 60 s mid-round:
// the workers keep polling (the SDK reconnects), activities that finish
// meanwhile are re-run if their completion was lost, and the campaign
// carries on from its history once the server is back; every manifest is
// byte-identical to an uninterrupted run's.
func TestOutageTemporal(t *testing.T) {
	t.Parallel()
	runOutage(t, "temporal")
}

// stragglerSpec: a 20-second round deadline (the healthy sites need well
// under a second a phase, a few seconds on a loaded machine) and a quorum
// of three of four sites, so a straggler is dropped and the round goes on.
const stragglerSpec = `campaign: straggler
method: fedavg
rounds: 5
seed: 5
min_sites: 3
site_activity_timeout: 5m
train_heartbeat: 10s
round_deadline: 20s
`

// TestStraggler makes site3 ten times slower than the round deadline in
// round 3 (its worker holds each activity 200 s against a 20-second
// deadline): it is dropped from round 3 at the deadline, recorded in that
// round's manifest as timed out in training, and rejoins round 4 as a
// participant.
func TestStraggler(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	r := newFaultRig(t, ctx)
	fed := faultsHealthcareFed(t, ctx, r.tmp, 4)
	spec := faultsWriteSpec(t, r.tmp, "straggler", stragglerSpec)
	r.startWorker("server", "--role", "server")
	for i := range 3 {
		site := "site" + strconv.Itoa(i)
		r.startWorker(site, "--role", "site", "--site", site, "--data", fed)
	}
	straggler := r.startWorker("site3", "--role", "site", "--site", "site3", "--data", fed,
		"--fault-delay", "200s", "--fault-rounds", "3")
	t0 := time.Now()
	r.runDetached(spec, fed)
	r.waitDone("straggler", 5)
	t.Logf("5 rounds with a straggler in round 3: %v", time.Since(t0).Round(time.Millisecond))
	stillRunning(t, straggler)

	all := []string{"site0", "site1", "site2", "site3"}
	for n := 1; n <= 5; n++ {
		m, _ := readManifest(t, r.object(artifact.ManifestKey("straggler", n)))
		if n != 3 {
			if strings.Join(m.Participants, ",") != strings.Join(all, ",") || len(m.Dropped) != 0 {
				t.Errorf("round %d: participants %v, dropped %+v; want all four, none dropped", n, m.Participants, m.Dropped)
			}
			continue
		}
		if strings.Join(m.Participants, ",") != "site0,site1,site2" {
			t.Errorf("round 3: participants %v, want site0..site2", m.Participants)
		}
		if len(m.Dropped) != 1 || m.Dropped[0].Site != "site3" || m.Dropped[0].Phase != pipeline.PhaseTrain || m.Dropped[0].Reason != pipeline.DropTimeout {
			t.Errorf("round 3: dropped %+v, want site3 timed out in training", m.Dropped)
		} else {
			t.Logf("round 3 manifest: %+v", m.Dropped[0])
		}
	}
	log, _ := os.ReadFile(filepath.Join(r.logs, "site3.log"))
	if !strings.Contains(string(log), "fault: delaying site site3 campaign straggler round 3 activity "+pipeline.ActivityTrainLocal) {
		t.Errorf("site3's worker log does not show the injected delay:\n%s", log)
	}
}

// faultsTinyFed writes k sites of 16 training and 8 test rows, four
// features and two separable classes (as scripts/bench-pipeline.sh does),
// from a fixed seed.
func faultsTinyFed(t *testing.T, dir string, k int) string {
	t.Helper()
	fed := filepath.Join(dir, "tiny")
	os.MkdirAll(fed, 0o755)
	rng := rand.New(rand.NewPCG(1234, 5678))
	for s := range k {
		for _, split := range []struct {
			name string
			n    int
		}{{"train", 16}, {"test", 8}} {
			var b strings.Builder
			b.WriteString("x0,x1,x2,x3,y\n")
			for i := range split.n {
				y := i % 2
				for range 4 {
					fmt.Fprintf(&b, "%s,", strconv.FormatFloat(rng.NormFloat64()+1.5*float64(y), 'g', -1, 64))
				}
				fmt.Fprintf(&b, "%d\n", y)
			}
			if err := os.WriteFile(filepath.Join(fed, fmt.Sprintf("site%d_%s.csv", s, split.name)), []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return fed
}

// randomFaultsSpec: no deadline or attempt timeout near what a retried
// activity needs on a loaded machine, so the only failures are the
// injected ones.
const randomFaultsSpec = `campaign: faults200
method: fedavg
rounds: %d
seed: 9
site_activity_timeout: 5m
round_deadline: 30m
`

// TestRandomFaults200 runs a 200-site, 20-round campaign whose site
// worker (one process hosting all 200 sites) fails 5 % of site activity
// attempts at random (worker --fault-rate 0.05): the campaign completes
// with every site in every round, its manifests are byte-identical to a
// run without faults, and the history of every round shows each injected
// failure as a retry: the attempts beyond the first of every activity add
// up to at least the failures the worker logged, each one matched to its
// activity (site, round, type) and followed by a later, completing attempt;
// retries with another cause (a completion lost on a loaded server) are
// shown. PTOPOFL_FAULTS_SITES and PTOPOFL_FAULTS_ROUNDS
// shrink the campaign for a quick check; make test-faults runs it whole.
func TestRandomFaults200(t *testing.T) {
	sites, rounds := faultsScale(t, "PTOPOFL_FAULTS_SITES", 200), faultsScale(t, "PTOPOFL_FAULTS_ROUNDS", 20)
	// About a second a round on an idle 2-core machine; the generous
	// bound is for a machine shared with builds, where a round of 200
	// sites took up to 30 s.
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	r := newFaultRig(t, ctx)
	fed := faultsTinyFed(t, r.tmp, sites)
	spec := faultsWriteSpec(t, r.tmp, "faults200", fmt.Sprintf(randomFaultsSpec, rounds))
	ref := faultsReferenceRun(t, ctx, spec, fed, rounds)

	names := make([]string, sites)
	for i := range names {
		names[i] = "site" + strconv.Itoa(i)
	}
	r.startWorker("server", "--role", "server")
	r.startWorker("sites", "--role", "site", "--site", strings.Join(names, ","), "--data", fed,
		"--fault-rate", "0.05", "--fault-seed", "42")
	t0 := time.Now()
	r.runDetached(spec, fed)
	r.waitDone("faults200", rounds)
	t.Logf("%d sites × %d rounds with 5 %% of site activity attempts failing: %v", sites, rounds, time.Since(t0).Round(time.Millisecond))

	for n := 1; n <= rounds; n++ {
		m, _ := readManifest(t, r.object(artifact.ManifestKey("faults200", n)))
		if len(m.Participants) != sites || len(m.Dropped) != 0 {
			t.Errorf("round %d: %d participants, dropped %+v; want all %d", n, len(m.Participants), m.Dropped, sites)
		}
	}
	faultsSameManifests(t, r, ref, "faults200", rounds)

	log, err := os.ReadFile(filepath.Join(r.logs, "sites.log"))
	if err != nil {
		t.Fatal(err)
	}
	// Each injected failure, by activity: "site S campaign C round R
	// activity A attempt N" → its attempt numbers.
	injectedAt := map[string][]int{}
	injected := 0
	for _, line := range strings.Split(string(log), "\n") {
		_, what, ok := strings.Cut(line, "fault: injected failure: ")
		if !ok {
			continue
		}
		var site, campaign, activity string
		var round, attempt int
		if _, err := fmt.Sscanf(what, "site %s campaign %s round %d activity %s attempt %d", &site, &campaign, &round, &activity, &attempt); err != nil {
			t.Fatalf("worker log line %q: %v", line, err)
		}
		injectedAt[fmt.Sprintf("%s/%d/%s", site, round, activity)] = append(injectedAt[fmt.Sprintf("%s/%d/%s", site, round, activity)], attempt)
		injected++
	}

	// Every injected failure must show in the history as a retry: the
	// activity's completing attempt comes after every attempt the worker
	// failed, so the attempts beyond the first count them all. Retries
	// the injector did not cause (a completion lost on a loaded server,
	// retried after a timeout) are counted and shown, not hidden.
	retries, activities, failedEvents, explained := 0, 0, 0, 0
	for n := 1; n <= rounds; n++ {
		recs, failed := roundAttempts(t, ctx, "127.0.0.1:"+strconv.Itoa(r.tport), "faults200", n)
		failedEvents += failed
		for _, a := range recs {
			activities++
			retries += a.Attempt - 1
			key := fmt.Sprintf("%s/%d/%s", strings.TrimPrefix(a.Queue, pipeline.SiteTaskQueue("")), n, a.Activity)
			for _, at := range injectedAt[key] {
				if at >= a.Attempt {
					t.Errorf("%s: the worker failed attempt %d, but the history has the activity completing at attempt %d", key, at, a.Attempt)
				} else {
					explained++
				}
			}
			if a.Attempt-1 > len(injectedAt[key]) {
				t.Logf("%s: %d attempts, %d injected failures; the last failure before the completing attempt: %.200s", key, a.Attempt, len(injectedAt[key]), a.LastFailure)
			}
		}
	}
	t.Logf("history: %d site activities, %d retries (attempts beyond the first); worker log: %d injected failures, %d of them matched to a later completing attempt; %d retries with another cause",
		activities, retries, injected, explained, retries-explained)
	if want := sites * rounds * 2; activities != want {
		t.Errorf("%d site activities in the history, want %d (training and evaluation, every site, every round)", activities, want)
	}
	if injected == 0 || explained != injected {
		t.Errorf("%d injected failures logged, %d of them visible as retries in the history: every one must be", injected, explained)
	}
	if failedEvents != 0 {
		t.Errorf("%d site activities failed or timed out for good", failedEvents)
	}
}

// activityAttempt is one site activity as the round's history records it: its
// type, its task queue, the attempt that completed it (or failed for
// good), and the failure of the attempt before, if any.
type activityAttempt struct {
	Activity, Queue string
	Attempt         int
	LastFailure     string
}

// roundAttempts reads the history of a campaign's round from Temporal at
// hostPort and returns every activity's attempt record, and the number of
// activities that failed or timed out for good.
func roundAttempts(t *testing.T, ctx context.Context, hostPort, campaign string, round int) (out []activityAttempt, failed int) {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: hostPort, Namespace: "default", Logger: faultsQuietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	scheduled := map[int64]activityAttempt{}
	it := c.GetWorkflowHistory(ctx, pipeline.RoundWorkflowID(campaign, round), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatalf("history of %s round %d: %v", campaign, round, err)
		}
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			a := ev.GetActivityTaskScheduledEventAttributes()
			scheduled[ev.GetEventId()] = activityAttempt{Activity: a.GetActivityType().GetName(), Queue: a.GetTaskQueue().GetName()}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			a := ev.GetActivityTaskStartedEventAttributes()
			rec := scheduled[a.GetScheduledEventId()]
			rec.Attempt, rec.LastFailure = int(a.GetAttempt()), a.GetLastFailure().GetMessage()
			out = append(out, rec)
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED, enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
			failed++
		}
	}
	return out, failed
}

// faultsScale is the positive integer in the environment variable name, or def:
// a smaller campaign for a quick check on a loaded machine.
func faultsScale(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	t.Logf("%s=%d (default %d)", name, n, def)
	return n
}

// faultsQuietLogger keeps the SDK client's logs out of the test output.
type faultsQuietLogger struct{}

func (faultsQuietLogger) Debug(string, ...any) {}
func (faultsQuietLogger) Info(string, ...any)  {}
func (faultsQuietLogger) Warn(string, ...any)  {}
func (faultsQuietLogger) Error(string, ...any) {}
