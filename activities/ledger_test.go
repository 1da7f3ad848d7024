package activities_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/ptopofl/ptopofl/activities"
	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/privacy"
	"github.com/ptopofl/ptopofl/privacy/ledger"
	"github.com/ptopofl/ptopofl/siteledger"
	"github.com/ptopofl/ptopofl/store"
)

// runActivity runs one site activity in a test environment and decodes
// its output into out.
func runActivity(t *testing.T, site *activities.Site, name string, in, out any) error {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	site.Register(env)
	v, err := env.ExecuteActivity(name, in)
	if err != nil {
		return err
	}
	return v.Get(out)
}

func fileDigest(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ledgerSite is golden client0 with a fresh secret and ledger in a
// temporary directory, under budget (nil: none).
func ledgerSite(t *testing.T, budget *ledger.Budget) (*activities.Site, *siteledger.Site) {
	t.Helper()
	l, err := siteledger.Open(t.TempDir(), "client0", siteledger.Options{Budget: budget})
	if err != nil {
		t.Fatal(err)
	}
	return activities.NewSite("client0", golden, testStore, dataset.SiteOptions{}).WithSecret(l.Secret).WithLedger(l.Ledger), l
}

func readLedger(t *testing.T, l *siteledger.Site) *ledger.Ledger {
	t.Helper()
	got, err := siteledger.Read(l.Ledger.Path())
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestSiteChargesItsLedger: every private release of a site's activities
// is in its ledger before the activity returns, keyed by the digest of the
// file its split is read from, with its purpose and mechanism: FedAvg's
// training (30 DP-GD steps at dp_noise 5, on the training file), its
// metrics (dp_metrics_noise 3, on the test file), pTopoFL's descriptor and
// label summary (dp_descriptor_noise 2). A retried activity is charged
// nothing more. Every output reports the site's lifetime ε, which is the
// ledger's composition: training file μ² = 30/25 + 2/4, test file 1/9.
func TestSiteChargesItsLedger(t *testing.T) {
	site, l := ledgerSite(t, nil)
	trainFile, _ := dataset.SiteFile(golden, "client0", dataset.TrainSplit)
	testFile, _ := dataset.SiteFile(golden, "client0", dataset.TestSplit)
	trainSum, testSum := fileDigest(t, trainFile), fileDigest(t, testFile)

	train := pipeline.TrainLocalInput{SiteCall: dpCall("ledger-a", learn.FedAvg, 1)}
	var tr pipeline.TrainLocalOutput
	if err := runActivity(t, site, pipeline.ActivityTrainLocal, train, &tr); err != nil {
		t.Fatal(err)
	}
	mu1 := math.Sqrt(30.0 / 25)
	want1, _ := privacy.GaussianEpsilon(mu1, 1e-5)
	if tr.Lifetime == nil || math.Abs(tr.Lifetime.Epsilon-want1) > 1e-9 || tr.Lifetime.Delta != 1e-5 || tr.Lifetime.Budget != nil {
		t.Fatalf("training reported lifetime %+v, want ε %v", tr.Lifetime, want1)
	}
	if err := runActivity(t, site, pipeline.ActivityTrainLocal, train, &tr); err != nil {
		t.Fatal(err)
	}
	var ev pipeline.EvaluateOutput
	if err := runActivity(t, site, pipeline.ActivityEvaluate, pipeline.EvaluateInput{SiteCall: dpCall("ledger-a", learn.FedAvg, 1), Model: tr.Model}, &ev); err != nil {
		t.Fatal(err)
	}
	var desc pipeline.ComputeDescriptorOutput
	if err := runActivity(t, site, pipeline.ActivityComputeDescriptor, pipeline.ComputeDescriptorInput{SiteCall: dpCall("ledger-b", learn.PTopoFL, 1)}, &desc); err != nil {
		t.Fatal(err)
	}
	got := readLedger(t, l)
	type row struct{ purpose, split, data, campaign string }
	want := []struct {
		row
		event privacy.Event
	}{
		{row{"train", "train", trainSum, "ledger-a"}, privacy.Event{Z: 5, Q: 1, Count: 30}},
		{row{"metrics", "test", testSum, "ledger-a"}, privacy.Event{Z: 3, Q: 1, Count: 1}},
		{row{"descriptor", "train", trainSum, "ledger-b"}, privacy.Event{Z: 2, Q: 1, Count: 1}},
		{row{"label-summary", "train", trainSum, "ledger-b"}, privacy.Event{Z: 2, Q: 1, Count: 1}},
	}
	if len(got.Releases) != len(want) {
		t.Fatalf("the ledger holds %d releases, want %d (a retry charged again?): %+v", len(got.Releases), len(want), got.Releases)
	}
	for i, r := range got.Releases {
		es, err := r.Events()
		if err != nil {
			t.Fatal(err)
		}
		if (row{r.Purpose, r.Split, r.Data, r.Campaign}) != want[i].row || es[0] != want[i].event || r.Round != 1 || r.Attempt != 1 || len(r.ID) != 64 {
			t.Errorf("release %d: %+v, want %+v with %+v", i, r, want[i].row, want[i].event)
		}
	}
	wantTrain, _ := privacy.GaussianEpsilon(math.Sqrt(30.0/25+2.0/4), 1e-5)
	if desc.Lifetime == nil || math.Abs(desc.Lifetime.Epsilon-wantTrain) > 1e-9 {
		t.Errorf("after the descriptor: lifetime %+v, want ε %v", desc.Lifetime, wantTrain)
	}
	if ev.Lifetime == nil || math.Abs(ev.Lifetime.Epsilon-want1) > 1e-9 {
		t.Errorf("after the evaluation: lifetime %+v, want ε %v (the training file's; the test file's is smaller)", ev.Lifetime, want1)
	}
}

// TestSiteRefusesBeyondBudget: with a budget that one training round fits,
// a second campaign's training is refused with a non-retryable
// PrivacyBudgetExhausted error naming the ledger, charged nothing and
// wrote no model; the first campaign's retry is still free. A campaign
// without dp record is refused at a site with a budget (its releases have
// no ε), and runs at a site without one.
func TestSiteRefusesBeyondBudget(t *testing.T) {
	one, _ := privacy.GaussianEpsilon(math.Sqrt(30.0/25), 1e-5)
	site, l := ledgerSite(t, &ledger.Budget{Epsilon: one * 1.01, Delta: 1e-5})
	first := pipeline.TrainLocalInput{SiteCall: dpCall("budget-a", learn.FedAvg, 1)}
	var out pipeline.TrainLocalOutput
	if err := runActivity(t, site, pipeline.ActivityTrainLocal, first, &out); err != nil {
		t.Fatal(err)
	}
	if out.Lifetime == nil || out.Lifetime.Budget == nil || *out.Lifetime.Budget != one*1.01 {
		t.Errorf("lifetime %+v, want the budget reported", out.Lifetime)
	}
	second := pipeline.TrainLocalInput{SiteCall: dpCall("budget-b", learn.FedAvg, 1)}
	err := runActivity(t, site, pipeline.ActivityTrainLocal, second, &out)
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != pipeline.ErrTypePrivacyBudget || !app.NonRetryable() ||
		!strings.Contains(app.Error(), "beyond its operator's budget") || !strings.Contains(app.Error(), l.Ledger.Path()) {
		t.Fatalf("beyond the budget: %v", err)
	}
	t.Logf("refusal: %s", app.Message())
	if got := readLedger(t, l); len(got.Releases) != 1 {
		t.Errorf("a refused release was charged: %d releases", len(got.Releases))
	}
	if _, _, err := testStore.GetKey(context.Background(), second.Keys().Model("client0")); err == nil {
		t.Error("a refused training wrote its model")
	}
	if err := runActivity(t, site, pipeline.ActivityTrainLocal, first, &out); err != nil {
		t.Errorf("a retry with the budget spent: %v", err)
	}

	plain := pipeline.TrainLocalInput{SiteCall: call("budget-plain", "client0", 1)}
	err = runActivity(t, site, pipeline.ActivityTrainLocal, plain, &out)
	if !errors.As(err, &app) || app.Type() != pipeline.ErrTypePrivacyBudget || !strings.Contains(app.Error(), "does not run under dp record") {
		t.Errorf("a campaign without dp record at a site with a budget: %v", err)
	}
	free, _ := ledgerSite(t, nil)
	if err := runActivity(t, free, pipeline.ActivityTrainLocal, plain, &out); err != nil {
		t.Errorf("a campaign without dp record at a site without a budget: %v", err)
	}
}

// TestPrivateValidation: under dp record with validation_fraction the
// site trains on the rows it keeps, releases its validation metrics
// through the noisy counts at dp_validation_noise, charged to its training
// file beside the test metrics; the plan's record counts are the files'.
func TestPrivateValidation(t *testing.T) {
	site, l := ledgerSite(t, nil)
	c := dpCall("dp-val", learn.FedAvg, 1)
	c.Hyperparameters.ValidationFraction, c.Hyperparameters.DPValidationNoise = 0.2, 4
	var tr pipeline.TrainLocalOutput
	if err := runActivity(t, site, pipeline.ActivityTrainLocal, pipeline.TrainLocalInput{SiteCall: c}, &tr); err != nil {
		t.Fatal(err)
	}
	if tr.NumTrain != 130-26 {
		t.Errorf("trained on %d rows, want 104 (130 less ⌊0.2·130 + ½⌋)", tr.NumTrain)
	}
	var ev pipeline.EvaluateOutput
	if err := runActivity(t, site, pipeline.ActivityEvaluate, pipeline.EvaluateInput{SiteCall: c, Model: tr.Model}, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.ValAUC == nil || ev.ValAccuracy == nil || ev.NumVal != 26 {
		t.Fatalf("validation %v %v on %d rows", ev.ValAUC, ev.ValAccuracy, ev.NumVal)
	}
	trainFile, _ := dataset.SiteFile(golden, "client0", dataset.TrainSplit)
	got := readLedger(t, l)
	if n := len(got.Releases); n != 3 {
		t.Fatalf("%d releases: %+v", n, got.Releases)
	}
	v := got.Releases[2]
	if v.Purpose != method.PurposeValidationMetrics || v.Split != ledger.SplitTrain || v.Data != fileDigest(t, trainFile) || v.Params["z"] != 4 {
		t.Errorf("validation release %+v", v)
	}
}

// TestEveryReleaseIsNoised fails when any one of a site's releases under
// dp record loses its noise: each is made at two sites whose only
// difference is their secret, and must differ between them by more than
// rounding. Everything but the noise is the same at both (the descriptor's
// rows are every row, in another order; the deep site trains on every
// image at each step, q = 1, so its Poisson sample does not depend on the
// secret either), so without noise they would agree: tabular training,
// test and validation metrics, the DP descriptor and label summary, deep
// training, its metrics, its update's metrics and its validation metrics.
func TestEveryReleaseIsNoised(t *testing.T) {
	const tiny = 1e-9 // far above rounding, far below any noise here
	differs := func(a, b []float64) bool {
		if len(a) != len(b) {
			return true
		}
		for i := range a {
			if math.Abs(a[i]-b[i]) > tiny {
				return true
			}
		}
		return false
	}
	sites := [2]*activities.Site{}
	deepSites := [2]*activities.Site{}
	images := filepath.Join(t.TempDir(), "images")
	if err := dataset.WriteImageFederation(images, []dataset.ImageSite{{Name: "img0", Train: bandImages(24, 1), Test: bandImages(16, 2)}},
		dataset.ImageManifest{Generator: "test", Classes: 3}); err != nil {
		t.Fatal(err)
	}
	for i := range sites {
		sites[i] = activities.NewSite("client0", golden, testStore, dataset.SiteOptions{}).WithSecret(secret(t, byte(10+i)))
		deepSites[i] = activities.NewSite("img0", images, testStore, dataset.SiteOptions{}).WithSecret(secret(t, byte(10+i)))
	}
	ctx := context.Background()
	vector := func(ref pipeline.ArtifactRef) []float64 {
		b, err := testStore.GetCached(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := store.DecodeDescriptor(b)
		if err != nil {
			t.Fatal(err)
		}
		return rec.Descriptor
	}
	model := func(ref pipeline.ArtifactRef) []float64 {
		p, err := testStore.GetModelParamsCached(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	var got [2]map[string][]float64
	for i := range sites {
		// Each campaign name is per secret: the model keys differ.
		name := func(s string) string { return s + "-" + string(rune('a'+i)) }
		got[i] = map[string][]float64{}
		var d pipeline.ComputeDescriptorOutput
		if err := runActivity(t, sites[i], pipeline.ActivityComputeDescriptor, pipeline.ComputeDescriptorInput{SiteCall: dpCall(name("noised-d"), learn.PTopoFL, 1)}, &d); err != nil {
			t.Fatal(err)
		}
		v := vector(d.Descriptor)
		got[i]["descriptor"], got[i]["label summary"] = v[:48], v[48:]
		c := dpCall(name("noised-t"), learn.FedAvg, 1)
		c.Hyperparameters.ValidationFraction, c.Hyperparameters.DPValidationNoise = 0.2, 4
		var tr pipeline.TrainLocalOutput
		if err := runActivity(t, sites[i], pipeline.ActivityTrainLocal, pipeline.TrainLocalInput{SiteCall: c}, &tr); err != nil {
			t.Fatal(err)
		}
		got[i]["tabular model"] = model(tr.Model)
		// The same model scored at both sites, so only the noise differs.
		var ev pipeline.EvaluateOutput
		if err := runActivity(t, sites[i], pipeline.ActivityEvaluate, pipeline.EvaluateInput{SiteCall: c, Model: firstModel(t, &tr, i)}, &ev); err != nil {
			t.Fatal(err)
		}
		got[i]["tabular metrics"] = []float64{ev.AUC, ev.Accuracy}
		got[i]["tabular validation metrics"] = []float64{*ev.ValAUC, *ev.ValAccuracy}

		dc := deepCall(name("noised-deep"))
		var dt pipeline.TrainLocalOutput
		if err := runActivity(t, deepSites[i], pipeline.ActivityTrainLocal, pipeline.TrainLocalInput{SiteCall: dc}, &dt); err != nil {
			t.Fatal(err)
		}
		p, err := testStore.GetModelParams32(ctx, dt.Model)
		if err != nil {
			t.Fatal(err)
		}
		got[i]["deep model"] = method.ToFloat64(p)
		got[i]["deep update metrics"] = []float64{dt.UpdateEvaluation.Accuracy}
		var de pipeline.EvaluateOutput
		if err := runActivity(t, deepSites[i], pipeline.ActivityEvaluate, pipeline.EvaluateInput{SiteCall: dc, Model: firstDeepModel(t, &dt, i)}, &de); err != nil {
			t.Fatal(err)
		}
		got[i]["deep metrics"] = []float64{de.Accuracy}
		got[i]["deep validation metrics"] = []float64{*de.ValAccuracy}
	}
	for _, k := range []string{"descriptor", "label summary", "tabular model", "tabular metrics", "tabular validation metrics",
		"deep model", "deep metrics", "deep update metrics", "deep validation metrics"} {
		if !differs(got[0][k], got[1][k]) {
			t.Errorf("%s: the same at two sites with different secrets (%v): released without noise", k, got[0][k])
		}
	}
}

// firstModel and firstDeepModel keep the first secret's trained model, so
// that both evaluations score the same one.
var keptModel, keptDeepModel pipeline.ArtifactRef

func firstModel(t *testing.T, tr *pipeline.TrainLocalOutput, i int) pipeline.ArtifactRef {
	if i == 0 {
		keptModel = tr.Model
	}
	return keptModel
}

func firstDeepModel(t *testing.T, tr *pipeline.TrainLocalOutput, i int) pipeline.ArtifactRef {
	if i == 0 {
		keptDeepModel = tr.Model
	}
	return keptDeepModel
}

// deepCall is a deep-small FedAvg call under dp record on site img0's 24
// training and 16 test images of 3 classes, with a batch of 64: every
// image is in every step's Poisson sample (q = 1).
func deepCall(campaign string) pipeline.SiteCall {
	c := call(campaign, "img0", 1)
	c.Preset = method.DeepSmall
	h := method.Defaults(method.DeepSmall)
	h.Classes, h.NSub, h.BatchSize, h.ValidationFraction = 3, 10, 64, 0.25
	h.DP, h.DPNoise, h.DPMetricsNoise, h.DPValidationNoise = method.DPRecord, 1, 3, 3
	c.Hyperparameters = h
	c.NTrain, c.NTest = 24, 16
	return c
}

// bandImages returns n 8×8 images of 3 classes whose class is a bright
// band of rows over seeded noise (as internal/workers' deep tests make
// them).
func bandImages(n int, seed uint64) *dataset.Images {
	const side, classes = 8, 3
	im := &dataset.Images{N: n, H: side, W: side, C: 1, Classes: classes, Pixels: make([]float32, n*side*side), Labels: make([]int, n)}
	x := seed
	for i := range n {
		x = x*6364136223846793005 + 1442695040888963407
		y := int(x>>33) % classes
		im.Labels[i] = y
		for p := range side * side {
			x = x*6364136223846793005 + 1442695040888963407
			v := int(x >> 59)
			if row := p / side; row >= 3*y && row < 3*y+3 {
				v += 160
			}
			im.Pixels[i*side*side+p] = float32(v) / 255
		}
	}
	return im
}
