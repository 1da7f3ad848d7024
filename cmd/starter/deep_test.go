package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/store"
)

// tinyImageFederation writes a 3-site image federation of 8×8 images in
// 3 classes whose class is a bright band (rows 0–2, 3–5 or 6–7) over
// seeded noise: learnable in a few rounds of the deep-small CNN.
func tinyImageFederation(t *testing.T) string {
	t.Helper()
	const side, classes = 8, 3
	images := func(n int, seed uint64) *dataset.Images {
		im := &dataset.Images{N: n, H: side, W: side, C: 1, Classes: classes, Pixels: make([]float32, n*side*side), Labels: make([]int, n)}
		x := seed
		for i := range n {
			y := int(x % classes)
			im.Labels[i] = y
			for p := range side * side {
				x = x*6364136223846793005 + 1442695040888963407
				v := float32(x>>59) / 255 // noise in [0, 31/255]
				if row := p / side; row >= 3*y && row < 3*y+3 {
					v += 200.0 / 255
				}
				im.Pixels[i*side*side+p] = v
			}
		}
		return im
	}
	var sites []dataset.ImageSite
	for k := range 3 {
		sites = append(sites, dataset.ImageSite{Name: "site" + string(rune('0'+k)), Train: images(48, uint64(10+k)), Test: images(24, uint64(20+k))})
	}
	dir := filepath.Join(t.TempDir(), "images")
	if err := dataset.WriteImageFederation(dir, sites, dataset.ImageManifest{Generator: "test", Classes: classes}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestRunDeepJSONContract runs `starter run --preset deep-small` on the
// in-process local stack over a tiny image federation, for FedAvg and
// pTopoFL: the JSON object has the tabular contract's keys, final_acc is
// the last round's mean site top-1 accuracy, pTopoFL clusters every site,
// and the site models are stored as float32 parquet.
func TestRunDeepJSONContract(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack")
	}
	fed := tinyImageFederation(t)
	for i, m := range []string{"fedavg", "ptopofl"} {
		dataDir := filepath.Join(t.TempDir(), "local")
		code, stdout, stderr := runCLI("run", "--local", "--data-dir", dataDir, "--federation", fed, "--method", m,
			"--preset", "deep-small", "--rounds", "3", "--seed", "5", "--format", "json")
		if code != exitOK {
			t.Fatalf("case %d (%s): exit %d\nstderr: %s", i, m, code, stderr)
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal([]byte(stdout), &raw); err != nil {
			t.Fatalf("case %d: stdout is not a JSON object: %v\n%s", i, err, stdout)
		}
		for _, k := range []string{"method", "preset", "final_auc", "final_acc", "conv_round", "auc_curve", "acc_curve", "clusters", "trust", "flagged"} {
			if _, ok := raw[k]; !ok {
				t.Errorf("case %d: contract key %q missing", i, k)
			}
		}
		var r struct {
			Campaign string         `json:"campaign"`
			Preset   string         `json:"preset"`
			FinalAcc float64        `json:"final_acc"`
			AccCurve []float64      `json:"acc_curve"`
			Clusters map[string]int `json:"clusters"`
			// A deep campaign's final_acc scores each site's update; the
			// after-aggregation scores come as *_aggregate (campaign.Result).
			FinalAccAggregate *float64  `json:"final_acc_aggregate"`
			AccCurveAggregate []float64 `json:"acc_curve_aggregate"`
			LastManifest      string    `json:"last_manifest"`
		}
		if err := json.Unmarshal([]byte(stdout), &r); err != nil {
			t.Fatal(err)
		}
		if r.Preset != "deep-small" || len(r.AccCurve) != 3 || r.FinalAcc != r.AccCurve[2] {
			t.Errorf("case %d: preset %q, acc curve %v, final_acc %v", i, r.Preset, r.AccCurve, r.FinalAcc)
		}
		if len(r.AccCurveAggregate) != 3 || r.FinalAccAggregate == nil || *r.FinalAccAggregate != r.AccCurveAggregate[2] {
			t.Errorf("case %d: acc_curve_aggregate %v, final_acc_aggregate %v: want 3 rounds, the last one final", i, r.AccCurveAggregate, r.FinalAccAggregate)
		}
		// Both numbers are the last manifest's: its mean update_accuracy
		// and its mean accuracy.
		var man pipeline.RoundManifest
		mb, err := os.ReadFile(filepath.Join(dataDir, "s3", "ptopofl", "campaigns", r.Campaign, "round-0003", "manifest.json"))
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if err := json.Unmarshal(mb, &man); err != nil {
			t.Fatalf("case %d: manifest: %v", i, err)
		}
		if man.Mean.UpdateAccuracy == nil || *man.Mean.UpdateAccuracy != r.FinalAcc || r.FinalAccAggregate == nil || man.Mean.Accuracy != *r.FinalAccAggregate {
			t.Errorf("case %d: manifest mean %+v, final_acc %v, final_acc_aggregate %v", i, man.Mean, r.FinalAcc, r.FinalAccAggregate)
		}
		// The bands are far apart: three rounds of the CNN separate them
		// (measured: 1.0 for both methods; chance is 1/3).
		if r.FinalAcc < 0.8 {
			t.Errorf("case %d (%s): final top-1 %v, want at least 0.8", i, m, r.FinalAcc)
		}
		if m == "ptopofl" && len(r.Clusters) != 3 {
			t.Errorf("case %d: clusters %v, want all 3 sites", i, r.Clusters)
		}
		// The site models on the embedded S3's disk: float32 parquet.
		const params = (25*16 + 16) + (25*16*32 + 32) + (2*2*32*10 + 10) // the CNN at 8×8 inputs
		path := filepath.Join(dataDir, "s3", "ptopofl", "campaigns", r.Campaign, "round-0003", "models", "site1.parquet")
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		model, err := store.DecodeModel(b)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if len(model.Params) != params || len(b) > 4*params {
			t.Errorf("case %d: model of %d parameters in %d bytes; want %d parameters in at most 4 bytes each", i, len(model.Params), len(b), params)
		}
		for j, v := range model.Params {
			if float64(float32(v)) != v {
				t.Fatalf("case %d: parameter %d is not a float32 value", i, j)
			}
		}
	}
}

// TestRunDeepBadImages: an image federation whose labels exceed the
// campaign's classes fails the campaign, and the round's manifest records
// each site's drop with its file and what was wrong.
func TestRunDeepBadImages(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack")
	}
	fed := tinyImageFederation(t)
	dataDir := filepath.Join(t.TempDir(), "local")
	code, _, stderr := runCLI("run", "--local", "--data-dir", dataDir, "--federation", fed,
		"--method", "fedavg", "--preset", "deep-small", "--rounds", "1", "--set", "classes=2", "--format", "json")
	if code == exitOK || !strings.Contains(stderr, "manifest") {
		t.Fatalf("exit %d, stderr %q: want a failed campaign pointing at its manifest", code, stderr)
	}
	manifests, _ := filepath.Glob(filepath.Join(dataDir, "s3", "ptopofl", "campaigns", "*", "round-0001", "manifest.json"))
	if len(manifests) != 1 {
		t.Fatalf("manifests %v, want one", manifests)
	}
	b, err := os.ReadFile(manifests[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"site0_train-labels.idx", "not below the campaign's 2 classes"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("manifest does not name %q:\n%s", want, b)
		}
	}
}

// TestRunModelFitsFederation: a deep preset on a tabular federation, and
// logistic regression on an image federation, are refused before anything
// starts, with what to change.
func TestRunModelFitsFederation(t *testing.T) {
	for i, tc := range []struct {
		fed  string
		args []string
		want string
	}{
		{smallFederation(t), []string{"--preset", "deep-small"}, "holds tabular site files"}, // 0
		{tinyImageFederation(t), []string{"--preset", "default"}, "--preset deep-small"},     // 1
		{tinyImageFederation(t), []string{"--set", "model=logistic"}, "--preset deep-small"}, // 2
	} {
		args := append([]string{"run", "--local", "--data-dir", filepath.Join(t.TempDir(), "local"), "--federation", tc.fed, "--method", "fedavg"}, tc.args...)
		code, _, stderr := runCLI(args...)
		if code != exitInput || !strings.Contains(stderr, tc.want) {
			t.Errorf("case %d: exit %d, stderr %q; want %d and %q", i, code, stderr, exitInput, tc.want)
		}
	}
}
