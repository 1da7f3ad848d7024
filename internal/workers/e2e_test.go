package workers_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"google.golang.org/protobuf/proto"

	"github.com/ptopofl/ptopofl/aggregation"
	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/eval"
	"github.com/ptopofl/ptopofl/internal/devstack"
	"github.com/ptopofl/ptopofl/internal/s3local"
	"github.com/ptopofl/ptopofl/internal/workers"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/simulate"
	"github.com/ptopofl/ptopofl/store"
	"github.com/ptopofl/ptopofl/tda"
)

// The golden healthcare federation (8 sites, 2 adversarial) that
// simulate's parity tests read; reused here, not copied.
const federation = "../../testdata/paper/healthcare"

type goldenClient struct {
	SubsampleIdx []int `json:"subsample_idx"`
}

// stack is the local stack of one test process: an embedded Temporal
// server, an embedded S3 server, a client and a store.
type stack struct {
	temporal *devstack.Temporal
	s3       *s3local.Server
	client   client.Client
	store    *store.Store // the root account
	secret   string       // the root account's secret, from which the sites' derive
	dataDir  string
}

func startStack(t *testing.T) *stack {
	t.Helper()
	return startStackAt(t, federation)
}

// startStackAt is startStack with the site workers' data in dir.
func startStackAt(t *testing.T, dir string) *stack {
	t.Helper()
	dataDir, err := filepath.Abs(dir) // s3local changes the working directory
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	ctx := context.Background()
	const access, secret = "e2e-access-key", "e2e-secret-key-0123456789"
	s3, err := s3local.Start(ctx, s3local.Config{Dir: filepath.Join(tmp, "s3"), AccessKey: access, SecretKey: secret})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s3.Stop() })
	tmpo, err := devstack.StartTemporal(ctx, devstack.TemporalConfig{Dir: filepath.Join(tmp, "temporal")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tmpo.Stop() })
	st, err := store.New(store.Config{Endpoint: s3.URL(), Bucket: "ptopofl", AccessKey: access, SecretKey: secret})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.EnsureBucket(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(client.Options{HostPort: tmpo.HostPort(), Namespace: devstack.DefaultNamespace})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return &stack{temporal: tmpo, s3: s3, client: c, store: st, secret: secret, dataDir: dataDir}
}

// goldenSites returns the federation's site names and descriptor rows and
// the simulate.Site of each, with the triangle descriptor of its recorded
// subsample, as the paper preset uses.
func goldenSites(t *testing.T, dataDir string) ([]pipeline.Site, map[string][]int, []simulate.Site) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "clients.json"))
	if err != nil {
		t.Fatal(err)
	}
	var clients []goldenClient
	if err := json.Unmarshal(b, &clients); err != nil {
		t.Fatal(err)
	}
	var names []pipeline.Site
	rows := map[string][]int{}
	var sims []simulate.Site
	for k, c := range clients {
		name := fmt.Sprintf("client%d", k)
		d, err := dataset.LoadSite(dataDir, name, dataset.SiteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		desc, err := tda.ComputeDescriptor(d.Train.X, tda.DescriptorOptions{Variant: tda.VariantTriangle, Rows: c.SubsampleIdx})
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, pipeline.Site{Name: name})
		rows[name] = c.SubsampleIdx
		sims = append(sims, simulate.Site{Name: name, TrainX: d.Train.X, TrainY: d.Train.Y, TestX: d.Test.X, TestY: d.Test.Y, Descriptor: desc.Vector})
	}
	return names, rows, sims
}

