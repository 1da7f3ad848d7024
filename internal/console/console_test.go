package console

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"html/template"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/report"
	"github.com/ptopofl/ptopofl/search"
	"github.com/ptopofl/ptopofl/store"
)

// tol is the tolerance of the means below: each is a sum of a few terms,
// computed by hand.
const tol = 1e-12

// manifest is a round manifest of campaign c1 (sites s0, s1, s2) with
// what the tests look at.
func manifest(round int, prev string, m pipeline.RoundManifest) pipeline.RoundManifest {
	m.Schema, m.Campaign, m.Round, m.Method, m.Preset, m.Outcome = pipeline.ManifestSchema, "c1", round, "ptopofl", "default", pipeline.OutcomeCommitted
	m.PrevManifestSHA256, m.Sites = prev, []string{"s0", "s1", "s2"}
	return m
}

func releases(sites ...string) []pipeline.SiteReleases {
	var out []pipeline.SiteReleases
	for _, s := range sites {
		out = append(out, pipeline.SiteReleases{Site: s, Items: []pipeline.Release{{Kind: pipeline.ReleaseDescriptor, Numbers: 48}, {Kind: pipeline.ReleaseModel, Numbers: 21}}})
	}
	return out
}

// twoRounds is campaign c1's record: round 1 with every site, s1
// flagged; round 2 with s2 dropped in training. Under dp record with the
// budget 8, every site has spent ε 2 after round 1 and 4 after round 2;
// in round 2 s0's own ledger reports a lifetime ε of 9.5 against its
// operator's limit 10 (other campaigns on its data count there too).
// prev2 is what round 2 records as round 1's sha256 ("sha-1": chained).
func twoRounds(prev2 string) campaign.Objects {
	priv := func(eps float64) *pipeline.RoundPrivacy {
		p := &pipeline.RoundPrivacy{Delta: 1e-5, Budget: 8}
		for _, s := range []string{"s0", "s1", "s2"} {
			p.Sites = append(p.Sites, pipeline.SitePrivacy{Site: s, EpsilonRound: 2, Epsilon: eps, Accountant: "gdp"})
		}
		if eps == 4 {
			p.Sites[0].Lifetime = &pipeline.SiteLifetime{Epsilon: 9.5, Delta: 1e-5, Budget: ptr(10.0)}
		}
		return p
	}
	r1 := manifest(1, "", pipeline.RoundManifest{
		Participants: []string{"s0", "s1", "s2"},
		Clusters: []pipeline.SiteCluster{{Site: "s0", Cluster: 0, Trust: 1, Drift: 0}, {Site: "s1", Cluster: 1, Trust: 0.25, Drift: 0.1, Flagged: true},
			{Site: "s2", Cluster: 1, Trust: 1, Drift: 0.3}},
		Flagged:  []string{"s1"},
		Metrics:  []pipeline.SiteMetrics{{Site: "s0", AUC: 0.8, Accuracy: 0.7}, {Site: "s1", AUC: 0.6, Accuracy: 0.5}, {Site: "s2", AUC: 0.7, Accuracy: 0.9}},
		Mean:     pipeline.RoundMetrics{Round: 1, AUC: 0.7, Accuracy: 0.7, Sites: 3},
		Released: releases("s0", "s1", "s2"), Privacy: priv(2),
	})
	r2 := manifest(2, prev2, pipeline.RoundManifest{
		Participants: []string{"s0", "s1"},
		Dropped:      []pipeline.SiteDrop{{Site: "s2", Phase: pipeline.PhaseTrain, Reason: pipeline.DropTimeout}},
		Clusters:     []pipeline.SiteCluster{{Site: "s0", Cluster: 0, Trust: 1, Drift: 0.05}, {Site: "s1", Cluster: 1, Trust: 0.5, Drift: 0.2}},
		Metrics:      []pipeline.SiteMetrics{{Site: "s0", AUC: 0.8, Accuracy: 0.74}, {Site: "s1", AUC: 0.7, Accuracy: 0.7}},
		Mean:         pipeline.RoundMetrics{Round: 2, AUC: 0.75, Accuracy: 0.72, Sites: 2},
		Released:     releases("s0", "s1"), Privacy: priv(4),
	})
	return campaign.Objects{SpecPresent: true, RoundKeys: map[int]int{1: 1, 2: 1}, Manifests: []campaign.StoredManifest{
		{Round: 1, Attempt: 1, Key: artifact.ManifestKey("c1", 1), SHA256: "sha-1", Manifest: r1},
		{Round: 2, Attempt: 1, Key: artifact.ManifestKey("c1", 2), SHA256: "sha-2", Manifest: r2},
	}}
}

