package workflows

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/pipeline"
)

// fakeFederation stands in for the site and server activities in workflow
// tests. Its answers are pure functions of their inputs (like the real
// activities, which write content-addressed or deterministic keys), so a
// history produced with it replays against the same workflow code.
type fakeFederation struct {
	bucket string
	bad    map[string]bool // sites whose training fails with BadSiteData
	// badFrom[site] = round: the site's training fails from that round on.
	badFrom map[string]int
	// badDescriptor[site] = round: the site's descriptor fails in that round only.
	badDescriptor map[string]int
	// spentFrom[site] = round: the site refuses training for its privacy
	// budget from that round on.
	spentFrom map[string]int
	// recheck[round]: ClusterSites asks the next round for fresh descriptors.
	recheck map[int]bool
	// clusterErr and aggregateErr[round]: the server activity's error in that round.
	clusterErr, aggregateErr map[int]error
	// commitErr[round]: CommitRound's error in that round.
	commitErr map[int]error

	mu        sync.Mutex // the test environment runs activities on their own goroutines
	manifests []pipeline.RoundManifest
	calls     map[string]int
	// pruned lists the rounds PruneRound was asked to prune, in order;
	// pruneBeforeCommit is set if one came before the manifest recording it.
	pruned            []int
	pruneBeforeCommit bool
	// trained holds every TrainLocal input, in the order of the calls.
	trained []pipeline.TrainLocalInput
}

func newFakeFederation() *fakeFederation {
	return &fakeFederation{bucket: "ptopofl", bad: map[string]bool{}, badFrom: map[string]int{}, badDescriptor: map[string]int{},
		spentFrom: map[string]int{}, recheck: map[int]bool{}, calls: map[string]int{}}
}

func (f *fakeFederation) count(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[name]++
}

func (f *fakeFederation) callCount(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[name]
}

// trainInputs returns the TrainLocal inputs of round, in site order.
func (f *fakeFederation) trainInputs(round int) []pipeline.TrainLocalInput {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []pipeline.TrainLocalInput
	for _, in := range f.trained {
		if in.Round == round {
			out = append(out, in)
		}
	}
	slices.SortFunc(out, func(a, b pipeline.TrainLocalInput) int { return a.SiteIndex - b.SiteIndex })
	return out
}

func (f *fakeFederation) committed() []pipeline.RoundManifest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]pipeline.RoundManifest(nil), f.manifests...)
}

func fakeRef(bucket, key string) pipeline.ArtifactRef {
	sum := sha256.Sum256([]byte(key))
	return pipeline.ArtifactRef{Bucket: bucket, Key: key, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(key))}
}

func (f *fakeFederation) ComputeDescriptor(ctx context.Context, in pipeline.ComputeDescriptorInput) (pipeline.ComputeDescriptorOutput, error) {
	f.count(pipeline.ActivityComputeDescriptor)
	if r, ok := f.badDescriptor[in.Site]; ok && r == in.Round {
		return pipeline.ComputeDescriptorOutput{}, pipeline.NewBadSiteDataError(in.Site, in.Site+"_train.csv", 0, "empty file")
	}
	return pipeline.ComputeDescriptorOutput{
		Descriptor: fakeRef(in.Bucket, artifact.DescriptorKey(in.Campaign, in.Round, in.Site)),
		NumTrain:   100 + in.SiteIndex,
	}, nil
}

func (f *fakeFederation) TrainLocal(ctx context.Context, in pipeline.TrainLocalInput) (pipeline.TrainLocalOutput, error) {
	f.count(pipeline.ActivityTrainLocal)
	f.mu.Lock()
	from, ok := f.badFrom[in.Site]
	f.trained = append(f.trained, in)
	spent, refuses := f.spentFrom[in.Site]
	f.mu.Unlock()
	if refuses && in.Round >= spent {
		return pipeline.TrainLocalOutput{}, pipeline.NewPrivacyBudgetError(in.Site, "campaign %s round %d: beyond its operator's budget ε = 10", in.Campaign, in.Round)
	}
	if f.bad[in.Site] || (ok && in.Round >= from) {
		return pipeline.TrainLocalOutput{}, pipeline.NewBadSiteDataError(in.Site, in.Site+"_train.csv", 17, "expected 20 features, got 19")
	}
	out := pipeline.TrainLocalOutput{
		Model:    fakeRef(in.Bucket, in.Keys().Model(in.Site)),
		NumTrain: 100 + in.SiteIndex,
		Loss:     0.5,
	}
	if in.Evaluate {
		ev := fakeScore(in.SiteCall)
		out.Evaluation = &ev
	}
	return out, nil
}

func (f *fakeFederation) Evaluate(ctx context.Context, in pipeline.EvaluateInput) (pipeline.EvaluateOutput, error) {
	f.count(pipeline.ActivityEvaluate)
	return fakeScore(in.SiteCall), nil
}

// fakeScore is a site's score in a round, the same whichever activity
// computes it.
func fakeScore(call pipeline.SiteCall) pipeline.EvaluateOutput {
	return pipeline.EvaluateOutput{
		AUC:      0.75 + 0.01*float64(call.Round) + 0.001*float64(call.SiteIndex),
		Accuracy: 0.70 + 0.01*float64(call.Round),
		NumTest:  40,
	}
}

func (f *fakeFederation) ClusterSites(ctx context.Context, in pipeline.ClusterSitesInput) (pipeline.ClusterSitesOutput, error) {
	f.count(pipeline.ActivityClusterSites)
	if err := f.clusterErr[in.Round]; err != nil {
		return pipeline.ClusterSitesOutput{}, err
	}
	out := pipeline.ClusterSitesOutput{
		Clustering:         fakeRef(in.Bucket, artifact.RoundPrefix(in.Campaign, in.Round)+"clustering.json"),
		RecheckDescriptors: f.recheck[in.Round],
	}
	for i, d := range in.Descriptors {
		out.Sites = append(out.Sites, pipeline.SiteCluster{Site: d.Site, Cluster: i % 2, Trust: 1, Flagged: i == 1})
	}
	return out, nil
}

