package workers_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/nn"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/simulate"
)

// bandImages returns n 8×8 images of 3 classes whose class is a bright
// band of rows over seeded noise (pixels multiples of 1/255, as IDX files
// hold them).
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
			v := int(x >> 59) // noise 0..31
			if row := p / side; row >= 3*y && row < 3*y+3 {
				v += 160
			}
			im.Pixels[i*side*side+p] = float32(v) / 255
		}
	}
	return im
}

// bandFederation writes a 3-site image federation of bandImages into dir,
// sites <prefix>0..<prefix>2 with 40, 48 and 56 training and 20 test
// images, and returns its sites.
func bandFederation(t *testing.T, dir, prefix string) ([]dataset.ImageSite, []pipeline.Site) {
	t.Helper()
	var fed []dataset.ImageSite
	var sites []pipeline.Site
	for k := range 3 {
		name := fmt.Sprintf("%s%d", prefix, k)
		fed = append(fed, dataset.ImageSite{Name: name, Train: bandImages(40+8*k, uint64(100+k)), Test: bandImages(20, uint64(200+k))})
		sites = append(sites, pipeline.Site{Name: name})
	}
	if err := dataset.WriteImageFederation(dir, fed, dataset.ImageManifest{Generator: "test", Classes: 3}); err != nil {
		t.Fatal(err)
	}
	return fed, sites
}

