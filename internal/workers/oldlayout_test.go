package workers_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/pipeline"
)

// oldLayout holds the objects of three campaigns written by the binary
// before sites read only their own objects (testdata/old-layout/README.md).
const oldLayout = "../../testdata/old-layout"

// TestCampaignsWrittenBefore loads the stored campaigns of the old layout
// (pTopoFL with "cluster-<c>" models, FoolsGold and SCAFFOLD with one
// server state every site read; 3-round paper-preset campaigns on the
// golden federation, paused after round 2 with their state in S3) into the
// local stack and holds the current code to them:
//   - verify passes on each, history and export read every round;
//   - a site's identity may no longer read their cluster models or server
//     state;
//   - each resumes from its paused state with isolated site identities:
//     round 3 reissues each pTopoFL site's cluster model under its own
//     name (same sha256) and SCAFFOLD's control variate in a shared state,
//     and the campaign's curves are bit for bit those of the same campaign
//     run from round 1 by the current code (so rounds 1 and 2 of the old
//     binary are too);
//   - verify, history and export pass on the resumed campaigns.
func TestCampaignsWrittenBefore(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack and runs six campaigns")
	}
	fixture, err := filepath.Abs(oldLayout)
	if err != nil {
		t.Fatal(err)
	}
	s := startStack(t)
	sites, _, _ := goldenSites(t, s.dataDir)
	startWorkers(t, s, sites)
	ctx := context.Background()
	err = filepath.WalkDir(fixture, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Base(path) == "README.md" {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(fixture, path)
		if err != nil {
			return err
		}
		_, err = s.store.Put(ctx, filepath.ToSlash(rel), b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	check := func(t *testing.T, c string, rounds int) {
		t.Helper()
		rep, err := campaign.VerifyRecord(ctx, s.store, c, 4)
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK || rep.Rounds != rounds {
			t.Errorf("verify %s: ok %v, %d rounds (want %d): %v", c, rep.OK, rep.Rounds, rounds, rep.Problems)
		}
		hist, err := campaign.History(ctx, s.store, c)
		if err != nil || len(hist) != rounds {
			t.Fatalf("history %s: %d rows, %v", c, len(hist), err)
		}
		objs, err := campaign.ReadManifests(ctx, s.store, c)
		if err != nil {
			t.Fatal(err)
		}
		effective, _ := objs.Effective()
		exp, err := campaign.ExportRows(effective)
		if err != nil || len(exp) != rounds*len(sites) {
			t.Fatalf("export %s: %d rows, %v", c, len(exp), err)
		}
		for _, r := range exp {
			if r.SiteModelSHA256 == nil || r.AUC == nil {
				t.Errorf("export %s round %d site %s: no site model or AUC", c, r.Round, r.Site)
			}
		}
	}

	for _, m := range []learn.Method{learn.PTopoFL, learn.FoolsGold, learn.SCAFFOLD} {
		t.Run(string(m), func(t *testing.T) {
			old := "old-" + string(m)
			check(t, old, 2)

			// What the old layout let every site read is now denied.
			a := siteStore(t, s, "client0")
			var denied []string
			switch m {
			case learn.PTopoFL:
				denied = []string{artifact.AggregateKey(old, 1, "cluster-0"), artifact.AggregateKey(old, 2, "cluster-1")}
			default:
				denied = []string{artifact.ServerStateKey(old, 2)}
			}
			for _, k := range denied {
				if _, _, err := a.GetKey(ctx, k); !accessDenied(err) {
					t.Errorf("client0 reads %s: %v, want AccessDenied", k, err)
				}
			}

			var spec pipeline.CampaignSpec
			if _, err := s.store.GetJSONKey(ctx, artifact.SpecKey(old), &spec); err != nil {
				t.Fatal(err)
			}
			paused, _, err := s.store.GetKey(ctx, artifact.PausedStateKey(old, 2))
			if err != nil {
				t.Fatal(err)
			}
			resumed := resumeCampaign(t, s.client, spec, &paused)

			// The same campaign from round 1, all of it by this code.
			fresh := spec
			fresh.Campaign = "new-" + string(m)
			if _, err := s.store.PutJSON(ctx, artifact.SpecKey(fresh.Campaign), fresh); err != nil {
				t.Fatal(err)
			}
			want := resumeCampaign(t, s.client, fresh, nil)
			if !sameBits(resumed.AUCCurve, want.AUCCurve) || !sameBits(resumed.AccCurve, want.AccCurve) {
				t.Errorf("curves of the resumed campaign\n %v %v\nof the same campaign run by this code\n %v %v", resumed.AUCCurve, resumed.AccCurve, want.AUCCurve, want.AccCurve)
			}

			// Round 3 reissued what the sites start from, once, in round 2's folder.
			var man pipeline.RoundManifest
			if _, err := s.store.GetJSONKey(ctx, artifact.ManifestKey(old, 3), &man); err != nil {
				t.Fatal(err)
			}
			var prev pipeline.RoundManifest
			if _, err := s.store.GetJSONKey(ctx, artifact.ManifestKey(old, 2), &prev); err != nil {
				t.Fatal(err)
			}
			held := map[string]pipeline.ArtifactRef{}
			for _, o := range prev.Outputs {
				if o.Role == pipeline.RoleSiteModel {
					held[o.Site] = o.Ref
				}
			}
			var reissued, shared []string
			for _, o := range man.Outputs {
				switch o.Role {
				case pipeline.RoleStartModel:
					reissued = append(reissued, o.Site)
					if o.Ref.Key != artifact.AggregateKey(old, 2, o.Site) || o.Ref.SHA256 != held[o.Site].SHA256 {
						t.Errorf("%s's reissued model %s (%.12s), it held %s (%.12s)", o.Site, o.Ref.Key, o.Ref.SHA256, held[o.Site].Key, held[o.Site].SHA256)
					}
				case pipeline.RoleSharedState:
					shared = append(shared, o.Ref.Key)
				}
			}
			switch m {
			case learn.PTopoFL:
				if len(reissued) != len(sites) || len(shared) != 0 {
					t.Errorf("round 3 reissued models of %v and shared states %v, want every site's model", reissued, shared)
				}
			case learn.SCAFFOLD:
				if want := []string{artifact.SharedStateKey(old, 2), artifact.SharedStateKey(old, 3)}; len(reissued) != 0 || !slices.Equal(shared, want) {
					t.Errorf("round 3 reissued models of %v and shared states %v, want no model and %v", reissued, shared, want)
				}
			default:
				if len(reissued) != 0 || len(shared) != 0 {
					t.Errorf("round 3 reissued models of %v and shared states %v, want nothing", reissued, shared)
				}
			}
			for _, in := range man.Inputs {
				if in.Site != "" && !artifact.SiteMayRead(in.Site, in.Ref.Key) && in.Role != pipeline.RoleDescriptor {
					t.Errorf("round 3: %s's input %s (%s) is not readable by it", in.Site, in.Ref.Key, in.Role)
				}
				if strings.Contains(in.Ref.Key, "/cluster-") {
					t.Errorf("round 3 read %s", in.Ref.Key)
				}
			}
			check(t, old, 3)
		})
	}
}

// resumeCampaign runs spec's campaign to its end, from the state saved at
// resume when it is not nil, and returns its output.
func resumeCampaign(t *testing.T, c client.Client, spec pipeline.CampaignSpec, resume *artifact.Ref) pipeline.CampaignWorkflowOutput {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: spec.Campaign, TaskQueue: pipeline.ServerTaskQueue},
		pipeline.CampaignWorkflowName, pipeline.CampaignWorkflowInput{Spec: spec, ResumeFrom: resume})
	if err != nil {
		t.Fatal(err)
	}
	var out pipeline.CampaignWorkflowOutput
	if err := run.Get(ctx, &out); err != nil {
		t.Fatalf("%s: %v", spec.Campaign, err)
	}
	if out.State != pipeline.StateDone || out.RoundsDone != spec.Rounds {
		t.Fatalf("%s: %s after %d rounds", spec.Campaign, out.State, out.RoundsDone)
	}
	return out
}
