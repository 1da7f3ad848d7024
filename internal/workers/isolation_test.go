package workers_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/internal/connect"
	"github.com/ptopofl/ptopofl/internal/devstack"
	"github.com/ptopofl/ptopofl/internal/payloadcodec"
	"github.com/ptopofl/ptopofl/internal/workers"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/simulate"
	"github.com/ptopofl/ptopofl/store"
	"github.com/ptopofl/ptopofl/workflows"
)

// isolationRounds is the length of each campaign of TestIsolatedCampaigns:
// with continue-as-new every 2 rounds, a campaign has two runs.
const isolationRounds = 3

// TestIsolatedCampaigns runs campaigns on the local stack as `starter run
// --local` does: payloads encrypted with the stack's key file, every site
// worker with its own S3 identity (devstack.SiteStores). pTopoFL (clusters,
// descriptors, each site's cluster model under its own name), FoolsGold
// (a server state only the server reads) and pFedMe (site state read back)
// must give simulate.Run's curves bit for bit. Then:
//   - a site's identity is denied another site's descriptor, local model
//     and aggregate, read and write, and allowed its own (TestSiteReadsOnlyItsOwn
//     tries every key of every method as every site);
//   - no payload of any history is in the clear, and no artifact key,
//     sha256, descriptor value, metric or site name appears in any payload
//     (fetched with a client without the codec);
//   - every history replays with the codec, and a client without the key
//     reads a result only as an error naming the key id.
func TestIsolatedCampaigns(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack and runs three campaigns")
	}
	dataDir, err := filepath.Abs(federation) // the S3 server changes the working directory
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	stack, err := devstack.Start(ctx, devstack.Config{Dir: t.TempDir(), ReadyTimeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stack.Stop() })
	ep := stack.Endpoints()
	keys, err := payloadcodec.LoadKeyFile(ep.PayloadKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	opts := client.Options{HostPort: ep.Temporal, Namespace: ep.Namespace}
	connect.SealPayloads(&opts, keys)
	sealed, err := client.Dial(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sealed.Close)
	root, err := store.New(stack.StoreConfig(""))
	if err != nil {
		t.Fatal(err)
	}

	sites, rows, sims := goldenSites(t, dataDir)
	names := make([]string, len(sites))
	for i, s := range sites {
		names[i] = s.Name
	}
	ak, sk := stack.Credentials()
	siteStores, err := devstack.SiteStores(ctx, ep, ak, sk, names)
	if err != nil {
		t.Fatal(err)
	}
	var ws []worker.Worker
	t.Cleanup(func() {
		for _, w := range ws {
			w.Stop()
		}
	})
	w, err := workers.StartServer(sealed, root, workers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ws = append(ws, w)
	for _, name := range names {
		w, err := workers.StartSite(sealed, siteStores[name], name, dataDir, workers.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}

	var campaigns []string
	var metrics []float64
	for _, m := range []learn.Method{learn.PTopoFL, learn.FoolsGold, learn.PFedMe} {
		cfg, err := simulate.Preset(method.Paper, m)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Rounds = isolationRounds
		want, err := simulate.Run(sims, cfg)
		if err != nil {
			t.Fatal(err)
		}
		spec := pipeline.CampaignSpec{
			Campaign: "iso-" + string(m), Method: m, Preset: method.Paper, Rounds: isolationRounds, Seed: 42,
			Sites: sites, Bucket: root.Bucket(), DescriptorRows: rows, Hyperparameters: method.Defaults(method.Paper),
			ContinueAsNewEvery: 2,
		}.WithDefaults()
		if err := spec.Validate(); err != nil {
			t.Fatal(err)
		}
		campaigns = append(campaigns, spec.Campaign)
		// The starter writes the spec before it starts the workflow.
		if _, err := root.PutJSON(ctx, artifact.SpecKey(spec.Campaign), spec); err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
		t0 := time.Now()
		run, err := sealed.ExecuteWorkflow(cctx, client.StartWorkflowOptions{ID: spec.Campaign, TaskQueue: pipeline.ServerTaskQueue},
			pipeline.CampaignWorkflowName, pipeline.CampaignWorkflowInput{Spec: spec})
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		var out pipeline.CampaignWorkflowOutput
		err = run.Get(cctx, &out)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		t.Logf("%s: %d rounds with per-site S3 identities and sealed payloads in %v", m, isolationRounds, time.Since(t0).Round(time.Millisecond))
		if !sameBits(out.AUCCurve, want.AUCCurve) || !sameBits(out.AccCurve, want.AccCurve) {
			t.Errorf("%s: curves\n got %v %v\nwant %v %v", m, out.AUCCurve, out.AccCurve, want.AUCCurve, want.AccCurve)
		}
		metrics = append(append(metrics, out.AUCCurve...), out.AccCurve...)
	}

	t.Run("s3", func(t *testing.T) { checkSiteDenied(t, siteStores, campaigns[0]) })
	hist := fetchHistories(t, ep, campaigns)
	t.Run("payloads", func(t *testing.T) { checkSealed(t, root, hist, names, metrics) })
	t.Run("replay", func(t *testing.T) { checkReplay(t, hist, keys) })
	t.Run("no-key", func(t *testing.T) { checkNoKey(t, ep, campaigns[0], keys) })
}

func accessDenied(err error) bool {
	var er minio.ErrorResponse
	return errors.As(err, &er) && er.Code == "AccessDenied"
}

// checkSiteDenied uses the S3 identity the worker of client0 ran with on
// the artifacts of client1 and its own, of a finished campaign.
func checkSiteDenied(t *testing.T, stores map[string]*store.Store, campaign string) {
	ctx := context.Background()
	own := stores["client0"]
	cases := []struct {
		key         string
		read, write bool
	}{
		0: {artifact.ModelKey(campaign, 1, "client1"), false, false},
		1: {artifact.DescriptorKey(campaign, 1, "client1"), false, false},
		2: {artifact.ModelKey(campaign, 1, "client0"), true, true},
		3: {artifact.DescriptorKey(campaign, 1, "client0"), true, true},
		4: {artifact.ManifestKey(campaign, 1), false, false},
		5: {artifact.ClusteringKey(campaign, 1), false, false},
		6: {artifact.SpecKey(campaign), true, false},
		// The model sent to client0 (its cluster's), and no other.
		7: {artifact.AggregateKey(campaign, 1, "client0"), true, false},
		8: {artifact.AggregateKey(campaign, 1, "client1"), false, false},
	}
	for i, tc := range cases {
		ref, b, err := own.GetKey(ctx, tc.key)
		switch {
		case tc.read && err != nil:
			t.Errorf("%d: client0 reads %s: %v", i, tc.key, err)
		case !tc.read && !accessDenied(err):
			t.Errorf("%d: client0 reads %s: %v, want AccessDenied", i, tc.key, err)
		}
		if tc.write {
			// Write back the same bytes: the campaign's artifacts stay intact.
			if _, err := own.Put(ctx, ref.Key, b); err != nil {
				t.Errorf("%d: client0 rewrites %s: %v", i, tc.key, err)
			}
		} else if _, err := own.Put(ctx, tc.key, []byte("x")); !accessDenied(err) {
			t.Errorf("%d: client0 writes %s: %v, want AccessDenied", i, tc.key, err)
		}
	}
	// No cluster model is written any more, readable or not.
	for _, target := range []string{"cluster-0", "cluster-1"} {
		if _, _, err := stores["client1"].GetKey(ctx, artifact.AggregateKey(campaign, 1, target)); !accessDenied(err) {
			t.Errorf("client1 reads aggregate %s: %v, want AccessDenied", target, err)
		}
	}
}

// history is the events of one workflow run, with its IDs.
type history struct {
	id, runID string
	events    *historypb.History
}

// fetchHistories reads, with a client that has no codec, every run of
// every campaign workflow and every round workflow.
func fetchHistories(t *testing.T, ep devstack.Endpoints, campaigns []string) []history {
	raw, err := client.Dial(client.Options{HostPort: ep.Temporal, Namespace: ep.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	ctx := context.Background()
	var out []history
	get := func(id, runID string) string {
		iter := raw.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		h := history{id: id, runID: runID, events: &historypb.History{}}
		prev := ""
		for iter.HasNext() {
			ev, err := iter.Next()
			if err != nil {
				t.Fatalf("history of %s: %v", id, err)
			}
			if a := ev.GetWorkflowExecutionStartedEventAttributes(); a != nil {
				prev = a.GetContinuedExecutionRunId()
			}
			h.events.Events = append(h.events.Events, ev)
		}
		out = append(out, h)
		return prev
	}
	for _, c := range campaigns {
		for run := get(c, ""); run != ""; {
			run = get(c, run)
		}
		for r := 1; r <= isolationRounds; r++ {
			get(pipeline.RoundWorkflowID(c, r), "")
		}
	}
	return out
}

// payloadsOf collects every Payload inside m, at any depth.
// Payloads under SearchAttributes go to attrs instead: Temporal indexes
// them, so they are never encrypted.
func payloadsOf(m protoreflect.Message, out, attrs *[]*commonpb.Payload) {
	switch v := m.Interface().(type) {
	case *commonpb.Payload:
		*out = append(*out, v)
		return
	case *commonpb.SearchAttributes:
		for _, p := range v.GetIndexedFields() {
			*attrs = append(*attrs, p)
		}
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		isMsg := fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind
		switch {
		case fd.IsList() && isMsg:
			for i := 0; i < v.List().Len(); i++ {
				payloadsOf(v.List().Get(i).Message(), out, attrs)
			}
		case fd.IsMap():
			if k := fd.MapValue().Kind(); k == protoreflect.MessageKind || k == protoreflect.GroupKind {
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
					payloadsOf(mv.Message(), out, attrs)
					return true
				})
			}
		case isMsg:
			payloadsOf(v.Message(), out, attrs)
		}
		return true
	})
}

// checkSealed requires every payload of every history to be sealed
// (payloadcodec.EncodingEncrypted), every failure message encoded, and no
// event to hold an object key or sha256 of the bucket, a descriptor value
// or a metric of the campaigns (as text or float64 bytes), nor any payload
// a site name.
func checkSealed(t *testing.T, root *store.Store, hist []history, sites []string, metrics []float64) {
	ctx := context.Background()
	texts := map[string]string{} // text → what it is
	words := map[uint64]string{} // float64 bits → what it is
	addFloat := func(v float64, what string) {
		// Small whole numbers (a descriptor's counts, a round) are also
		// the retry policy's backoff coefficient 2.0 and other settings
		// in the clear in every ActivityTaskScheduled event: they identify
		// nothing, so they are not searched for.
		if math.IsNaN(v) || math.IsInf(v, 0) || (v == math.Trunc(v) && math.Abs(v) < 1e6) {
			return
		}
		words[math.Float64bits(v)] = what
		if s := strconv.FormatFloat(v, 'g', -1, 64); len(s) >= 6 {
			texts[s] = what
		}
	}
	keys, err := root.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range keys {
		_, b, err := root.GetKey(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		texts[key] = "object key"
		texts[hex.EncodeToString(sum[:])] = "sha256 of " + key
		switch {
		case strings.Contains(key, "/descriptors/"):
			d, err := store.DecodeDescriptor(b)
			if err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			for _, v := range d.Descriptor {
				addFloat(v, "descriptor value in "+key)
			}
		case strings.HasSuffix(key, "/manifest.json"):
			var m pipeline.RoundManifest
			if _, err := root.GetJSONKey(ctx, key, &m); err != nil {
				t.Fatal(err)
			}
			for _, s := range m.Metrics {
				addFloat(s.AUC, "AUC of "+s.Site+" in "+key)
				addFloat(s.Accuracy, "accuracy of "+s.Site+" in "+key)
			}
			for _, c := range m.Clusters {
				addFloat(c.Trust, "trust of "+c.Site+" in "+key)
			}
		}
	}
	for _, v := range metrics {
		addFloat(v, "a campaign's mean metric")
	}

	nPayloads, nEvents, nAttrs, nFailed := 0, 0, 0, 0
	for _, h := range hist {
		for _, ev := range h.events.Events {
			nEvents++
			where := fmt.Sprintf("%s event %d (%s)", h.id, ev.GetEventId(), ev.GetEventType())
			b, err := proto.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			for txt, what := range texts {
				if bytes.Contains(b, []byte(txt)) {
					t.Errorf("%s holds %q, the %s", where, txt, what)
				}
			}
			for i := 0; i+8 <= len(b); i++ {
				if what, ok := words[binary.LittleEndian.Uint64(b[i:])]; ok {
					t.Errorf("%s holds the float64 bytes of a %s (%v) at %d: %q", where, what, math.Float64frombits(binary.LittleEndian.Uint64(b[i:])), i, b[max(0, i-40):min(len(b), i+16)])
					break
				}
			}
			var ps, attrs []*commonpb.Payload
			payloadsOf(ev.ProtoReflect(), &ps, &attrs)
			for _, p := range attrs {
				// The SDK's change-version marker ("<change id>-<version>")
				// is the only search attribute; it names code, not data.
				nAttrs++
				for _, s := range sites {
					if bytes.Contains(p.GetData(), []byte(s)) {
						t.Errorf("%s: search attribute %q shows site name %s", where, p.GetData(), s)
					}
				}
			}
			for _, p := range ps {
				nPayloads++
				if enc := string(p.GetMetadata()["encoding"]); enc != payloadcodec.EncodingEncrypted {
					t.Errorf("%s: a payload in the clear (encoding %q): %.80q", where, enc, p.GetData())
					continue
				}
				for _, s := range sites {
					if bytes.Contains(p.GetData(), []byte(s)) {
						t.Errorf("%s: a sealed payload shows site name %s", where, s)
					}
				}
			}
			if f := ev.GetActivityTaskFailedEventAttributes().GetFailure(); f != nil {
				// An access denied to a site would show here (and be
				// retried); the message itself is sealed.
				nFailed++
				if f.GetMessage() != "Encoded failure" {
					t.Errorf("%s: failure message in the clear: %q", where, f.GetMessage())
				}
			}
		}
	}
	t.Logf("%d histories, %d events (%d failed activity attempts), %d payloads, all sealed, and %d search attribute values in the clear; no event holds any of %d object keys and hashes or %d descriptor and metric values",
		len(hist), nEvents, nFailed, nPayloads, nAttrs, len(keys)*2, len(words))
	if nPayloads == 0 || len(words) == 0 {
		t.Fatal("nothing was checked")
	}
}

// checkReplay replays every history with the codec's data converter.
func checkReplay(t *testing.T, hist []history, keys *payloadcodec.Keys) {
	dc := payloadcodec.DataConverter(keys)
	for _, h := range hist {
		r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{DataConverter: dc, FailureConverter: payloadcodec.FailureConverter(dc)})
		if err != nil {
			t.Fatal(err)
		}
		workflows.Register(r)
		err = r.ReplayWorkflowHistoryWithOptions(nil, h.events, worker.ReplayWorkflowHistoryOptions{
			OriginalExecution: workflow.Execution{ID: h.id, RunID: h.runID},
		})
		if err != nil {
			t.Errorf("replay %s (run %q) with the key: %v", h.id, h.runID, err)
		}
	}
	t.Logf("%d histories replayed with the codec", len(hist))
}

// checkNoKey reads a campaign's result with a client that has the codec but
// not the key, and with one that has another key under another id: both
// fail with an error naming the key id the payload needs.
func checkNoKey(t *testing.T, ep devstack.Endpoints, campaign string, keys *payloadcodec.Keys) {
	other, err := payloadcodec.NewKeyLine("other")
	if err != nil {
		t.Fatal(err)
	}
	otherKeys, err := payloadcodec.ParseKeys(other)
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range []*payloadcodec.Keys{nil, otherKeys} {
		opts := client.Options{HostPort: ep.Temporal, Namespace: ep.Namespace}
		connect.SealPayloads(&opts, k)
		c, err := client.Dial(opts)
		if err != nil {
			t.Fatal(err)
		}
		var out pipeline.CampaignWorkflowOutput
		err = c.GetWorkflow(context.Background(), campaign, "").Get(context.Background(), &out)
		c.Close()
		if want := fmt.Sprintf("key id %q", keys.Current()); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%d: result read with %v: %v, want an error naming %s", i, k, err, want)
		} else {
			t.Logf("%d: with %v: %v", i, k, err)
		}
	}
}