// TestDeepCampaignMatchesSimulate runs 3-round deep-small campaigns (the
// anchor's CNN on 8×8 images, 3 classes) of every method (the paper's, the
// local baseline and the robust aggregators) over a 3-site image federation on the
// local stack and requires the accuracy and AUC curves and every site's
// final model to equal simulate.RunDeep's bit for bit: the float32 model
// files, the float32 rounding of aggregates and the seeds are the same on
// both paths.
func TestDeepCampaignMatchesSimulate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack")
	}
	s := startStack(t)
	s.dataDir = filepath.Join(t.TempDir(), "images")
	fed, sites := bandFederation(t, s.dataDir, "site")
	var sims []simulate.DeepSite
	for _, f := range fed {
		// What the site reads back from the IDX files.
		d, err := dataset.LoadImageSite(s.dataDir, f.Name, 3)
		if err != nil {
			t.Fatal(err)
		}
		sims = append(sims, simulate.DeepSite{Name: f.Name, Shape: nn.Shape{H: 8, W: 8, C: 1},
			Train: nn.Data{N: d.Train.N, X: d.Train.Pixels, Labels: d.Train.Labels},
			Test:  nn.Data{N: d.Test.N, X: d.Test.Pixels, Labels: d.Test.Labels}})
	}
	startWorkers(t, s, sites)

	const seed, rounds = 17, 3
	seeds := simulate.DeepSeeds{
		Init:       pipeline.DeriveSeed(seed, 0, "", pipeline.PurposeTrain),
		Train:      func(r int, site string) uint64 { return pipeline.DeriveSeed(seed, r, site, pipeline.PurposeTrain) },
		Descriptor: func(site string) uint64 { return pipeline.DeriveSeed(seed, 0, site, pipeline.PurposeDescriptor) },
	}
	type deepCase struct {
		m               learn.Method
		descriptorModel string
	}
	var cases []deepCase
	for _, m := range learn.Methods {
		cases = append(cases, deepCase{m: m})
	}
	// pTopoFL with descriptors every round under the model each site was
	// sent, the clusters fitted afresh from them (descriptor_model global).
	cases = append(cases, deepCase{learn.PTopoFL, method.DescriptorGlobal})
	for _, tc := range cases {
		m := tc.m
		name := string(m)
		if tc.descriptorModel != "" {
			name += "-" + tc.descriptorModel
		}
		t.Run(name, func(t *testing.T) {
			h := method.Defaults(method.DeepSmall)
			h.Classes, h.NSub = 3, 30
			h.DescriptorModel = tc.descriptorModel
			// Three sites: the trimmed mean must cut one model at each
			// end, Krum tolerates no Byzantine site (n ≥ 2f + 3).
			h.TrimFraction, h.Byzantine = 0.34, 0
			mc, err := method.Resolve(m, method.DeepSmall, h)
			if err != nil {
				t.Fatal(err)
			}
			want, err := simulate.RunDeep(sims, simulate.Config{Config: mc, Rounds: rounds}, seeds)
			if err != nil {
				t.Fatal(err)
			}
			spec := pipeline.CampaignSpec{
				Campaign: "deep-" + name, Method: m, Preset: method.DeepSmall, Rounds: rounds, Seed: seed,
				Sites: sites, Bucket: s.store.Bucket(), Hyperparameters: h,
			}.WithDefaults()
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
			if err := run.Get(ctx, &out); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: accuracy %v (simulate %v)", m, out.AccCurve, want.AccCurve)
			if !sameBits(out.AccCurve, want.AccCurve) || !sameBits(out.AUCCurve, want.AUCCurve) {
				t.Errorf("curves\n got acc %v auc %v\nwant acc %v auc %v", out.AccCurve, out.AUCCurve, want.AccCurve, want.AUCCurve)
			}
			// The sites' scores of their own update, before the aggregation
			// (the anchor's "mean site top-1"), one per round.
			if len(out.UpdateAccCurve) != rounds || !sameBits(out.UpdateAccCurve, want.UpdateAccCurve) {
				t.Errorf("update accuracy curve %v, simulate %v", out.UpdateAccCurve, want.UpdateAccCurve)
			}
			if m == learn.PTopoFL {
				// Descriptors in round 1 only, or in every round under
				// descriptor_model global, and then under another model
				// each round: a site's round-2 descriptor differs from
				// its round-1 one (the data are the same).
				first := map[string][]float64{}
				for r := 1; r <= rounds; r++ {
					var rm pipeline.RoundManifest
					if _, err := s.store.GetJSONKey(ctx, artifact.ManifestKey(spec.Campaign, r), &rm); err != nil {
						t.Fatal(err)
					}
					if want := r == 1 || tc.descriptorModel == method.DescriptorGlobal; rm.DescriptorsRecomputed != want {
						t.Errorf("round %d: descriptors recomputed %v, want %v", r, rm.DescriptorsRecomputed, want)
					}
					for _, o := range rm.Outputs {
						if o.Role != pipeline.RoleDescriptor || r > 2 {
							continue
						}
						d, err := s.store.GetDescriptor(ctx, artifact.Ref(o.Ref))
						if err != nil {
							t.Fatal(err)
						}
						if r == 1 {
							first[o.Site] = d.Descriptor
						} else if sameBits(d.Descriptor, first[o.Site]) {
							t.Errorf("site %s: round-2 descriptor equals round 1's: not computed under the model sent", o.Site)
						}
					}
				}
			}
			var man pipeline.RoundManifest
			if _, err := s.store.GetJSONKey(ctx, artifact.ManifestKey(spec.Campaign, rounds), &man); err != nil {
				t.Fatal(err)
			}
			held := map[string]pipeline.ArtifactRef{}
			for _, o := range man.Outputs {
				if o.Role == pipeline.RoleSiteModel {
					held[o.Site] = o.Ref
				}
			}
			for i, site := range sites {
				ref, ok := held[site.Name]
				if !ok {
					t.Fatalf("manifest of round %d has no site model for %s", rounds, site.Name)
				}
				got, err := s.store.GetModel(ctx, artifact.Ref(ref))
				if err != nil {
					t.Fatal(err)
				}
				if !sameBits(got.Params, want.Held[i]) {
					t.Errorf("site %s: final model differs from simulate.RunDeep's", site.Name)
				}
			}
		})
	}
}

