package activities

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/eval"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/search"
	"github.com/ptopofl/ptopofl/store"
)

// RecordSweep writes sweeps/<sweep>/spec.json and every campaign's
// campaigns/<campaign>/spec.json (the same record `starter run` writes), so
// the audit trail of a swept campaign starts like any other's. Canonical
// JSON at fixed keys: a retry writes the same bytes. The sweep's and a
// campaign's spec.json are written once: one already there for the same
// sweep or campaign (perhaps with an older code version) is kept, and one
// for another under the same name is refused (a sweep's naming the
// differing fields, pipeline.SweepSpecDiff).
func (s *Server) RecordSweep(ctx context.Context, in pipeline.RecordSweepInput) (pipeline.RecordSweepOutput, error) {
	if err := s.checkBucket(in.Spec.Bucket); err != nil {
		return pipeline.RecordSweepOutput{}, err
	}
	campaigns, err := in.Spec.Campaigns()
	if in.Spec.Search != nil {
		campaigns, err = in.Spec.SearchCampaigns(in.Trials)
	}
	if err != nil {
		return pipeline.RecordSweepOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), pipeline.ErrTypeInvalidSpec, err)
	}
	// A sweep name is bound to one spec: spec.json is written once, and a
	// different one under the same name is refused (the starter refuses
	// it first; this holds for any other route).
	key := artifact.SweepSpecKey(in.Spec.Sweep)
	ref, err := s.store.PutJSONIfAbsentOrSame(ctx, key, in.Spec)
	if errors.Is(err, store.ErrConflict) {
		var stored pipeline.SweepSpec
		if ref, err = s.store.GetJSONKey(ctx, key, &stored); err != nil {
			return pipeline.RecordSweepOutput{}, err
		}
		if diff := pipeline.SweepSpecDiff(stored, in.Spec); len(diff) > 0 {
			return pipeline.RecordSweepOutput{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("sweep %s exists with a different spec (%s): %s; run it under another sweep name", in.Spec.Sweep, key, strings.Join(diff, ", ")),
				pipeline.ErrTypeInvalidSpec, nil)
		}
	}
	if err != nil {
		return pipeline.RecordSweepOutput{}, err
	}
	for i, c := range campaigns {
		key := artifact.SpecKey(c.Spec.Campaign)
		_, err := s.store.PutJSONIfAbsentOrSame(ctx, key, c.Spec)
		if errors.Is(err, store.ErrConflict) {
			var stored pipeline.CampaignSpec
			if _, gerr := s.store.GetJSONKey(ctx, key, &stored); gerr != nil {
				return pipeline.RecordSweepOutput{}, gerr
			}
			if !stored.SameCampaign(c.Spec) {
				return pipeline.RecordSweepOutput{}, temporal.NewNonRetryableApplicationError(
					fmt.Sprintf("campaign %s exists with a different spec (%s); rename the sweep", c.Spec.Campaign, key),
					pipeline.ErrTypeInvalidSpec, nil)
			}
			err = nil
		}
		if err != nil {
			return pipeline.RecordSweepOutput{}, err
		}
		if i%20 == 0 {
			activity.RecordHeartbeat(ctx, i)
		}
	}
	return pipeline.RecordSweepOutput{Spec: ref}, nil
}

