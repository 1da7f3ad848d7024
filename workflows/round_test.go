package workflows

import (
	"encoding/json"
	"fmt"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/pipeline"
)

func (s *CampaignSuite) Test_DriftCheckAsksForFreshDescriptors() {
	s.fed.recheck[1] = true // round 1's drift check wants to look again
	s.mockAll()
	_, err := s.run(pipeline.CampaignWorkflowInput{Spec: testSpec(3)})
	s.Require().NoError(err)
	s.Equal(6, s.fed.callCount(pipeline.ActivityComputeDescriptor), "rounds 1 and 2, three sites each")
	s.Equal(2, s.fed.callCount(pipeline.ActivityClusterSites))
	ms := s.fed.committed()
	s.Equal([]bool{true, true, false}, []bool{ms[0].DescriptorsRecomputed, ms[1].DescriptorsRecomputed, ms[2].DescriptorsRecomputed})
}

func (s *CampaignSuite) Test_SiteWithoutDescriptorIsAskedAgainNextRound() {
	s.fed.badDescriptor["c2"] = 1
	s.mockAll()
	_, err := s.run(pipeline.CampaignWorkflowInput{Spec: testSpec(3)})
	s.Require().NoError(err)
	ms := s.fed.committed()
	s.Require().Len(ms, 3)
	s.Equal([]pipeline.SiteDrop{{Site: "c2", Phase: pipeline.PhaseDescriptor, Reason: pipeline.DropBadSiteData,
		Kind: pipeline.ErrTypeBadSiteData, Error: "site c2: c2_train.csv: empty file"}}, ms[0].Dropped)
	s.Equal([]string{"c0", "c1"}, ms[0].Participants)
	// Round 2 computes only c2's descriptor and re-clusters with all three.
	s.Equal(4, s.fed.callCount(pipeline.ActivityComputeDescriptor))
	s.Equal(2, s.fed.callCount(pipeline.ActivityClusterSites))
	s.Equal([]string{"c0", "c1", "c2"}, ms[1].Participants)
	s.Len(ms[1].Clusters, 3)
	s.False(ms[2].DescriptorsRecomputed)
}

// Test_SiteRefusingForItsBudgetIsDropped: a site that refuses a task for
// its privacy budget is dropped at once with privacy_budget_exhausted and
// the refusal's text (not retried: one training call in that round); the
// round goes on under its quorum, and when too few sites remain, the
// failure says how many refused for their budget.
func (s *CampaignSuite) Test_SiteRefusingForItsBudgetIsDropped() {
	s.fed.spentFrom["c2"] = 2
	s.fed.spentFrom["c1"] = 3
	s.mockAll()
	_, err := s.run(pipeline.CampaignWorkflowInput{Spec: testSpec(3)})
	s.Require().Error(err)
	ms := s.fed.committed()
	s.Require().Len(ms, 3)
	s.Equal([]pipeline.SiteDrop{{Site: "c2", Phase: pipeline.PhaseTrain, Reason: pipeline.DropPrivacyBudget, Kind: pipeline.ErrTypePrivacyBudget,
		Error: "site c2: privacy budget exhausted: campaign hc-test round 2: beyond its operator's budget ε = 10"}}, ms[1].Dropped)
	s.Equal(pipeline.OutcomeCommitted, ms[1].Outcome)
	s.Equal(pipeline.OutcomeFailed, ms[2].Outcome)
	s.Contains(ms[2].FailureReason, "(2 refused for their lifetime privacy budget: privacy_budget_exhausted)")
	s.Equal(3+3+3, s.fed.callCount(pipeline.ActivityTrainLocal), "one call a site a round: a refusal is not retried")
}

