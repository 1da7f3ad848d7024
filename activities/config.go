package activities

import (
	"fmt"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/simulate"
)

// Config returns the core configuration of a campaign's method: the
// simulate preset of the same name, with the campaign's hyper-parameters
// written over the fields that mean the same thing. A campaign with
// pipeline.DefaultHyperparameters therefore computes exactly what
// simulate.Run computes with simulate.Preset(preset, method)
// (TestDefaultHyperparametersArePreset).
//
// Fields where zero means something are always copied: clusters (0 = M
// chosen by silhouette), beta, mu, trim_fraction, byzantine, and
// drift_threshold (0 = never re-cluster). The others are copied when set.
// The paper preset keeps its drift threshold of 0 (the authors fit their
// clusters once) whatever drift_threshold says; betti_resolution is
// validated to be the descriptor's fixed 20.
func Config(method, preset string, h pipeline.Hyperparameters) (simulate.Config, error) {
	m, err := learn.ParseMethod(method)
	if err != nil {
		return simulate.Config{}, err
	}
	if preset == "" {
		preset = pipeline.PresetDefault
	}
	c, err := simulate.Preset(preset, m)
	if err != nil {
		return simulate.Config{}, err
	}
	c.Server.M = h.Clusters
	c.Server.Beta = h.Beta
	if h.AnomalyThreshold > 0 {
		c.Server.Tau = h.AnomalyThreshold
	}
	if preset != pipeline.PresetPaper {
		c.Server.DriftThreshold = h.DriftThreshold
	}
	if h.NSub > 0 {
		c.NSub = h.NSub
	}
	if h.Descriptor != "" {
		c.Descriptor = h.Descriptor
	}
	if h.C > 0 {
		c.Site.C = h.C
	}
	if h.MaxIter > 0 {
		c.Site.LBFGS.MaxIter = h.MaxIter
	}
	if h.Tol > 0 {
		c.Site.LBFGS.GradTol = h.Tol
	}
	if h.LR > 0 {
		c.Site.FedProx.LR, c.Site.SCAFFOLD.LR = h.LR, h.LR
	}
	if h.Steps > 0 {
		c.Site.FedProx.Steps, c.Site.SCAFFOLD.Steps = h.Steps, h.Steps
	}
	c.Site.FedProx.Mu = h.Mu
	if h.Lambda > 0 {
		c.Site.PFedMe.Lambda = h.Lambda
	}
	if h.LRPersonal > 0 {
		c.Site.PFedMe.LRPersonal = h.LRPersonal
	}
	if h.LROuter > 0 {
		c.Site.PFedMe.LROuter = h.LROuter
	}
	if h.PersonalSteps > 0 {
		c.Site.PFedMe.Steps = h.PersonalSteps
	}
	c.Server.TrimFraction = h.TrimFraction
	c.Server.KrumF = h.Byzantine
	if err := c.Validate(); err != nil {
		return simulate.Config{}, fmt.Errorf("campaign settings: %w", err)
	}
	return c, nil
}

// trainSeed is the seed of a site's round-1 parameters. The paper preset
// seeds site k with campaign seed + k, as the authors' code (and
// simulate.Run) does; the default preset uses the derived per-site seed.
func trainSeed(call pipeline.SiteCall) uint32 {
	if call.Preset == pipeline.PresetPaper {
		return uint32(call.CampaignSeed) + uint32(call.SiteIndex)
	}
	return uint32(call.Seed)
}
