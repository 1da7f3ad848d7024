package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/eval"
	"github.com/ptopofl/ptopofl/internal/connect"
	"github.com/ptopofl/ptopofl/internal/stackconn"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/store"
)

// tinyFederation writes a 3-site healthcare federation of 30-50 rows per
// site into dir/name and returns the directory.
func tinyFederation(t *testing.T, dir, name string, seed uint64) string {
	t.Helper()
	opt := eval.DefaultHealthcareOptions(seed)
	opt.Sites, opt.MinSize, opt.MaxSize, opt.PoolSize, opt.Adversarial = 3, 30, 50, 600, nil
	fed, err := eval.Healthcare(opt)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := dataset.WriteFederation(p, fed); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSweepLocalEndToEnd runs 2 methods × 2 seeds × 3 rounds on the
// embedded stack and checks that results.parquet and curves.parquet say
// what the campaigns' manifests say.
func TestSweepLocalEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded stack")
	}
	tmp := t.TempDir()
	tinyFederation(t, tmp, "fed", 3)
	file := filepath.Join(tmp, "sweep.yaml")
	os.WriteFile(file, []byte(`sweep: e2e-sweep
rounds: 3
seeds: [1, 2]
methods: [ptopofl, fedavg]
federations: [{name: tiny, path: fed}]
hyperparameters: {n_sub: 20}
concurrency: 2
`), 0o644)
	dataDir := filepath.Join(tmp, "stack")
	start := time.Now()
	code, stdout, stderr := runCLI("sweep", file, "--local", "--data-dir", dataDir, "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d\nstderr: %s", code, stderr)
	}
	t.Logf("sweep of 4 campaigns in %.1fs", time.Since(start).Seconds())
	var out campaign.SweepOutput
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("json output: %v\n%s", err, stdout)
	}
	if out.State != pipeline.SweepDone || out.CampaignsDone != 4 || out.CampaignsTotal != 4 || len(out.Rows) != 4 {
		t.Fatalf("output: %+v", out)
	}
	if out.Results != "s3://ptopofl/sweeps/e2e-sweep/results.parquet" {
		t.Errorf("results at %s", out.Results)
	}

	// Read everything back from S3 and compare with the manifests.
	conn := stackconn.Flags{Local: true, DataDir: dataDir, Remote: connect.Flags{Bucket: connect.DefaultBucket}, Format: "json"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := conn.Connect(ctx, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	_, rb, err := e.Svc.Store.GetKey(ctx, artifact.SweepResultsKey("e2e-sweep"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := store.DecodeSweepResults(rb)
	if err != nil {
		t.Fatal(err)
	}
	_, cb, err := e.Svc.Store.GetKey(ctx, artifact.SweepCurvesKey("e2e-sweep"))
	if err != nil {
		t.Fatal(err)
	}
	curves, err := store.DecodeSweepCurves(cb)
	if err != nil {
		t.Fatal(err)
	}
	if len(curves) != 4*3 {
		t.Fatalf("%d curve rows, want 12", len(curves))
	}
	want := []struct {
		method string
		seed   uint64
	}{{"ptopofl", 1}, {"ptopofl", 2}, {"fedavg", 1}, {"fedavg", 2}}
	for i, r := range rows {
		if r.Method != want[i].method || r.Seed != want[i].seed || r.State != pipeline.StateDone || r.RoundsDone != 3 || r.NSub != 20 {
			t.Errorf("row %d: %+v", i, r)
		}
		if r.WorkflowID != "e2e-sweep/"+r.Campaign || r.Campaign != fmt.Sprintf("e2e-sweep-tiny-%s-base-s%d", r.Method, r.Seed) {
			t.Errorf("row %d: campaign %s, workflow %s", i, r.Campaign, r.WorkflowID)
		}
		var auc []float64
		for round := 1; round <= 3; round++ {
			var m pipeline.RoundManifest
			ref, err := e.Svc.Store.GetJSONKey(ctx, artifact.ManifestKey(r.Campaign, round), &m)
			if err != nil {
				t.Fatal(err)
			}
			c := curves[i*3+round-1]
			if c.Campaign != r.Campaign || c.Round != round || c.AUC != m.Mean.AUC || c.Acc != m.Mean.Accuracy ||
				c.ManifestSHA256 != ref.SHA256 || c.Participants != len(m.Participants) || c.NumFlagged != len(m.Flagged) {
				t.Errorf("curve row %s round %d = %+v, manifest mean %+v", r.Campaign, round, c, m.Mean)
			}
			auc = append(auc, m.Mean.AUC)
			if round == 3 {
				if r.FinalAUC != m.Mean.AUC || r.FinalAcc != m.Mean.Accuracy || r.LastManifestSHA256 != ref.SHA256 ||
					r.Flagged != strings.Join(m.Flagged, ",") || r.SpecHash != m.SpecHash {
					t.Errorf("row %s: final %v/%v, manifest %+v", r.Campaign, r.FinalAUC, r.FinalAcc, m.Mean)
				}
			}
		}
		if r.ConvRound != eval.SettlingRound(auc, eval.SettlingTolerance) || math.IsNaN(r.BestAUC) {
			t.Errorf("row %s: conv %d best %v", r.Campaign, r.ConvRound, r.BestAUC)
		}
		if r.Method == "ptopofl" && r.NumClusters < 1 {
			t.Errorf("row %s: no clusters", r.Campaign)
		}
		// The JSON rows are the parquet rows.
		if out.Rows[i].Campaign != r.Campaign || out.Rows[i].FinalAUC != r.FinalAUC {
			t.Errorf("json row %d differs from parquet: %+v", i, out.Rows[i])
		}
	}
	// Every campaign's spec is recorded like a `starter run` campaign's.
	var spec pipeline.CampaignSpec
	if _, err := e.Svc.Store.GetJSONKey(ctx, artifact.SpecKey(rows[0].Campaign), &spec); err != nil || spec.Hyperparameters.NSub != 20 {
		t.Errorf("spec.json of %s: %v %+v", rows[0].Campaign, err, spec.Hyperparameters)
	}
	// And verified like one: the last manifest against the one Temporal
	// recorded, which the sweep's child workflow holds ("<sweep>/<campaign>",
	// not the campaign's name).
	for _, r := range []store.SweepResultRow{rows[0], rows[3]} {
		rep, err := e.Svc.Verify(ctx, r.Campaign, 4)
		if err != nil || !rep.OK || !rep.TipChecked || rep.TipSkipped != "" || rep.Tip != r.LastManifestSHA256 {
			t.Errorf("verify %s: %+v, %v; want ok with the tip %s checked against Temporal", r.Campaign, rep, err, r.LastManifestSHA256)
		}
		// status, watch and timings find it the same way; a control
		// update reaches the child, which Temporal says has completed
		// (without the child's ID it would say no such workflow).
		st, err := e.Svc.Status(ctx, r.Campaign)
		if err != nil || st.State != pipeline.StateDone || st.RoundsDone != 3 || st.LastManifest == nil || st.LastManifest.SHA256 != r.LastManifestSHA256 {
			t.Errorf("status %s: %+v, %v; want done after 3 rounds", r.Campaign, st, err)
		}
		if tm, err := e.Svc.Timings(ctx, r.Campaign, st.RoundsDone); err != nil || len(tm) != 3 {
			t.Errorf("timings %s: %d rounds, %v", r.Campaign, len(tm), err)
		}
		if _, err := e.Svc.Control(ctx, r.Campaign, pipeline.UpdatePause, "test"); err == nil || !strings.Contains(err.Error(), "already completed") {
			t.Errorf("pause %s (done): %v, want its child workflow's \"already completed\"", r.Campaign, err)
		}
	}
	if _, err := e.Svc.Status(ctx, "e2e-sweep-tiny-never-base-s1"); err == nil {
		t.Error("status of a campaign no sweep ran: no error")
	}
}

func TestSweepFileErrors(t *testing.T) {
	tmp := t.TempDir()
	tinyFederation(t, tmp, "fed", 3)
	dataDir := filepath.Join(tmp, "never-created")
	for i, c := range []struct{ file, want string }{
		{"sweep: s\nmethods: [fedavg]\nseeds: [1]\nfederations: [{path: fed}]\nbogus: 1\n", "line 5: bogus: unknown field"}, // 0
		{"sweep: s\nmethods: [nope]\nseeds: [1]\nfederations: [{path: fed}]\n", `"nope"`},                                   // 1
		{"sweep: s\nmethods: [fedavg]\nfederations: [{path: fed}]\n", "seeds"},                                              // 2
		{"sweep: s\nmethods: [fedavg]\nseeds: [1]\nfederations: [{path: nowhere}]\n", "nowhere"},                            // 3
		{"sweep: s\nmethods: [ptopofl]\nseeds: [1]\nfederations: [{path: fed}]\ngrid: {betta: [1]}\n", "betta"},             // 4
		{"sweep: s\nmethods: [ptopofl]\nseeds: [1]\nfederations: [{path: fed}]\ngrid: {beta: [2]}\n", "beta"},               // 5
		{"sweep: \"a/b\"\nmethods: [fedavg]\nseeds: [1]\nfederations: [{path: fed}]\n", "sweep"},                            // 6
	} {
		path := filepath.Join(tmp, fmt.Sprintf("s%d.yaml", i))
		os.WriteFile(path, []byte(c.file), 0o644)
		code, _, stderr := runCLI("sweep", path, "--local", "--data-dir", dataDir)
		if code != exitInput || !strings.Contains(stderr, c.want) {
			t.Errorf("%d: exit %d, stderr %q; want exit 2 naming %q", i, code, stderr, c.want)
		}
	}
	if _, err := os.Stat(dataDir); err == nil {
		t.Error("a rejected sweep created the stack's data directory")
	}
}