// Test_PayloadsStayFarBelowTheLimit: a payload over 2 MiB fails the
// workflow. The largest payloads are the round's input (spec + carry), its
// output and the manifest handed to CommitRound; at 200 sites, with every
// per-site reference filled and 80 descriptor rows per site, each must stay
// well under the limit.
func (s *CampaignSuite) Test_PayloadsStayFarBelowTheLimit() {
	const sites = 200
	spec := testSpec(200)
	spec.Sites = nil
	spec.DescriptorRows = map[string][]int{}
	var refs []pipeline.SiteArtifact
	var clusters []pipeline.SiteCluster
	m := pipeline.RoundManifest{Campaign: spec.Campaign, Round: 199}
	for i := 0; i < sites; i++ {
		name := fmt.Sprintf("hospital-%03d", i)
		spec.Sites = append(spec.Sites, pipeline.Site{Name: name})
		rows := make([]int, 80)
		for j := range rows {
			rows[j] = 1000 + j
		}
		spec.DescriptorRows[name] = rows
		ref := fakeRef("ptopofl", artifact.ModelKey(spec.Campaign, 199, name))
		refs = append(refs, pipeline.SiteArtifact{Site: name, Ref: ref})
		clusters = append(clusters, pipeline.SiteCluster{Site: name, Cluster: i % 3, Trust: 0.9, Drift: 0.1})
		for _, role := range []string{pipeline.RoleDescriptor, pipeline.RoleStartModel, pipeline.RoleSiteState} {
			m.Inputs = append(m.Inputs, pipeline.ArtifactRecord{Role: role, Site: name, Ref: ref})
		}
		for _, role := range []string{pipeline.RoleLocalModel, pipeline.RoleControl, pipeline.RoleSiteState, pipeline.RoleSiteModel} {
			m.Outputs = append(m.Outputs, pipeline.ArtifactRecord{Role: role, Site: name, Ref: ref})
		}
		m.Seeds = append(m.Seeds, pipeline.SeedRecord{Site: name, Purpose: pipeline.PurposeTrain, Seed: 1 << 63})
		m.Metrics = append(m.Metrics, pipeline.SiteMetrics{Site: name, AUC: 0.8123456789, Accuracy: 0.7123456789, NumTrain: 250, NumTest: 60})
	}
	carry := pipeline.RoundCarry{
		Descriptors: refs, ClusterDescriptors: refs, Models: refs, SiteStates: refs, Clusters: clusters,
	}
	curve := make([]float64, 200)
	for i := range curve {
		curve[i] = 0.8123456789012345
	}
	dc := converter.GetDefaultDataConverter()
	for name, v := range map[string]any{
		"RoundWorkflowInput":    pipeline.RoundWorkflowInput{Spec: spec.WithDefaults(), Round: 199, Carry: carry},
		"RoundWorkflowOutput":   pipeline.RoundWorkflowOutput{Carry: carry},
		"CommitRoundInput":      pipeline.CommitRoundInput{Manifest: m},
		"CampaignWorkflowInput": pipeline.CampaignWorkflowInput{Spec: spec, State: &pipeline.CampaignState{Carry: carry, AUCCurve: curve, AccCurve: curve}},
	} {
		p, err := dc.ToPayload(v)
		s.Require().NoError(err)
		size := len(p.GetData())
		s.T().Logf("%s at %d sites: %d KiB", name, sites, size/1024)
		s.Less(size, 512<<10, "%s must stay far below the 2 MiB payload limit", name)
	}
}

func (s *CampaignSuite) Test_MethodWithoutDescriptorsSkipsThem() {
	spec := testSpec(2)
	spec.Method = learn.FedAvg
	s.mockAll()
	out, err := s.run(pipeline.CampaignWorkflowInput{Spec: spec})
	s.Require().NoError(err)
	s.Equal(2, out.RoundsDone)
	s.Zero(s.fed.callCount(pipeline.ActivityComputeDescriptor))
	s.Zero(s.fed.callCount(pipeline.ActivityClusterSites))
	ms := s.fed.committed()
	s.Require().Len(ms, 2)
	s.Empty(ms[1].Clusters)
	s.False(ms[0].DescriptorsRecomputed)
	// Round 2 starts every site from the model the aggregation gave it.
	var starts int
	for _, in := range ms[1].Inputs {
		if in.Role == pipeline.RoleStartModel {
			starts++
		}
	}
	s.Equal(3, starts)
}

// Test_OwnUpdateMethodsScoreInTraining: LocalOnly and pFedMe sites are
// scored on their own update, so the training activity scores it and the
// round has no evaluation fan-out; the manifest's metrics are those the
// evaluation activity would have given. Other methods keep the fan-out.
func (s *CampaignSuite) Test_OwnUpdateMethodsScoreInTraining() {
	for i, c := range []struct {
		method        learn.Method
		wantEvaluates int
	}{
		0: {learn.LocalOnly, 0},
		1: {learn.PFedMe, 0},
		2: {learn.FedAvg, 6}, // 3 sites × 2 rounds
	} {
		s.SetupTest()
		spec := testSpec(2)
		spec.Method = c.method
		s.mockAll()
		out, err := s.run(pipeline.CampaignWorkflowInput{Spec: spec})
		s.Require().NoError(err, "case %d", i)
		s.Equal(2, out.RoundsDone, "case %d", i)
		s.Equal(c.wantEvaluates, s.fed.callCount(pipeline.ActivityEvaluate), "case %d: evaluation activities", i)
		ms := s.fed.committed()
		s.Require().Len(ms, 2, "case %d", i)
		for _, m := range ms {
			s.Require().Len(m.Metrics, 3, "case %d round %d", i, m.Round)
			for k, sm := range m.Metrics {
				want := fakeScore(pipeline.SiteCall{Round: m.Round, SiteIndex: k})
				s.Equal(want.AUC, sm.AUC, "case %d round %d site %s", i, m.Round, sm.Site)
				s.Equal(want.NumTest, sm.NumTest, "case %d round %d site %s", i, m.Round, sm.Site)
			}
		}
	}
}

