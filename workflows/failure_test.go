package workflows

import (
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/ptopofl/ptopofl/pipeline"
)

// krumMessage is what aggregation.KrumScores says when f is too large for
// the models, as the Aggregate activity's error carries it.
const krumMessage = "aggregate round 1 (krum): krum: 4 models with f = 1, want more than 2f + 2 = 4 models; lower f or add sites"

// conflictMessage is CommitRound's error for a manifest key that holds
// another manifest.
const conflictMessage = "campaigns/hc-test/round-0002/manifest.json already holds another manifest (sha256 0123456789ab)"

// TestDescribeFailureOfRealChains runs campaigns that fail in different
// ways through the SDK's test environment, so the error chains are the
// ones Temporal builds (workflow → child round workflow → activity →
// cause), and checks that the sentence a user reads names the campaign,
// the round and the step and says the root message exactly once.
func TestDescribeFailureOfRealChains(t *testing.T) {
	for i, tc := range []struct {
		name  string
		spec  func(*pipeline.CampaignSpec)
		setup func(fed *fakeFederation)
		want  pipeline.Failure
	}{
		{ // 0: a non-retryable aggregation error, as activities/server.go returns it
			name: "aggregation",
			setup: func(fed *fakeFederation) {
				fed.aggregateErr = map[int]error{1: temporal.NewNonRetryableApplicationError(krumMessage, "AggregationFailed", nil)}
			},
			want: pipeline.Failure{Campaign: "hc-test", Round: 1, Step: "aggregate", Type: "AggregationFailed", Message: krumMessage},
		},
		{ // 1: the same error as the activity returned it before (round prefix, cause repeated)
			name: "aggregation, old activity",
			setup: func(fed *fakeFederation) {
				fed.aggregateErr = map[int]error{1: temporal.NewNonRetryableApplicationError("round 1: aggregate: "+krumMessage, "AggregationFailed", errors.New(krumMessage))}
			},
			want: pipeline.Failure{Campaign: "hc-test", Round: 1, Step: "aggregate", Type: "AggregationFailed", Message: "round 1: aggregate: " + krumMessage},
		},
		{ // 2: a clustering failure
			name: "clustering",
			setup: func(fed *fakeFederation) {
				fed.clusterErr = map[int]error{1: temporal.NewNonRetryableApplicationError("no descriptors", "NoDescriptors", nil)}
			},
			want: pipeline.Failure{Campaign: "hc-test", Round: 1, Step: "cluster sites", Type: "NoDescriptors", Message: "no descriptors"},
		},
		{ // 3: an aggregation failure in round 3, after two committed rounds
			name: "aggregation, round 3",
			spec: func(s *pipeline.CampaignSpec) { s.Rounds = 3 },
			setup: func(fed *fakeFederation) {
				fed.aggregateErr = map[int]error{3: temporal.NewNonRetryableApplicationError("site c1 trained but has no descriptor", "MissingDescriptor", nil)}
			},
			want: pipeline.Failure{Campaign: "hc-test", Round: 3, Step: "aggregate", Type: "MissingDescriptor", Message: "site c1 trained but has no descriptor"},
		},
		{ // 4: below quorum: the campaign's own error, which names the round
			name: "quorum",
			setup: func(fed *fakeFederation) {
				fed.bad["c1"], fed.bad["c2"] = true, true
			},
			want: pipeline.Failure{Campaign: "hc-test", Type: pipeline.ErrTypeQuorumNotMet,
				Message: "round 1, train phase: 1 of 3 sites remain, below the quorum min_sites=2; manifest s3://ptopofl/campaigns/hc-test/round-0001/manifest.json"},
		},
		{ // 5: a manifest conflict, as activities.Server.CommitRound returns it (a restart that would rewrite a committed round)
			name: "manifest conflict",
			spec: func(s *pipeline.CampaignSpec) { s.Rounds = 2 },
			setup: func(fed *fakeFederation) {
				fed.commitErr = map[int]error{2: temporal.NewNonRetryableApplicationError(conflictMessage, pipeline.ErrTypeManifestConflict, nil)}
			},
			want: pipeline.Failure{Campaign: "hc-test", Round: 2, Step: "commit manifest", Type: pipeline.ErrTypeManifestConflict, Message: conflictMessage},
		},
		{ // 6: an invalid spec
			name: "invalid spec",
			spec: func(s *pipeline.CampaignSpec) { s.Rounds = 10000 },
			want: pipeline.Failure{Campaign: "hc-test", Type: pipeline.ErrTypeInvalidSpec,
				Message: "invalid campaign spec: rounds = 10000: must be <= 9999 (round keys have four digits and would no longer sort by round)"},
		},
	} {
		var s testsuite.WorkflowTestSuite
		env := s.NewTestWorkflowEnvironment()
		env.RegisterWorkflow(CampaignWorkflow)
		env.RegisterWorkflow(RoundWorkflow)
		// The fake's methods registered under the pipeline's names (no
		// mocks), so activity errors carry the real activity types.
		fed := newFakeFederation()
		if tc.setup != nil {
			tc.setup(fed)
		}
		for name, fn := range map[string]any{
			pipeline.ActivityComputeDescriptor: fed.ComputeDescriptor, pipeline.ActivityTrainLocal: fed.TrainLocal,
			pipeline.ActivityEvaluate: fed.Evaluate, pipeline.ActivityClusterSites: fed.ClusterSites,
			pipeline.ActivityAggregate: fed.Aggregate, pipeline.ActivityCommitRound: fed.CommitRound,
		} {
			env.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
		}
		spec := testSpec(1)
		if tc.spec != nil {
			tc.spec(&spec)
		}
		env.ExecuteWorkflow(CampaignWorkflow, pipeline.CampaignWorkflowInput{Spec: spec})
		err := env.GetWorkflowError()
		if err == nil {
			t.Errorf("case %d %s: the campaign did not fail", i, tc.name)
			continue
		}
		got := pipeline.DescribeFailure(spec.Campaign, err)
		if got != tc.want {
			t.Errorf("case %d %s:\ngot  %+v\nwant %+v\nfrom %v", i, tc.name, got, tc.want, err)
		}
		sentence := got.String()
		if n := strings.Count(sentence, tc.want.Message); n != 1 || strings.Count(sentence, "campaign "+spec.Campaign) != 1 || strings.Contains(sentence, "\n") {
			t.Errorf("case %d %s: the sentence says the root %d times: %s", i, tc.name, n, sentence)
		}
		// The chain is unchanged underneath: its types and retry flags are
		// what callers test with errors.As.
		var app *temporal.ApplicationError
		if !errors.As(err, &app) {
			t.Errorf("case %d %s: no ApplicationError in %v", i, tc.name, err)
		}
	}
}

// TestDescribeFailureOfPlainErrors: an error that is no Temporal chain (a
// lost connection) is its own root; a round's workflow ID gives the round.
func TestDescribeFailureOfPlainErrors(t *testing.T) {
	err := errors.New("dial Temporal at 127.0.0.1:7233: connection refused")
	if got := pipeline.DescribeFailure("c", err); got.Message != err.Error() || got.Round != 0 || got.Step != "" {
		t.Errorf("plain error: %+v", got)
	}
	if got := pipeline.DescribeFailure("c", nil); got.Message != "" {
		t.Errorf("nil: %+v", got)
	}
}
