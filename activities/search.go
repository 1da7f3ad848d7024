package activities

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/search"
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
func SearchNext(in pipeline.SearchNextInput) (pipeline.SearchNextOutput, error) {
	bad := func(err error) (pipeline.SearchNextOutput, error) {
		return pipeline.SearchNextOutput{}, temporal.NewNonRetryableApplicationError("search: "+err.Error(), pipeline.ErrTypeInvalidSpec, nil)
	}
	space, err := search.NewSpace(in.Search.Dims)
	if err != nil {
		return bad(err)
	}
	sc, err := search.NewSchedule(in.Search.Strategy, in.Search.ASHA, in.MaxRounds)
	if err != nil {
		return bad(err)
	}
	trials := make([]search.Trial, len(in.History))
	lim := search.Limits{Budget: in.Budget, Trials: in.Trials, PerTrial: in.PerTrial}
	for i, t := range in.History {
		trials[i] = search.Trial{Index: t.Index, Config: search.Config(t.Config), State: t.State, Values: trialValues(t), Target: t.Target}
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

// trialValues returns t's score after each round every one of its
// campaigns has trained: the mean of their objective values, NaN when any
// is NaN.
func trialValues(t pipeline.SearchTrial) []float64 {
	if len(t.Campaigns) == 0 {
		return nil
	}
	n := math.MaxInt
	for _, c := range t.Campaigns {
		n = min(n, len(c.Values))
	}
	// Summed as `sweep replay` sums a grid's curves (campaign.ReplayTable):
	// v/k in campaign-name order, so that a trial scores bit for bit what
	// the same configuration scores in a replay over a grid.
	cs := slices.SortedFunc(slices.Values(t.Campaigns), func(a, b pipeline.SearchCampaign) int { return strings.Compare(a.Campaign, b.Campaign) })
	out := make([]float64, n)
	k := float64(len(cs))
	for r := range n {
		for _, c := range cs {
			out[r] += c.Values[r] / k
		}
	}
	return out
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
