package workers_test

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
)

// TestRetentionEveryMethod runs every method for 4 rounds on the golden
// healthcare federation twice, keeping everything and keeping the site
// models of the last round only (keep_site_models 1, so each round deletes
// the previous round's local models and control updates before the next
// starts). Nothing a later round reads may have been pruned: SCAFFOLD's
// control variates, pFedMe's and LocalOnly's site state, FoolsGold's
// histories and norm clipping's global model in the server state,
// pTopoFL's clustering and descriptors. So the curves and every model the
// sites hold after round 4 must be the same bits, no manifest may list a
// pruned role among the artifacts its round read, and the uploads of
// rounds 1–3 must be gone while round 4's stay.
func TestRetentionEveryMethod(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack and runs 22 campaigns")
	}
	s := startStack(t)
	sites, rows, _ := goldenSites(t, s.dataDir)
	startWorkers(t, s, sites)
	const rounds = 4
	for _, m := range learn.Methods {
		t.Run(string(m), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			type result struct {
				out  pipeline.CampaignWorkflowOutput
				held map[string][]float64 // site → params of the model it holds after the last round
			}
			var res [2]result
			for i, keep := range []int{0, 1} {
				spec := pipeline.CampaignSpec{
					Campaign: "retention-" + string(m) + []string{"-all", "-1"}[i], Method: m, Preset: method.Paper,
					Rounds: rounds, Seed: 42, Sites: sites, Bucket: s.store.Bucket(), DescriptorRows: rows,
					Hyperparameters: method.Defaults(method.Paper), KeepSiteModels: keep,
				}.WithDefaults()
				if m == learn.TrimmedMean {
					spec.Hyperparameters.TrimFraction = 0.2 // cuts ⌊0.2·8⌋ = 1 model at each end
				}
				if err := spec.Validate(); err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				run, err := s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: spec.Campaign, TaskQueue: pipeline.ServerTaskQueue},
					pipeline.CampaignWorkflowName, pipeline.CampaignWorkflowInput{Spec: spec})
				if err != nil {
					t.Fatal(err)
				}
				if err := run.Get(ctx, &res[i].out); err != nil {
					t.Fatalf("keep %d: %v", keep, err)
				}
				t.Logf("keep %d: %d rounds in %v", keep, rounds, time.Since(start).Round(time.Millisecond))
				res[i].held = map[string][]float64{}
				for r := 1; r <= rounds; r++ {
					var man pipeline.RoundManifest
					if _, err := s.store.GetJSONKey(ctx, artifact.ManifestKey(spec.Campaign, r), &man); err != nil {
						t.Fatal(err)
					}
					// The manifest lists every artifact the round read: none
					// may be of a role the policy prunes. (The curves alone
					// would not show such a read: with every worker in one
					// process, the store's cache could still serve a
					// deleted object.)
					for _, in := range man.Inputs {
						if in.Role == pipeline.RoleLocalModel || in.Role == pipeline.RoleControl {
							t.Errorf("keep %d, round %d reads %s of %s (%s)", keep, r, in.Role, in.Site, in.Ref.Key)
						}
					}
					for _, o := range man.Outputs {
						if r == rounds && o.Role == pipeline.RoleSiteModel {
							mod, err := s.store.GetModel(ctx, o.Ref)
							if err != nil {
								t.Fatalf("round %d: site model of %s: %v", r, o.Site, err)
							}
							res[i].held[o.Site] = mod.Params
						}
						if o.Role != pipeline.RoleLocalModel && o.Role != pipeline.RoleControl {
							continue
						}
						ok, err := s.store.Exists(ctx, o.Ref.Key)
						if err != nil {
							t.Fatal(err)
						}
						if want := keep == 0 || r == rounds; ok != want {
							t.Errorf("keep %d, round %d: %s of %s in S3 %v, want %v", keep, r, o.Role, o.Site, ok, want)
						}
					}
				}
			}
			all, kept := res[0], res[1]
			if !sameBits(all.out.AUCCurve, kept.out.AUCCurve) || !sameBits(all.out.AccCurve, kept.out.AccCurve) {
				t.Errorf("curves differ:\nkeep all %v %v\nkeep 1   %v %v", all.out.AUCCurve, all.out.AccCurve, kept.out.AUCCurve, kept.out.AccCurve)
			}
			if len(all.held) != len(sites) {
				t.Fatalf("%d site models after round %d, want %d", len(all.held), rounds, len(sites))
			}
			for site, p := range all.held {
				if !sameBits(p, kept.held[site]) {
					t.Errorf("site %s: the model held after round %d differs with the policy", site, rounds)
				}
			}
		})
	}
}
