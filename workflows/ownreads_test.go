package workflows

import (
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/pipeline"
)

// runOnFakes runs CampaignWorkflow with in on a fresh test environment
// whose every activity is fed's, and returns the run's error.
func runOnFakes(t *testing.T, fed *fakeFederation, in pipeline.CampaignWorkflowInput) error {
	t.Helper()
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(CampaignWorkflow)
	env.RegisterWorkflow(RoundWorkflow)
	registerStubs(env)
	for name, fn := range map[string]any{
		pipeline.ActivityComputeDescriptor: fed.ComputeDescriptor, pipeline.ActivityTrainLocal: fed.TrainLocal,
		pipeline.ActivityEvaluate: fed.Evaluate, pipeline.ActivityClusterSites: fed.ClusterSites,
		pipeline.ActivityAggregate: fed.Aggregate, pipeline.ActivityReissue: fed.Reissue,
		pipeline.ActivityCommitRound: fed.CommitRound, pipeline.ActivityPruneRound: fed.PruneRound,
	} {
		env.OnActivity(name, mock.Anything, mock.Anything).Return(fn).Maybe()
	}
	env.ExecuteWorkflow(CampaignWorkflow, in)
	require.True(t, env.IsWorkflowCompleted())
	return env.GetWorkflowError()
}

// records returns the records of role in manifest m's outputs (inputs
// when input), by site ("" for a server record; the last of several).
func records(m pipeline.RoundManifest, role string, input bool) map[string]pipeline.ArtifactRef {
	list := m.Outputs
	if input {
		list = m.Inputs
	}
	out := map[string]pipeline.ArtifactRef{}
	for _, r := range list {
		if r.Role == role {
			out[r.Site] = r.Ref
		}
	}
	return out
}

// TestSitesAreSentOnlyTheirOwn: in a campaign begun under the current
// code, every reference a site's training is given is one its identity
// may read (artifact.SiteMayRead): its own model and state, the global
// model or the aggregate under its name, the shared server state; never
// the clustering or the server's own state. SCAFFOLD's sites get the
// previous round's shared state, FoolsGold's none; nothing is reissued.
func TestSitesAreSentOnlyTheirOwn(t *testing.T) {
	for _, m := range []learn.Method{learn.PTopoFL, learn.FedAvg, learn.SCAFFOLD, learn.FoolsGold} {
		t.Run(string(m), func(t *testing.T) {
			fed := newFakeFederation()
			spec := testSpec(3)
			spec.Method = m
			require.NoError(t, runOnFakes(t, fed, pipeline.CampaignWorkflowInput{Spec: spec}))
			require.Zero(t, fed.callCount(pipeline.ActivityReissue))
			for r := 1; r <= 3; r++ {
				ins := fed.trainInputs(r)
				require.Len(t, ins, 3)
				for _, in := range ins {
					for what, ref := range map[string]*pipeline.ArtifactRef{"start model": in.StartModel, "site state": in.SiteState, "server state": in.ServerState, "clustering": in.Clustering} {
						if ref != nil && !artifact.SiteMayRead(in.Site, ref.Key) {
							t.Errorf("round %d: %s is sent its %s %s, which it may not read", r, in.Site, what, ref.Key)
						}
					}
					require.Nil(t, in.Clustering)
					switch {
					case m == learn.SCAFFOLD && r > 1:
						require.NotNil(t, in.ServerState)
						require.Equal(t, artifact.SharedStateKey(spec.Campaign, r-1), in.ServerState.Key)
					default:
						require.Nil(t, in.ServerState, "round %d", r)
					}
					if m == learn.PTopoFL && r > 1 {
						require.Equal(t, artifact.AggregateKey(spec.Campaign, r-1, in.Site), in.StartModel.Key)
					}
				}
			}
			for _, man := range fed.committed() {
				shared := records(man, pipeline.RoleSharedState, false)
				if m == learn.SCAFFOLD {
					require.Equal(t, artifact.SharedStateKey(spec.Campaign, man.Round), shared[""].Key)
				} else {
					require.Empty(t, shared)
				}
				for site, ref := range records(man, pipeline.RoleSiteModel, false) {
					require.True(t, artifact.SiteMayRead(site, ref.Key), "round %d: %s holds %s", man.Round, site, ref.Key)
				}
			}
		})
	}
}

