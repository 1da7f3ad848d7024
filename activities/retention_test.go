package activities_test

import (
	"context"
	"slices"
	"testing"

	"github.com/ptopofl/ptopofl/activities"
	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/pipeline"
)

// TestPruneRound: pruning round 2 deletes its local models and control
// updates (also of a later attempt's folder) and nothing else: not its
// aggregate, server state, site state, descriptor or manifest, and nothing
// of rounds 1 and 3. A second run deletes nothing more and succeeds.
func TestPruneRound(t *testing.T) {
	ctx := context.Background()
	const c = "prune-c1"
	put := func(key, body string) {
		t.Helper()
		if _, err := testStore.Put(ctx, key, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	var kept, pruned []string
	for r := 1; r <= 3; r++ {
		for _, site := range []string{"s0", "s1"} {
			for _, k := range []string{artifact.ModelKey(c, r, site), artifact.ControlKey(c, r, site)} {
				put(k, "upload of "+site)
				if r == 2 {
					pruned = append(pruned, k)
				} else {
					kept = append(kept, k)
				}
			}
			for _, k := range []string{artifact.SiteStateKey(c, r, site), artifact.DescriptorKey(c, r, site)} {
				put(k, "state")
				kept = append(kept, k)
			}
		}
		for _, k := range []string{artifact.AggregateKey(c, r, "global"), artifact.ServerStateKey(c, r), artifact.ManifestKey(c, r)} {
			put(k, "kept")
			kept = append(kept, k)
		}
	}
	later := artifact.RoundPrefix(c, 2) + "attempt-2/models/s0.parquet"
	put(later, "upload of s0")
	pruned = append(pruned, later)

	srv := activities.NewServer(testStore)
	in := pipeline.PruneRoundInput{Bucket: testStore.Bucket(), Campaign: c, Pruning: *pipeline.PruningAt(1, 3)}
	out, err := srv.PruneRound(ctx, in)
	// Five uploads: 2 sites × (model, control) + the later attempt's model.
	// Bytes: 4 × len("upload of s0") + len("upload of s0") = 5 × 12.
	if err != nil || out.Deleted != 5 || out.Bytes != 5*12 {
		t.Fatalf("PruneRound = %+v, %v; want 5 objects, 60 bytes", out, err)
	}
	keys, err := testStore.List(ctx, artifact.CampaignPrefix(c))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(kept)
	if !slices.Equal(keys, kept) {
		t.Errorf("after pruning: %v\nwant %v", keys, kept)
	}
	for _, k := range pruned {
		if slices.Contains(keys, k) {
			t.Errorf("%s not pruned", k)
		}
	}
	again, err := srv.PruneRound(ctx, in)
	if err != nil || again.Deleted != 0 {
		t.Errorf("second run = %+v, %v; want nothing deleted, no error", again, err)
	}

	bad := in
	bad.Pruning.Roles = []string{pipeline.RoleAggregate}
	if _, err := srv.PruneRound(ctx, bad); err == nil {
		t.Error("pruning aggregates was accepted")
	}
}