// TestBuildCampaign: a campaign's row and page from its manifests, numbers
// as the manifests hold them (max drift as starter history computes it:
// the largest Δ_k of the round's clustered sites).
func TestBuildCampaign(t *testing.T) {
	r := CampaignRow{Campaign: "c1", State: pipeline.StateDone}
	summarise(&r, twoRounds("sha-1"), "b", nil)
	if r.RoundsDone != 2 || r.Attempt != 1 || *r.FinalAUC != 0.75 || *r.FinalAcc != 0.72 || *r.Epsilon != 4 || r.EpsilonBudget != 8 || r.Verify != "chain ok" || r.Method != "ptopofl" {
		t.Fatalf("row %+v", r)
	}
	d := buildCampaign(r, []string{"s0", "s1", "s2"}, twoRounds("sha-1"), "b")
	if len(d.Rounds) != 2 || len(d.Chain) != 2 || len(d.Problems) != 0 || d.Privacy == nil || d.Privacy.Epsilon != 4 {
		t.Fatalf("detail: %d rounds, %d links, problems %q, privacy %+v", len(d.Rounds), len(d.Chain), d.Problems, d.Privacy)
	}
	cases := []struct {
		round             int
		maxDrift          float64
		released          int
		flagged           []string
		s2In              bool
		s2Phase, s2Reason string
	}{
		0: {1, 0.3, 3 * 69, []string{"s1"}, true, "", ""},
		1: {2, 0.2, 2 * 69, []string{}, false, pipeline.PhaseTrain, pipeline.DropTimeout},
	}
	for i, c := range cases {
		rv := d.Rounds[i]
		s2 := rv.Sites[2]
		if rv.Round != c.round || math.Abs(rv.MaxDrift-c.maxDrift) > tol || rv.ReleasedNumbers != c.released || !slices.Equal(rv.Flagged, c.flagged) ||
			s2.Participated != c.s2In || s2.DropPhase != c.s2Phase || s2.DropReason != c.s2Reason || rv.Manifest != "s3://b/"+artifact.ManifestKey("c1", c.round) ||
			rv.ManifestURL != "/"+artifact.ManifestKey("c1", c.round) || !d.Chain[i].Linked {
			t.Errorf("case %d: %+v", i, rv)
		}
		if s1 := rv.Sites[1]; *s1.Epsilon != float64(2*c.round) || *s1.EpsilonRound != 2 || *s1.EpsilonBudget != 8 || *s1.Trust != []float64{0.25, 0.5}[i] {
			t.Errorf("case %d: s1 %+v", i, s1)
		}
	}
	if l := d.Rounds[1].Sites[0]; l.LifetimeEpsilon == nil || *l.LifetimeEpsilon != 9.5 || l.LifetimeBudget == nil || *l.LifetimeBudget != 10 || d.Rounds[0].Sites[0].LifetimeEpsilon != nil {
		t.Errorf("lifetime ε: %+v", d.Rounds)
	}
	if !d.Rounds[0].Sites[1].Flagged || d.Rounds[1].Sites[2].Cluster != nil || d.Rounds[1].Sites[2].AUC != nil {
		t.Errorf("flags and absent values: %+v", d.Rounds)
	}

	// Round 2 naming another sha256 for round 1 breaks the chain.
	broken := twoRounds("sha-x")
	summarise(&r, broken, "b", nil)
	d = buildCampaign(r, nil, broken, "b")
	if !strings.HasPrefix(r.Verify, "chain broken: ") || len(d.Problems) != 1 || d.Chain[1].Linked || !d.Chain[0].Linked || !slices.Equal(d.Sites, []string{"s0", "s1", "s2"}) {
		t.Errorf("broken chain: verify %q, problems %q, chain %+v", r.Verify, d.Problems, d.Chain)
	}

	// A verify run on request at the current last manifest decides the
	// column; one at an older last manifest does not.
	for i, c := range []struct {
		rep  campaign.VerifyReport
		want string
	}{
		0: {campaign.VerifyReport{Tip: "sha-2", OK: true}, "verified"},
		1: {campaign.VerifyReport{Tip: "sha-2", Problems: []campaign.Problem{{}, {}}}, "2 problems"},
		2: {campaign.VerifyReport{Tip: "sha-1", OK: true}, "chain ok"},
	} {
		summarise(&r, twoRounds("sha-1"), "b", &c.rep)
		if r.Verify != c.want {
			t.Errorf("case %d: verify %q, want %q", i, r.Verify, c.want)
		}
	}
}