// TestColocatedRoundsMatchDispatched: a campaign started with a
// ColocatedQueue runs its site activities as local activities under
// pipeline.ColocatedActivity names, and its rounds are the ones the same
// campaign dispatched to the sites' queues commits: the same manifests, a
// failing site dropped with the same reason. The colocated environment
// registers no activity under the plain site names, so a single
// dispatched call would fail the test.
func TestColocatedRoundsMatchDispatched(t *testing.T) {
	run := func(colocated bool) ([]pipeline.RoundManifest, *fakeFederation) {
		var ts testsuite.WorkflowTestSuite
		env := ts.NewTestWorkflowEnvironment()
		env.RegisterWorkflow(CampaignWorkflow)
		env.RegisterWorkflow(RoundWorkflow)
		fed := newFakeFederation()
		fed.badFrom["c1"] = 2 // c1's training fails from round 2 on
		server := map[string]any{
			pipeline.ActivityClusterSites: fed.ClusterSites,
			pipeline.ActivityAggregate:    fed.Aggregate,
			pipeline.ActivityCommitRound:  fed.CommitRound,
			pipeline.ActivityPruneRound:   fed.PruneRound,
		}
		site := map[string]any{
			pipeline.ActivityComputeDescriptor: fed.ComputeDescriptor,
			pipeline.ActivityTrainLocal:        fed.TrainLocal,
			pipeline.ActivityEvaluate:          fed.Evaluate,
		}
		for name, fn := range server {
			env.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
		}
		for name, fn := range site {
			if !colocated {
				env.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
				continue
			}
			for _, s := range []string{"c0", "c1", "c2"} {
				env.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: pipeline.ColocatedActivity(s, name)})
			}
		}
		in := pipeline.CampaignWorkflowInput{Spec: testSpec(3)}
		wantQueue := pipeline.ServerTaskQueue
		if colocated {
			in.ColocatedQueue = pipeline.ColocatedTaskQueue("hc-test")
			wantQueue = in.ColocatedQueue
		}
		var queues []string
		env.SetOnChildWorkflowStartedListener(func(info *workflow.Info, _ workflow.Context, _ converter.EncodedValues) {
			queues = append(queues, info.TaskQueueName)
		})
		env.ExecuteWorkflow(CampaignWorkflow, in)
		if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
			t.Fatalf("colocated=%v: campaign did not complete: %v", colocated, env.GetWorkflowError())
		}
		if len(queues) != 3 || queues[0] != wantQueue || queues[1] != wantQueue || queues[2] != wantQueue {
			t.Errorf("colocated=%v: rounds ran on %v, want 3 on %s", colocated, queues, wantQueue)
		}
		return fed.committed(), fed
	}
	want, wantFed := run(false)
	got, gotFed := run(true)
	if len(want) != 3 {
		t.Fatalf("dispatched campaign committed %d rounds, want 3", len(want))
	}
	wb, _ := json.Marshal(want)
	gb, _ := json.Marshal(got)
	if string(wb) != string(gb) {
		t.Errorf("colocated manifests differ from dispatched ones:\n got %s\nwant %s", gb, wb)
	}
	if len(got[1].Dropped) != 1 || got[1].Dropped[0].Site != "c1" || got[1].Dropped[0].Reason != pipeline.DropBadSiteData {
		t.Errorf("round 2 drops %+v, want c1 dropped for bad site data", got[1].Dropped)
	}
	for _, name := range []string{pipeline.ActivityComputeDescriptor, pipeline.ActivityTrainLocal, pipeline.ActivityEvaluate} {
		if g, w := gotFed.callCount(name), wantFed.callCount(name); g != w || g == 0 {
			t.Errorf("%s ran %d times colocated, %d dispatched", name, g, w)
		}
	}
}
