package experiments

import (
	"fmt"
	"math"

	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
)

// The deep experiment's scenarios (the paper's Section 5, Scenarios C and
// D; Table 2).
const (
	// ScenarioC is 10 sites of an image data set split by Dirichlet(α),
	// α ∈ DeepAlphas: CIFAR-10 when its files are given, Fashion-MNIST
	// otherwise.
	ScenarioC = "C"
	// ScenarioD is 50 sites of one writer each: FEMNIST when its files are
	// given, otherwise Fashion-MNIST split into writer-like sites
	// (dataset.WriterLikeSites).
	ScenarioD = "D"
)

// DeepAlphas are Scenario C's Dirichlet concentrations (0.1: high
// heterogeneity, 0.5: moderate).
var DeepAlphas = []float64{0.1, 0.5}

// Scenario C and D sizes: the paper's client counts; Scenario C's 600
// training images per site are the PyTorch anchor's protocol (10 × 600
// Fashion-MNIST images), Scenario D's writer-like sites have a median of
// 120 (FEMNIST's writers hold 50 to 400 images).
const (
	deepCSites      = 10
	deepCPerSite    = 600
	deepDSites      = 50
	deepDPerSite    = 120
	deepTestShare   = 0.25
	deepMinTest     = 20
	femnistMinImage = 20
)

// deepMethods are Table 2's methods and the local-only baseline.
var deepMethods = []learn.Method{learn.PTopoFL, learn.FedAvg, learn.FedProx, learn.SCAFFOLD, learn.PFedMe, learn.LocalOnly}

// DeepSettings are the deep experiment's settings: every method under its
// preset ("base"), except SCAFFOLD, which runs plain SGD ("sgd": momentum
// 0), as Karimireddy et al. define it, and pTopoFL a second time with
// descriptor_model "global" (DeepGlobalSetting). Under the presets' heavy-ball
// momentum 0.9 its control variates, estimated from sites of a few
// minibatches, grew until the models collapsed (Fashion-MNIST, α = 0.1,
// deep-small: mean site top-1 after the update 0.84 in round 1, 0.40 in
// round 10, aggregate 0.15; with plain SGD 0.79 and 0.68).
func DeepSettings() []pipeline.SweepSetting {
	var others []learn.Method
	for _, m := range deepMethods {
		if m != learn.SCAFFOLD {
			others = append(others, m)
		}
	}
	return []pipeline.SweepSetting{
		{Label: "base", Methods: others},
		{Label: "sgd", Set: []method.ParamValue{{Name: "momentum", Value: 0}}, Methods: []learn.Method{learn.SCAFFOLD}},
		{Label: DeepGlobalSetting, Set: []method.ParamValue{{Name: "descriptor_model", Text: method.DescriptorGlobal}}, Methods: []learn.Method{learn.PTopoFL}},
	}
}

// DeepGlobalSetting is the deep experiment's second pTopoFL row:
// descriptor_model "global" (descriptors every round under the model each
// site was sent, clusters fitted afresh from them), beside the base row's
// descriptors under the initial model.
const DeepGlobalSetting = "global"

// DeepImages are the image data sets the deep experiment draws its
// federations from, read by the caller (package dataset's readers).
// Fashion-MNIST is required unless both CIFAR-10 and FEMNIST are given.
type DeepImages struct {
	FashionTrain, FashionTest *dataset.Images
	// CIFAR-10, when given, is Scenario C's data (the paper's).
	CIFARTrain, CIFARTest *dataset.Images
	// FEMNIST, when given, is Scenario D's data (the paper's); its test set
	// may be nil (LEAF's all_data files: each writer's images are split).
	FEMNISTTrain, FEMNISTTest *dataset.Images
}

// deepPresets returns the presets of Scenario C's and D's campaigns for
// the size asked: the small variants (default) or the paper's.
func deepPresets(preset string) (c, d string, err error) {
	switch preset {
	case "", method.DeepSmall, method.DeepDSmall:
		return method.DeepSmall, method.DeepDSmall, nil
	case method.DeepC, method.DeepD:
		return method.DeepC, method.DeepD, nil
	}
	return "", "", fmt.Errorf("preset %q: the deep experiment runs %s (Scenario C) with %s (D), or %s with %s",
		preset, method.DeepSmall, method.DeepDSmall, method.DeepC, method.DeepD)
}

