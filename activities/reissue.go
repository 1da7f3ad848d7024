package activities

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/pipeline"
)

// Reissue gives the sites of a campaign written before sites read only
// their own objects what they start a round from, at keys they may read
// (artifact.SiteReadPatterns): each site's pTopoFL cluster model, copied
// inside the bucket to the aggregate under the site's own name in the same
// round folder, and SCAFFOLD's control variate, taken from the server's
// state into the shared state beside it. Both keys are those the current
// layout would have written in that round, and what is written there is
// a function of the old objects alone, so a retried or replayed call
// writes the same bytes. Each source is read first, which checks its
// sha256: a copy never claims a hash its bytes do not have.
func (s *Server) Reissue(ctx context.Context, in pipeline.ReissueInput) (pipeline.ReissueOutput, error) {
	if err := s.checkBucket(in.Bucket); err != nil {
		return pipeline.ReissueOutput{}, err
	}
	var out pipeline.ReissueOutput
	checked := map[string]bool{}
	for _, m := range in.Models {
		keys, ok := artifact.ParseRoundKeys(in.Campaign, m.Ref.Key)
		if !ok || artifact.ValidateName(m.Site) != nil {
			return out, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("site %q: its model %s is not under a round of campaign %s", m.Site, m.Ref.Key, in.Campaign), "BadRequest", nil)
		}
		if !checked[m.Ref.Key] {
			if _, err := s.store.GetCached(ctx, m.Ref); err != nil {
				return out, err
			}
			checked[m.Ref.Key] = true
		}
		ref, err := s.store.CopyCached(ctx, m.Ref, keys.Aggregate(m.Site))
		if err != nil {
			return out, err
		}
		out.Models = append(out.Models, pipeline.SiteArtifact{Site: m.Site, Ref: ref})
	}
	if in.ServerState != nil {
		keys, ok := artifact.ParseRoundKeys(in.Campaign, in.ServerState.Key)
		if !ok {
			return out, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("the server state %s is not under a round of campaign %s", in.ServerState.Key, in.Campaign), "BadRequest", nil)
		}
		server, err := getServerState(ctx, s.store, in.ServerState)
		if err != nil {
			return out, err
		}
		if server.Control == nil {
			return out, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("the server state %s holds no control variate for the sites", in.ServerState.Key), "BadRequest", nil)
		}
		call := in.ServerCall
		call.Round = keys.Round // the shared state of the round the server state is of
		ref, err := putSharedState(ctx, s.store, keys.SharedState(), call, server.Control)
		if err != nil {
			return out, err
		}
		out.SharedState = &ref
	}
	return out, nil
}
