package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/store"
)

// TestRetentionPolicy runs the same 3-site, 4-round SCAFFOLD campaign
// (local models, control-variate updates, site and server state: every
// kind of per-round artifact) on the embedded stack twice, once keeping
// everything and once with --keep-site-models 1. With the policy: the
// results are the same; the local models and control updates of rounds
// 1–3 are gone from S3 and round 4's are there; every aggregate and server
// state is there; the manifests still list everything; verify passes and
// reports the pruned artifacts. Then an aggregate deleted by hand, and a
// local model of the kept round, are each reported missing by name.
func TestRetentionPolicy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack")
	}
	fed := smallFederation(t)
	dataDir := filepath.Join(t.TempDir(), "local")
	const all, kept = "keep-all", "keep-1"
	const rounds, sites = 4, 3
	results := map[string]campaign.Result{}
	for _, c := range []struct {
		name, keep string
	}{{all, "0"}, {kept, "1"}} {
		start := time.Now()
		code, stdout, stderr := runCLI("run", "--local", "--data-dir", dataDir, "--federation", fed, "--method", "scaffold",
			"--rounds", "4", "--seed", "7", "--campaign", c.name, "--keep-site-models", c.keep, "--format", "json")
		if code != exitOK {
			t.Fatalf("run %s: exit %d\n%s", c.name, code, stderr)
		}
		var res campaign.Result
		if err := json.Unmarshal([]byte(stdout), &res); err != nil {
			t.Fatalf("run %s: %v\n%s", c.name, err, stdout)
		}
		results[c.name] = res
		t.Logf("campaign %s ran in %v", c.name, time.Since(start))
	}
	// Another policy under the same name is another campaign: refused
	// before anything starts, naming the policy, instead of running the
	// stored spec.
	code, stdout, stderr := runCLI("run", "--local", "--data-dir", dataDir, "--federation", fed, "--method", "scaffold",
		"--rounds", "4", "--seed", "7", "--campaign", kept, "--keep-site-models", "3")
	if want := "campaign " + kept + " exists with a different spec: keep_site_models 1 → 3; use --new-campaign"; code != exitInput || !strings.Contains(stderr, want) || stdout != "" {
		t.Errorf("another policy under the same name: exit %d, stderr %q; want exit 2 saying %q", code, stderr, want)
	}
	// The policy changes what stays in S3, never a result.
	if a, k := results[all], results[kept]; !slices.Equal(a.AUCCurve, k.AUCCurve) || !slices.Equal(a.AccCurve, k.AccCurve) || len(a.AUCCurve) != rounds {
		t.Errorf("curves differ: keep all %v %v, keep 1 %v %v", a.AUCCurve, a.AccCurve, k.AUCCurve, k.AccCurve)
	}

	var aggregate, keptModel string
	onStack(t, dataDir, func(ctx context.Context, st *store.Store, mc *minio.Client) {
		bytes := map[string]int64{}
		for _, c := range []string{all, kept} {
			n := 0
			for obj := range mc.ListObjects(ctx, st.Bucket(), minio.ListObjectsOptions{Prefix: artifact.CampaignPrefix(c), Recursive: true}) {
				if obj.Err != nil {
					t.Fatal(obj.Err)
				}
				bytes[c] += obj.Size
				n++
			}
			t.Logf("campaign %s: %d objects, %d bytes in S3", c, n, bytes[c])
		}
		if bytes[kept] >= bytes[all] {
			t.Errorf("the policy saved nothing: %d bytes with it, %d without", bytes[kept], bytes[all])
		}
		objs, err := campaign.ReadManifests(ctx, st, kept)
		if err != nil {
			t.Fatal(err)
		}
		if len(objs.Manifests) != rounds {
			t.Fatalf("%d manifests, want %d", len(objs.Manifests), rounds)
		}
		for _, sm := range objs.Manifests {
			m := sm.Manifest
			want := pipeline.PruningAt(1, sm.Round)
			if (m.Pruned == nil) != (want == nil) || (want != nil && m.Pruned.Round != want.Round) {
				t.Errorf("round %d: pruned %+v, want %+v", sm.Round, m.Pruned, want)
			}
			roles := map[string]int{}
			for _, a := range m.Outputs {
				roles[a.Role]++
				exists, err := st.Exists(ctx, a.Ref.Key)
				if err != nil {
					t.Fatal(err)
				}
				gone := sm.Round < rounds && (a.Role == pipeline.RoleLocalModel || a.Role == pipeline.RoleControl)
				if exists == gone {
					t.Errorf("round %d: %s %s: in S3 %v, want %v", sm.Round, a.Role, a.Ref.Key, exists, !gone)
				}
				switch {
				case a.Role == pipeline.RoleAggregate && sm.Round == 2:
					aggregate = a.Ref.Key
				case a.Role == pipeline.RoleLocalModel && sm.Round == rounds && keptModel == "":
					keptModel = a.Ref.Key
				}
			}
			// The manifests list everything, pruned or not.
			if roles[pipeline.RoleLocalModel] != sites || roles[pipeline.RoleControl] != sites || roles[pipeline.RoleAggregate] != 1 || roles[pipeline.RoleServerState] != 1 {
				t.Errorf("round %d lists %v", sm.Round, roles)
			}
		}
	})

	code, stdout, stderr = runCLI("verify", kept, "--local", "--data-dir", dataDir)
	wantLines := []string{
		"9 site models of rounds 1–3 pruned by the retention policy (keep the last round); their sha256 stay in the manifests",
		"9 control-variate updates of rounds 1–3 pruned by the retention policy (keep the last round); their sha256 stay in the manifests",
	}
	for _, w := range wantLines {
		if code != exitOK || !strings.Contains(stdout, w) {
			t.Errorf("verify: exit %d, stdout %q lacks %q; stderr %s", code, stdout, w, stderr)
		}
	}
	if !strings.Contains(stdout, "verified 4 rounds, ") || !strings.Contains(stdout, "(and 18 pruned by the retention policy)") {
		t.Errorf("verify summary: %q", stdout)
	}
	code, rep := verifyJSON(t, dataDir, kept)
	wantPruned := []campaign.PrunedArtifacts{
		{Role: pipeline.RoleLocalModel, Artifacts: 9, FirstRound: 1, LastRound: 3, KeepRounds: 1},
		{Role: pipeline.RoleControl, Artifacts: 9, FirstRound: 1, LastRound: 3, KeepRounds: 1},
	}
	if code != exitOK || !rep.OK || !slices.Equal(rep.Pruned, wantPruned) || !rep.TipChecked {
		t.Errorf("verify json: exit %d, %+v", code, rep)
	}
	code, rep = verifyJSON(t, dataDir, all)
	if code != exitOK || !rep.OK || rep.Pruned != nil {
		t.Errorf("verify keep-all: exit %d, %+v", code, rep)
	}

	// Objects the policy did not prune are still problems when missing.
	onStack(t, dataDir, func(ctx context.Context, st *store.Store, mc *minio.Client) {
		for _, k := range []string{aggregate, keptModel} {
			if k == "" {
				t.Fatal("no aggregate of round 2 or local model of round 4 in the manifests")
			}
			if err := mc.RemoveObject(ctx, st.Bucket(), k, minio.RemoveObjectOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	})
	code, stdout, _ = runCLI("verify", kept, "--local", "--data-dir", dataDir)
	for _, w := range []string{"round 2  missing_artifact  " + aggregate, "round 4  missing_artifact  " + keptModel, wantLines[0]} {
		if code != exitFailure || !strings.Contains(stdout, w) {
			t.Errorf("verify after deleting by hand: exit %d, stdout lacks %q:\n%s", code, w, stdout)
		}
	}
	// Every record listing either key is a problem (round 2's aggregate is
	// also each site's model after round 2 and its start model in round
	// 3), and nothing else is.
	code, rep = verifyJSON(t, dataDir, kept)
	if code != exitFailure || rep.OK || !hasProblem(rep, 2, campaign.ProblemMissingArtifact, aggregate) ||
		!hasProblem(rep, 3, campaign.ProblemMissingArtifact, aggregate) || !hasProblem(rep, 4, campaign.ProblemMissingArtifact, keptModel) ||
		!slices.Equal(rep.Pruned, wantPruned) {
		t.Errorf("verify json after deleting by hand: exit %d, %+v", code, rep)
	}
	for _, p := range rep.Problems {
		if p.Kind != campaign.ProblemMissingArtifact || (p.Key != aggregate && p.Key != keptModel) {
			t.Errorf("unexpected problem %+v", p)
		}
	}
}

// TestTableRefusesRetention: a table runs as a sweep, which keeps every
// artifact, so a retention policy is refused (exit 2) before anything
// starts, with a message that says where to use it.
func TestTableRefusesRetention(t *testing.T) {
	fed := smallFederation(t)
	dataDir := filepath.Join(t.TempDir(), "never-created")
	code, _, stderr := runCLI("table", "--local", "--data-dir", dataDir, "--federation", fed, "--methods", "fedavg", "--keep-site-models", "2")
	if code != exitInput || !strings.Contains(stderr, "use starter run for a retention policy") {
		t.Errorf("table --keep-site-models: exit %d, %s", code, stderr)
	}
}