// buildDeep plans the deep experiment: per seed, Scenario C at each α of
// DeepAlphas and Scenario D, every method of Table 2 and local training.
func buildDeep(p *Plan, o Options) error {
	c, d, err := deepPresets(o.Preset)
	if err != nil {
		return err
	}
	im := o.Images
	cTrain, cTest, cSource := im.FashionTrain, im.FashionTest, "Fashion-MNIST"
	if im.CIFARTrain != nil {
		cTrain, cTest, cSource = im.CIFARTrain, im.CIFARTest, "CIFAR-10"
	}
	if cTrain == nil || cTest == nil {
		return fmt.Errorf("the deep experiment needs Fashion-MNIST (or CIFAR-10 for Scenario C and FEMNIST for D)")
	}
	if im.FEMNISTTrain == nil && (im.FashionTrain == nil || im.FashionTest == nil) {
		return fmt.Errorf("Scenario D needs FEMNIST or, as its stand-in, Fashion-MNIST")
	}
	p.Preset, p.Rounds, p.Methods, p.Concurrency = c, method.Rounds(c), deepMethods, 2
	p.Settings = DeepSettings()
	cSites, cPer, dSites, dPer := deepCSites, deepCPerSite, deepDSites, deepDPerSite
	if o.Tiny {
		cSites, cPer, dSites, dPer = 3, 30, 4, 24
	}
	for s := range o.Seeds {
		seed := o.FirstSeed + uint64(s)
		for _, alpha := range DeepAlphas {
			sites, err := dataset.PartitionImages(cTrain, cTest, dataset.ImageFederationOptions{
				Sites: cSites, PerSite: cPer, Alpha: alpha, TestFraction: deepTestShare, MinTest: deepMinTest, Seed: seed})
			if err != nil {
				return fmt.Errorf("scenario C, α %v, seed %d: %w", alpha, seed, err)
			}
			name := fmt.Sprintf("c-a%02d-s%d", int(math.Round(alpha*100)), seed)
			man := dataset.ImageManifest{Generator: cSource, Seed: seed, Alpha: alpha, PerSite: cPer}
			p.addImages(name, ScenarioC, cSource, seed, alpha, c, method.Rounds(c), sites, man)
		}
		var sites []dataset.ImageSite
		var source string
		if im.FEMNISTTrain != nil {
			source = "FEMNIST"
			sites, err = dataset.WriterSites(im.FEMNISTTrain, im.FEMNISTTest, dataset.WriterSiteOptions{
				Sites: dSites, MinImages: femnistMinImage, TestFraction: 0.1, Seed: seed})
		} else {
			source = "Fashion-MNIST, writer-like"
			sites, err = dataset.WriterLikeSites(im.FashionTrain, im.FashionTest, dataset.WriterLikeOptions{
				Sites: dSites, PerSite: dPer, TestFraction: deepTestShare, MinTest: deepMinTest, Seed: seed})
		}
		if err != nil {
			return fmt.Errorf("scenario D, seed %d: %w", seed, err)
		}
		man := dataset.ImageManifest{Generator: source, Seed: seed, PerSite: dPer}
		p.addImages(fmt.Sprintf("d-s%d", seed), ScenarioD, source, seed, 0, d, method.Rounds(d), sites, man)
	}
	return nil
}

// addImages adds an image federation: its sites renamed with the
// federation's name (every site of a sweep has its own task queue), its
// preset and rounds, and the number of classes its images have.
func (p *Plan) addImages(name, scenario, source string, seed uint64, alpha float64, preset string, rounds int, sites []dataset.ImageSite, man dataset.ImageManifest) {
	classes := 0
	for i := range sites {
		sites[i].Name = name + "-" + sites[i].Name
		classes = max(classes, sites[i].Train.Classes, sites[i].Test.Classes)
	}
	man.Classes = classes
	man.Shape = [3]int{sites[0].Train.H, sites[0].Train.W, sites[0].Train.C}
	p.Federations = append(p.Federations, Federation{
		Name: name, Scenario: scenario, Seed: seed, Alpha: alpha, Source: source,
		Preset: preset, Rounds: rounds, Set: []method.ParamValue{{Name: "classes", Value: float64(classes)}},
		Images: sites, ImageManifest: man,
	})
}