// BuildSweepResults reads every round manifest of every campaign that ran
// and writes results.parquet (one row per campaign) and curves.parquet (one
// row per campaign and round) under sweeps/<sweep>/. Every number comes
// from the manifests, the audit record, not from the workflow's summaries.
func (s *Server) BuildSweepResults(ctx context.Context, in pipeline.BuildSweepResultsInput) (pipeline.BuildSweepResultsOutput, error) {
	if err := s.checkBucket(in.Spec.Bucket); err != nil {
		return pipeline.BuildSweepResultsOutput{}, err
	}
	campaigns, err := in.Spec.Campaigns()
	if in.Spec.Search != nil {
		if in.Search == nil {
			return pipeline.BuildSweepResultsOutput{}, temporal.NewNonRetryableApplicationError("search sweep without its record", pipeline.ErrTypeInvalidSpec, nil)
		}
		campaigns, err = in.Spec.SearchCampaigns(in.Search.Trials)
	}
	if err != nil {
		return pipeline.BuildSweepResultsOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), pipeline.ErrTypeInvalidSpec, err)
	}
	if in.Search != nil {
		if _, err := s.store.PutJSON(ctx, artifact.SweepSearchKey(in.Spec.Sweep), in.Search); err != nil {
			return pipeline.BuildSweepResultsOutput{}, err
		}
	}
	var results []store.SweepResultRow
	var curves []store.SweepCurveRow
	trialOf := gridTrials(campaigns)
	for _, o := range in.Outcomes {
		if o.Index < 0 || o.Index >= len(campaigns) {
			return pipeline.BuildSweepResultsOutput{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("outcome of campaign %s: index %d outside the grid of %d", o.Campaign, o.Index, len(campaigns)), pipeline.ErrTypeInvalidSpec, nil)
		}
		c := campaigns[o.Index]
		row, rounds, err := s.campaignRows(ctx, in.Spec.Sweep, c, o)
		if err != nil {
			return pipeline.BuildSweepResultsOutput{}, err
		}
		row.Strategy, row.Trial, row.RoundsTrained, row.Status = "grid", trialOf[c.Index], row.RoundsDone, gridStatus(o.State)
		if q := in.Spec.Search; q != nil && o.Search != nil {
			row.Strategy, row.Trial, row.Rung = string(q.Strategy), o.Search.Trial, o.Search.Rung
			row.Status, row.PrunedAtRound = o.Search.Status, o.Search.PrunedAtRound
		}
		results = append(results, row)
		curves = append(curves, rounds...)
		activity.RecordHeartbeat(ctx, o.Index)
	}
	rb, err := store.EncodeSweepResults(results)
	if err != nil {
		return pipeline.BuildSweepResultsOutput{}, err
	}
	cb, err := store.EncodeSweepCurves(curves)
	if err != nil {
		return pipeline.BuildSweepResultsOutput{}, err
	}
	rref, err := s.store.Put(ctx, artifact.SweepResultsKey(in.Spec.Sweep), rb)
	if err != nil {
		return pipeline.BuildSweepResultsOutput{}, err
	}
	cref, err := s.store.Put(ctx, artifact.SweepCurvesKey(in.Spec.Sweep), cb)
	if err != nil {
		return pipeline.BuildSweepResultsOutput{}, err
	}
	return pipeline.BuildSweepResultsOutput{Results: rref, Curves: cref, Rows: len(results), Rounds: len(curves)}, nil
}