// referenceModels runs simulate.Run's loop, step for step, and returns the
// curves and the model every site holds after the last round, which
// simulate.Result does not expose. The test checks its curves against
// simulate.Run's, so this copy cannot drift from it unnoticed.
func referenceModels(t *testing.T, sites []simulate.Site, cfg simulate.Config) (auc, acc []float64, models [][]float64) {
	t.Helper()
	k := len(sites)
	prep := make([]method.PreparedSite, k)
	for i, s := range sites {
		p, err := method.PrepareSite(s.Name, s.TrainX, s.TrainY, s.TestX, s.TestY)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.AugmentsFeatures() {
			if p.Train, p.Test, p.Val, err = method.AugmentTopology(p.Train, p.Test, p.Val, s.Descriptor); err != nil {
				t.Fatal(err)
			}
		}
		prep[i] = p
	}
	states := make([]learn.SiteState, k)
	pushed := make([][]float64, k)
	var control []float64
	server := aggregation.ServerState{}
	for r := 1; r <= cfg.Rounds; r++ {
		results := make([]aggregation.SiteResult, k)
		for i, s := range sites {
			out, err := learn.UpdateSite(learn.SiteInput{
				Method: cfg.Method, Round: r, Seed: cfg.Seed + uint32(i),
				Train: prep[i].Train, TopologyX: s.TrainX, Descriptor: s.Descriptor,
				Pushed: pushed[i], ServerControl: control, State: states[i], Config: cfg.Site,
			})
			if err != nil {
				t.Fatal(err)
			}
			states[i] = out.State
			results[i] = aggregation.SiteResult{Params: out.Params, Control: out.Control, N: out.N, Descriptor: s.Descriptor}
		}
		agg, err := aggregation.AggregateRound(aggregation.RoundInput{Method: cfg.Method, Round: r, Sites: results, State: server, Config: cfg.Server})
		if err != nil {
			t.Fatal(err)
		}
		server, control, pushed = agg.State, agg.Control, agg.Models
		sa, sc := make([]float64, k), make([]float64, k)
		for i := range sites {
			a, c, err := method.EvaluateSite(cfg.Site, learn.EvaluationParams(cfg.Method, pushed[i], states[i]), prep[i].Test)
			if err != nil {
				t.Fatal(err)
			}
			sa[i], sc[i] = a, c
		}
		auc, acc = append(auc, eval.SiteMean(sa)), append(acc, eval.SiteMean(sc))
	}
	return auc, acc, pushed
}

// startWorkers starts the server worker with the root S3 account and each
// site's worker with its own account, granted its artifacts only
// (devstack.GrantSites), as `starter run --local` does.
func startWorkers(t *testing.T, s *stack, sites []pipeline.Site) {
	t.Helper()
	startWorkersWith(t, s, sites, workers.Options{})
}

