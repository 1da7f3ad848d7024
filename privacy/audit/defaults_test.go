package audit

import (
	"slices"
	"testing"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
)

// TestDefaultsMatchPresets checks that the adapters' defaults are the
// repository's: TabularSite's those of the default preset's FedAvg site
// (15 rounds of 30 full-batch steps at 0.05, C = 1, init scale 0.01, dp
// clip 1.5, δ 1e-5), and DeepSite's those of deep-small (its CNN, SGD at
// 0.05 with momentum 0.9, minibatches of 32, 20 rounds of 1 epoch: 20
// epochs for a site training alone).
func TestDefaultsMatchPresets(t *testing.T) {
	x, y, _ := healthcareSite(t, 7)
	site, err := NewTabularSite(TabularSiteConfig{X: x, Y: y})
	if err != nil {
		t.Fatal(err)
	}
	h := method.Defaults(method.Default)
	h.DP, h.DPNoise = method.DPRecord, 1
	c, err := method.Resolve(learn.FedAvg, method.Default, h)
	if err != nil {
		t.Fatal(err)
	}
	got := site.cfg
	if got.Rounds != method.Rounds(method.Default) || got.Steps != c.Site.LocalGD.Steps || got.LR != c.Site.LocalGD.LR ||
		got.C != c.Site.C || got.InitScale != c.Site.InitScale || got.Clip != c.DP.Clip || got.Delta != c.DP.Delta {
		t.Errorf("tabular defaults %d rounds × %d steps at %v, C %v, init %v, clip %v, δ %v; the default preset has %d × %d at %v, C %v, init %v, clip %v, δ %v",
			got.Rounds, got.Steps, got.LR, got.C, got.InitScale, got.Clip, got.Delta,
			method.Rounds(method.Default), c.Site.LocalGD.Steps, c.Site.LocalGD.LR, c.Site.C, c.Site.InitScale, c.DP.Clip, c.DP.Delta)
	}

	imgs, shape, err := NoisyImages(ImageOptions{N: 20})
	if err != nil {
		t.Fatal(err)
	}
	deep, err := NewDeepSite(DeepSiteConfig{Images: imgs, Shape: shape})
	if err != nil {
		t.Fatal(err)
	}
	dc, err := method.Resolve(learn.FedAvg, method.DeepSmall, method.Defaults(method.DeepSmall))
	if err != nil {
		t.Fatal(err)
	}
	want := dc.Network
	if deep.net.Arch != want.Arch || deep.net.Width != want.Width || !slices.Equal(deep.net.Hidden, want.Hidden) || deep.net.Classes != want.Classes {
		t.Errorf("deep network %+v, deep-small's %+v", deep.net, want)
	}
	tc, wt := deep.train, dc.DeepSite.Train
	if tc.Optimizer != wt.Optimizer || tc.LR != wt.LR || tc.Momentum != wt.Momentum || tc.BatchSize != wt.BatchSize ||
		tc.WeightDecay != wt.WeightDecay || tc.Epochs != wt.Epochs*method.Rounds(method.DeepSmall) {
		t.Errorf("deep training %+v; deep-small trains %+v for %d rounds", tc, wt, method.Rounds(method.DeepSmall))
	}
}
