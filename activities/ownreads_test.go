package activities_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/ptopofl/ptopofl/activities"
	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/store"
)

// roundOne runs round 1's site activities (descriptor under pTopoFL,
// training) of m for the golden sites client0–client7 and returns what
// the server's Aggregate needs.
func roundOne(t *testing.T, campaign string, m learn.Method) pipeline.AggregateInput {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	srv := activities.NewServer(testStore)
	var sites []string
	for k := range 8 {
		sites = append(sites, fmt.Sprintf("client%d", k))
	}
	h := method.Defaults(method.Paper)
	server := pipeline.ServerCall{Campaign: campaign, Round: 1, Method: m, Preset: method.Paper, Hyperparameters: h,
		Bucket: testStore.Bucket(), CampaignSeed: 42, Sites: sites}
	in := pipeline.AggregateInput{ServerCall: server}
	envs := make([]*testsuite.TestActivityEnvironment, len(sites))
	calls := make([]pipeline.SiteCall, len(sites))
	for k, name := range sites {
		envs[k] = s.NewTestActivityEnvironment()
		activities.NewSite(name, golden, testStore, dataset.SiteOptions{}).Register(envs[k])
		calls[k] = call(campaign, name, 1)
		calls[k].Method, calls[k].SiteIndex = m, k
		if m != learn.PTopoFL {
			continue
		}
		v, err := envs[k].ExecuteActivity(pipeline.ActivityComputeDescriptor, pipeline.ComputeDescriptorInput{SiteCall: calls[k]})
		if err != nil {
			t.Fatal(err)
		}
		var d pipeline.ComputeDescriptorOutput
		if err := v.Get(&d); err != nil {
			t.Fatal(err)
		}
		in.Descriptors = append(in.Descriptors, pipeline.SiteArtifact{Site: name, Ref: d.Descriptor})
	}
	if m == learn.PTopoFL {
		cl, err := srv.ClusterSites(context.Background(), pipeline.ClusterSitesInput{ServerCall: server, Descriptors: in.Descriptors, Fresh: sites})
		if err != nil {
			t.Fatal(err)
		}
		in.Clustering, in.Clusters = &cl.Clustering, cl.Sites
	}
	for k, name := range sites {
		tin := pipeline.TrainLocalInput{SiteCall: calls[k]}
		if m == learn.PTopoFL {
			tin.Descriptor, tin.Cluster = &in.Descriptors[k].Ref, &in.Clusters[k]
		}
		v, err := envs[k].ExecuteActivity(pipeline.ActivityTrainLocal, tin)
		if err != nil {
			t.Fatal(err)
		}
		var tr pipeline.TrainLocalOutput
		if err := v.Get(&tr); err != nil {
			t.Fatal(err)
		}
		in.Updates = append(in.Updates, pipeline.SiteUpdate{Site: name, Model: tr.Model, Control: tr.Control, NumTrain: tr.NumTrain})
	}
	return in
}