// startWorkersWith is startWorkers with opts for every site worker.
func startWorkersWith(t *testing.T, s *stack, sites []pipeline.Site, opts workers.Options) {
	t.Helper()
	grantSites(t, s, sites)
	var ws []worker.Worker
	t.Cleanup(func() {
		for _, w := range ws {
			w.Stop()
		}
	})
	w, err := workers.StartServer(s.client, s.store, workers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ws = append(ws, w)
	for _, site := range sites {
		w, err := workers.StartSite(s.client, siteStore(t, s, site.Name), site.Name, s.dataDir, opts)
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
}

// grantSites gives each site an S3 identity that may touch only its own
// artifacts (devstack.GrantSites).
func grantSites(t *testing.T, s *stack, sites []pipeline.Site) {
	t.Helper()
	names := make([]string, len(sites))
	for i, site := range sites {
		names[i] = site.Name
	}
	if err := devstack.GrantSites(context.Background(), s.store, names); err != nil {
		t.Fatal(err)
	}
}

// siteStore is site's store under its own S3 account.
func siteStore(t *testing.T, s *stack, site string) *store.Store {
	t.Helper()
	ak, sk := s3local.SiteCredentials(s.secret, site)
	st, err := store.New(store.Config{Endpoint: s.s3.URL(), Bucket: s.store.Bucket(), AccessKey: ak, SecretKey: sk})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestCampaignMatchesSimulate runs 15-round paper-preset campaigns of
// pTopoFL, FedAvg, FedProx, pFedMe and LocalOnly (the last two scored in
// their training activity), FoolsGold and norm-clipped FedAvg (whose server
// state, the global model and FoolsGold's per-site update histories, goes
// through the store between rounds), the paper's SCAFFOLD, and pTopoFL with
// topo_features "augment" and "both" over the golden healthcare federation on the
// local stack (embedded Temporal and S3, in-process workers for all eight
// sites) and requires the per-round AUC and accuracy curves and every
// site's final model to equal the in-memory reference bit for bit. Then it
// checks the privacy boundary on everything the campaigns left behind.
func TestCampaignMatchesSimulate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack and runs three campaigns")
	}
	s := startStack(t)
	sites, rows, sims := goldenSites(t, s.dataDir)
	startWorkers(t, s, sites)

	var campaigns []string
	type run struct {
		m            learn.Method
		topoFeatures string // pTopoFL's topo_features; "" the preset's
	}
	runs := []run{{m: learn.PTopoFL}, {m: learn.FedAvg}, {m: learn.FedProx}, {m: learn.PFedMe}, {m: learn.LocalOnly}, {m: learn.FoolsGold}, {m: learn.NormClip},
		// The paper's SCAFFOLD (the preset's scaffold_variant "authors"),
		// and pTopoFL with the topological columns of §3.2.
		{m: learn.SCAFFOLD}, {learn.PTopoFL, method.TopoAugment}, {learn.PTopoFL, method.TopoBoth}}
	for _, tc := range runs {
		m := tc.m
		name := string(m)
		if tc.topoFeatures != "" {
			name += "-" + tc.topoFeatures
		}
		t.Run(name, func(t *testing.T) {
			// The paper preset's values: WithDefaults leaves beta, mu,
			// trim_fraction and drift_threshold as given (zero is meaningful).
			h := method.Defaults(method.Paper)
			h.TopoFeatures = tc.topoFeatures
			mc, err := method.Resolve(m, method.Paper, h)
			if err != nil {
				t.Fatal(err)
			}
			cfg := simulate.Config{Config: mc, Rounds: 15, Seed: 42}
			want, err := simulate.Run(sims, cfg)
			if err != nil {
				t.Fatal(err)
			}
			refAUC, refAcc, refModels := referenceModels(t, sims, cfg)
			if !sameBits(refAUC, want.AUCCurve) || !sameBits(refAcc, want.AccCurve) {
				t.Fatalf("the test's reference loop disagrees with simulate.Run: %v vs %v", refAUC, want.AUCCurve)
			}

			spec := pipeline.CampaignSpec{
				Campaign: "e2e-" + name, Method: m, Preset: method.Paper, Rounds: 15, Seed: 42,
				Sites: sites, Bucket: s.store.Bucket(), DescriptorRows: rows, Hyperparameters: h,
			}.WithDefaults()
			if err := spec.Validate(); err != nil {
				t.Fatal(err)
			}
			campaigns = append(campaigns, spec.Campaign)
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			run, err := s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
				ID: spec.Campaign, TaskQueue: pipeline.ServerTaskQueue,
			}, pipeline.CampaignWorkflowName, pipeline.CampaignWorkflowInput{Spec: spec})
			if err != nil {
				t.Fatal(err)
			}
			var out pipeline.CampaignWorkflowOutput
			if err := run.Get(ctx, &out); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: 15 rounds in %v; final AUC %.6f acc %.6f", m, time.Since(start).Round(time.Millisecond), out.AUCCurve[len(out.AUCCurve)-1], out.AccCurve[len(out.AccCurve)-1])
			if !sameBits(out.AUCCurve, want.AUCCurve) {
				t.Errorf("AUC curve\n got %v\nwant %v", out.AUCCurve, want.AUCCurve)
			}
			if !sameBits(out.AccCurve, want.AccCurve) {
				t.Errorf("accuracy curve\n got %v\nwant %v", out.AccCurve, want.AccCurve)
			}
			if m == learn.PTopoFL {
				last := want.Rounds[len(want.Rounds)-1]
				for i, c := range out.Clusters {
					if c.Cluster != last.Labels[i] || c.Trust != last.Trust[i] || c.Flagged != last.Flagged[i] {
						t.Errorf("site %s: cluster %d trust %v flagged %v, want %d %v %v", c.Site, c.Cluster, c.Trust, c.Flagged, last.Labels[i], last.Trust[i], last.Flagged[i])
					}
				}
			}
			// The model each site holds after round 15, from the store.
			var m pipeline.RoundManifest
			if _, err := s.store.GetJSONKey(ctx, artifact.ManifestKey(spec.Campaign, 15), &m); err != nil {
				t.Fatal(err)
			}
			held := map[string]pipeline.ArtifactRef{}
			for _, o := range m.Outputs {
				if o.Role == pipeline.RoleSiteModel {
					held[o.Site] = o.Ref
				}
			}
			for i, site := range sites {
				ref, ok := held[site.Name]
				if !ok {
					t.Fatalf("manifest of round 15 has no site model for %s", site.Name)
				}
				got, err := s.store.GetModel(ctx, artifact.Ref(ref))
				if err != nil {
					t.Fatal(err)
				}
				// 20 features, the four topological columns, the intercept.
				if want := 21 + 4*map[bool]int{true: 1}[cfg.AugmentsFeatures()]; len(got.Params) != want {
					t.Errorf("site %s holds %d parameters, want %d", site.Name, len(got.Params), want)
				}
				if !sameBits(got.Params, refModels[i]) {
					t.Errorf("site %s final model\n got %v\nwant %v", site.Name, got.Params, refModels[i])
				}
			}
		})
	}
	t.Run("privacy", func(t *testing.T) { checkPrivacy(t, s, sims, campaigns, 15) })
}

func sameBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// checkPrivacy requires that no object in the bucket and no event of any
// campaign's Temporal history (every run of the campaign workflow, every
// round workflow) holds a raw feature value of any site: not as shortest
// round-trip text, not as float64 little-endian bytes, and (for parquet
// objects, whose pages are compressed) not as a decoded value.
func checkPrivacy(t *testing.T, s *stack, sims []simulate.Site, campaigns []string, rounds int) {
	ctx := context.Background()
	texts := map[string]string{} // text → site
	words := map[uint64]string{} // float64 bits → site
	for _, site := range sims {
		for _, split := range [][][]float64{site.TrainX, site.TestX} {
			for _, row := range split {
				for _, v := range row {
					// Short texts ("0", "1.5") occur anywhere; a raw value
					// with many significant digits does not by chance.
					txt := strconv.FormatFloat(math.Abs(v), 'g', -1, 64)
					if len(txt) >= 8 {
						texts[txt] = site.Name
						texts[strconv.FormatFloat(math.Abs(v), 'f', -1, 64)] = site.Name
					}
					if v != 0 && math.Abs(v) != 1 {
						words[math.Float64bits(v)] = site.Name
					}
				}
			}
		}
	}
	scan := func(what string, b []byte) {
		t.Helper()
		for i := 0; i+8 <= len(b); i++ {
			if site, ok := words[binary.LittleEndian.Uint64(b[i:])]; ok {
				t.Errorf("%s: float64 bytes of a raw feature value of %s at offset %d", what, site, i)
				return
			}
		}
		for _, tok := range bytes.FieldsFunc(b, func(r rune) bool {
			return !(r >= '0' && r <= '9' || r == '.' || r == 'e' || r == 'E' || r == '+' || r == '-')
		}) {
			tok = bytes.TrimLeft(tok, "+-")
			if site, ok := texts[string(tok)]; ok {
				t.Errorf("%s: text %q, a raw feature value of %s", what, tok, site)
				return
			}
		}
	}

	keys, err := s.store.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	nBytes := 0
	for _, key := range keys {
		_, b, err := s.store.GetKey(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		nBytes += len(b)
		scan("s3://"+key, b)
		if filepath.Ext(key) == ".parquet" {
			recs, err := store.DecodeVectors(b)
			if err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			for _, r := range recs {
				for name, v := range r.Vectors {
					for j, x := range v {
						if site, ok := words[math.Float64bits(x)]; ok {
							t.Errorf("%s: %s[%d] = %v is a raw feature value of %s", key, name, j, x, site)
						}
					}
				}
			}
		}
	}

	nEvents := 0
	history := func(id, runID string) string {
		iter := s.client.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		prev := ""
		for iter.HasNext() {
			ev, err := iter.Next()
			if err != nil {
				t.Fatalf("history of %s: %v", id, err)
			}
			nEvents++
			if a := ev.GetWorkflowExecutionStartedEventAttributes(); a != nil {
				prev = a.GetContinuedExecutionRunId()
			}
			b, err := proto.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			scan(fmt.Sprintf("history %s event %d", id, ev.GetEventId()), b)
		}
		return prev
	}
	for _, c := range campaigns {
		for run := history(c, ""); run != ""; {
			run = history(c, run)
		}
		for r := 1; r <= rounds; r++ {
			history(pipeline.RoundWorkflowID(c, r), "")
		}
	}
	t.Logf("privacy: %d objects (%d bytes) and %d history events hold none of %d raw feature values", len(keys), nBytes, nEvents, len(words))
	if len(keys) == 0 || nEvents == 0 {
		t.Fatal("nothing was scanned")
	}
}
