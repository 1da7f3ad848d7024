package workers_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/store"
)

// secaggSpec is a default-preset campaign of m over sites with
// secure_aggregation set as given.
func secaggSpec(name string, m learn.Method, sites []pipeline.Site, bucket string, rounds int, on bool) pipeline.CampaignSpec {
	h := method.Defaults(method.Default)
	if on {
		h.SecureAggregation = method.SecAggPlus
	}
	return pipeline.CampaignSpec{Campaign: name, Method: m, Rounds: rounds, Seed: 5, Sites: sites, Bucket: bucket,
		Hyperparameters: h}.WithDefaults()
}

// roundModel reads the model site holds after round r of campaign c.
func roundModel(t *testing.T, st *store.Store, c string, r int, site string) []float64 {
	t.Helper()
	var m pipeline.RoundManifest
	if _, err := st.GetJSONKey(context.Background(), artifact.ManifestKey(c, r), &m); err != nil {
		t.Fatal(err)
	}
	for _, o := range m.Outputs {
		if o.Role == pipeline.RoleSiteModel && o.Site == site {
			p, err := st.GetModelParamsCached(context.Background(), o.Ref)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
	}
	t.Fatalf("round %d of %s: no model of %s", r, c, site)
	return nil
}

// TestSecAggCampaign runs FedAvg, SCAFFOLD and pTopoFL campaigns of three
// rounds over the golden healthcare federation (8 sites) with and without
// secure aggregation on the local stack, every site under its own S3
// identity: the secure campaigns' round-1 models equal the plain ones'
// within the quantisation's error (8 sites' rounding, each below
// 2·8/(2²²−1) per coordinate of a weighted update), their final AUC within
// 0.002; every manifest records the groups, and each site's model as
// released only inside its group's sum; no object in S3 decodes as a site's
// model; verify recomputes every sum from what is stored.
func TestSecAggCampaign(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack and runs six campaigns")
	}
	s := startStack(t)
	golden, _, _ := goldenSites(t, s.dataDir)
	sites := make([]pipeline.Site, len(golden))
	for i, g := range golden {
		sites[i] = pipeline.Site{Name: g.Name}
	}
	startSecretWorkers(t, s, sites, t.TempDir())
	ctx := context.Background()
	const rounds = 3
	step := 2 * method.DefaultSecAggClip / float64(1<<method.DefaultSecAggQuantBits-1)
	for _, m := range []learn.Method{learn.FedAvg, learn.SCAFFOLD, learn.PTopoFL} {
		plain := runCampaign(t, s, secaggSpec("plain-"+string(m), m, sites, s.store.Bucket(), rounds, false))
		sec := runCampaign(t, s, secaggSpec("secagg-"+string(m), m, sites, s.store.Bucket(), rounds, true))
		if sec.State != pipeline.StateDone {
			t.Fatalf("%s: secure campaign %s", m, sec.State)
		}
		for _, site := range sites {
			a := roundModel(t, s.store, "plain-"+string(m), 1, site.Name)
			b := roundModel(t, s.store, "secagg-"+string(m), 1, site.Name)
			d := 0.0
			for j := range a {
				d = max(d, math.Abs(a[j]-b[j]))
			}
			if d > 8*step {
				t.Errorf("%s: %s's round-1 model is %g from the plain campaign's, beyond 8 rounding steps %g", m, site.Name, d, 8*step)
			}
		}
		pa, sa := plain.AUCCurve[len(plain.AUCCurve)-1], sec.AUCCurve[len(sec.AUCCurve)-1]
		if math.Abs(pa-sa) > 0.002 {
			t.Errorf("%s: final AUC %.5f secure, %.5f plain", m, sa, pa)
		}
		t.Logf("%s: final AUC %.5f secure, %.5f plain", m, sa, pa)
		for r := 1; r <= rounds; r++ {
			var man pipeline.RoundManifest
			if _, err := s.store.GetJSONKey(ctx, artifact.ManifestKey("secagg-"+string(m), r), &man); err != nil {
				t.Fatal(err)
			}
			if man.SecAgg == nil || len(man.SecAgg.Groups) == 0 {
				t.Fatalf("%s round %d: no secure aggregation record", m, r)
			}
			n := 0
			for _, g := range man.SecAgg.Groups {
				n += len(g.Survivors)
				if g.Threshold < 2 || len(g.Dropped) != 0 || len(g.Revealed) != len(g.Survivors) {
					t.Errorf("%s round %d group %s: %+v", m, r, g.Name, g)
				}
			}
			if n != len(sites) {
				t.Errorf("%s round %d: %d survivors in all, want %d", m, r, n, len(sites))
			}
			for _, sr := range man.Released {
				text, _ := campaign.ReleasedText(sr.Items)
				if !strings.Contains(text, "model:21 within") {
					t.Errorf("%s round %d site %s released %q", m, r, sr.Site, text)
				}
			}
			for _, o := range man.Outputs {
				if o.Role == pipeline.RoleLocalModel || o.Role == pipeline.RoleControl || o.Role == pipeline.RoleSiteState {
					t.Errorf("%s round %d: the manifest lists %s of %s", m, r, o.Role, o.Site)
				}
			}
		}
		keys, err := s.store.List(ctx, artifact.CampaignPrefix("secagg-"+string(m)))
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			_, b, err := s.store.GetKey(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			if rec, err := store.DecodeModel(b); err == nil && rec.Kind == store.KindModel {
				t.Errorf("%s: %s holds site %s's model", m, k, rec.Site)
			}
		}
		rep, err := campaign.VerifyRecord(ctx, s.store, "secagg-"+string(m), 4)
		if err != nil || !rep.OK {
			t.Errorf("%s: verify: %v, problems %+v", m, err, rep.Problems)
		}
	}
}