// campaignRows reads the manifests of rounds 1.. of one campaign, up to the
// last one it committed (and the failed round's manifest, if it failed).
func (s *Server) campaignRows(ctx context.Context, sweep string, c pipeline.SweepCampaign, o pipeline.CampaignOutcome) (store.SweepResultRow, []store.SweepCurveRow, error) {
	row := store.SweepResultRow{
		Sweep: sweep, Campaign: c.Spec.Campaign, WorkflowID: c.WorkflowID, CampaignIndex: c.Index,
		Federation: c.Federation, Method: string(c.Method), Setting: c.Setting, Seed: c.Seed,
		Preset: c.Spec.Preset, Rounds: c.Spec.Rounds, State: o.State, Error: o.Error,
		NumSites: len(c.Spec.Sites), MinSites: c.Spec.MinSites,
		Hyperparameters: c.Spec.Hyperparameters,
		FinalAUC:        math.NaN(), FinalAcc: math.NaN(), FinalUpdateAcc: math.NaN(), BestAUC: math.NaN(), Epsilon: math.NaN(),
		FinalValAUC: math.NaN(), FinalValAcc: math.NaN(),
		SpecHash: c.Spec.SpecHash(), SpecKey: artifact.SpecKey(c.Spec.Campaign),
		ArtifactsPrefix: artifact.CampaignPrefix(c.Spec.Campaign),
	}
	last := o.RoundsDone
	if o.LastManifest != nil {
		if r, ok := roundOfManifest(c.Spec.Campaign, o.LastManifest.Key); ok && r > last {
			last = r // the failed round's manifest says why it failed
		}
	}
	var curves []store.SweepCurveRow
	var auc []float64
	for r := 1; r <= last; r++ {
		var m pipeline.RoundManifest
		ref, err := s.store.GetJSONKey(ctx, artifact.ManifestKey(c.Spec.Campaign, r), &m)
		if err != nil {
			return row, nil, fmt.Errorf("campaign %s round %d: %w", c.Spec.Campaign, r, err)
		}
		cr := store.SweepCurveRow{
			Sweep: sweep, Campaign: c.Spec.Campaign, Federation: c.Federation, Method: string(c.Method), Setting: c.Setting, Seed: c.Seed,
			Round: r, Outcome: m.Outcome, AUC: m.Mean.AUC, Acc: m.Mean.Accuracy, SitesEvaluated: m.Mean.Sites,
			Participants: len(m.Participants), Dropped: len(m.Dropped), NumClusters: numClusters(m.Clusters),
			NumFlagged: len(m.Flagged), Flagged: strings.Join(m.Flagged, ","),
			DescriptorsRecomputed: m.DescriptorsRecomputed, ManifestKey: ref.Key, ManifestSHA256: ref.SHA256,
			UpdateAcc: math.NaN(), Epsilon: math.NaN(), ValAUC: math.NaN(), ValAcc: math.NaN(),
		}
		if m.Mean.ValAUC != nil && m.Mean.ValAccuracy != nil {
			cr.ValAUC, cr.ValAcc = *m.Mean.ValAUC, *m.Mean.ValAccuracy
		}
		if m.Privacy != nil {
			cr.Epsilon = m.Privacy.Epsilon()
		}
		if m.Mean.UpdateAccuracy != nil {
			cr.UpdateAcc = *m.Mean.UpdateAccuracy
		}
		cr.MaxDrift, cr.MeanDrift = driftStats(m.Clusters)
		curves = append(curves, cr)
		row.LastManifestKey, row.LastManifestSHA256 = ref.Key, ref.SHA256
		if m.Outcome != pipeline.OutcomeCommitted {
			continue
		}
		row.RoundsDone = r
		auc = append(auc, m.Mean.AUC)
		row.FinalAUC, row.FinalAcc, row.FinalUpdateAcc, row.Epsilon = m.Mean.AUC, m.Mean.Accuracy, cr.UpdateAcc, cr.Epsilon
		row.FinalValAUC, row.FinalValAcc = cr.ValAUC, cr.ValAcc
		if math.IsNaN(row.BestAUC) || m.Mean.AUC > row.BestAUC {
			row.BestAUC = m.Mean.AUC
		}
		row.NumClusters, row.NumFlagged = numClusters(m.Clusters), len(m.Flagged)
		row.Flagged, row.Participants = strings.Join(m.Flagged, ","), len(m.Participants)
		row.Excluded = excluded(m.SiteWeights)
	}
	row.ConvRound = eval.SettlingRound(auc, eval.SettlingTolerance)
	return row, curves, nil
}

// excluded lists, comma-separated, the sites a robust aggregation gave
// weight 0 (Krum's unselected sites, FoolsGold's distrusted ones).
func excluded(ws []pipeline.SiteWeight) string {
	var out []string
	for _, w := range ws {
		if w.Weight == 0 {
			out = append(out, w.Site)
		}
	}
	return strings.Join(out, ",")
}

func roundOfManifest(campaign, key string) (int, bool) {
	r, ok := artifact.ParseRoundPrefix(campaign, key)
	return r, ok && key == artifact.ManifestKey(campaign, r)
}

func numClusters(cs []pipeline.SiteCluster) int {
	seen := map[int]bool{}
	for _, c := range cs {
		seen[c.Cluster] = true
	}
	return len(seen)
}

func driftStats(cs []pipeline.SiteCluster) (maxDrift, meanDrift float64) {
	if len(cs) == 0 {
		return 0, 0
	}
	for _, c := range cs {
		maxDrift = math.Max(maxDrift, c.Drift)
		meanDrift += c.Drift
	}
	return maxDrift, meanDrift / float64(len(cs))
}

// gridTrials numbers a grid's configurations, its (method, setting) pairs
// in the order their first campaign comes: campaign index → trial.
func gridTrials(campaigns []pipeline.SweepCampaign) map[int]int {
	seen := map[string]int{}
	out := make(map[int]int, len(campaigns))
	for _, c := range campaigns {
		k := string(c.Method) + "\x00" + c.Setting
		t, ok := seen[k]
		if !ok {
			t = len(seen)
			seen[k] = t
		}
		out[c.Index] = t
	}
	return out
}

// gridStatus is a grid campaign's results status: complete when it ran
// every round, else its state (stopped, failed).
func gridStatus(state string) string {
	if state == pipeline.StateDone {
		return string(search.Complete)
	}
	return state
}