// Aggregate answers as the real activity does: under pTopoFL each site
// gets its cluster's model under its own name (members of one cluster
// share a sha256), under the other methods every site the global model;
// SCAFFOLD and FoolsGold keep a server state, and SCAFFOLD's sites read
// its shared part.
func (f *fakeFederation) Aggregate(ctx context.Context, in pipeline.AggregateInput) (pipeline.AggregateOutput, error) {
	f.count(pipeline.ActivityAggregate)
	if err := f.aggregateErr[in.Round]; err != nil {
		return pipeline.AggregateOutput{}, err
	}
	var out pipeline.AggregateOutput
	cluster := map[string]int{}
	for _, c := range in.Clusters {
		cluster[c.Site] = c.Cluster
	}
	keys := in.Keys()
	if in.Method == learn.PTopoFL {
		for _, u := range in.Updates {
			ref := fakeRef(in.Bucket, keys.Aggregate(u.Site))
			sum := sha256.Sum256(fmt.Appendf(nil, "%s%d of round %d", artifact.ClusterTargetPrefix, cluster[u.Site], in.Round))
			ref.SHA256 = hex.EncodeToString(sum[:])
			out.Aggregates = append(out.Aggregates, pipeline.NamedArtifact{Name: u.Site, Ref: ref})
			out.Models = append(out.Models, pipeline.SiteArtifact{Site: u.Site, Ref: ref})
		}
	} else {
		ref := fakeRef(in.Bucket, keys.Aggregate(artifact.GlobalTarget))
		out.Aggregates = append(out.Aggregates, pipeline.NamedArtifact{Name: artifact.GlobalTarget, Ref: ref})
		for _, u := range in.Updates {
			out.Models = append(out.Models, pipeline.SiteArtifact{Site: u.Site, Ref: ref})
		}
	}
	if in.Method == learn.SCAFFOLD || in.Method == learn.FoolsGold {
		st := fakeRef(in.Bucket, keys.ServerState())
		out.ServerState = &st
	}
	if in.Method == learn.SCAFFOLD {
		sh := fakeRef(in.Bucket, keys.SharedState())
		out.SharedState = &sh
	}
	return out, nil
}

// Reissue answers as the real activity does: a copy of each model under
// the site's name in the model's round folder (the same sha256), and the
// shared state beside the server state.
func (f *fakeFederation) Reissue(ctx context.Context, in pipeline.ReissueInput) (pipeline.ReissueOutput, error) {
	f.count(pipeline.ActivityReissue)
	var out pipeline.ReissueOutput
	for _, m := range in.Models {
		keys, ok := artifact.ParseRoundKeys(in.Campaign, m.Ref.Key)
		if !ok {
			return out, fmt.Errorf("%s is not a round key of %s", m.Ref.Key, in.Campaign)
		}
		ref := fakeRef(in.Bucket, keys.Aggregate(m.Site))
		ref.SHA256, ref.Size = m.Ref.SHA256, m.Ref.Size
		out.Models = append(out.Models, pipeline.SiteArtifact{Site: m.Site, Ref: ref})
	}
	if in.ServerState != nil {
		keys, ok := artifact.ParseRoundKeys(in.Campaign, in.ServerState.Key)
		if !ok {
			return out, fmt.Errorf("%s is not a round key of %s", in.ServerState.Key, in.Campaign)
		}
		sh := fakeRef(in.Bucket, keys.SharedState())
		out.SharedState = &sh
	}
	return out, nil
}

func (f *fakeFederation) CommitRound(ctx context.Context, in pipeline.CommitRoundInput) (pipeline.CommitRoundOutput, error) {
	f.count(pipeline.ActivityCommitRound)
	if err := f.commitErr[in.Manifest.Round]; err != nil {
		return pipeline.CommitRoundOutput{}, err
	}
	b, err := json.Marshal(in.Manifest)
	if err != nil {
		return pipeline.CommitRoundOutput{}, err
	}
	f.mu.Lock()
	f.manifests = append(f.manifests, in.Manifest)
	f.mu.Unlock()
	sum := sha256.Sum256(b)
	return pipeline.CommitRoundOutput{Manifest: pipeline.ArtifactRef{
		Bucket: in.Bucket, Key: artifact.RoundKeys{Campaign: in.Manifest.Campaign, Round: in.Manifest.Round, Attempt: in.Manifest.Attempt}.Manifest(),
		SHA256: hex.EncodeToString(sum[:]), Size: int64(len(b)),
	}}, nil
}

// registerStubs registers placeholder activities under the pipeline names:
// the workflows schedule activities by name, and the test environment only
// mocks names it knows. Tests then mock each with env.OnActivity.
func registerStubs(env *testsuite.TestWorkflowEnvironment) {
	var f *fakeFederation // method values of a nil receiver: only their signatures matter
	for name, fn := range map[string]any{
		pipeline.ActivityComputeDescriptor: f.ComputeDescriptor,
		pipeline.ActivityTrainLocal:        f.TrainLocal,
		pipeline.ActivityEvaluate:          f.Evaluate,
		pipeline.ActivityClusterSites:      f.ClusterSites,
		pipeline.ActivityAggregate:         f.Aggregate,
		pipeline.ActivityReissue:           f.Reissue,
		pipeline.ActivityCommitRound:       f.CommitRound,
		pipeline.ActivityPruneRound:        f.PruneRound,
	} {
		env.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
}
