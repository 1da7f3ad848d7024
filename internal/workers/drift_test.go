package workers_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/store"
)

// threeClusters is a site file of n points in three tight groups ten apart
// on the x1 axis, labelled by the sign of x2; uniform one of n points
// uniform on the unit square, labelled by x1 > 0.5. Their descriptors are
// far apart (normalised distance about 0.5, measured with
// tda.ComputeDescriptor at n_sub 80), two sites of one kind close (< 0.1).
func threeClusters(rng *rand.Rand, n int) string {
	var b strings.Builder
	b.WriteString("x1,x2,y\n")
	for i := 0; i < n; i++ {
		x2 := 0.1 * rng.NormFloat64()
		y := 0
		if x2 > 0 {
			y = 1
		}
		fmt.Fprintf(&b, "%.4f,%.4f,%d\n", float64(i%3)*10+0.1*rng.NormFloat64(), x2, y)
	}
	return b.String()
}

func uniform(rng *rand.Rand, n int) string {
	var b strings.Builder
	b.WriteString("x1,x2,y\n")
	for i := 0; i < n; i++ {
		x1 := rng.Float64()
		y := 0
		if x1 > 0.5 {
			y = 1
		}
		fmt.Fprintf(&b, "%.4f,%.4f,%d\n", x1, rng.Float64(), y)
	}
	return b.String()
}

