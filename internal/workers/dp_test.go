package workers_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/proto"

	"github.com/ptopofl/ptopofl/aggregation"
	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/internal/workers"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/store"
	"github.com/ptopofl/ptopofl/tda"
)

// startSecretWorkers is startWorkers with every site worker keeping its
// secret in secretDir.
func startSecretWorkers(t *testing.T, s *stack, sites []pipeline.Site, secretDir string) {
	t.Helper()
	startWorkersWith(t, s, sites, workers.Options{SecretDir: secretDir})
}

// siteRecords reads the golden federation's record counts.
func siteRecords(t *testing.T, dir string, sites []pipeline.Site) ([]pipeline.Site, []method.SiteRecords) {
	t.Helper()
	out := make([]pipeline.Site, len(sites))
	recs := make([]method.SiteRecords, len(sites))
	for i, s := range sites {
		d, err := dataset.LoadSite(dir, s.Name, dataset.SiteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = pipeline.Site{Name: s.Name, NTrain: len(d.Train.X), NTest: len(d.Test.X)}
		recs[i] = method.SiteRecords{Site: s.Name, Train: out[i].NTrain, Test: out[i].NTest}
	}
	return out, recs
}

func runCampaign(t *testing.T, s *stack, spec pipeline.CampaignSpec) pipeline.CampaignWorkflowOutput {
	t.Helper()
	out, err := awaitCampaign(t, s, spec)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// awaitCampaign validates spec, runs its campaign to the end (10 minutes
// at most) and returns its output and error.
func awaitCampaign(t *testing.T, s *stack, spec pipeline.CampaignSpec) (pipeline.CampaignWorkflowOutput, error) {
	t.Helper()
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	run, err := s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: spec.Campaign, TaskQueue: pipeline.ServerTaskQueue},
		pipeline.CampaignWorkflowName, pipeline.CampaignWorkflowInput{Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	var out pipeline.CampaignWorkflowOutput
	err = run.Get(ctx, &out)
	return out, err
}

// descriptorObjects decodes every object of campaign c that decodes as a
// descriptor record, by key.
func descriptorObjects(t *testing.T, st *store.Store, c string) (all int, descs map[string]store.DescriptorRecord) {
	t.Helper()
	ctx := context.Background()
	keys, err := st.List(ctx, artifact.CampaignPrefix(c))
	if err != nil {
		t.Fatal(err)
	}
	descs = map[string]store.DescriptorRecord{}
	for _, k := range keys {
		_, b, err := st.GetKey(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if d, err := store.DecodeDescriptor(b); err == nil {
			descs[k] = d
		}
	}
	return len(keys), descs
}

// TestDataMinimisation: under the default (Euclidean) site distance no
// object a pTopoFL campaign writes holds a persistence pair; under
// site_distance wasserstein the sites release their diagrams, every round's
// manifest says so, and the clustering is Eq. 3's (the one
// aggregation.TopologyStep computes from the stored diagrams with the
// Wasserstein distance, which differs here from the Euclidean one's).
func TestDataMinimisation(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack and runs two campaigns")
	}
	s := startStack(t)
	sites, _, _ := goldenSites(t, s.dataDir)
	startSecretWorkers(t, s, sites, t.TempDir())
	ctx := context.Background()
	for _, dist := range []string{method.SiteEuclidean, method.SiteWasserstein} {
		h := method.Defaults(method.Default)
		p, _ := method.Lookup("site_distance")
		if err := p.Set(&h, method.Value{Text: dist}); err != nil {
			t.Fatal(err)
		}
		// The paper's detector: trust from the sites' distances, so that
		// the two site distances give different trust.
		h.Detector = string(aggregation.DescriptorDetector)
		spec := pipeline.CampaignSpec{Campaign: "minimise-" + dist, Method: learn.PTopoFL, Rounds: 2, Seed: 7,
			Sites: sites, Bucket: s.store.Bucket(), Hyperparameters: h}.WithDefaults()
		runCampaign(t, s, spec)
		objects, descs := descriptorObjects(t, s.store, spec.Campaign)
		if len(descs) != 2*len(sites) {
			t.Fatalf("%s: %d descriptor objects among %d, want %d (every site, both rounds)", dist, len(descs), objects, 2*len(sites))
		}
		pairs := 0
		for _, d := range descs {
			pairs += len(d.H0) + len(d.H1)
		}
		var m pipeline.RoundManifest
		if _, err := s.store.GetJSONKey(ctx, artifact.ManifestKey(spec.Campaign, 1), &m); err != nil {
			t.Fatal(err)
		}
		released := map[string]int{}
		for _, sr := range m.Released {
			for _, it := range sr.Items {
				released[it.Kind] += it.Numbers
			}
		}
		switch dist {
		case method.SiteEuclidean:
			if pairs != 0 {
				t.Errorf("euclidean: %d persistence pairs in S3, want none", pairs)
			}
			if released[pipeline.ReleaseDiagrams] != 0 || released[pipeline.ReleaseDescriptor] != 48*len(sites) || released[pipeline.ReleaseLabelSummary] != 0 {
				t.Errorf("euclidean: round 1 released %v, want 48 descriptor numbers a site, no label summary and no diagrams", released)
			}
			t.Logf("euclidean: %d objects, %d descriptor objects, no persistence pair; round 1 released %v", objects, len(descs), released)
		case method.SiteWasserstein:
			if pairs == 0 || released[pipeline.ReleaseDiagrams] != 0 && released[pipeline.ReleaseDiagrams]%2 != 0 {
				t.Fatalf("wasserstein: %d persistence pairs in S3; round 1 released %v", pairs, released)
			}
			// Round 1's clusters are TopologyStep's on the stored diagrams.
			results := make([]aggregation.SiteResult, len(sites))
			for i, site := range sites {
				d := descs[artifact.DescriptorKey(spec.Campaign, 1, site.Name)]
				results[i] = aggregation.SiteResult{Descriptor: d.Descriptor, H0: tdaPairs(d.H0), H1: tdaPairs(d.H1)}
			}
			step := func(distance aggregation.SiteDistance) string {
				cfg, err := method.Resolve(learn.PTopoFL, method.Default, spec.Hyperparameters)
				if err != nil {
					t.Fatal(err)
				}
				cfg.Server.Distance = distance
				out, err := aggregation.TopologyStep(aggregation.TopologyInput{Round: 1, Sites: results, Config: cfg.Server, Measured: make([]bool, len(sites))})
				if err != nil {
					t.Fatal(err)
				}
				return fmt.Sprint(out.Labels, out.Trust)
			}
			want, euclid := step(aggregation.WassersteinDistance), step(aggregation.DescriptorDistance)
			var labels []int
			var trust []float64
			for _, c := range m.Clusters {
				labels, trust = append(labels, c.Cluster), append(trust, c.Trust)
			}
			got := fmt.Sprint(labels, trust)
			if got != want {
				t.Errorf("wasserstein: round 1 clusters and trust %v, Eq. 3 on the stored diagrams gives %v", got, want)
			}
			if got == euclid {
				t.Errorf("wasserstein: round 1 clusters and trust %v are what the Euclidean distance gives too: the test cannot tell them apart", got)
			}
			t.Logf("wasserstein: %d pairs in S3; clusters and trust %v (Euclidean: %v); round 1 released %v", pairs, got, euclid, released)
		}
	}
}

func tdaPairs(ps []store.Pair) []tda.Pair {
	out := make([]tda.Pair, len(ps))
	for i, p := range ps {
		out[i] = tda.Pair{Birth: p.Birth, Death: p.Death}
	}
	return out
}

// TestPrivateCampaign runs a pTopoFL campaign under dp record with a
// budget of ε = 8 over the golden healthcare federation on the local stack
// and checks the ledger end to end: every manifest records every site's ε
// for the round and in all, within the budget and never decreasing; what
// every site released; no persistence pair; the campaign's output and
// verify report the ε spent; no byte of any site's secret is in S3 or in
// any Temporal history. Then a campaign planned for 2 rounds but asked for
// 4 stops, before dispatching round 3, with the reason.
func TestPrivateCampaign(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack and runs two campaigns")
	}
	s := startStack(t)
	golden, _, _ := goldenSites(t, s.dataDir)
	sites, recs := siteRecords(t, s.dataDir, golden)
	secrets := t.TempDir()
	startSecretWorkers(t, s, sites, secrets)
	ctx := context.Background()

	const rounds = 3
	h := method.Defaults(method.Default)
	h.DP, h.DPEpsilon = method.DPRecord, 8
	h, budgets, err := method.PlanPrivacy(learn.PTopoFL, method.Default, h, rounds, recs)
	if err != nil {
		t.Fatal(err)
	}
	spec := pipeline.CampaignSpec{Campaign: "dp-ptopofl", Method: learn.PTopoFL, Rounds: rounds, Seed: 11,
		Sites: sites, Bucket: s.store.Bucket(), Hyperparameters: h}.WithDefaults()
	out := runCampaign(t, s, spec)
	if out.State != pipeline.StateDone || out.Privacy == nil {
		t.Fatalf("state %s, privacy %+v", out.State, out.Privacy)
	}
	last := map[string]float64{}
	for r := 1; r <= rounds; r++ {
		var m pipeline.RoundManifest
		if _, err := s.store.GetJSONKey(ctx, artifact.ManifestKey(spec.Campaign, r), &m); err != nil {
			t.Fatal(err)
		}
		if m.Privacy == nil || len(m.Privacy.Sites) != len(sites) || m.Privacy.Budget != 8 || m.Privacy.Delta != 1e-5 {
			t.Fatalf("round %d: privacy record %+v", r, m.Privacy)
		}
		for _, p := range m.Privacy.Sites {
			if p.Epsilon > 8 || p.Epsilon < last[p.Site] || !(p.EpsilonRound > 0) || p.Accountant != "gdp" {
				t.Errorf("round %d site %s: ε %v (round %v, %s), before %v; want within 8, not decreasing, by Gaussian DP", r, p.Site, p.Epsilon, p.EpsilonRound, p.Accountant, last[p.Site])
			}
			last[p.Site] = p.Epsilon
		}
		if len(m.Released) != len(sites) {
			t.Fatalf("round %d: released %+v", r, m.Released)
		}
		for _, sr := range m.Released {
			text, _ := campaign.ReleasedText(sr.Items)
			if text != "descriptor:48 label_summary:11 model:21 metrics:2" {
				t.Errorf("round %d site %s released %q", r, sr.Site, text)
			}
		}
	}
	for _, b := range budgets {
		if got := last[b.Site]; abs(got-b.Epsilon.Epsilon) > 1e-9*b.Epsilon.Epsilon {
			t.Errorf("site %s: the ledger spent ε %v over the campaign, the plan %v", b.Site, got, b.Epsilon.Epsilon)
		}
	}
	if got := out.Privacy.Epsilon(); got > 8 || got < 7.5 {
		t.Errorf("campaign output: largest ε %v, want just within the budget", got)
	}
	_, descs := descriptorObjects(t, s.store, spec.Campaign)
	for k, d := range descs {
		if len(d.H0)+len(d.H1) > 0 {
			t.Errorf("%s holds persistence pairs under dp record", k)
		}
	}
	rep, err := campaign.VerifyRecord(ctx, s.store, spec.Campaign, 4)
	if err != nil || !rep.OK || rep.Privacy == nil {
		t.Errorf("verify: %v, ok %v, problems %+v", err, rep.OK, rep.Problems)
	}

	// No byte of a secret leaves its site.
	var needles [][]byte
	for _, site := range sites {
		b, err := os.ReadFile(workers.SecretFile(secrets, site.Name))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		raw, err := hex.DecodeString(lines[len(lines)-1])
		if err != nil {
			t.Fatal(err)
		}
		needles = append(needles, []byte(lines[len(lines)-1]), raw[:16], raw[16:])
	}
	keys, err := s.store.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		_, b, err := s.store.GetKey(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range needles {
			if bytes.Contains(b, n) {
				t.Errorf("s3://%s holds a site secret", k)
			}
		}
	}
	for _, id := range []string{spec.Campaign, pipeline.RoundWorkflowID(spec.Campaign, 1)} {
		iter := s.client.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for iter.HasNext() {
			ev, err := iter.Next()
			if err != nil {
				t.Fatal(err)
			}
			b, _ := proto.Marshal(ev)
			for _, n := range needles {
				if bytes.Contains(b, n) {
					t.Errorf("history of %s, event %d, holds a site secret", id, ev.GetEventId())
				}
			}
		}
	}
	for _, site := range sites {
		fi, err := os.Stat(filepath.Join(secrets, site.Name+".secret"))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("secret of %s: %v, mode %v", site.Name, err, fi.Mode())
		}
	}

	// The budget stop: planned for 2 rounds, asked for 4.
	short := method.Defaults(method.Default)
	short.DP, short.DPEpsilon = method.DPRecord, 3
	short, _, err = method.PlanPrivacy(learn.FedAvg, method.Default, short, 2, recs)
	if err != nil {
		t.Fatal(err)
	}
	over := pipeline.CampaignSpec{Campaign: "dp-over", Method: learn.FedAvg, Rounds: 4, Seed: 11,
		Sites: sites, Bucket: s.store.Bucket(), Hyperparameters: short}.WithDefaults()
	res := runCampaign(t, s, over)
	if res.State != pipeline.StateStopped || res.RoundsDone != 2 || !strings.Contains(res.StopReason, "round 3 would take site") ||
		!strings.Contains(res.StopReason, "beyond its budget dp_epsilon = 3") {
		t.Errorf("over budget: state %s after %d rounds, reason %q", res.State, res.RoundsDone, res.StopReason)
	}
	if _, _, err := s.store.GetKey(ctx, artifact.ManifestKey(over.Campaign, 3)); err == nil {
		t.Error("round 3 was committed beyond the budget")
	}
	t.Logf("budget stop: %s", res.StopReason)
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestPrivateEveryMethod runs every method for two rounds under dp record
// (ε = 3) over the golden healthcare federation: each finishes, every
// manifest's ε is within the budget, and the robust aggregators and
// pTopoFL's detector run on the noised releases they receive.
func TestPrivateEveryMethod(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack and runs eleven campaigns")
	}
	s := startStack(t)
	golden, _, _ := goldenSites(t, s.dataDir)
	sites, recs := siteRecords(t, s.dataDir, golden)
	startSecretWorkers(t, s, sites, t.TempDir())
	for _, m := range learn.Methods {
		h := method.Defaults(method.Default)
		h.DP, h.DPEpsilon = method.DPRecord, 3
		h, _, err := method.PlanPrivacy(m, method.Default, h, 2, recs)
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		spec := pipeline.CampaignSpec{Campaign: "dp-every-" + string(m), Method: m, Rounds: 2, Seed: 3,
			Sites: sites, Bucket: s.store.Bucket(), Hyperparameters: h}.WithDefaults()
		out := runCampaign(t, s, spec)
		if out.State != pipeline.StateDone || out.Privacy == nil || out.Privacy.Epsilon() > 3 {
			t.Errorf("%s: state %s, privacy %+v", m, out.State, out.Privacy)
			continue
		}
		t.Logf("%-12s ε %.4f, final AUC %.4f (released, noised)", m, out.Privacy.Epsilon(), out.AUCCurve[1])
	}
}
