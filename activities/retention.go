package activities

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/pipeline"
)

// roleFolders maps each role a retention policy may prune
// (pipeline.PrunedRoles) to its folder within a round (artifact.ModelKey,
// artifact.ControlKey).
var roleFolders = map[string]string{
	pipeline.RoleLocalModel: "models",
	pipeline.RoleControl:    "control",
}

// PruneRound deletes the site uploads in.Pruning names: every object in the
// folders of its roles under the pruned round, in any attempt of that
// round. It lists the round's prefix rather than building keys from site
// names, so a site's upload that arrived after the round dropped it (and
// that no manifest lists) goes too. Only the server deletes: site workers
// never hold the right to.
//
// It is idempotent: what is gone is not listed again, and a delete of a
// missing key succeeds, so a retry or a replayed round just finds less.
func (s *Server) PruneRound(ctx context.Context, in pipeline.PruneRoundInput) (pipeline.PruneRoundOutput, error) {
	if err := s.checkBucket(in.Bucket); err != nil {
		return pipeline.PruneRoundOutput{}, err
	}
	folders := map[string]bool{}
	for _, role := range in.Pruning.Roles {
		f, ok := roleFolders[role]
		if !ok {
			return pipeline.PruneRoundOutput{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("role %q: not one a retention policy may prune (%v)", role, pipeline.PrunedRoles), "BadRequest", nil)
		}
		folders[f] = true
	}
	if in.Pruning.Round < 1 {
		return pipeline.PruneRoundOutput{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("round %d: no such round to prune", in.Pruning.Round), "BadRequest", nil)
	}
	prefix := artifact.RoundPrefix(in.Campaign, in.Pruning.Round)
	objs, err := s.store.ListSizes(ctx, prefix)
	if err != nil {
		return pipeline.PruneRoundOutput{}, err
	}
	var out pipeline.PruneRoundOutput
	for _, o := range objs {
		if _, folder, ok := artifact.RoundFolder(in.Campaign, o.Key); !ok || !folders[folder] {
			continue
		}
		if err := s.store.Delete(ctx, o.Key); err != nil {
			return out, err
		}
		out.Deleted++
		out.Bytes += o.Size
	}
	return out, nil
}