// TestDriftReclustersOnceInDefaultCampaign runs a default-preset pTopoFL
// campaign of 5 rounds on the local stack over two sites of three tight
// groups (c0, c1) and two of uniform points (u0, u1), where c0's data
// become uniform from round 3 on (a from-round-0003 directory). With the
// default settings the drift of c0 must be measured, pass the threshold
// in round 3 and re-cluster it there, into the uniform sites' cluster,
// exactly once: its new data become its reference, so rounds 4 and 5
// measure no drift. Before, descriptors were computed in round 1 only by
// default (no re-clustering ever), and with measurements the mean
// distance from the old reference re-clustered c0 in every round after.
func TestDriftReclustersOnceInDefaultCampaign(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack and runs a campaign")
	}
	s := startStack(t)
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 5))
	write := func(d, name, text string) {
		t.Helper()
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, site := range []string{"c0", "c1", "u0", "u1"} {
		gen := threeClusters
		if site[0] == 'u' {
			gen = uniform
		}
		write(dir, site+"_train.csv", gen(rng, 150))
		write(dir, site+"_test.csv", gen(rng, 60))
	}
	write(dataset.ShiftDir(dir, 3), "c0_train.csv", uniform(rng, 150))
	write(dataset.ShiftDir(dir, 3), "c0_test.csv", uniform(rng, 60))
	s.dataDir = dir

	fed, err := campaign.DiscoverFederation(dir)
	if err != nil {
		t.Fatal(err)
	}
	const rounds = 5
	spec, err := campaign.BuildSpec(nil, campaign.SpecOptions{
		Campaign: "drift", Method: "ptopofl", Preset: "default", Rounds: rounds, Seed: 9, Bucket: s.store.Bucket(),
	}, fed)
	if err != nil {
		t.Fatal(err)
	}
	h := spec.Hyperparameters
	if h.DriftCheckEvery != 1 || h.DriftThreshold != 0.1 || h.Clusters != 2 {
		t.Fatalf("default preset: drift_check_every %d, drift_threshold %v, clusters %d; want 1, 0.1, 2", h.DriftCheckEvery, h.DriftThreshold, h.Clusters)
	}
	startWorkers(t, s, spec.Sites)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	run, err := s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: spec.Campaign, TaskQueue: pipeline.ServerTaskQueue},
		pipeline.CampaignWorkflowName, pipeline.CampaignWorkflowInput{Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	var out pipeline.CampaignWorkflowOutput
	if err := run.Get(ctx, &out); err != nil {
		t.Fatalf("campaign failed: %v", err)
	}

	var trace []string
	for r := 1; r <= rounds; r++ {
		var m pipeline.RoundManifest
		if _, err := s.store.GetJSONKey(ctx, artifact.ManifestKey(spec.Campaign, r), &m); err != nil {
			t.Fatal(err)
		}
		if !m.DescriptorsRecomputed {
			t.Errorf("round %d: descriptors not recomputed: drift was not measured", r)
		}
		cl := map[string]pipeline.SiteCluster{}
		for _, c := range m.Clusters {
			cl[c.Site] = c
		}
		if len(cl) != 4 {
			t.Fatalf("round %d: clusters for %d sites, want 4: %+v", r, len(cl), m.Clusters)
		}
		trace = append(trace, fmt.Sprintf("round %d: c0 drift %.3f cluster %d (u0 %d, c1 %d) reclustered %v reassigned %v",
			r, cl["c0"].Drift, cl["c0"].Cluster, cl["u0"].Cluster, cl["c1"].Cluster, cl["c0"].Reclustered, cl["c0"].Reassigned))
		for _, site := range []string{"c1", "u0", "u1"} {
			if c := cl[site]; c.Drift != 0 || c.Reclustered || c.Reassigned {
				t.Errorf("round %d: unchanged site %s: drift %v, reclustered %v, reassigned %v; want 0, false, false", r, site, c.Drift, c.Reclustered, c.Reassigned)
			}
		}
		c0 := cl["c0"]
		switch {
		case r < 3 && (c0.Drift != 0 || c0.Reclustered):
			t.Errorf("round %d: c0 drift %v reclustered %v before its data changed", r, c0.Drift, c0.Reclustered)
		case r < 3 && c0.Cluster != cl["c1"].Cluster:
			t.Errorf("round %d: c0 in cluster %d, c1 in %d: want them together", r, c0.Cluster, cl["c1"].Cluster)
		case r == 3 && !(c0.Drift > h.DriftThreshold && c0.Reclustered && c0.Reassigned):
			t.Errorf("round 3: c0 drift %v reclustered %v reassigned %v; want above %v, re-clustered and moved", c0.Drift, c0.Reclustered, c0.Reassigned, h.DriftThreshold)
		case r > 3 && (c0.Drift != 0 || c0.Reclustered || c0.Reassigned):
			t.Errorf("round %d: c0 drift %v reclustered %v reassigned %v; want 0 from its new reference, no re-clustering", r, c0.Drift, c0.Reclustered, c0.Reassigned)
		}
		if r >= 3 && c0.Cluster != cl["u0"].Cluster {
			t.Errorf("round %d: c0 in cluster %d, u0 in %d: want c0 with the uniform sites after its shift", r, c0.Cluster, cl["u0"].Cluster)
		}
	}
	t.Logf("drift:\n%s", strings.Join(trace, "\n"))

	// drift_lr_factor (§3.5): the same campaign with the factor 3. In round
	// 3, the round drift re-clusters c0, c0 trains at 3 × lr and every
	// other site at lr: each site's local model equals learn.UpdateSite
	// from the model it started the round with, its round-3 data and
	// descriptor, at that rate, bit for bit (and differs at the other).
	h.DriftLRFactor = 3
	spec.Campaign, spec.Hyperparameters = "drift-lr", h
	run, err = s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: spec.Campaign, TaskQueue: pipeline.ServerTaskQueue},
		pipeline.CampaignWorkflowName, pipeline.CampaignWorkflowInput{Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Get(ctx, &out); err != nil {
		t.Fatalf("campaign with drift_lr_factor failed: %v", err)
	}
	var m pipeline.RoundManifest
	if _, err := s.store.GetJSONKey(ctx, artifact.ManifestKey(spec.Campaign, 3), &m); err != nil {
		t.Fatal(err)
	}
	refs := map[string]map[string]pipeline.ArtifactRef{}
	for _, list := range [][]pipeline.ArtifactRecord{m.Inputs, m.Outputs} {
		for _, a := range list {
			if refs[a.Role] == nil {
				refs[a.Role] = map[string]pipeline.ArtifactRef{}
			}
			refs[a.Role][a.Site] = a.Ref
		}
	}
	cfg, err := method.Resolve(learn.PTopoFL, method.Default, h)
	if err != nil {
		t.Fatal(err)
	}
	for _, site := range []string{"c0", "c1", "u0", "u1"} {
		get := func(role string) []float64 {
			ref, ok := refs[role][site]
			if !ok {
				t.Fatalf("round 3: no %s for %s", role, site)
			}
			rec, err := s.store.GetModel(ctx, artifact.Ref(ref))
			if err != nil {
				t.Fatal(err)
			}
			return rec.Params
		}
		b, err := s.store.Get(ctx, artifact.Ref(refs[pipeline.RoleDescriptor][site]))
		if err != nil {
			t.Fatal(err)
		}
		desc, err := store.DecodeDescriptor(b)
		if err != nil {
			t.Fatal(err)
		}
		d, err := dataset.LoadSiteRound(dir, site, 3, dataset.SiteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p, err := method.PrepareSite(site, d.Train.X, d.Train.Y, d.Test.X, d.Test.Y)
		if err != nil {
			t.Fatal(err)
		}
		train := func(c method.Config) []float64 {
			o, err := learn.UpdateSite(learn.SiteInput{Method: learn.PTopoFL, Round: 3, Train: p.Train, TopologyX: d.Train.X,
				Descriptor: desc.Descriptor, Pushed: get(pipeline.RoleStartModel), Config: c.Site})
			if err != nil {
				t.Fatal(err)
			}
			return o.Params
		}
		got := get(pipeline.RoleLocalModel)
		at, other := cfg.DriftLR(site == "c0"), cfg.DriftLR(site != "c0")
		if !sameBits(got, train(at)) || sameBits(got, train(other)) {
			t.Errorf("round 3, site %s: local model not trained at lr %v (re-clustered: %v)", site, at.Site.LocalGD.LR, site == "c0")
		}
	}
}