// TestDeepValidationFraction runs a 3-round deep-small FedAvg campaign
// with validation_fraction 0.25 over a 3-site image federation and
// requires, bit for bit, the curves and final models of simulate.RunDeep
// on the images each site trains on (method.ValidationRows with the
// campaign seed and the site), and every site's validation scores in the
// last manifest equal to method.EvaluateDeep of its final model on the
// images it held out.
func TestDeepValidationFraction(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack")
	}
	s := startStack(t)
	s.dataDir = filepath.Join(t.TempDir(), "images")
	fed, sites := bandFederation(t, s.dataDir, "site")
	const seed, rounds, frac = 17, 3, 0.25
	var sims []simulate.DeepSite
	var vals []nn.Data
	for _, f := range fed {
		d, err := dataset.LoadImageSite(s.dataDir, f.Name, 3)
		if err != nil {
			t.Fatal(err)
		}
		p := method.DeepSite{Shape: nn.Shape{H: 8, W: 8, C: 1},
			Train: nn.Data{N: d.Train.N, X: d.Train.Pixels, Labels: d.Train.Labels},
			Test:  nn.Data{N: d.Test.N, X: d.Test.Pixels, Labels: d.Test.Labels}}
		tr, val, err := method.ValidationRows(p.Train.N, frac, pipeline.DeriveSeed(seed, 0, f.Name, pipeline.PurposeValidation))
		if err != nil {
			t.Fatal(err)
		}
		p = p.HoldOut(tr, val)
		sims = append(sims, simulate.DeepSite{Name: f.Name, Shape: p.Shape, Train: p.Train, Test: p.Test})
		vals = append(vals, p.Val)
	}
	startWorkers(t, s, sites)
	h := method.Defaults(method.DeepSmall)
	h.Classes, h.NSub, h.ValidationFraction = 3, 30, frac
	mc, err := method.Resolve(learn.FedAvg, method.DeepSmall, h)
	if err != nil {
		t.Fatal(err)
	}
	seeds := simulate.DeepSeeds{
		Init:       pipeline.DeriveSeed(seed, 0, "", pipeline.PurposeTrain),
		Train:      func(r int, site string) uint64 { return pipeline.DeriveSeed(seed, r, site, pipeline.PurposeTrain) },
		Descriptor: func(site string) uint64 { return pipeline.DeriveSeed(seed, 0, site, pipeline.PurposeDescriptor) },
	}
	want, err := simulate.RunDeep(sims, simulate.Config{Config: mc, Rounds: rounds}, seeds)
	if err != nil {
		t.Fatal(err)
	}
	spec := pipeline.CampaignSpec{Campaign: "deep-val", Method: learn.FedAvg, Preset: method.DeepSmall, Rounds: rounds, Seed: seed,
		Sites: sites, Bucket: s.store.Bucket(), Hyperparameters: h}
	out, err := runExternal(t, s, spec)
	if err != nil {
		t.Fatal(err)
	}
	if !sameBits(out.AccCurve, want.AccCurve) || !sameBits(out.AUCCurve, want.AUCCurve) {
		t.Errorf("curves\n got acc %v auc %v\nwant acc %v auc %v", out.AccCurve, out.AUCCurve, want.AccCurve, want.AUCCurve)
	}
	held, man := heldModels(t, s, spec.Campaign, rounds)
	net, err := mc.NewNetwork(nn.Shape{H: 8, W: 8, C: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i, site := range sites {
		if !sameBits(held[site.Name], want.Held[i]) {
			t.Errorf("site %s: final model differs from simulate.RunDeep's", site.Name)
		}
		auc, acc, err := method.EvaluateDeep(net, method.ToFloat32(held[site.Name]), vals[i])
		if err != nil {
			t.Fatal(err)
		}
		sm := man.Metrics[i]
		if sm.ValAUC == nil || sm.ValAccuracy == nil || *sm.ValAUC != auc || *sm.ValAccuracy != acc || sm.NumVal != vals[i].N {
			t.Errorf("site %s: manifest validation %+v, want auc %v acc %v on %d images", site.Name, sm, auc, acc, vals[i].N)
		}
	}
	if len(out.ValAccCurve) != rounds {
		t.Errorf("validation accuracy curve %v, want %d points", out.ValAccCurve, rounds)
	}
	t.Logf("accuracy %v, validation accuracy %v", out.AccCurve, out.ValAccCurve)
}
