package main

import (
	"context"
	"encoding/json"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/internal/connect"
	"github.com/ptopofl/ptopofl/internal/devstack"
	"github.com/ptopofl/ptopofl/internal/stackconn"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/store"
)

// onStack brings the local stack over dataDir up in this process, hands f
// the store and a raw S3 client (to change objects behind the store's
// back), and stops the stack again so that the next CLI command can start it.
func onStack(t *testing.T, dataDir string, f func(ctx context.Context, st *store.Store, mc *minio.Client)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := stackconn.Flags{Local: true, DataDir: dataDir, Remote: connect.Flags{Bucket: connect.DefaultBucket}, Format: "json"}
	e, err := conn.Connect(ctx, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ak, sk, err := devstack.ReadCredentials(filepath.Join(dataDir, devstack.CredentialsFile))
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(e.Local.S3URL)
	if err != nil {
		t.Fatal(err)
	}
	mc, err := minio.New(u.Host, &minio.Options{Creds: credentials.NewStaticV4(ak, sk, ""), Region: store.Region, BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	f(ctx, e.Svc.Store, mc)
}

func verifyJSON(t *testing.T, dataDir, name string) (int, campaign.VerifyReport) {
	t.Helper()
	code, stdout, stderr := runCLI("verify", name, "--local", "--data-dir", dataDir, "--format", "json")
	var rep campaign.VerifyReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("verify --format json: %v\nstdout %s\nstderr %s", err, stdout, stderr)
	}
	return code, rep
}

// hasProblem reports whether rep lists a problem of kind at key in round.
func hasProblem(rep campaign.VerifyReport, round int, kind, key string) bool {
	return slices.ContainsFunc(rep.Problems, func(p campaign.Problem) bool {
		return p.Round == round && p.Kind == kind && p.Key == key
	})
}

// TestVerifyExportHistory runs a 3-site, 3-round fedavg campaign on the
// embedded stack, then: verify is clean; export and history equal the
// manifests; each kind of tampering (a changed model, an altered manifest,
// an altered last manifest, a deleted manifest) makes verify exit 1 naming
// the round and the key.
func TestVerifyExportHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack")
	}
	fed := smallFederation(t)
	dataDir := filepath.Join(t.TempDir(), "local")
	const c = "verify-c1"
	start := time.Now()
	code, _, stderr := runCLI("run", "--local", "--data-dir", dataDir, "--federation", fed, "--method", "fedavg",
		"--rounds", "3", "--seed", "7", "--campaign", c, "--format", "json")
	if code != exitOK {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	t.Logf("campaign ran in %v", time.Since(start))

	// Clean: exit 0 and the one-line summary.
	code, stdout, stderr := runCLI("verify", c, "--local", "--data-dir", dataDir)
	if code != exitOK || !strings.HasPrefix(stdout, "verified 3 rounds, ") || strings.Count(stdout, "\n") != 1 {
		t.Fatalf("clean verify: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, rep := verifyJSON(t, dataDir, c)
	if code != exitOK || !rep.OK || rep.Rounds != 3 || rep.Artifacts == 0 || rep.References < rep.Artifacts || !rep.TipChecked || rep.SpecHash == "" {
		t.Fatalf("clean verify json: exit %d, %+v", code, rep)
	}

	// The manifests as stored, to compare export and history with.
	var manifests []campaign.StoredManifest
	var modelKey string
	var modelBytes, m2Bytes []byte
	onStack(t, dataDir, func(ctx context.Context, st *store.Store, mc *minio.Client) {
		objs, err := campaign.ReadManifests(ctx, st, c)
		if err != nil {
			t.Fatal(err)
		}
		manifests = objs.Manifests
		modelKey = artifact.ModelKey(c, 2, "site1")
		if _, modelBytes, err = st.GetKey(ctx, modelKey); err != nil {
			t.Fatal(err)
		}
		if _, m2Bytes, err = st.GetKey(ctx, artifact.ManifestKey(c, 2)); err != nil {
			t.Fatal(err)
		}
	})
	if len(manifests) != 3 {
		t.Fatalf("%d manifests, want 3", len(manifests))
	}

	// export: one row per round and site, values from the manifests.
	out := filepath.Join(t.TempDir(), "rows.parquet")
	code, _, stderr = runCLI("export", c, "--local", "--data-dir", dataDir, "--out", out, "--format", "json")
	if code != exitOK {
		t.Fatalf("export: exit %d\n%s", code, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := store.DecodeExport(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 9 {
		t.Fatalf("export: %d rows, want 3 rounds x 3 sites", len(rows))
	}
	for i, r := range rows {
		sm := manifests[i/3]
		m := sm.Manifest
		site := m.Sites[i%3]
		var met pipeline.SiteMetrics
		for _, x := range m.Metrics {
			if x.Site == site {
				met = x
			}
		}
		var model *string
		for _, a := range m.Outputs {
			if a.Role == pipeline.RoleLocalModel && a.Site == site {
				model = &a.Ref.SHA256
			}
		}
		ok := r.Campaign == c && r.Method == "fedavg" && r.Round == m.Round && r.Site == site &&
			r.Participated == slices.Contains(m.Participants, site) && r.DropReason == nil &&
			r.AUC != nil && *r.AUC == met.AUC && r.Acc != nil && *r.Acc == met.Accuracy &&
			r.NumTrain != nil && *r.NumTrain == met.NumTrain && met.NumTrain > 0 &&
			r.ModelSHA256 != nil && model != nil && *r.ModelSHA256 == *model &&
			r.ManifestSHA256 == sm.SHA256 && len(sm.SHA256) == 64
		if !ok {
			t.Errorf("export row %d: %+v\nmanifest round %d: %+v", i, r, m.Round, m)
		}
	}

	// history --format json: every artifact with its full sha256.
	code, hist, stderr := runCLI("history", c, "--local", "--data-dir", dataDir, "--format", "json")
	if code != exitOK {
		t.Fatalf("history: exit %d\n%s", code, stderr)
	}
	var h struct {
		Rounds []campaign.HistoryRow `json:"rounds"`
	}
	if err := json.Unmarshal([]byte(hist), &h); err != nil || len(h.Rounds) != 3 {
		t.Fatalf("history: %v\n%s", err, hist)
	}
	for i, r := range h.Rounds {
		m := manifests[i].Manifest
		if r.SHA256 != manifests[i].SHA256 || len(r.Artifacts) != len(m.Inputs)+len(m.Outputs) || r.SpecHash != rep.SpecHash {
			t.Errorf("history round %d: sha %s, %d artifacts; want %s, %d", r.Round, r.SHA256, len(r.Artifacts), manifests[i].SHA256, len(m.Inputs)+len(m.Outputs))
		}
	}

	// A model changed in S3 after the round: reported with key and round,
	// for the round that wrote it (and any that read it).
	onStack(t, dataDir, func(ctx context.Context, st *store.Store, mc *minio.Client) {
		if _, err := st.Put(ctx, modelKey, append([]byte("x"), modelBytes...)); err != nil {
			t.Fatal(err)
		}
	})
	code, stdout, stderr = runCLI("verify", c, "--local", "--data-dir", dataDir)
	if code != exitFailure || !strings.Contains(stdout, "round 2  changed_artifact  "+modelKey) || !strings.Contains(stderr, "1 problem in its audit record") {
		t.Errorf("changed model: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	_, rep = verifyJSON(t, dataDir, c)
	if !hasProblem(rep, 2, campaign.ProblemChangedArtifact, modelKey) || rep.OK {
		t.Errorf("changed model, json: %+v", rep)
	}

	// Restore it; alter round 2's manifest: the chain breaks at round 3.
	onStack(t, dataDir, func(ctx context.Context, st *store.Store, mc *minio.Client) {
		if _, err := st.Put(ctx, modelKey, modelBytes); err != nil {
			t.Fatal(err)
		}
		altered := strings.Replace(string(m2Bytes), `"outcome": "committed"`, `"outcome": "committed" `, 1)
		if altered == string(m2Bytes) {
			t.Fatal("could not alter the manifest")
		}
		if _, err := st.Put(ctx, artifact.ManifestKey(c, 2), []byte(altered)); err != nil {
			t.Fatal(err)
		}
	})
	code, rep = verifyJSON(t, dataDir, c)
	if code != exitFailure || !hasProblem(rep, 3, campaign.ProblemChainBreak, artifact.ManifestKey(c, 3)) || len(rep.Problems) != 1 {
		t.Errorf("altered round-2 manifest: exit %d, %+v", code, rep)
	}

	// Restore it; alter the last manifest: nothing chains to it, but
	// Temporal's record of the campaign names its sha256.
	onStack(t, dataDir, func(ctx context.Context, st *store.Store, mc *minio.Client) {
		if _, err := st.Put(ctx, artifact.ManifestKey(c, 2), m2Bytes); err != nil {
			t.Fatal(err)
		}
		_, m3, err := st.GetKey(ctx, artifact.ManifestKey(c, 3))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Put(ctx, artifact.ManifestKey(c, 3), append(m3, '\n')); err != nil {
			t.Fatal(err)
		}
	})
	code, rep = verifyJSON(t, dataDir, c)
	if code != exitFailure || !hasProblem(rep, 3, campaign.ProblemTipMismatch, artifact.ManifestKey(c, 3)) || len(rep.Problems) != 1 {
		t.Errorf("altered last manifest: exit %d, %+v", code, rep)
	}

	// Delete round 2's manifest: reported missing, by name.
	onStack(t, dataDir, func(ctx context.Context, st *store.Store, mc *minio.Client) {
		if err := mc.RemoveObject(ctx, st.Bucket(), artifact.ManifestKey(c, 2), minio.RemoveObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	code, stdout, _ = runCLI("verify", c, "--local", "--data-dir", dataDir)
	if code != exitFailure || !strings.Contains(stdout, "round 2  missing_manifest  "+artifact.ManifestKey(c, 2)) {
		t.Errorf("deleted manifest: exit %d\n%s", code, stdout)
	}

	// An unknown campaign is an error, not a clean record.
	if code, _, stderr := runCLI("verify", "no-such-campaign", "--local", "--data-dir", dataDir); code != exitFailure || !strings.Contains(stderr, "nothing under") {
		t.Errorf("unknown campaign: exit %d, %s", code, stderr)
	}
	t.Logf("whole test %v", time.Since(start))
}
