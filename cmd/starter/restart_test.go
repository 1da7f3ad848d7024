package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"go.temporal.io/sdk/client"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/internal/connect"
	"github.com/ptopofl/ptopofl/internal/devstack"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/store"
)

// breakSiteFrom gives site a training file without rows from round on
// (dataset.ShiftDir), so that its activities fail with BadSiteData in
// that round and later ones; the returned func removes it again.
func breakSiteFrom(t *testing.T, fed, site string, round int) (fix func()) {
	t.Helper()
	dir := dataset.ShiftDir(fed, round)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	train, err := os.ReadFile(filepath.Join(fed, site+"_train.csv"))
	if err != nil {
		t.Fatal(err)
	}
	header, _, _ := bytes.Cut(train, []byte("\n"))
	if err := os.WriteFile(filepath.Join(dir, site+"_train.csv"), append(header, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	test, err := os.ReadFile(filepath.Join(fed, site+"_test.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, site+"_test.csv"), test, 0o644); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRestartAfterQuorumFailure runs a 3-round FedAvg campaign on the local
// stack whose spec.json was stored by an "older binary" (with a
// code_version), with site1's data broken from round 2, so round 2 falls
// below the quorum (min_sites = all 3) and the campaign fails: the error
// is one sentence naming the campaign and the round, with the cause once.
// After the site's data is fixed, the same command resumes from round 2 as
// attempt 2 and completes; verify passes across both attempts, the failed
// round's manifest is still at its key with its bytes, superseded by
// attempt 2's manifest of round 2, and spec.json was never rewritten. The
// same name with another spec is then refused with exit 2 naming the
// field, and --new-campaign runs it under a derived name.
func TestRestartAfterQuorumFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack")
	}
	fed := smallFederation(t)
	dataDir := filepath.Join(t.TempDir(), "local")
	const name = "restart"
	args := []string{"run", "--local", "--data-dir", dataDir, "--federation", fed, "--method", "fedavg",
		"--rounds", "3", "--seed", "5", "--campaign", name, "--round-deadline", "2m"}

	// The spec an older binary stored: the same spec with its code version.
	f, err := campaign.DiscoverFederation(fed)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := campaign.BuildSpec(nil, campaign.SpecOptions{
		Campaign: name, Method: "fedavg", Preset: "default", Rounds: 3, Seed: 5, RoundDeadline: 2 * time.Minute,
		Bucket: connect.DefaultBucket,
		Given:  map[string]bool{"campaign": true, "method": true, "rounds": true, "seed": true, "round-deadline": true},
	}, f)
	if err != nil {
		t.Fatal(err)
	}
	spec.CodeVersion = "older-build"
	var specBytes []byte
	onStack(t, dataDir, func(ctx context.Context, st *store.Store, _ *minio.Client) {
		if _, err := st.PutJSON(ctx, artifact.SpecKey(name), spec); err != nil {
			t.Fatal(err)
		}
		_, specBytes, err = st.GetKey(ctx, artifact.SpecKey(name))
		if err != nil {
			t.Fatal(err)
		}
	})

	fix := breakSiteFrom(t, fed, "site1", 2)
	code, stdout, stderr := runCLI(args...)
	if code != exitFailure {
		t.Fatalf("attempt 1: exit %d, want %d\nstdout %s\nstderr %s", code, exitFailure, stdout, stderr)
	}
	// The last line is the error: one sentence naming the campaign and the
	// round, the quorum's reason once.
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	msg := lines[len(lines)-1]
	t.Logf("attempt 1 ends with: %s", msg)
	for _, want := range []string{"campaign " + name + " failed: round 2", "below the quorum min_sites=3", "run the campaign again"} {
		if !strings.Contains(msg, want) {
			t.Errorf("attempt 1's error %q does not say %q", msg, want)
		}
	}
	if n := strings.Count(msg, "below the quorum"); n != 1 {
		t.Errorf("attempt 1's error repeats its cause %d times: %s", n, msg)
	}

	fix()
	code, stdout, stderr = runCLI(args...)
	if code != exitOK {
		t.Fatalf("attempt 2: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if want := "campaign " + name + ": attempt 1 failed; starting attempt 2 from round 2 (round 1 stays committed)"; !strings.Contains(stderr, want) {
		t.Errorf("attempt 2 does not announce itself with %q:\n%s", want, stderr)
	}
	t.Logf("attempt 2 stderr:\n%s", stderr)
	if !strings.Contains(stdout, "done after 3 rounds") {
		t.Errorf("attempt 2: %s", stdout)
	}

	vcode, rep := verifyJSON(t, dataDir, name)
	if vcode != exitOK || !rep.OK || rep.Rounds != 3 || rep.Attempts != 2 || rep.Superseded != 1 || !rep.TipChecked {
		t.Errorf("verify: exit %d, %+v; want ok, 3 rounds, 2 attempts, 1 superseded, tip checked", vcode, rep)
	}
	code, stdout, stderr = runCLI("history", name, "--local", "--data-dir", dataDir)
	if want := "attempt 2, superseding s3://ptopofl/" + artifact.ManifestKey(name, 2); code != exitOK || !strings.Contains(stdout, want) {
		t.Errorf("history: exit %d, want %q in\n%s%s", code, want, stdout, stderr)
	}

	onStack(t, dataDir, func(ctx context.Context, st *store.Store, _ *minio.Client) {
		_, now, err := st.GetKey(ctx, artifact.SpecKey(name))
		if err != nil || !bytes.Equal(now, specBytes) {
			t.Errorf("spec.json was rewritten (err %v):\nbefore %s\nafter  %s", err, specBytes, now)
		}
		var failed, second pipeline.RoundManifest
		ref, err := st.GetJSONKey(ctx, artifact.ManifestKey(name, 2), &failed)
		if err != nil {
			t.Fatal(err)
		}
		if failed.Outcome != pipeline.OutcomeFailed || failed.Attempt != 0 {
			t.Errorf("round 2's first manifest: outcome %q attempt %d; want the failed attempt 1", failed.Outcome, failed.Attempt)
		}
		key := artifact.RoundKeys{Campaign: name, Round: 2, Attempt: 2}.Manifest()
		if _, err := st.GetJSONKey(ctx, key, &second); err != nil {
			t.Fatal(err)
		}
		if second.Outcome != pipeline.OutcomeCommitted || second.Attempt != 2 || second.Supersedes == nil ||
			second.Supersedes.SHA256 != ref.SHA256 || second.Supersedes.Key != ref.Key {
			t.Errorf("attempt 2's round 2: outcome %q attempt %d supersedes %+v; want committed, 2, %s %s",
				second.Outcome, second.Attempt, second.Supersedes, ref.Key, ref.SHA256)
		}
		var first pipeline.RoundManifest
		r1, err := st.GetJSONKey(ctx, artifact.ManifestKey(name, 1), &first)
		if err != nil {
			t.Fatal(err)
		}
		if second.PrevManifestSHA256 != r1.SHA256 || failed.PrevManifestSHA256 != r1.SHA256 {
			t.Errorf("round 2's manifests chain to %s and %s, round 1's is %s", second.PrevManifestSHA256, failed.PrevManifestSHA256, r1.SHA256)
		}
		stored := spec.WithDefaults().SpecHash()
		for _, m := range []pipeline.RoundManifest{first, failed, second} {
			if m.SpecHash != stored {
				t.Errorf("round %d attempt %d: spec_hash %s, want the stored spec's %s", m.Round, m.Attempt, m.SpecHash, stored)
			}
		}
	})

	// The same name, another spec: refused before anything starts.
	other := append(append([]string(nil), args...), "--rounds", "4")
	code, stdout, stderr = runCLI(other...)
	want := "campaign " + name + " exists with a different spec: rounds 3 → 4; use --new-campaign"
	if code != exitInput || !strings.Contains(stderr, want) || stdout != "" {
		t.Errorf("another spec under the same name: exit %d, stderr %q; want exit 2 saying %q", code, stderr, want)
	}
	code, stdout, stderr = runCLI(append(other, "--new-campaign")...)
	if code != exitOK || !strings.Contains(stdout, name+"-2 ") || !strings.Contains(stdout, "done after 4 rounds") {
		t.Errorf("--new-campaign: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}

	// The superseded manifest is protected by the chain too: altering it
	// is found.
	onStack(t, dataDir, func(ctx context.Context, st *store.Store, mc *minio.Client) {
		key := artifact.ManifestKey(name, 2)
		_, b, err := st.GetKey(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		altered := bytes.Replace(b, []byte(`"failed"`), []byte(`"passed"`), 1)
		if bytes.Equal(altered, b) {
			t.Fatalf("no outcome to alter in %s", b)
		}
		b = altered
		if _, err := mc.PutObject(ctx, st.Bucket(), key, bytes.NewReader(b), int64(len(b)), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	vcode, rep = verifyJSON(t, dataDir, name)
	if vcode != exitFailure || rep.OK || len(rep.Problems) != 1 || rep.Problems[0].Kind != campaign.ProblemChainBreak ||
		rep.Problems[0].Key != artifact.ManifestKey(name, 2) {
		t.Errorf("verify after altering the superseded manifest: exit %d, %+v; want one chain_break of round 2's first manifest", vcode, rep)
	}
}

// interruptAndRestart runs a 30-round FedAvg campaign on the local stack
// in the background, lets interrupt end it from a second "terminal" once
// two rounds are committed (given the CLI with that terminal's connection
// flags and the stack's endpoints), and checks that the run ended with
// wantCode; then it runs the same command again and checks that attempt
// 2 starts from the round after the last committed one, saying so after
// "attempt 1 <previous>", that every round completes, that verify passes
// with two attempts, and that a further run re-attaches.
func interruptAndRestart(t *testing.T, name string, wantCode int, previous string,
	interrupt func(cli func(args ...string) (int, string, string), ep devstack.Endpoints)) {
	t.Helper()
	fed := smallFederation(t)
	dataDir := filepath.Join(t.TempDir(), "local")
	const rounds = 30
	args := []string{"run", "--local", "--data-dir", dataDir, "--federation", fed,
		"--method", "fedavg", "--rounds", strconv.Itoa(rounds), "--campaign", name}
	type result struct {
		code           int
		stdout, stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errOut := runCLI(args...)
		done <- result{code, out, errOut}
	}()
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
	// The stack seals payloads with its key (the local path's default): a
	// remote terminal needs the key file to read the status.
	conn := []string{"--temporal", ep.Temporal, "--namespace", ep.Namespace, "--s3", ep.S3URL, "--bucket", ep.Bucket,
		"--payload-key-file", ep.PayloadKeyFile, "--format", "json"}
	cli := func(args ...string) (int, string, string) { return runCLI(append(args, conn...)...) }
	for {
		var st pipeline.CampaignStatus
		code, out, _ := cli("status", name)
		if code == exitOK && json.Unmarshal([]byte(out), &st) == nil && st.RoundsDone >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("campaign never reached round 2: %+v", st)
		}
		time.Sleep(200 * time.Millisecond)
	}
	interrupt(cli, ep)
	r := <-done
	if r.code != wantCode || strings.Contains(r.stdout, fmt.Sprintf("done after %d rounds", rounds)) {
		t.Fatalf("attempt 1: exit %d, want %d, and not done\nstdout %s\nstderr %s", r.code, wantCode, r.stdout, r.stderr)
	}

	code, stdout, stderr := runCLI(args...)
	if code != exitOK || !strings.Contains(stdout, fmt.Sprintf("done after %d rounds", rounds)) {
		t.Fatalf("attempt 2: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	want := fmt.Sprintf("campaign %s: attempt 1 %s; starting attempt 2 from round ", name, previous)
	_, note, ok := strings.Cut(stderr, want)
	from, _, _ := strings.Cut(note, " ")
	if n, err := strconv.Atoi(from); !ok || err != nil || n < 3 || n > rounds {
		t.Errorf("attempt 2 does not say %q and a round after the two committed:\n%s", want, stderr)
	}
	vcode, rep := verifyJSON(t, dataDir, name)
	if vcode != exitOK || !rep.OK || rep.Rounds != rounds || rep.Attempts != 2 || !rep.TipChecked {
		t.Errorf("verify: exit %d, %+v; want ok, %d rounds, 2 attempts, tip checked", vcode, rep, rounds)
	}
	// A third run re-attaches to the finished campaign.
	code, stdout, stderr = runCLI(args...)
	if code != exitOK || strings.Contains(stderr, "attempt") || !strings.Contains(stdout, fmt.Sprintf("done after %d rounds", rounds)) {
		t.Errorf("re-run after done: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
}

// TestRestartAfterStop: a campaign paused and then stopped ends as
// stopped (exit 0, not done); running it again starts attempt 2 from the
// round after its last committed one (interruptAndRestart).
func TestRestartAfterStop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack")
	}
	interruptAndRestart(t, "stopped", exitOK, "stopped", func(cli func(args ...string) (int, string, string), _ devstack.Endpoints) {
		// Paused first, so that the stop lands between rounds however fast
		// they run.
		if code, out, errOut := cli("pause", "stopped"); code != exitOK || !strings.Contains(out, `"accepted":true`) {
			t.Fatalf("pause: exit %d %s %s", code, out, errOut)
		}
		if code, out, errOut := cli("stop", "stopped", "--reason", "maintenance"); code != exitOK || !strings.Contains(out, `"accepted":true`) {
			t.Fatalf("stop: exit %d %s %s", code, out, errOut)
		}
	})
}

// TestRestartAfterTermination: a campaign whose workflow an operator
// terminates mid-campaign (the run exits 1) starts attempt 2 from the
// round after its last committed one when run again; whatever the
// terminated round had written stays under attempt 1's keys.
func TestRestartAfterTermination(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack")
	}
	interruptAndRestart(t, "terminated", exitFailure, "terminated", func(_ func(args ...string) (int, string, string), ep devstack.Endpoints) {
		c, err := client.Dial(client.Options{HostPort: ep.Temporal, Namespace: ep.Namespace, Logger: connect.QuietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.TerminateWorkflow(context.Background(), "terminated", "", "operator"); err != nil {
			t.Fatal(err)
		}
	})
}
