package workers_test

import (
	"context"
	"testing"

	"github.com/ptopofl/ptopofl/aggregation"
	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/simulate"
)

// TestSoftmaxAggregation runs pTopoFL with topo_aggregation softmax (Eq.
// 12) through the pipeline:
//   - barycentre mean, paper preset, on the golden healthcare federation:
//     the AUC curve and every site's final model equal simulate.Run's bit
//     for bit, every site holds the same model, and round 1's manifest
//     records the weights α_k that aggregation.SoftmaxWeights gives on the
//     sites' descriptors;
//   - barycentre frechet under site_distance wasserstein: round 1's
//     weights are SoftmaxWeights' on the diagrams the sites stored, and
//     differ from the mean barycentre's on the same sites.
func TestSoftmaxAggregation(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack and runs two campaigns")
	}
	s := startStack(t)
	sites, rows, sims := goldenSites(t, s.dataDir)
	startSecretWorkers(t, s, sites, t.TempDir())
	ctx := context.Background()
	const rounds = 4
	weights := func(campaign string) []float64 {
		var m pipeline.RoundManifest
		if _, err := s.store.GetJSONKey(ctx, artifact.ManifestKey(campaign, 1), &m); err != nil {
			t.Fatal(err)
		}
		var w []float64
		for _, sw := range m.SiteWeights {
			w = append(w, sw.Weight)
		}
		return w
	}

	t.Run("mean", func(t *testing.T) {
		h := method.Defaults(method.Paper)
		h.TopoAggregation, h.SoftmaxLambda = string(aggregation.SoftmaxAggregation), 3
		c, err := method.Resolve(learn.PTopoFL, method.Paper, h)
		if err != nil {
			t.Fatal(err)
		}
		cfg := simulate.Config{Config: c, Rounds: rounds, Seed: 42}
		want, err := simulate.Run(sims, cfg)
		if err != nil {
			t.Fatal(err)
		}
		refAUC, _, refModels := referenceModels(t, sims, cfg)
		if !sameBits(refAUC, want.AUCCurve) {
			t.Fatalf("the test's reference loop disagrees with simulate.Run: %v vs %v", refAUC, want.AUCCurve)
		}
		spec := pipeline.CampaignSpec{Campaign: "softmax-mean", Method: learn.PTopoFL, Preset: method.Paper, Rounds: rounds, Seed: 42,
			Sites: sites, Bucket: s.store.Bucket(), DescriptorRows: rows, Hyperparameters: h}.WithDefaults()
		out := runCampaign(t, s, spec)
		if !sameBits(out.AUCCurve, want.AUCCurve) {
			t.Errorf("AUC curve %v; simulate %v", out.AUCCurve, want.AUCCurve)
		}
		held, _ := heldModels(t, s, spec.Campaign, rounds)
		for i, site := range sites {
			if !sameBits(held[site.Name], refModels[i]) || !sameBits(held[site.Name], held[sites[0].Name]) {
				t.Errorf("site %s: final model differs from simulate's or from site %s's", site.Name, sites[0].Name)
			}
		}
		results := make([]aggregation.SiteResult, len(sims))
		for i, sim := range sims {
			results[i] = aggregation.SiteResult{Descriptor: sim.Descriptor}
		}
		alpha, _, err := aggregation.SoftmaxWeights(results, c.Server)
		if err != nil {
			t.Fatal(err)
		}
		if got := weights(spec.Campaign); !sameBits(got, alpha) {
			t.Errorf("round 1 weights %v; Eq. 12 on the descriptors %v", got, alpha)
		}
	})

	t.Run("frechet", func(t *testing.T) {
		h := method.Defaults(method.Default)
		h.SiteDistance, h.TopoAggregation, h.Barycentre = method.SiteWasserstein, string(aggregation.SoftmaxAggregation), string(aggregation.FrechetBarycentre)
		spec := pipeline.CampaignSpec{Campaign: "softmax-frechet", Method: learn.PTopoFL, Rounds: 2, Seed: 7,
			Sites: sites, Bucket: s.store.Bucket(), Hyperparameters: h}.WithDefaults()
		runCampaign(t, s, spec)
		_, descs := descriptorObjects(t, s.store, spec.Campaign)
		results := make([]aggregation.SiteResult, len(sites))
		for i, site := range sites {
			d := descs[artifact.DescriptorKey(spec.Campaign, 1, site.Name)]
			results[i] = aggregation.SiteResult{Descriptor: d.Descriptor, H0: tdaPairs(d.H0), H1: tdaPairs(d.H1)}
		}
		c, err := method.Resolve(learn.PTopoFL, method.Default, spec.Hyperparameters)
		if err != nil {
			t.Fatal(err)
		}
		alpha, dist, err := aggregation.SoftmaxWeights(results, c.Server)
		if err != nil {
			t.Fatal(err)
		}
		got := weights(spec.Campaign)
		if !sameBits(got, alpha) {
			t.Errorf("round 1 weights %v; Eq. 12 with the Fréchet barycentre of the stored diagrams %v", got, alpha)
		}
		mean := c.Server
		mean.Barycentre = aggregation.MeanBarycentre
		alt, _, err := aggregation.SoftmaxWeights(results, mean)
		if err != nil {
			t.Fatal(err)
		}
		if sameBits(alt, alpha) {
			t.Errorf("the Fréchet and mean barycentres give the same weights %v: the test cannot tell them apart", alpha)
		}
		t.Logf("frechet: distances %v, weights %v (mean barycentre: %v)", dist, alpha, alt)
	})
}
