package workers_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/pipeline"
)

// beforeInline holds the objects of a colocated campaign written by the
// binary before rounds ran as stages of the campaign workflow
// (testdata/before-inline/README.md).
const beforeInline = "../../testdata/before-inline"

// TestColocatedCampaignWrittenBeforeInlineRounds holds the current code
// to the stored colocated campaign of the binary before inline rounds
// (3-round paper-preset pTopoFL on the golden federation, its campaign
// workflow on the server queue and its rounds child workflows on the
// colocated queue, paused after round 2 with its state in S3):
//   - the same campaign (same name and spec) run from round 1 by the
//     current code, as the starter now starts it (on the colocated queue,
//     every round a stage of the campaign workflow: no child round
//     workflow exists), writes every object of rounds 1 and 2 (manifests,
//     descriptors, clustering, models, aggregates) byte for byte as the
//     old binary did;
//   - with those objects replaced by the stored ones, verify passes on
//     the two rounds and history and export read them;
//   - the stored campaign resumes from its paused state on the colocated
//     queue, and its round 3 writes the same bytes as the current code's
//     round 3, its curves bit for bit the current code's;
//   - verify, history and export pass on the resumed campaign.
func TestColocatedCampaignWrittenBeforeInlineRounds(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack and runs two campaigns")
	}
	fixture, err := filepath.Abs(beforeInline)
	if err != nil {
		t.Fatal(err)
	}
	const name = "before-inline"
	stored := map[string][]byte{} // the fixture's objects by key
	err = filepath.WalkDir(fixture, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Base(path) == "README.md" {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(fixture, path)
		if err != nil {
			return err
		}
		stored[filepath.ToSlash(rel)] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	pausedKey := artifact.PausedStateKey(name, 2)
	if _, ok := stored[pausedKey]; !ok {
		t.Fatalf("%s has no %s", fixture, pausedKey)
	}

	s := startStack(t)
	sites, _, _ := goldenSites(t, s.dataDir)
	queue := pipeline.ColocatedTaskQueue("before-inline")
	startColocatedWorkers(t, s, sites, queue)
	ctx := context.Background()

	check := func(rounds int) {
		t.Helper()
		rep, err := campaign.VerifyRecord(ctx, s.store, name, 4)
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK || rep.Rounds != rounds {
			t.Errorf("verify: ok %v, %d rounds (want %d): %v", rep.OK, rep.Rounds, rounds, rep.Problems)
		}
		hist, err := campaign.History(ctx, s.store, name)
		if err != nil || len(hist) != rounds {
			t.Fatalf("history: %d rows, %v", len(hist), err)
		}
		objs, err := campaign.ReadManifests(ctx, s.store, name)
		if err != nil {
			t.Fatal(err)
		}
		effective, _ := objs.Effective()
		exp, err := campaign.ExportRows(effective)
		if err != nil || len(exp) != rounds*len(sites) {
			t.Fatalf("export: %d rows, %v", len(exp), err)
		}
	}
	objects := func() map[string][]byte {
		t.Helper()
		keys, err := s.store.List(ctx, "campaigns/"+name+"/")
		if err != nil {
			t.Fatal(err)
		}
		m := make(map[string][]byte, len(keys))
		for _, k := range keys {
			_, b, err := s.store.GetKey(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			m[k] = b
		}
		return m
	}
	run := func(spec pipeline.CampaignSpec, resume *artifact.Ref) pipeline.CampaignWorkflowOutput {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		r, err := s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: spec.Campaign, TaskQueue: queue},
			pipeline.CampaignWorkflowName, pipeline.CampaignWorkflowInput{Spec: spec, ResumeFrom: resume, ColocatedQueue: queue})
		if err != nil {
			t.Fatal(err)
		}
		var out pipeline.CampaignWorkflowOutput
		if err := r.Get(ctx, &out); err != nil {
			t.Fatalf("%s: %v", spec.Campaign, err)
		}
		if out.State != pipeline.StateDone || out.RoundsDone != spec.Rounds {
			t.Fatalf("%s: %s after %d rounds", spec.Campaign, out.State, out.RoundsDone)
		}
		for n := 1; n <= spec.Rounds; n++ {
			_, err := s.client.DescribeWorkflowExecution(ctx, pipeline.RoundWorkflowID(spec.Campaign, n), "")
			var nf *serviceerror.NotFound
			if !errors.As(err, &nf) {
				t.Errorf("round %d ran as a child workflow (describe: %v)", n, err)
			}
		}
		return out
	}

	// The same campaign from round 1, all of it by this code.
	specKey := artifact.SpecKey(name)
	if _, err := s.store.Put(ctx, specKey, stored[specKey]); err != nil {
		t.Fatal(err)
	}
	var spec pipeline.CampaignSpec
	if _, err := s.store.GetJSONKey(ctx, specKey, &spec); err != nil {
		t.Fatal(err)
	}
	want := run(spec, nil)
	fresh := objects()
	for k, b := range stored {
		if k == pausedKey {
			continue
		}
		if got, ok := fresh[k]; !ok || !bytes.Equal(got, b) {
			t.Errorf("%s: written by this code (%d bytes, present %v) differs from the old binary's (%d bytes)", k, len(got), ok, len(b))
		}
	}

	// The stored campaign in its place.
	for k := range fresh {
		if err := s.store.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	for k, b := range stored {
		if _, err := s.store.Put(ctx, k, b); err != nil {
			t.Fatal(err)
		}
	}
	check(2)
	paused, _, err := s.store.GetKey(ctx, pausedKey)
	if err != nil {
		t.Fatal(err)
	}
	resumed := run(spec, &paused)
	if !sameBits(resumed.AUCCurve, want.AUCCurve) || !sameBits(resumed.AccCurve, want.AccCurve) {
		t.Errorf("curves of the resumed campaign\n %v %v\nof the same campaign run by this code\n %v %v", resumed.AUCCurve, resumed.AccCurve, want.AUCCurve, want.AccCurve)
	}
	after := objects()
	n3 := 0
	for k, b := range fresh {
		if !strings.Contains(k, "/round-0003/") {
			continue
		}
		n3++
		if got, ok := after[k]; !ok || !bytes.Equal(got, b) {
			t.Errorf("%s: written by the resumed campaign (%d bytes, present %v) differs from this code's run from round 1 (%d bytes)", k, len(got), ok, len(b))
		}
	}
	if n3 == 0 {
		t.Error("the run from round 1 wrote nothing under round-0003/")
	}
	check(3)
}
