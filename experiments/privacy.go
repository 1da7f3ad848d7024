package experiments

import (
	"fmt"

	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
)

// The privacy experiment's sizes: the utility of FedAvg and pTopoFL against
// ε is measured over PrivacyUtilitySeeds healthcare federations (issue 21:
// "healthcare (10 seeds)") and one deep-small federation of Fashion-MNIST
// (deepCSites sites of deepCPerSite images, Dirichlet α 0.5).
const (
	PrivacyUtilitySeeds = 10
	privacyDeepAlpha    = 0.5
)

// PrivacyEpsilons are the budgets the privacy experiment measures, beside
// no privacy at all.
var PrivacyEpsilons = []float64{1, 3, 8}

// privacyMethods are the methods whose utility it measures.
var privacyMethods = []learn.Method{learn.PTopoFL, learn.FedAvg}

// PrivacySettings is the privacy experiment's grid: without DP ("nodp"),
// then dp record at each of PrivacyEpsilons ("eps1", "eps3", "eps8"), with
// the defaults dp record brings (method.DPDefaults: one descriptor release,
// in round 1), as `starter run --set dp=record` gets them.
func PrivacySettings() []pipeline.SweepSetting {
	out := []pipeline.SweepSetting{{Label: "nodp"}}
	for _, e := range PrivacyEpsilons {
		set := []method.ParamValue{{Name: "dp", Text: method.DPRecord}, {Name: "dp_epsilon", Value: e}}
		h, _ := method.Defaults(method.Default).Apply(set)
		set = append(set, method.Changes(h, method.DPDefaults(h, func(string) bool { return false }))...)
		out = append(out, pipeline.SweepSetting{Label: fmt.Sprintf("eps%g", e), Set: set})
	}
	return out
}

// PrivacyEpsilon returns the budget of a setting of PrivacySettings (0 for
// "nodp").
func PrivacyEpsilon(set pipeline.SweepSetting) float64 {
	for _, pv := range set.Set {
		if pv.Name == "dp_epsilon" {
			return pv.Value
		}
	}
	return 0
}

// buildPrivacy plans the privacy experiment's campaigns: pTopoFL and FedAvg
// without DP and under dp record at ε = 1, 3, 8, over PrivacyUtilitySeeds
// healthcare federations (2 when tiny) and, when Fashion-MNIST is given,
// one deep-small federation of it. The attacks and the audit run beside
// the sweep, on the same data (package privacy/audit): they need no
// campaign.
func buildPrivacy(p *Plan, o Options) error {
	p.Methods = privacyMethods
	p.Settings = PrivacySettings()
	seeds := PrivacyUtilitySeeds
	if o.Tiny {
		seeds = 2
	}
	for s := range seeds {
		if err := p.add(o, Healthcare, o.FirstSeed+uint64(s), attack{}, nil); err != nil {
			return err
		}
	}
	im := o.Images
	if im.FashionTrain == nil || im.FashionTest == nil {
		return nil
	}
	sites, per := deepCSites, deepCPerSite
	if o.Tiny {
		sites, per = 3, 30
	}
	fs, err := dataset.PartitionImages(im.FashionTrain, im.FashionTest, dataset.ImageFederationOptions{
		Sites: sites, PerSite: per, Alpha: privacyDeepAlpha, TestFraction: deepTestShare, MinTest: deepMinTest, Seed: o.FirstSeed})
	if err != nil {
		return fmt.Errorf("deep-small federation, seed %d: %w", o.FirstSeed, err)
	}
	rounds := method.Rounds(method.DeepSmall)
	if o.Rounds > 0 {
		rounds = o.Rounds
	}
	man := dataset.ImageManifest{Generator: "Fashion-MNIST", Seed: o.FirstSeed, Alpha: privacyDeepAlpha, PerSite: per}
	p.addImages(fmt.Sprintf("ds-s%d", o.FirstSeed), DeepSmallScenario, "Fashion-MNIST", o.FirstSeed, privacyDeepAlpha, method.DeepSmall, rounds, fs, man)
	return nil
}

// DeepSmallScenario names the privacy experiment's deep-small federation.
const DeepSmallScenario = "deep-small"
