package workflows

import (
	"context"

	"github.com/ptopofl/ptopofl/pipeline"
)

// PruneRound records the prunings asked for, in the order they came, and
// deletes nothing (the fake federation stores nothing).
func (f *fakeFederation) PruneRound(ctx context.Context, in pipeline.PruneRoundInput) (pipeline.PruneRoundOutput, error) {
	f.count(pipeline.ActivityPruneRound)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pruned = append(f.pruned, in.Pruning.Round)
	if len(f.manifests) == 0 || f.manifests[len(f.manifests)-1].Pruned == nil ||
		f.manifests[len(f.manifests)-1].Pruned.Round != in.Pruning.Round {
		f.pruneBeforeCommit = true
	}
	return pipeline.PruneRoundOutput{}, nil
}

// Test_RetentionPrunesAfterEachCommit: with keep_site_models = 1 over 4
// rounds, rounds 2, 3 and 4 each prune the round before, after committing
// a manifest that says so; round 1 prunes nothing; every prune follows the
// commit of the manifest that records it.
func (s *CampaignSuite) Test_RetentionPrunesAfterEachCommit() {
	s.mockAll()
	spec := testSpec(4)
	spec.KeepSiteModels = 1
	_, err := s.run(pipeline.CampaignWorkflowInput{Spec: spec})
	s.Require().NoError(err)
	s.Equal([]int{1, 2, 3}, s.fed.pruned)
	s.False(s.fed.pruneBeforeCommit, "a prune ran before the manifest recording it was committed")
	ms := s.fed.committed()
	s.Require().Len(ms, 4)
	s.Nil(ms[0].Pruned)
	for i, m := range ms[1:] {
		s.Equal(&pipeline.Pruning{KeepRounds: 1, Round: i + 1, Roles: pipeline.PrunedRoles}, m.Pruned, "round %d", m.Round)
	}
}

// Test_NoRetentionPrunesNothing: the default keeps everything, and its
// manifests carry no pruned record.
func (s *CampaignSuite) Test_NoRetentionPrunesNothing() {
	s.mockAll()
	_, err := s.run(pipeline.CampaignWorkflowInput{Spec: testSpec(3)})
	s.Require().NoError(err)
	s.Zero(s.fed.callCount(pipeline.ActivityPruneRound))
	for _, m := range s.fed.committed() {
		s.Nil(m.Pruned)
	}
}