// TestAggregateWritesEachSiteItsOwn: pTopoFL's Aggregate writes each site
// its cluster's model under its own name (members of a cluster get the
// same bytes, one sha256, named "cluster-<c>" inside; different clusters
// differ) and no "cluster-<c>" object; SCAFFOLD's writes its control
// variate alone in the shared state, the same vector as in the server's
// own state; FoolsGold's has no shared state.
func TestAggregateWritesEachSiteItsOwn(t *testing.T) {
	ctx := context.Background()
	srv := activities.NewServer(testStore)

	in := roundOne(t, "own-ptopofl", learn.PTopoFL)
	out, err := srv.Aggregate(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	cluster := map[string]int{}
	for _, c := range in.Clusters {
		cluster[c.Site] = c.Cluster
	}
	byCluster := map[int]string{} // cluster → sha256 of its model
	for i, m := range out.Models {
		if want := artifact.AggregateKey("own-ptopofl", 1, m.Site); m.Ref.Key != want || out.Aggregates[i].Name != m.Site || out.Aggregates[i].Ref != m.Ref {
			t.Errorf("%s holds %s (aggregate %s), want %s", m.Site, m.Ref.Key, out.Aggregates[i].Name, want)
		}
		c := cluster[m.Site]
		if sha, ok := byCluster[c]; ok && sha != m.Ref.SHA256 {
			t.Errorf("%s's copy of cluster %d's model has sha256 %.12s, another member's %.12s", m.Site, c, m.Ref.SHA256, sha)
		}
		byCluster[c] = m.Ref.SHA256
		rec, err := testStore.GetModel(ctx, m.Ref) // S3, sha256 checked
		if err != nil {
			t.Fatal(err)
		}
		if rec.Site != fmt.Sprintf("cluster-%d", c) || rec.Kind != store.KindAggregate {
			t.Errorf("%s's model is named %q (%s), want cluster-%d", m.Site, rec.Site, rec.Kind, c)
		}
	}
	if len(byCluster) < 2 || byCluster[0] == byCluster[1] {
		t.Errorf("clusters' models %v: want two different ones", byCluster)
	}
	keys, err := testStore.List(ctx, artifact.RoundPrefix("own-ptopofl", 1)+"aggregate/")
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != len(in.Updates) || slices.ContainsFunc(keys, func(k string) bool { return strings.Contains(k, "/cluster-") }) {
		t.Errorf("aggregate/ holds %v, want one model per site and no cluster model", keys)
	}
	if out.ServerState != nil || out.SharedState != nil {
		t.Errorf("pTopoFL wrote a server state %v or a shared state %v", out.ServerState, out.SharedState)
	}

	in = roundOne(t, "own-scaffold", learn.SCAFFOLD)
	out, err = srv.Aggregate(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if out.SharedState == nil || out.SharedState.Key != artifact.SharedStateKey("own-scaffold", 1) || out.ServerState == nil {
		t.Fatalf("SCAFFOLD's shared state %v, server state %v", out.SharedState, out.ServerState)
	}
	shared, err := testStore.GetVectorsCached(ctx, *out.SharedState)
	if err != nil {
		t.Fatal(err)
	}
	own, err := testStore.GetVectorsCached(ctx, *out.ServerState)
	if err != nil {
		t.Fatal(err)
	}
	if len(shared) != 1 || len(shared[0].Vectors) != 1 || shared[0].Site != "" ||
		!slices.Equal(shared[0].Vectors[store.VecControlVariate], own[0].Vectors[store.VecControlVariate]) || len(own[0].Vectors[store.VecControlVariate]) == 0 {
		t.Errorf("shared state %+v, want the server state's control variate alone", shared)
	}

	in = roundOne(t, "own-foolsgold", learn.FoolsGold)
	out, err = srv.Aggregate(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if out.ServerState == nil || out.SharedState != nil {
		t.Errorf("FoolsGold's server state %v, shared state %v: want a server state only", out.ServerState, out.SharedState)
	}
}

// TestReissue writes what a campaign of the old layout holds (a pTopoFL
// cluster model, a SCAFFOLD server state with FoolsGold-like per-site
// vectors beside its control variate) and reissues it: each site gets a
// copy under its own name in the same round folder, with the source's
// sha256; the shared state holds the control variate alone. A source whose
// bytes changed, or a key outside the campaign, is refused.
func TestReissue(t *testing.T) {
	ctx := context.Background()
	srv := activities.NewServer(testStore)
	const c = "old-layout"
	keys := artifact.RoundKeys{Campaign: c, Round: 3, Attempt: 2}
	model, err := testStore.PutModelCached(ctx, keys.Aggregate("cluster-0"), store.ModelRecord{
		Campaign: c, Round: 3, Site: "cluster-0", Method: "ptopofl", Kind: store.KindAggregate, Params: []float64{1, 2, 3},
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := store.EncodeVectors([]store.VectorRecord{{Campaign: c, Round: 3, Method: "scaffold", Kind: "server_state", Vectors: map[string][]float64{
		"global": {1, 2, 3}, store.VecControlVariate: {0.5, -0.5, 0}, "foolsgold/a": {9, 9, 9},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	state, err := testStore.Put(ctx, keys.ServerState(), b)
	if err != nil {
		t.Fatal(err)
	}
	call := pipeline.ServerCall{Campaign: c, Round: 4, Attempt: 2, Method: learn.SCAFFOLD, Bucket: testStore.Bucket()}
	out, err := srv.Reissue(ctx, pipeline.ReissueInput{ServerCall: call,
		Models: []pipeline.SiteArtifact{{Site: "a", Ref: model}, {Site: "b", Ref: model}}, ServerState: &state})
	if err != nil {
		t.Fatal(err)
	}
	for i, site := range []string{"a", "b"} {
		m := out.Models[i]
		if m.Site != site || m.Ref.Key != keys.Aggregate(site) || m.Ref.SHA256 != model.SHA256 || m.Ref.Size != model.Size {
			t.Errorf("%s: reissued %+v, want a copy of %+v at %s", site, m, model, keys.Aggregate(site))
		}
		if got, _, err := testStore.GetKey(ctx, m.Ref.Key); err != nil || got != m.Ref {
			t.Errorf("%s: S3 holds %+v, %v at the copy's key", site, got, err)
		}
	}
	if out.SharedState == nil || out.SharedState.Key != keys.SharedState() {
		t.Fatalf("shared state %v, want %s", out.SharedState, keys.SharedState())
	}
	recs, err := testStore.GetVectorsCached(ctx, *out.SharedState)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || len(recs[0].Vectors) != 1 || !slices.Equal(recs[0].Vectors[store.VecControlVariate], []float64{0.5, -0.5, 0}) || recs[0].Round != 3 {
		t.Errorf("shared state %+v, want round 3's control variate alone", recs)
	}

	// The source changed since the manifest recorded it: nothing is copied.
	changed := model
	changed.SHA256 = strings.Repeat("0", 64)
	if _, err := srv.Reissue(ctx, pipeline.ReissueInput{ServerCall: call, Models: []pipeline.SiteArtifact{{Site: "c", Ref: changed}}}); !errors.Is(err, store.ErrIntegrity) {
		t.Errorf("a changed source: %v, want ErrIntegrity", err)
	}
	if ok, _ := testStore.Exists(ctx, keys.Aggregate("c")); ok {
		t.Error("a copy of a changed source was written")
	}
	other := model
	other.Key = artifact.AggregateKey("another", 1, "cluster-0")
	_, err = srv.Reissue(ctx, pipeline.ReissueInput{ServerCall: call, Models: []pipeline.SiteArtifact{{Site: "c", Ref: other}}})
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || !app.NonRetryable() {
		t.Errorf("a model of another campaign: %v, want a non-retryable error", err)
	}
}