func metrics(val, auc float64) pipeline.RoundMetrics {
	return pipeline.RoundMetrics{AUC: auc, Accuracy: auc - 0.1, ValAUC: &val}
}

// TestBuildSweep: an adaptive sweep's trials from its campaigns'
// manifests (each trial's mean over its campaigns, at the rounds they all
// trained) and its rungs from the search record's events.
func TestBuildSweep(t *testing.T) {
	spec := pipeline.SweepSpec{Sweep: "sw", Rounds: 2, Methods: []pipeline.SweepMethod{{Method: "ptopofl"}},
		Search: &pipeline.SweepSearch{Strategy: search.StrategyASHA, Objective: pipeline.ObjectiveValAUC, Trials: 2,
			Dims: []search.Dimension{{Name: "lr", LogUniform: []float64{0.01, 1}}, {Name: "clusters", Choice: []any{1, 2}}}}}
	cfg := []ParamValue{{Name: "lr", Value: 0.1}, {Name: "clusters", Value: 2}}
	rec := &pipeline.SearchRecord{Budget: 0, TrialCap: 2,
		Trials: []pipeline.SearchTrial{{Index: 0, State: search.Complete, Rung: 1}, {Index: 1, State: search.Paused, Rung: 0}},
		Events: []pipeline.SearchEvent{{Kind: search.Start, Trial: 0, Rung: 0, To: 1}, {Kind: search.Start, Trial: 1, Rung: 0, To: 1},
			{Kind: search.Promote, Trial: 0, Rung: 1, From: 1, To: 2}}}
	in := sweepInputs{row: SweepRow{Sweep: "sw", State: pipeline.SweepDone}, spec: spec, rec: rec, campaigns: []sweepCampaign{
		// Trial 0 over two seeds: round 1 val (0.6+0.4)/2, round 2 (0.8+0.6)/2.
		{name: "sw-hc-ptopofl-t0000-s2", trial: "t0000", index: 0, state: "done", config: cfg, rounds: []pipeline.RoundMetrics{metrics(0.4, 0.5), metrics(0.6, 0.7)}},
		{name: "sw-hc-ptopofl-t0000-s1", trial: "t0000", index: 0, state: "done", config: cfg, rounds: []pipeline.RoundMetrics{metrics(0.6, 0.7), metrics(0.8, 0.9)}},
		{name: "sw-hc-ptopofl-t0001-s1", trial: "t0001", index: 1, state: "paused", rounds: []pipeline.RoundMetrics{metrics(0.3, 0.65)}},
	}}
	d := buildSweep(in)
	if len(d.Trials) != 2 || d.RoundsSpent != 5 || !d.SearchRecord || d.Objective != pipeline.ObjectiveValAUC || len(d.Dims) != 2 || d.Dims[0].Kind != "log_uniform" || !slices.Equal(d.Dims[1].Choices, []string{"1", "2"}) {
		t.Fatalf("sweep %+v", d)
	}
	cases := []struct {
		label          string
		rounds         int
		obj, test      float64
		status         string
		rung           int
		round1Val, r1t float64
	}{
		0: {"t0000", 2, 0.7, 0.8, "complete", 1, 0.5, 0.6},
		1: {"t0001", 1, 0.3, 0.65, "paused", 0, 0.3, 0.65},
	}
	for i, c := range cases {
		tr := d.Trials[i]
		if tr.Label != c.label || tr.Trial != i || tr.RoundsTrained != c.rounds || math.Abs(*tr.Objective-c.obj) > tol || math.Abs(*tr.TestAUC-c.test) > tol ||
			tr.Status != c.status || *tr.Rung != c.rung || math.Abs(*tr.Curve[0].ValAUC-c.round1Val) > tol || math.Abs(tr.Curve[0].TestAUC-c.r1t) > tol {
			t.Errorf("case %d: %+v", i, tr)
		}
	}
	want := []RungView{{Rung: 0, Round: 1, Trials: []string{"t0000", "t0001"}, Promoted: []string{}}, {Rung: 1, Round: 2, Trials: []string{"t0000"}, Promoted: []string{"t0000"}}}
	if got, _ := json.Marshal(d.Rungs); string(got) != string(must(json.Marshal(want))) {
		t.Errorf("rungs %s, want %s", got, must(json.Marshal(want)))
	}

	// The report's statuses and best-so-far curve win over the record's
	// raw states; NaN points become null.
	in.rep = &report.SearchInput{Spent: 5, Curve: []report.SearchPoint{{Spent: 2, Trial: -1, Val: math.NaN(), Test: math.NaN()}, {Spent: 5, Trial: 0, Round: 2, Val: 0.7, Test: 0.8}},
		Trials: []report.SearchTrial{{Trial: 1, Status: "pruned", Why: "paused at round 1"}}}
	d = buildSweep(in)
	if d.Trials[1].Status != "pruned" || d.Trials[1].Why == "" || len(d.BestSoFar) != 2 || d.BestSoFar[0].Val != nil || *d.BestSoFar[1].Val != 0.7 {
		t.Errorf("with the report: %+v %+v", d.Trials[1], d.BestSoFar)
	}
	if _, err := json.Marshal(d); err != nil {
		t.Errorf("json: %v", err)
	}

	// Without the record: no rung, a note that says why.
	in.rec, in.rep = nil, nil
	d = buildSweep(in)
	if d.Trials[0].Rung != nil || d.Trials[0].Status != "done" || len(d.Notes) != 1 || len(d.Rungs) != 0 {
		t.Errorf("without the search record: %+v, notes %q", d.Trials[0], d.Notes)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestListenCheck: what may listen where; each refusal names the flags.
func TestListenCheck(t *testing.T) {
	cases := []struct {
		c    ListenConfig
		want string // in the error; "" = accepted
	}{
		0:  {ListenConfig{Addr: "127.0.0.1:0"}, ""},
		1:  {ListenConfig{Addr: "localhost:8080"}, ""},
		2:  {ListenConfig{Addr: "[::1]:0"}, ""},
		3:  {ListenConfig{Addr: "127.3.4.5:0"}, ""},
		4:  {ListenConfig{Addr: "0.0.0.0:8080"}, "--addr 0.0.0.0:8080 is not a loopback address"},
		5:  {ListenConfig{Addr: ":8080"}, "--tls-cert and --tls-key"},
		6:  {ListenConfig{Addr: "console.example.org:443"}, "--tls-client-ca"},
		7:  {ListenConfig{Addr: "0.0.0.0:443", CertFile: "c", KeyFile: "k", ClientCAFile: "ca"}, ""},
		8:  {ListenConfig{Addr: "0.0.0.0:443", CertFile: "c"}, "--tls-cert and --tls-key go together"},
		9:  {ListenConfig{Addr: "0.0.0.0:443", CertFile: "c", KeyFile: "k"}, "--tls-client-ca"},
		10: {ListenConfig{Addr: "8080"}, "--addr \"8080\": want HOST:PORT"},
	}
	for i, c := range cases {
		err := c.c.Check()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("case %d: %v", i, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("case %d: %v, want an error with %q", i, err, c.want)
		}
	}
	if l, err := Listen(ListenConfig{Addr: "0.0.0.0:0"}); err == nil {
		l.Close()
		t.Error("Listen on 0.0.0.0 without a certificate: no error")
	}
	l, err := Listen(ListenConfig{Addr: DefaultAddr})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if !l.Loopback || !regexp.MustCompile(`^http://127\.0\.0\.1:\d+$`).MatchString(l.URL) || strings.HasSuffix(l.URL, ":0") {
		t.Errorf("listener %q loopback %v", l.URL, l.Loopback)
	}
}

// fakeSource is a stack in memory: campaign c1 (twoRounds), finished; a
// running campaign c2 with no manifest yet; sweep sw (TestBuildSweep's,
// with its spec.json); panicOn names a campaign whose manifests panic.
type fakeSource struct {
	objects map[string][]byte
	panicOn string
}

func newFake(t *testing.T) *fakeSource {
	spec := pipeline.CampaignSpec{Campaign: "c1", Method: "ptopofl", Preset: "default", Rounds: 3, Sites: []pipeline.Site{{Name: "s0"}, {Name: "s1"}, {Name: "s2"}}}
	sweep := pipeline.SweepSpec{Sweep: "sw", Rounds: 2, Seeds: []uint64{1}, Methods: []pipeline.SweepMethod{{Method: "ptopofl", Hyperparameters: method.Defaults(method.Default)}},
		Federations: []pipeline.SweepFederation{{Name: "hc", Sites: []pipeline.Site{{Name: "s0"}, {Name: "s1"}}}},
		Settings:    []pipeline.SweepSetting{{Label: "beta0", Set: []method.ParamValue{{Name: "beta", Value: 0}}}}}
	return &fakeSource{objects: map[string][]byte{
		artifact.SpecKey("c1"):                must(json.Marshal(spec)),
		artifact.SweepSpecKey("sw"):           must(json.Marshal(sweep)),
		artifact.ManifestKey("c1", 1):         []byte(`{"round":1}`),
		artifact.CampaignPrefix("c1") + "x":   []byte("not served"),
		artifact.SweepSearchKey("other-none"): nil,
	}}
}

var started = time.Date(2026, 11, 28, 1, 2, 3, 0, time.UTC)

func (f *fakeSource) ListCampaigns(context.Context) ([]campaign.Listed, error) {
	return []campaign.Listed{
		{Campaign: "c2", Status: "running", Started: started},
		{Campaign: "c1", Status: "completed", Started: started, Closed: started.Add(time.Minute)},
		{Campaign: "sw/sw-hc-ptopofl-beta0-s1", Status: "completed", Started: started, Closed: started.Add(time.Minute)},
	}, nil
}

func (f *fakeSource) ListSweeps(context.Context) ([]campaign.Listed, error) {
	return []campaign.Listed{{Campaign: "sw", Status: "completed", Started: started, Closed: started.Add(time.Minute)}}, nil
}

func (f *fakeSource) CampaignStatus(_ context.Context, name, id string) (pipeline.CampaignStatus, error) {
	if name == "c2" {
		return pipeline.CampaignStatus{Campaign: name, State: pipeline.StateRunning}, nil
	}
	return pipeline.CampaignStatus{Campaign: name, State: pipeline.StateDone}, nil
}

func (f *fakeSource) SweepStatus(_ context.Context, sweep string) (pipeline.SweepStatus, error) {
	return pipeline.SweepStatus{Sweep: sweep, State: pipeline.SweepDone, CampaignsDone: 1, CampaignsTotal: 1}, nil
}

func (f *fakeSource) Manifests(_ context.Context, name string) (campaign.Objects, error) {
	switch name {
	case f.panicOn:
		panic("the fake's panic")
	case "c1":
		return twoRounds("sha-1"), nil
	}
	return campaign.Objects{RoundKeys: map[int]int{}}, nil
}

func (f *fakeSource) Get(_ context.Context, key string) ([]byte, error) {
	if b, ok := f.objects[key]; ok && b != nil {
		return b, nil
	}
	return nil, store.ErrNotFound
}

func (f *fakeSource) Verify(_ context.Context, name string) (campaign.VerifyReport, error) {
	return campaign.VerifyReport{Campaign: name, OK: true, Rounds: 2, Tip: "sha-2", Problems: []campaign.Problem{}}, nil
}

func (f *fakeSource) SweepReport(context.Context, string) (report.SearchInput, error) {
	return report.SearchInput{}, errors.New("not an adaptive sweep")
}

func (f *fakeSource) Bucket() string { return "b" }

func get(t *testing.T, h http.Handler, method, target, host string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	req.Host = "127.0.0.1:8080"
	if host != "" {
		req.Host = host
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// TestHandler: every address answers with the security headers; pages
// load only their own assets; bad paths answer 404 and a panic 500, both
// without a trace; only GET and HEAD; on loopback only loopback hosts.
func TestHandler(t *testing.T) {
	f := newFake(t)
	var errLog strings.Builder
	s := newServer(f, Config{WebUI: "http://127.0.0.1:8233", Loopback: true, ErrorLog: &errLog})
	s.now = func() time.Time { return started.Add(time.Hour) }
	h := s.Handler()
	assetRef := regexp.MustCompile(`<(?:script|link|img)[^>]*(?:src|href)="([^"]*)"`)
	cases := []struct {
		method, path, host string
		code               int
		body               string // in the body
	}{
		0:  {"GET", "/", "", 200, `data-campaign="c1"`},
		1:  {"GET", "/?state=running", "", 200, "1 of 3 campaigns"},
		2:  {"GET", "/?sweep=-", "", 200, "2 of 3 campaigns"},
		3:  {"GET", "/campaigns/c1", "", 200, `<tr data-round="2">`},
		4:  {"GET", "/campaigns/sw/sw-hc-ptopofl-beta0-s1", "", 302, ""},
		5:  {"GET", "/campaigns/c1/verify", "", 200, `id="verdict" class="ok"`},
		6:  {"GET", "/campaigns/c1/round-0001/manifest.json", "", 200, `{"round":1}`},
		7:  {"GET", "/campaigns/c1/x", "", 404, "not found"},
		8:  {"GET", "/campaigns/c1/round-0002/manifest.json", "", 404, "not found"},
		9:  {"GET", "/campaigns/c1/round-0001/models/manifest.json", "", 404, "not found"},
		10: {"GET", "/campaigns/nope", "", 404, "not found: /campaigns/nope"},
		11: {"GET", "/campaigns/bad%20name", "", 404, "not found"},
		12: {"GET", "/sweeps/sw", "", 200, `data-trial="ptopofl/beta0"`},
		13: {"GET", "/sweeps/nope", "", 404, "not found"},
		14: {"GET", "/compare?campaign=c1&campaign=c2", "", 200, `id="compare-auc"`},
		15: {"GET", "/compare?campaign=c1", "", 400, "compare takes 2 to 8"},
		16: {"GET", "/api/campaigns", "", 200, `"rounds_done": 2`},
		17: {"GET", "/api/campaigns/c1", "", 200, `"web_ui": "http://127.0.0.1:8233/namespaces/default/workflows/c1"`},
		18: {"GET", "/api/campaigns/nope", "", 404, `{"error":"not found: /api/campaigns/nope"}`},
		19: {"GET", "/api/sweeps/sw", "", 200, `"strategy": "grid"`},
		20: {"GET", "/api/campaigns/c1/verify", "", 200, `"ok": true`},
		21: {"POST", "/api/campaigns", "", 405, "read-only"},
		22: {"DELETE", "/campaigns/c1", "", 405, "read-only"},
		23: {"GET", "/", "evil.example:8080", 421, "loopback"},
		24: {"GET", "/", "localhost:9999", 200, ""},
		25: {"GET", "/static/console.js", "", 200, "DOMParser"},
		26: {"GET", "/static/nope.js", "", 404, ""},
		27: {"HEAD", "/", "", 200, ""},
		28: {"GET", "/no/such/page", "", 404, "not found"},
		29: {"GET", "/campaigns/c1", "", 200, `<td class="num lifetime">9.500</td><td class="num">10.000</td>`},
	}
	for i, c := range cases {
		w := get(t, h, c.method, c.path, c.host)
		body := w.Body.String()
		if w.Code != c.code || !strings.Contains(body, c.body) {
			t.Errorf("case %d: %s %s: %d, want %d with %q: %.400s", i, c.method, c.path, w.Code, c.code, c.body, body)
		}
		hd := w.Header()
		if !strings.Contains(hd.Get("Content-Security-Policy"), "default-src 'none'") || hd.Get("X-Content-Type-Options") != "nosniff" || hd.Get("X-Frame-Options") != "DENY" || hd.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("case %d: headers %v", i, hd)
		}
		if strings.Contains(body, "goroutine") || strings.Contains(body, ".go:") {
			t.Errorf("case %d: a trace in the body: %.400s", i, body)
		}
		if strings.HasPrefix(hd.Get("Content-Type"), "text/html") {
			if strings.Contains(body, "style=") || regexp.MustCompile(`<script>|<script [^>]*>[^<]`).MatchString(body) {
				t.Errorf("case %d: inline style or script (the CSP forbids them): %.400s", i, body)
			}
			for _, m := range assetRef.FindAllStringSubmatch(body, -1) {
				if !strings.HasPrefix(m[1], "/static/") {
					t.Errorf("case %d: the page loads %q, not one of its own assets", i, m[1])
				}
			}
		}
	}

	// A panic answers 500, its stack in the error log only.
	f.panicOn = "c1"
	w := get(t, h, "GET", "/campaigns/c1", "")
	if w.Code != 500 || strings.Contains(w.Body.String(), "the fake's panic") || !strings.Contains(errLog.String(), "the fake's panic") {
		t.Errorf("panic: %d %.300s; log %.300s", w.Code, w.Body.String(), errLog.String())
	}
}

// TestChartsAreSVG: every chart parses as XML, with presentation
// attributes only (no style attribute, which the CSP would block), and
// says so when it has no data.
func TestChartsAreSVG(t *testing.T) {
	v := 0.5
	charts := []template.HTML{
		chart{ID: "a", Title: "t <&>", XLabel: "round", YLabel: "AUC", XInt: true, Series: []series{{Name: "mean", Colour: "#000", Points: []point{{1, 0.5}, {2, math.NaN()}, {3, 0.7}}}, {Name: "s", Faint: true, Colour: "#111", Points: []point{{1, 0.6}}}},
			HLines: []hline{{Y: 8, Label: "budget", Colour: "#D55E00"}}}.svg(),
		chart{ID: "one", Title: "one point", XInt: true, Series: []series{{Name: "x", Colour: "#000", Points: []point{{1, 0.5}}}}}.svg(),
		chart{ID: "empty", Title: "empty"}.svg(),
		heatmap{ID: "h", Title: "heat", Rows: []string{"s0"}, Cols: []int{1, 2}, Cells: [][]heatCell{{{Value: &v, Label: "1"}, {Outline: true}}}}.svg(),
		parallel{ID: "p", Title: "pc", Axes: []pcAxis{{Name: "lr", Lo: 0.01, Hi: 1, Log: true}, {Name: "c", Choices: []string{"1", "2"}}}, Lines: []pcLine{{Name: "t0", Values: []float64{0.1, 1}, Colour: "#000"}}}.svg(),
	}
	for i, c := range charts {
		d := xml.NewDecoder(strings.NewReader(string(c)))
		for {
			_, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Errorf("case %d: not XML: %v\n%s", i, err, c)
				break
			}
		}
		if strings.Contains(string(c), "style=") {
			t.Errorf("case %d: a style attribute", i)
		}
	}
	if !strings.Contains(string(charts[2]), "no data yet") || !strings.Contains(string(charts[0]), "t &lt;&amp;&gt;") {
		t.Errorf("empty chart or escaping: %s", charts[2])
	}
}

// TestTicks: round tick values covering the range (cases worked by hand).
func TestTicks(t *testing.T) {
	cases := []struct {
		lo, hi  float64
		n       int
		integer bool
		want    []float64
	}{
		0: {0.62, 0.87, 6, false, []float64{0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9}},
		1: {1, 3, 8, true, []float64{1, 2, 3}},
		2: {1, 100, 8, true, []float64{0, 20, 40, 60, 80, 100}},
		3: {5.087, 8, 6, false, []float64{5, 6, 7, 8}}, // a step of 0.58 rounds up to 1
	}
	for i, c := range cases {
		got := ticks(c.lo, c.hi, c.n, c.integer)
		ok := len(got) == len(c.want)
		for j := 0; ok && j < len(got); j++ {
			ok = math.Abs(got[j]-c.want[j]) < 1e-9
		}
		if !ok {
			t.Errorf("case %d: %v, want %v", i, got, c.want)
		}
	}
}

func TestLoopbackHost(t *testing.T) {
	for i, c := range []struct {
		host string
		want bool
	}{
		0: {"127.0.0.1:80", true}, 1: {"localhost", true}, 2: {"[::1]:8080", true}, 3: {"LOCALHOST:1", true},
		4: {"evil.example", false}, 5: {"10.0.0.1:80", false}, 6: {"127.0.0.1.evil.example", false},
	} {
		if got := loopbackHost(c.host); got != c.want {
			t.Errorf("case %d: %s: %v", i, c.host, got)
		}
	}
}
