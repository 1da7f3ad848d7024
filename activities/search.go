package activities

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"go.temporal.io/sdk/temporal"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/report"
	"github.com/ptopofl/ptopofl/search"
	"github.com/ptopofl/ptopofl/searchview"
)

// SearchNext decides what an adaptive sweep trains next
// (search.Schedule.Decide over the sweep's trials): a pure function of
// its input, so a retried or replayed call gives the same answer. A
// trial's score after round r is the mean of its campaigns' objective
// after round r (NaN, the worst, when any of them has none), over the
// rounds every one of its campaigns has trained. The budget counts the
// rounds the campaigns have trained and those their running actions will
// train.
func (s *Server) SearchNext(_ context.Context, in pipeline.SearchNextInput) (pipeline.SearchNextOutput, error) {
	return SearchNext(in)
}

// SearchNext is Server.SearchNext without a server: it reads no store.
// A minimised objective (objective.mode min) is negated before the
// strategy sees it. Warm trials (a warm start) are complete at every round
// with their grid's values, cost nothing and count for no trial of the
// cap.
func SearchNext(in pipeline.SearchNextInput) (pipeline.SearchNextOutput, error) {
	bad := func(err error) (pipeline.SearchNextOutput, error) {
		return pipeline.SearchNextOutput{}, temporal.NewNonRetryableApplicationError("search: "+err.Error(), pipeline.ErrTypeInvalidSpec, nil)
	}
	space, err := search.NewSpace(in.Search.Dims)
	if err != nil {
		return bad(err)
	}
	sc, err := search.NewSchedule(in.Search.Strategy, in.Search.ScheduleOptions(), in.MaxRounds)
	if err != nil {
		return bad(err)
	}
	trials := make([]search.Trial, len(in.History))
	lim := search.Limits{Budget: in.Budget, Trials: in.Trials, PerTrial: in.PerTrial}
	for i, t := range in.History {
		val, _ := in.Search.TrialCurves(t)
		if in.Search.Minimise() {
			neg := make([]float64, len(val))
			for r, v := range val {
				neg[r] = -v
			}
			val = neg
		}
		trials[i] = search.Trial{Index: t.Index, Config: search.Config(t.Config), State: t.State, Values: val, Target: t.Target}
		if t.Warm {
			lim.Warm++
		}
		for _, c := range t.Campaigns {
			lim.Spent += c.Outcome.RoundsDone
			if c.Running {
				lim.Committed += max(t.Target-c.Outcome.RoundsDone, 0)
			}
		}
	}
	a, config, why, err := sc.Decide(space, trials, in.Search.Seed, in.Search.TPE, lim)
	if err != nil {
		return bad(err)
	}
	if why != "" {
		return pipeline.SearchNextOutput{Reason: why}, nil
	}
	return pipeline.SearchNextOutput{Action: &a, Config: []method.ParamValue(config)}, nil
}

// SaveCampaignState writes a campaign's state as it pauses at an adaptive
// sweep's rung (artifact.PausedStateKey, canonical JSON at a fixed key:
// a retry writes the same bytes) and returns its reference, which the
// sweep keeps instead of the state.
func (s *Server) SaveCampaignState(ctx context.Context, in pipeline.SaveStateInput) (pipeline.ArtifactRef, error) {
	if err := s.checkBucket(in.Bucket); err != nil {
		return pipeline.ArtifactRef{}, err
	}
	if in.Round < 1 || in.State.NextRound != in.Round+1 {
		return pipeline.ArtifactRef{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("campaign %s: a state after round %d whose next round is %d", in.Campaign, in.Round, in.State.NextRound), pipeline.ErrTypeInvalidSpec, nil)
	}
	return s.store.PutJSON(ctx, artifact.PausedStateKey(in.Campaign, in.Round), in.State)
}

// LoadCampaignState reads a paused campaign's state back, checking the
// reference's SHA-256.
func (s *Server) LoadCampaignState(ctx context.Context, ref pipeline.ArtifactRef) (pipeline.CampaignState, error) {
	var st pipeline.CampaignState
	if err := s.checkBucket(ref.Bucket); err != nil {
		return st, err
	}
	if err := s.store.GetJSON(ctx, ref, &st); err != nil {
		return st, fmt.Errorf("paused state %s: %w", ref.Key, err)
	}
	return st, nil
}

// RecordSearch writes an adaptive sweep's record as it stands
// (sweeps/<sweep>/search.json, canonical JSON at a fixed key: a retry
// writes the same bytes) and, when the record holds every trial's test
// values, its report under sweeps/<sweep>/report/ (report.md,
// report.html and the figure, as `starter sweep report --out` writes
// them), so that a running sweep can be read and followed. A report that
// cannot be built yet (no trial has reported) is left as it was.
func (s *Server) RecordSearch(ctx context.Context, in pipeline.SearchRecordInput) (pipeline.ArtifactRef, error) {
	if err := s.checkBucket(in.Bucket); err != nil {
		return pipeline.ArtifactRef{}, err
	}
	if err := artifact.ValidateName(in.Sweep); err != nil {
		return pipeline.ArtifactRef{}, temporal.NewNonRetryableApplicationError("sweep "+err.Error(), pipeline.ErrTypeInvalidSpec, nil)
	}
	ref, err := s.store.PutJSON(ctx, artifact.SweepSearchKey(in.Sweep), in.Record)
	if err != nil {
		return ref, err
	}
	curves, ok := searchview.RecordCurves(in.Record)
	if !ok {
		return ref, nil
	}
	rep, err := report.Search(searchview.Report(in.Sweep, in.MaxRounds, in.Record, curves))
	if err != nil {
		return ref, nil // no action has ended yet
	}
	files := map[string][]byte{"report.md": rep.Markdown, "report.html": rep.HTML}
	for k, v := range rep.Assets {
		files[k] = v
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if _, err := s.store.Put(ctx, artifact.SweepReportKey(in.Sweep, name), files[name]); err != nil {
			return ref, err
		}
	}
	return ref, nil
}