// TestReissueOldLayout resumes campaigns whose state was written before
// sites read only their own objects, at round 2: pTopoFL's sites hold
// round 1's "cluster-<c>" models, SCAFFOLD's campaign has a server state
// without a shared part, FoolsGold's a server state its sites need not
// read. Round 2 first reissues, once, what the sites may no longer read
// (each cluster model copied under the member's name, same sha256, in
// round 1's folder; SCAFFOLD's control variate in round 1's shared state),
// records the copies in its manifest, and trains from them; round 3 needs
// nothing reissued.
func TestReissueOldLayout(t *testing.T) {
	const c = "hc-test"
	ref := func(key string) pipeline.ArtifactRef { return fakeRef("ptopofl", key) }
	ptr := func(r pipeline.ArtifactRef) *pipeline.ArtifactRef { return &r }
	cluster0, cluster1 := ref(artifact.AggregateKey(c, 1, "cluster-0")), ref(artifact.AggregateKey(c, 1, "cluster-1"))
	global := ref(artifact.AggregateKey(c, 1, artifact.GlobalTarget))
	serverState := ref(artifact.ServerStateKey(c, 1))
	for i, tc := range []struct {
		method      learn.Method
		carry       pipeline.RoundCarry
		models      map[string]pipeline.ArtifactRef // reissued model per site
		sharedState bool                            // reissued
	}{
		0: {learn.PTopoFL, pipeline.RoundCarry{
			PrevManifestSHA256: "ab", Clustering: ptr(ref(artifact.ClusteringKey(c, 1))),
			Clusters:    []pipeline.SiteCluster{{Site: "c0", Cluster: 0, Trust: 1}, {Site: "c1", Cluster: 1, Trust: 1}, {Site: "c2", Cluster: 0, Trust: 1}},
			Descriptors: []pipeline.SiteArtifact{{Site: "c0", Ref: ref("d0")}, {Site: "c1", Ref: ref("d1")}, {Site: "c2", Ref: ref("d2")}},
			Models:      []pipeline.SiteArtifact{{Site: "c0", Ref: cluster0}, {Site: "c1", Ref: cluster1}, {Site: "c2", Ref: cluster0}},
		}, map[string]pipeline.ArtifactRef{"c0": cluster0, "c1": cluster1, "c2": cluster0}, false},
		1: {learn.SCAFFOLD, pipeline.RoundCarry{
			PrevManifestSHA256: "ab", ServerState: ptr(serverState),
			Models: []pipeline.SiteArtifact{{Site: "c0", Ref: global}, {Site: "c1", Ref: global}, {Site: "c2", Ref: global}},
		}, nil, true},
		2: {learn.FoolsGold, pipeline.RoundCarry{
			PrevManifestSHA256: "ab", ServerState: ptr(serverState),
			Models: []pipeline.SiteArtifact{{Site: "c0", Ref: global}, {Site: "c1", Ref: global}, {Site: "c2", Ref: global}},
		}, nil, false},
	} {
		t.Run(string(tc.method), func(t *testing.T) {
			fed := newFakeFederation()
			spec := testSpec(3)
			spec.Method = tc.method
			state := pipeline.CampaignState{NextRound: 2, Carry: tc.carry, AUCCurve: []float64{0.7}, AccCurve: []float64{0.6}}
			require.NoError(t, runOnFakes(t, fed, pipeline.CampaignWorkflowInput{Spec: spec, State: &state}))
			want := 0
			if len(tc.models) > 0 || tc.sharedState {
				want = 1
			}
			require.Equal(t, want, fed.callCount(pipeline.ActivityReissue), "case %d", i)
			ms := fed.committed()
			require.Len(t, ms, 2)
			reissued := records(ms[0], pipeline.RoleStartModel, false)
			require.Len(t, reissued, len(tc.models))
			for _, in := range fed.trainInputs(2) {
				require.True(t, artifact.SiteMayRead(in.Site, in.StartModel.Key), "%s starts from %s", in.Site, in.StartModel.Key)
				if old, ok := tc.models[in.Site]; ok {
					require.Equal(t, artifact.AggregateKey(c, 1, in.Site), in.StartModel.Key)
					require.Equal(t, old.SHA256, in.StartModel.SHA256)
					require.Equal(t, *in.StartModel, reissued[in.Site])
				}
				if tc.sharedState {
					require.Equal(t, artifact.SharedStateKey(c, 1), in.ServerState.Key)
				} else {
					require.Nil(t, in.ServerState)
				}
			}
			if tc.sharedState {
				// Two outputs: round 1's reissued shared state, round 2's own.
				var keys []string
				for _, o := range ms[0].Outputs {
					if o.Role == pipeline.RoleSharedState {
						keys = append(keys, o.Ref.Key)
					}
				}
				require.Equal(t, []string{artifact.SharedStateKey(c, 1), artifact.SharedStateKey(c, 2)}, keys)
				require.Equal(t, artifact.SharedStateKey(c, 1), records(ms[0], pipeline.RoleSharedState, true)[""].Key)
				require.Equal(t, artifact.ServerStateKey(c, 1), records(ms[0], pipeline.RoleServerState, true)[""].Key)
			}
			for _, in := range fed.trainInputs(3) {
				require.True(t, artifact.SiteMayRead(in.Site, in.StartModel.Key), "%s starts round 3 from %s", in.Site, in.StartModel.Key)
			}
		})
	}
}
