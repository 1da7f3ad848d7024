package activities

import (
	"reflect"
	"testing"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/simulate"
)

// TestDefaultHyperparametersArePreset keeps the campaign defaults and the
// core presets one source of truth: a campaign with
// pipeline.DefaultHyperparameters runs exactly simulate.Preset for every
// method, under both presets (the paper preset with its triangle
// descriptor).
func TestDefaultHyperparametersArePreset(t *testing.T) {
	for i, preset := range []string{pipeline.PresetDefault, pipeline.PresetPaper} {
		for _, m := range pipeline.Methods {
			h := pipeline.DefaultHyperparameters()
			if preset == pipeline.PresetPaper {
				h.Descriptor = pipeline.DescriptorTriangle
			}
			got, err := Config(m, preset, h)
			if err != nil {
				t.Fatalf("case %d %s %s: %v", i, preset, m, err)
			}
			want, err := simulate.Preset(preset, learn.Method(m))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("case %d %s %s:\ngot  %+v\nwant %+v", i, preset, m, got, want)
			}
		}
	}
}

// TestConfigZeroMeansSomething checks that the settings whose zero is
// meaningful reach the core as zero.
func TestConfigZeroMeansSomething(t *testing.T) {
	h := pipeline.DefaultHyperparameters()
	h.Clusters, h.Beta, h.Mu, h.DriftThreshold = 0, 0, 0, 0
	h.PersonalSteps = 7
	c, err := Config(pipeline.MethodPTopoFL, pipeline.PresetDefault, h)
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.M != 0 || c.Server.Beta != 0 || c.Site.FedProx.Mu != 0 || c.Server.DriftThreshold != 0 || c.Site.PFedMe.Steps != 7 {
		t.Errorf("zero settings lost: M %d beta %v mu %v drift %v pFedMe steps %d",
			c.Server.M, c.Server.Beta, c.Site.FedProx.Mu, c.Server.DriftThreshold, c.Site.PFedMe.Steps)
	}
}
