package workers_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/internal/workers"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
)

// TestColocatedCampaignsShareAStack runs two colocated campaigns at once on
// one stack, as two starters serving different sites would: the golden
// healthcare federation's first four sites in one "process" (a colocated
// worker on its campaign's queue, with those sites' activities), the last
// four in the other, and one server worker for the campaign workflows.
// Every round of each must run on its own colocated worker, where its
// sites are: a round picked up by the other worker would find no activity
// for its sites and drop them, which the quorum (every site) turns into a
// failed campaign. Each campaign's curves must then equal, bit for bit,
// those of the same spec dispatched through the sites' own queues.
func TestColocatedCampaignsShareAStack(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack and runs four campaigns")
	}
	s := startStack(t)
	sites, _, _ := goldenSites(t, s.dataDir)
	grantSites(t, s, sites)
	var ws []worker.Worker
	t.Cleanup(func() {
		for _, w := range ws {
			w.Stop()
		}
	})
	server, err := workers.StartServer(s.client, s.store, workers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ws = append(ws, server)
	groups := [][]pipeline.Site{sites[:4], sites[4:]}
	for g, group := range groups {
		colocated := workers.NewColocated(s.client, s.store, pipeline.ColocatedTaskQueue(fmt.Sprintf("group-%d", g)), workers.Options{})
		for _, site := range group {
			w, err := workers.StartSite(s.client, siteStore(t, s, site.Name), site.Name, s.dataDir, workers.Options{ColocateOn: colocated})
			if err != nil {
				t.Fatal(err)
			}
			ws = append(ws, w)
		}
		if err := colocated.Start(); err != nil {
			t.Fatal(err)
		}
		ws = append(ws, colocated)
	}

	run := func(name string, group []pipeline.Site, queue string) (pipeline.CampaignWorkflowOutput, error) {
		spec := pipeline.CampaignSpec{
			Campaign: name, Method: learn.FedAvg, Preset: method.Default, Rounds: 4, Seed: 7,
			Sites: group, Bucket: s.store.Bucket(),
		}.WithDefaults()
		if err := spec.Validate(); err != nil {
			return pipeline.CampaignWorkflowOutput{}, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		r, err := s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: name, TaskQueue: pipeline.ServerTaskQueue},
			pipeline.CampaignWorkflowName, pipeline.CampaignWorkflowInput{Spec: spec, ColocatedQueue: queue})
		if err != nil {
			return pipeline.CampaignWorkflowOutput{}, err
		}
		var out pipeline.CampaignWorkflowOutput
		err = r.Get(ctx, &out)
		return out, err
	}
	outs := make([]pipeline.CampaignWorkflowOutput, len(groups))
	errs := make([]error, len(groups))
	var wg sync.WaitGroup
	for g, group := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[g], errs[g] = run(fmt.Sprintf("colocated-%d", g), group, pipeline.ColocatedTaskQueue(fmt.Sprintf("group-%d", g)))
		}()
	}
	wg.Wait()
	for g, group := range groups {
		if errs[g] != nil {
			t.Fatalf("colocated campaign %d: %v", g, errs[g])
		}
		var m pipeline.RoundManifest
		if _, err := s.store.GetJSONKey(context.Background(), artifact.ManifestKey(fmt.Sprintf("colocated-%d", g), 4), &m); err != nil {
			t.Fatal(err)
		}
		if len(m.Dropped) != 0 || len(m.Participants) != len(group) {
			t.Errorf("colocated campaign %d, round 4: participants %v, dropped %+v", g, m.Participants, m.Dropped)
		}
		want, err := run(fmt.Sprintf("dispatched-%d", g), group, "")
		if err != nil {
			t.Fatalf("dispatched campaign %d: %v", g, err)
		}
		if !sameBits(outs[g].AUCCurve, want.AUCCurve) || !sameBits(outs[g].AccCurve, want.AccCurve) {
			t.Errorf("group %d: colocated curves AUC %v acc %v, dispatched AUC %v acc %v", g, outs[g].AUCCurve, outs[g].AccCurve, want.AUCCurve, want.AccCurve)
		}
	}
}
