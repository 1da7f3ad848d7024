package workers_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/eval"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/simulate"
	"github.com/ptopofl/ptopofl/store"
	"github.com/ptopofl/ptopofl/tda"
)

// TestLabelAwareDetectorThroughPipeline runs a default-preset pTopoFL
// campaign over a generated healthcare federation whose sites 1 and 5 flip
// 30 % of their labels (eval.DefaultHealthcareOptions, seed 3: one of the
// seeds aggregation's TestLabelledDetectorHealthcare pins, where the
// labelled detector flags exactly the two flipping sites) and checks that
// every site's stored descriptor carries the label-aware extension after
// the paper's 48 numbers and that the manifest flags exactly sites 1 and 5.
func TestLabelAwareDetectorThroughPipeline(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack")
	}
	s := startStack(t)
	fed, err := eval.Healthcare(eval.DefaultHealthcareOptions(3))
	if err != nil {
		t.Fatal(err)
	}
	s.dataDir = t.TempDir()
	if err := dataset.WriteFederation(s.dataDir, fed); err != nil {
		t.Fatal(err)
	}
	var sites []pipeline.Site
	for _, name := range fed.SiteNames() {
		sites = append(sites, pipeline.Site{Name: name})
	}
	startWorkers(t, s, sites)
	spec := pipeline.CampaignSpec{
		Campaign: "labelled", Method: learn.PTopoFL, Preset: method.Default, Rounds: 2, Seed: 3,
		Sites: sites, Bucket: s.store.Bucket(), Hyperparameters: method.Defaults(method.Default),
	}.WithDefaults()
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
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
	var want []string
	for _, site := range fed.Sites {
		if site.IsAdversarial {
			want = append(want, site.Name)
		}
	}
	if len(want) != 2 {
		t.Fatalf("federation has %d adversarial sites, want 2", len(want))
	}
	for round := 1; round <= 2; round++ {
		var m pipeline.RoundManifest
		if _, err := s.store.GetJSONKey(ctx, artifact.ManifestKey(spec.Campaign, round), &m); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(m.Flagged, want) {
			t.Errorf("round %d: flagged %v, want %v", round, m.Flagged, want)
		}
	}
	// The privacy boundary holds with the label-aware summary too: no raw
	// feature value in any object or history event of the campaign.
	var sims []simulate.Site
	for _, site := range fed.Sites {
		sims = append(sims, simulate.Site{Name: site.Name, TrainX: site.XTrain, TestX: site.XTest})
	}
	t.Run("privacy", func(t *testing.T) { checkPrivacy(t, s, sims, []string{spec.Campaign}, spec.Rounds) })
	for _, site := range sites {
		_, b, err := s.store.GetKey(ctx, artifact.DescriptorKey(spec.Campaign, 1, site.Name))
		if err != nil {
			t.Fatal(fmt.Errorf("site %s: %w", site.Name, err))
		}
		d, err := store.DecodeDescriptor(b)
		if err != nil {
			t.Fatal(fmt.Errorf("site %s: %w", site.Name, err))
		}
		if len(d.Descriptor) != tda.ExtendedDescriptorLen {
			t.Errorf("site %s: descriptor has %d numbers, want %d", site.Name, len(d.Descriptor), tda.ExtendedDescriptorLen)
		}
	}
}
