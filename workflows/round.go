package workflows

import (
	"fmt"
	"sort"
	"strings"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
)

// RoundWorkflow runs one federated round (DESIGN §3):
//
//  1. descriptors fan-out, for methods that use descriptors, in round 1, when
//     the previous drift check asked, every DriftCheckEvery rounds, and for
//     any site that has no descriptor yet; then the ClusterSites server
//     activity (clustering, trust, drift);
//  2. local-training fan-out;
//  3. the Aggregate server activity;
//  4. evaluation fan-out with the model each site now holds (under
//     RoundProtocolCurrent, methods scored on the site's own update,
//     LocalOnly and pFedMe, are scored by the training activity instead:
//     what the aggregation sends back does not change that model, so the
//     round trip would only repeat the training's inputs);
//  5. the CommitRound server activity, which writes the manifest.
//
// Every site reads only what is its own (artifact.SiteReadPatterns): the
// model the aggregation wrote under its name or the global model, and
// the shared part of the server state. A campaign written before that
// rule (resumed, or continued by this code) first has what its sites
// start from reissued under keys they may read (reissue).
//
// Each fan-out waits at most RoundDeadline for its sites. (One deadline for
// the whole round would let a single hung site in training leave no time
// for evaluation, failing every round it hangs in.) A site that fails or
// misses the deadline in a phase leaves the round (it is recorded in the
// manifest with phase, reason and error text) and is asked again next
// round. After each fan-out, fewer than MinSites remaining sites fail the
// round: the manifest is still committed, with outcome "failed" and the
// reason, and the workflow fails with a non-retryable ErrTypeQuorumNotMet
// error whose details are a pipeline.QuorumFailure.
func RoundWorkflow(ctx workflow.Context, in pipeline.RoundWorkflowInput) (pipeline.RoundWorkflowOutput, error) {
	r := newRound(ctx, in)
	// Which sites a stuck round waits for, for `starter status`. A query
	// handler issues no command: histories recorded without it replay.
	if err := registerProgressQuery(ctx, r.progress); err != nil {
		return pipeline.RoundWorkflowOutput{}, err
	}
	return r.run(ctx)
}

// roundStep is one step of a round: it reads and extends the round's
// state (carry, manifest, the sites still in it) and returns an error
// that ends the round.
type roundStep struct {
	name string
	run  func(*round, workflow.Context) error
}

// roundSteps are a round's steps in order (DESIGN §3), after the initial
// model of a campaign of model "external" and the reissue of what a
// campaign written before sites read only their own objects starts from.
// A step that a method does not use returns at once without a command
// (descriptors for methods without them, pruning without a retention
// policy), so a history records only the steps that ran. A new stage goes
// between two of them (one between training, which leaves the sites'
// updates in round.updates, and aggregation, which reads them) and is
// introduced behind a workflow.GetVersion of its own so that the
// histories of rounds begun before it still replay.
var roundSteps = []roundStep{
	{"external-model", (*round).externalModel},
	{"reissue", (*round).reissueStep},
	{"descriptors", (*round).descriptorStep},
	{"train", (*round).trainStep},
	{"aggregate", (*round).aggregateStep},
	{"evaluate", (*round).evaluate},
	{"commit", (*round).commitStep},
	{"prune", (*round).pruneStep},
}

// run runs the round's steps, in a RoundWorkflow of its own or as a stage
// of the campaign workflow (campaign.runInline), and returns what the
// campaign carries to the next round.
func (r *round) run(ctx workflow.Context) (pipeline.RoundWorkflowOutput, error) {
	// Rounds begun before sites read only their own objects replay as
	// they ran (versionOwnReads).
	r.ownReads = workflow.GetVersion(ctx, versionOwnReads, workflow.DefaultVersion, 1) >= 1
	for _, st := range roundSteps {
		if err := st.run(r, ctx); err != nil {
			return pipeline.RoundWorkflowOutput{}, err
		}
	}
	r.carry.PrevManifestSHA256 = r.committed.SHA256
	return pipeline.RoundWorkflowOutput{
		Manifest:     r.committed,
		Mean:         r.m.Mean,
		Participants: r.m.Participants,
		Dropped:      r.m.Dropped,
		Carry:        r.carry,
	}, nil
}

// reissueStep is reissue for a round whose sites read only their own
// objects; nothing for a round begun before.
func (r *round) reissueStep(ctx workflow.Context) error {
	if !r.ownReads {
		return nil
	}
	return r.reissue(ctx)
}

// descriptorStep is descriptors for a method that uses them.
func (r *round) descriptorStep(ctx workflow.Context) error {
	if !method.NeedsDescriptors(r.spec.Method) {
		return nil
	}
	return r.descriptors(ctx)
}

// trainStep is train, leaving the sites' updates in r.updates; under
// secure_aggregation "secagg+" the training, the four SecAgg+ stages and
// the aggregation from the groups' sums (secureRound, secagg.go) instead
// (issue 37's hook: a campaign without it takes the plain path,
// unchanged).
func (r *round) trainStep(ctx workflow.Context) error {
	if r.spec.Hyperparameters.IsSecAgg() {
		return r.secureRound(ctx)
	}
	updates, err := r.train(ctx)
	r.updates = updates
	return err
}

// aggregateStep is aggregate over r.updates; nothing under secure
// aggregation, whose trainStep aggregated the groups' sums.
func (r *round) aggregateStep(ctx workflow.Context) error {
	if r.spec.Hyperparameters.IsSecAgg() {
		return nil
	}
	return r.aggregate(ctx, r.updates)
}

// commitStep records in the manifest what the retention policy prunes
// (retention), then commits it; r.committed is its reference.
func (r *round) commitStep(ctx workflow.Context) error {
	r.pruning = r.retention(ctx)
	ref, err := r.commit(ctx)
	r.committed = ref
	return err
}

// pruneStep deletes what the committed manifest says the policy prunes.
func (r *round) pruneStep(ctx workflow.Context) error { return r.prune(ctx, r.pruning) }

// round is the state of one RoundWorkflow execution. Lookups by site go
// through maps; every walk goes through r.active or r.spec.Sites, which are
// in spec order, never through a map.
type round struct {
	spec     pipeline.CampaignSpec
	n        int // round number
	protocol int // pipeline.RoundProtocol*: the version of the round's steps
	attempt  int // the campaign's attempt (0 or 1: the first)
	// colocated: the site activities run as local activities of the
	// colocated worker (pipeline.CampaignWorkflowInput.ColocatedQueue).
	colocated bool
	carry     pipeline.RoundCarry
	m         pipeline.RoundManifest
	index     map[string]int // site → position in spec.Sites
	active    []string       // sites still in the round, spec order
	nTrain    map[string]int // site → training rows, from this round's training
	// scored holds each site's evaluation from its training activity, for
	// methods scored on their own update (evaluatesInTraining).
	scored map[string]*pipeline.EvaluateOutput
	// updateScored holds each deep site's score of its trained model before
	// the aggregation (TrainLocalOutput.UpdateEvaluation).
	updateScored map[string]*pipeline.EvaluateOutput
	// released holds what each site's activities reported releasing, in
	// the order of the round's phases (RoundManifest.Released).
	released map[string][]pipeline.Release
	// progress is what the round's progress query reports.
	progress *roundProgress
	// ownReads: the round's sites are sent only references to what they
	// may read (versionOwnReads).
	ownReads bool
	// lifetime holds each site's lifetime privacy loss as its last
	// activity of the round reported it (dp record).
	lifetime map[string]*pipeline.SiteLifetime
	// secure is the round's secure aggregation (secagg.go); nil without.
	secure *secure
	// updates are the sites' updates, from training to aggregation.
	updates []pipeline.SiteUpdate
	// pruning is what the retention policy deletes after the commit (nil:
	// nothing); committed is the committed manifest's reference.
	pruning   *pipeline.Pruning
	committed pipeline.ArtifactRef
}

// evaluatesInTraining reports whether this round's sites score their model
// in the training activity instead of an evaluation fan-out: under the
// current protocol, for methods scored on the site's own update.
func (r *round) evaluatesInTraining() bool {
	return r.protocol >= pipeline.RoundProtocolCurrent && method.EvaluatesOwnUpdate(r.spec.Method)
}

func newRound(ctx workflow.Context, in pipeline.RoundWorkflowInput) *round {
	spec := in.Spec
	r := &round{
		spec:     spec,
		n:        in.Round,
		protocol: in.Protocol,
		attempt:  in.Attempt,
		// Colocated dispatch came after the current protocol; a legacy
		// round keeps its timer and its queues.
		colocated: in.ColocatedQueue != "" && in.Protocol >= pipeline.RoundProtocolCurrent,
		carry:     in.Carry,
		index:     make(map[string]int, len(spec.Sites)),
		nTrain:    make(map[string]int, len(spec.Sites)),
		scored:    make(map[string]*pipeline.EvaluateOutput, len(spec.Sites)),

		updateScored: make(map[string]*pipeline.EvaluateOutput, len(spec.Sites)),
		released:     make(map[string][]pipeline.Release, len(spec.Sites)),
		progress:     newRoundProgress(in.Round),
		lifetime:     make(map[string]*pipeline.SiteLifetime, len(spec.Sites)),
		active:       spec.SiteNames(),
		m: pipeline.RoundManifest{
			Schema:             pipeline.ManifestSchema,
			Campaign:           spec.Campaign,
			Round:              in.Round,
			Method:             spec.Method,
			Preset:             spec.Preset,
			Outcome:            pipeline.OutcomeCommitted,
			SpecHash:           spec.SpecHash(),
			CodeVersion:        spec.CodeVersion,
			PrevManifestSHA256: in.Carry.PrevManifestSHA256,
			Sites:              spec.SiteNames(),
			Dropped:            []pipeline.SiteDrop{},
			Seeds:              []pipeline.SeedRecord{},
			Inputs:             []pipeline.ArtifactRecord{},
			Outputs:            []pipeline.ArtifactRecord{},
			Metrics:            []pipeline.SiteMetrics{},
			Flagged:            []string{},
		},
	}
	for i, s := range spec.Sites {
		r.index[s.Name] = i
	}
	// Only a later attempt says so: a first attempt's manifest keeps the
	// bytes it always had.
	if in.Attempt > 1 {
		r.m.Attempt = in.Attempt
	}
	r.m.Supersedes = in.Supersedes
	r.m.Privacy = in.Privacy
	return r
}

func (r *round) siteCall(site, purpose string) pipeline.SiteCall {
	c := pipeline.SiteCall{
		Campaign: r.spec.Campaign, Round: r.n, Site: site, SiteIndex: r.index[site],
		Method: r.spec.Method, Preset: r.spec.Preset, Hyperparameters: r.spec.Hyperparameters,
		Bucket: r.spec.Bucket, CampaignSeed: r.spec.Seed,
		Seed:     pipeline.DeriveSeed(r.spec.Seed, r.n, site, purpose),
		Attempt:  r.attempt,
		Schema:   r.spec.Schema,
		External: r.carry.External,
	}
	if r.spec.Hyperparameters.IsDP() {
		// The counts the privacy plan was made for, which the site holds
		// its data against.
		c.NTrain, c.NTest = r.spec.Sites[r.index[site]].NTrain, r.spec.Sites[r.index[site]].NTest
	}
	return c
}

// release records what a site's activity reported releasing.
func (r *round) release(site string, rel pipeline.Released) {
	r.released[site] = append(r.released[site], rel.Released...)
	if rel.Lifetime != nil {
		r.lifetime[site] = rel.Lifetime
	}
}

func (r *round) serverCall(purpose string) pipeline.ServerCall {
	return pipeline.ServerCall{
		Campaign: r.spec.Campaign, Round: r.n, Method: r.spec.Method, Preset: r.spec.Preset,
		Hyperparameters: r.spec.Hyperparameters, Bucket: r.spec.Bucket, CampaignSeed: r.spec.Seed,
		Seed:    pipeline.DeriveSeed(r.spec.Seed, r.n, "", purpose),
		Sites:   r.spec.SiteNames(),
		Attempt: r.attempt,
	}
}

func (r *round) seed(site, purpose string) {
	r.m.Seeds = append(r.m.Seeds, pipeline.SeedRecord{
		Site: site, Purpose: purpose, Seed: pipeline.DeriveSeed(r.spec.Seed, r.n, site, purpose),
	})
}

func (r *round) input(role, site string, ref *pipeline.ArtifactRef) {
	if ref != nil {
		r.m.Inputs = append(r.m.Inputs, pipeline.ArtifactRecord{Role: role, Site: site, Ref: *ref})
	}
}

func (r *round) output(role, site string, ref *pipeline.ArtifactRef) {
	if ref != nil {
		r.m.Outputs = append(r.m.Outputs, pipeline.ArtifactRecord{Role: role, Site: site, Ref: *ref})
	}
}

// drop removes the dropped sites from the round and records why.
func (r *round) drop(drops []pipeline.SiteDrop) {
	if len(drops) == 0 {
		return
	}
	gone := make(map[string]bool, len(drops))
	for _, d := range drops {
		gone[d.Site] = true
	}
	// Record drops in spec order so the manifest does not depend on which
	// site happened to fail first.
	for _, site := range r.active {
		if !gone[site] {
			continue
		}
		for _, d := range drops {
			if d.Site == site {
				r.m.Dropped = append(r.m.Dropped, d)
			}
		}
	}
	r.active = filter(r.active, func(s string) bool { return !gone[s] })
}

// quorum fails the round, after committing its manifest, when fewer than
// MinSites sites remain after phase.
func (r *round) quorum(ctx workflow.Context, phase string) error {
	if len(r.active) >= r.spec.MinSites {
		return nil
	}
	reason := fmt.Sprintf("round %d, %s phase: %d of %d sites remain, below the quorum min_sites=%d",
		r.n, phase, len(r.active), len(r.spec.Sites), r.spec.MinSites)
	refused := 0
	for _, d := range r.m.Dropped {
		if d.Reason == pipeline.DropPrivacyBudget {
			refused++
		}
	}
	if refused > 0 {
		// No retry brings these back: their operators' budgets are spent.
		reason += fmt.Sprintf(" (%d refused for their lifetime privacy budget: %s)", refused, pipeline.DropPrivacyBudget)
	}
	r.m.Outcome = pipeline.OutcomeFailed
	r.m.FailureReason = reason
	ref, err := r.commit(ctx)
	if err != nil {
		return fmt.Errorf("%s; and committing the failed round's manifest: %w", reason, err)
	}
	return temporal.NewNonRetryableApplicationError(
		reason+"; manifest "+ref.String(), pipeline.ErrTypeQuorumNotMet, nil,
		pipeline.QuorumFailure{Round: r.n, Phase: phase, Reason: reason, Manifest: ref, Dropped: r.m.Dropped})
}

// externalModel gives a campaign of model "external" its initial model
// and model layout before its first round's sites run (nothing for other
// models, or once the campaign has them): the spec's initial_model, or
// else the init task of the first site in sorted order whose program
// makes one (a site that drops out passes it to the next), adopted by the
// server as the campaign's. Every site then starts from that model.
func (r *round) externalModel(ctx workflow.Context) error {
	if !r.spec.Hyperparameters.IsExternal() || r.carry.External != nil {
		return nil
	}
	adopt := pipeline.AdoptInitialModelInput{ServerCall: r.serverCall(pipeline.PurposeTrain)}
	if im := r.spec.InitialModel; im != nil {
		file := im.File(r.spec.Bucket)
		adopt.File = &file
		r.input(pipeline.RoleInitialModel, "", &file)
	} else {
		sorted := append([]string(nil), r.active...)
		sort.Strings(sorted)
		var made *pipeline.InitModelOutput
		from := ""
		for _, site := range sorted {
			res := fanOut[pipeline.InitModelOutput](ctx, r.spec, fanOutRequest{
				Phase: pipeline.PhaseInit, Protocol: r.protocol, Colocated: r.colocated, Activity: pipeline.ActivityInitModel, Progress: r.progress,
				Sites: []string{site},
				Input: func(site string) any {
					return pipeline.InitModelInput{SiteCall: r.siteCall(site, pipeline.PurposeTrain)}
				},
			})
			r.drop(res.Drops)
			if out, ok := res.OK[site]; ok {
				made, from = &out, site
				break
			}
		}
		if made == nil {
			return r.quorum(ctx, pipeline.PhaseInit) // every site dropped out: below any quorum
		}
		r.output(pipeline.RoleInitialModel, from, &made.Model)
		r.output(pipeline.RoleModelLayout, from, &made.Layout)
		adopt.Site, adopt.Model, adopt.Layout = from, made.Model, made.Layout
	}
	var out pipeline.AdoptInitialModelOutput
	actx := workflow.WithLocalActivityOptions(ctx, serverLocalActivityOptions())
	if err := workflow.ExecuteLocalActivity(actx, pipeline.ActivityAdoptInitialModel, adopt).Get(ctx, &out); err != nil {
		return fmt.Errorf("round %d: adopt the initial model: %w", r.n, err)
	}
	model, ext := out.Model, out.External
	r.output(pipeline.RoleInitialModel, "", &model)
	r.output(pipeline.RoleModelLayout, "", &ext.Layout)
	r.carry.External = &ext
	models := make(map[string]*pipeline.ArtifactRef, len(r.spec.Sites))
	for _, s := range r.spec.Sites {
		m := model
		models[s.Name] = &m
	}
	r.carry.Models = r.ordered(models)
	return r.quorum(ctx, pipeline.PhaseInit)
}

// reissue gives the sites of a campaign written before sites read only
// their own objects what they start this round from at keys they may
// read: each site's pTopoFL cluster model ("cluster-<c>") copied under
// its own name, and, for a method whose sites read the server state,
// SCAFFOLD's control variate in a shared state (ActivityReissue). It asks
// only when the carried references need it, so a campaign begun under
// this code never calls it, and one written before calls it once. The
// test is on the form of the carried keys and on the carry, never on the
// read policy, so that a later change of the policy cannot change what a
// replay of this round does.
func (r *round) reissue(ctx workflow.Context) error {
	in := pipeline.ReissueInput{ServerCall: r.serverCall(pipeline.PurposeTrain)}
	for _, m := range r.carry.Models {
		if t, ok := artifact.AggregateTarget(r.spec.Campaign, m.Ref.Key); ok && strings.HasPrefix(t, artifact.ClusterTargetPrefix) {
			in.Models = append(in.Models, m)
		}
	}
	if r.carry.ServerState != nil && r.carry.SharedState == nil && method.SitesReadServerState(r.spec.Method) {
		in.ServerState = r.carry.ServerState
	}
	if len(in.Models) == 0 && in.ServerState == nil {
		return nil
	}
	var out pipeline.ReissueOutput
	actx := workflow.WithLocalActivityOptions(ctx, serverLocalActivityOptions())
	if err := workflow.ExecuteLocalActivity(actx, pipeline.ActivityReissue, in).Get(ctx, &out); err != nil {
		return fmt.Errorf("round %d: reissue what the sites start from under keys they may read: %w", r.n, err)
	}
	models := siteRefs(r.carry.Models)
	for _, m := range out.Models {
		ref := m.Ref
		models[m.Site] = &ref
		r.output(pipeline.RoleStartModel, m.Site, &ref)
	}
	r.carry.Models = r.ordered(models)
	if out.SharedState != nil {
		r.carry.SharedState = out.SharedState
		r.output(pipeline.RoleSharedState, "", out.SharedState)
	}
	return nil
}

func (r *round) descriptors(ctx workflow.Context) error {
	h := r.spec.Hyperparameters
	have := siteRefs(r.carry.Descriptors)
	need := descriptorSites(r.spec, r.n, r.carry, r.active)
	if len(need) == 0 {
		// Nothing new: the round uses the previous clustering, and no site
		// was re-assigned in this round.
		for i := range r.carry.Clusters {
			r.carry.Clusters[i].Reassigned = false
			r.carry.Clusters[i].Reclustered = false
		}
		for _, d := range r.carry.ClusterDescriptors {
			r.input(pipeline.RoleDescriptor, d.Site, &d.Ref)
		}
		r.input(pipeline.RoleClustering, "", r.carry.Clustering)
		r.carry.RecheckDescriptors = false
		return nil
	}
	r.m.DescriptorsRecomputed = true
	// A deep site's descriptor is computed from its penultimate activations
	// under the model it holds, so it is told which; a tabular site's
	// descriptor depends on its data alone and its input stays as it was
	// (no model: the same payload as before deep models existed).
	var models map[string]*pipeline.ArtifactRef
	if h.IsDeep() || h.IsExternal() {
		models = siteRefs(r.carry.Models)
	}
	res := fanOut[pipeline.ComputeDescriptorOutput](ctx, r.spec, fanOutRequest{
		Phase: pipeline.PhaseDescriptor, Protocol: r.protocol, Colocated: r.colocated, Activity: pipeline.ActivityComputeDescriptor, Sites: need,
		Progress: r.progress,
		Input: func(site string) any {
			return pipeline.ComputeDescriptorInput{
				SiteCall: r.siteCall(site, pipeline.PurposeDescriptor),
				Rows:     r.spec.DescriptorRows[site], // a lookup by key, not an iteration
				Model:    models[site],
			}
		},
	})
	r.drop(res.Drops)
	var fresh []string
	for _, site := range need {
		r.seed(site, pipeline.PurposeDescriptor)
		if out, ok := res.OK[site]; ok {
			ref := out.Descriptor
			have[site] = &ref
			fresh = append(fresh, site)
			r.output(pipeline.RoleDescriptor, site, &ref)
			r.release(site, out.Released)
		}
	}
	if err := r.quorum(ctx, pipeline.PhaseDescriptor); err != nil {
		return err
	}
	r.carry.Descriptors = r.ordered(have)
	for _, d := range r.carry.Descriptors {
		if !contains(fresh, d.Site) {
			r.input(pipeline.RoleDescriptor, d.Site, &d.Ref)
		}
	}
	r.input(pipeline.RoleClustering, "", r.carry.Clustering)

	r.seed("", pipeline.PurposeCluster)
	r.progress.step(pipeline.StepCluster)
	var out pipeline.ClusterSitesOutput
	actx := workflow.WithLocalActivityOptions(ctx, serverLocalActivityOptions())
	err := workflow.ExecuteLocalActivity(actx, pipeline.ActivityClusterSites, pipeline.ClusterSitesInput{
		ServerCall:          r.serverCall(pipeline.PurposeCluster),
		Descriptors:         r.carry.Descriptors,
		Fresh:               fresh,
		Previous:            r.carry.Clustering,
		PreviousDescriptors: r.carry.ClusterDescriptors,
	}).Get(ctx, &out)
	if err != nil {
		return fmt.Errorf("round %d: cluster sites: %w", r.n, err)
	}
	r.carry.Clustering = &out.Clustering
	r.carry.Clusters = out.Sites
	r.carry.ClusterDescriptors = r.carry.Descriptors
	r.carry.RecheckDescriptors = out.RecheckDescriptors
	r.output(pipeline.RoleClustering, "", &out.Clustering)
	return nil
}

func (r *round) train(ctx workflow.Context) ([]pipeline.SiteUpdate, error) {
	models := siteRefs(r.carry.Models)
	states := siteRefs(r.carry.SiteStates)
	descs := siteRefs(r.carry.Descriptors)
	clusters := make(map[string]*pipeline.SiteCluster, len(r.carry.Clusters))
	for i := range r.carry.Clusters {
		clusters[r.carry.Clusters[i].Site] = &r.carry.Clusters[i]
	}
	// What the sites are told of the server's state: the shared part
	// only, and not the clustering, which they may not read; a round
	// begun before sites read only their own objects told them both.
	serverState, clustering := r.carry.SharedState, (*pipeline.ArtifactRef)(nil)
	if !r.ownReads {
		serverState, clustering = r.carry.ServerState, r.carry.Clustering
	}
	res := fanOut[pipeline.TrainLocalOutput](ctx, r.spec, fanOutRequest{
		Phase: pipeline.PhaseTrain, Protocol: r.protocol, Colocated: r.colocated, Activity: pipeline.ActivityTrainLocal, Sites: r.active,
		Progress: r.progress,
		Input: func(site string) any {
			return pipeline.TrainLocalInput{
				SiteCall:    r.siteCall(site, pipeline.PurposeTrain),
				StartModel:  models[site],
				SiteState:   states[site],
				ServerState: serverState,
				Clustering:  clustering,
				Cluster:     clusters[site],
				Descriptor:  descs[site],
				Evaluate:    r.evaluatesInTraining(),
			}
		},
	})
	r.input(pipeline.RoleServerState, "", r.carry.ServerState)
	if r.ownReads {
		r.input(pipeline.RoleSharedState, "", r.carry.SharedState)
	}
	for _, site := range r.active {
		r.seed(site, pipeline.PurposeTrain)
		r.input(pipeline.RoleStartModel, site, models[site])
		r.input(pipeline.RoleSiteState, site, states[site])
	}
	r.drop(res.Drops)
	var updates []pipeline.SiteUpdate
	for _, site := range r.active {
		out := res.OK[site]
		r.release(site, out.Released)
		r.output(pipeline.RoleLocalModel, site, &out.Model)
		r.output(pipeline.RoleControl, site, out.Control)
		r.output(pipeline.RoleSiteState, site, out.SiteState)
		if out.SiteState != nil {
			states[site] = out.SiteState
		}
		r.nTrain[site] = out.NumTrain
		r.scored[site] = out.Evaluation
		r.updateScored[site] = out.UpdateEvaluation
		updates = append(updates, pipeline.SiteUpdate{
			Site: site, Model: out.Model, Control: out.Control, NumTrain: out.NumTrain,
		})
	}
	r.carry.SiteStates = r.ordered(states)
	if err := r.quorum(ctx, pipeline.PhaseTrain); err != nil {
		return nil, err
	}
	return updates, nil
}

func (r *round) aggregate(ctx workflow.Context, updates []pipeline.SiteUpdate) error {
	r.seed("", pipeline.PurposeAggregate)
	r.progress.step(pipeline.StepAggregate)
	var out pipeline.AggregateOutput
	actx := workflow.WithLocalActivityOptions(ctx, serverLocalActivityOptions())
	err := workflow.ExecuteLocalActivity(actx, pipeline.ActivityAggregate, pipeline.AggregateInput{
		ServerCall:  r.serverCall(pipeline.PurposeAggregate),
		Updates:     updates,
		Clustering:  r.carry.Clustering,
		Clusters:    r.carry.Clusters,
		Descriptors: r.carry.Descriptors,
		ServerState: r.carry.ServerState,
		Float32:     r.carry.External != nil && r.carry.External.Float32,
	}).Get(ctx, &out)
	if err != nil {
		return fmt.Errorf("round %d: aggregate: %w", r.n, err)
	}
	for _, a := range out.Aggregates {
		r.m.Outputs = append(r.m.Outputs, pipeline.ArtifactRecord{Role: pipeline.RoleAggregate, Name: a.Name, Ref: a.Ref})
	}
	r.output(pipeline.RoleServerState, "", out.ServerState)
	// The shared part of the server state (absent from older activity
	// outputs, so replays of earlier rounds record nothing).
	r.output(pipeline.RoleSharedState, "", out.SharedState)
	if out.SharedState != nil {
		r.carry.SharedState = out.SharedState
	}
	// A robust aggregation's selection (absent from older activity
	// outputs, so replays of earlier rounds take neither branch).
	if len(out.Flagged) > 0 {
		r.m.Flagged = out.Flagged
	}
	r.m.SiteWeights = out.SiteWeights
	if out.ServerState != nil {
		r.carry.ServerState = out.ServerState
	}
	r.adoptModels(out.Models)
	return nil
}

func (r *round) evaluate(ctx workflow.Context) error {
	var res fanOutResult[pipeline.EvaluateOutput]
	if r.evaluatesInTraining() {
		res = r.scoredInTraining()
	} else {
		res = r.evaluateFanOut(ctx)
	}
	r.drop(res.Drops)
	if err := r.quorum(ctx, pipeline.PhaseEvaluate); err != nil {
		return err
	}
	var sumAUC, sumAcc, sumUpdate, sumValAUC, sumValAcc float64
	nUpdate, nAUC, nAcc, nVal := 0, 0, 0, 0
	for _, site := range r.active {
		out := res.OK[site]
		if !r.evaluatesInTraining() {
			// Scores computed in training were recorded with its releases.
			r.release(site, out.Released)
		}
		sm := pipeline.SiteMetrics{
			Site: site, AUC: out.AUC, Accuracy: out.Accuracy, NumTrain: r.nTrain[site], NumTest: out.NumTest,
		}
		if u := r.updateScored[site]; u != nil {
			acc := u.Accuracy
			sm.UpdateAccuracy = &acc
			sumUpdate += acc
			nUpdate++
		}
		sm.Missing = out.Missing
		if out.ValAUC != nil && out.ValAccuracy != nil {
			sm.ValAUC, sm.ValAccuracy, sm.NumVal = out.ValAUC, out.ValAccuracy, out.NumVal
			sumValAUC += *out.ValAUC
			sumValAcc += *out.ValAccuracy
			nVal++
		}
		r.m.Metrics = append(r.m.Metrics, sm)
		// A score a site's own program did not report (model "external")
		// stays out of the mean.
		if !contains(out.Missing, "auc") {
			sumAUC += out.AUC
			nAUC++
		}
		if !contains(out.Missing, "accuracy") {
			sumAcc += out.Accuracy
			nAcc++
		}
	}
	n := len(r.active)
	// The paper's auc_r / acc_r: unweighted mean over evaluated sites, summed
	// in spec order so the float result never depends on answer order.
	r.m.Mean = pipeline.RoundMetrics{Round: r.n, Sites: n}
	if nAUC > 0 {
		r.m.Mean.AUC = sumAUC / float64(nAUC)
	} else {
		r.m.Mean.Missing = append(r.m.Mean.Missing, "auc")
	}
	if nAcc > 0 {
		r.m.Mean.Accuracy = sumAcc / float64(nAcc)
	} else {
		r.m.Mean.Missing = append(r.m.Mean.Missing, "accuracy")
	}
	// Validation scores (validation_fraction): a mean only when every
	// evaluated site held some rows out.
	if nVal == n {
		va, vc := sumValAUC/float64(n), sumValAcc/float64(n)
		r.m.Mean.ValAUC, r.m.Mean.ValAccuracy = &va, &vc
	}
	// Deep sites also scored their update before the aggregation; the mean
	// is over every evaluated site only when all of them did.
	if nUpdate == n {
		u := sumUpdate / float64(n)
		r.m.Mean.UpdateAccuracy = &u
	}
	r.m.Participants = append([]string(nil), r.active...)
	return nil
}

// scoredInTraining collects the scores the training activities returned:
// every site still in the round trained, so each should have one.
func (r *round) scoredInTraining() fanOutResult[pipeline.EvaluateOutput] {
	res := fanOutResult[pipeline.EvaluateOutput]{OK: make(map[string]pipeline.EvaluateOutput, len(r.active))}
	for _, site := range r.active {
		if ev := r.scored[site]; ev != nil {
			res.OK[site] = *ev
		} else {
			res.Drops = append(res.Drops, pipeline.SiteDrop{
				Site: site, Phase: pipeline.PhaseEvaluate, Reason: pipeline.DropError,
				Error: "the training activity returned no evaluation",
			})
		}
	}
	return res
}

// evaluateFanOut asks every site still in the round to score the model it
// holds after the aggregation. A site the aggregation returned no model
// for is dropped first.
func (r *round) evaluateFanOut(ctx workflow.Context) fanOutResult[pipeline.EvaluateOutput] {
	models := siteRefs(r.carry.Models)
	states := siteRefs(r.carry.SiteStates)
	var noModel []pipeline.SiteDrop
	for _, site := range r.active {
		if models[site] == nil {
			noModel = append(noModel, pipeline.SiteDrop{
				Site: site, Phase: pipeline.PhaseEvaluate, Reason: pipeline.DropNoModel,
				Error: "the aggregation returned no model for this site",
			})
		}
	}
	r.drop(noModel)
	// A site that appends topological columns to its rows scores its
	// test rows with the same columns, from the descriptor it trained with.
	var descs map[string]*pipeline.ArtifactRef
	if r.spec.Hyperparameters.AugmentsFeatures(r.spec.Method) {
		descs = siteRefs(r.carry.Descriptors)
	}
	return fanOut[pipeline.EvaluateOutput](ctx, r.spec, fanOutRequest{
		Phase: pipeline.PhaseEvaluate, Protocol: r.protocol, Colocated: r.colocated, Activity: pipeline.ActivityEvaluate, Sites: r.active,
		Progress: r.progress,
		Input: func(site string) any {
			return pipeline.EvaluateInput{
				SiteCall:   r.siteCall(site, pipeline.PurposeTrain),
				Model:      *models[site],
				SiteState:  states[site],
				Descriptor: descs[site],
			}
		},
	})
}

// commit writes the manifest through the CommitRound server activity.
func (r *round) commit(ctx workflow.Context) (pipeline.ArtifactRef, error) {
	if r.m.Participants == nil {
		// A failed round: the sites still in it when it failed.
		r.m.Participants = append([]string{}, r.active...)
	}
	r.m.Clusters = r.carry.Clusters
	if r.m.Clusters == nil {
		r.m.Clusters = []pipeline.SiteCluster{}
	}
	for _, c := range r.m.Clusters {
		if c.Flagged {
			r.m.Flagged = append(r.m.Flagged, c.Site)
		}
	}
	r.m.Released = []pipeline.SiteReleases{}
	for _, s := range r.spec.Sites {
		if items := r.released[s.Name]; len(items) > 0 {
			r.m.Released = append(r.m.Released, pipeline.SiteReleases{Site: s.Name, Items: items})
		}
	}
	r.progress.step(pipeline.StepCommit)
	if p := r.m.Privacy; p != nil && len(r.lifetime) > 0 {
		// Beside the campaign's ε, each site's own account of its
		// lifetime ε after the round (a copy: the input is the campaign's).
		cp := *p
		cp.Sites = append([]pipeline.SitePrivacy(nil), p.Sites...)
		for i := range cp.Sites {
			cp.Sites[i].Lifetime = r.lifetime[cp.Sites[i].Site]
		}
		r.m.Privacy = &cp
	}
	var out pipeline.CommitRoundOutput
	actx := workflow.WithLocalActivityOptions(ctx, serverLocalActivityOptions())
	err := workflow.ExecuteLocalActivity(actx, pipeline.ActivityCommitRound, pipeline.CommitRoundInput{
		Bucket: r.spec.Bucket, Manifest: r.m,
	}).Get(ctx, &out)
	if err != nil {
		return pipeline.ArtifactRef{}, fmt.Errorf("round %d: commit manifest: %w", r.n, err)
	}
	return out.Manifest, nil
}

// retention records in the manifest what the campaign's retention policy
// deletes after this round commits (pipeline.PruningAt), and returns it;
// nil when nothing goes. Histories recorded before the policy existed take
// the DefaultVersion branch and prune nothing, as they ran; a campaign
// without a policy records no version marker at all.
func (r *round) retention(ctx workflow.Context) *pipeline.Pruning {
	p := pipeline.PruningAt(r.spec.KeepSiteModels, r.n)
	if p == nil {
		return nil
	}
	if workflow.GetVersion(ctx, versionRetention, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return nil
	}
	r.m.Pruned = p
	return p
}

// prune deletes what the committed manifest says the policy prunes. It
// runs after the commit, so a crash in between leaves the uploads in S3
// (verify accepts them there) and the retried workflow task deletes them.
// Nothing later reads them: only the pruned round's Aggregate did.
func (r *round) prune(ctx workflow.Context, p *pipeline.Pruning) error {
	if p == nil {
		return nil
	}
	var out pipeline.PruneRoundOutput
	actx := workflow.WithLocalActivityOptions(ctx, serverLocalActivityOptions())
	err := workflow.ExecuteLocalActivity(actx, pipeline.ActivityPruneRound, pipeline.PruneRoundInput{
		Bucket: r.spec.Bucket, Campaign: r.spec.Campaign, Pruning: *p,
	}).Get(ctx, &out)
	if err != nil {
		return fmt.Errorf("round %d: prune round %d's site models (committed; retention policy keep_site_models=%d): %w",
			r.n, p.Round, p.KeepRounds, err)
	}
	return nil
}

// siteRefs indexes a site list by site, for lookups only.
func siteRefs(list []pipeline.SiteArtifact) map[string]*pipeline.ArtifactRef {
	m := make(map[string]*pipeline.ArtifactRef, len(list))
	for i := range list {
		ref := list[i].Ref
		m[list[i].Site] = &ref
	}
	return m
}

// ordered turns a site-indexed map back into a list in spec order: the map
// is read by key along spec.Sites, never ranged over.
func (r *round) ordered(m map[string]*pipeline.ArtifactRef) []pipeline.SiteArtifact {
	var list []pipeline.SiteArtifact
	for _, s := range r.spec.Sites {
		if ref := m[s.Name]; ref != nil {
			list = append(list, pipeline.SiteArtifact{Site: s.Name, Ref: *ref})
		}
	}
	return list
}

func filter(list []string, keep func(string) bool) []string {
	var out []string
	for _, s := range list {
		if keep(s) {
			out = append(out, s)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// adoptModels records which model each site now holds after the round's
// aggregation (the plain or the secure one): models replaces the carried
// entries of its sites, and every active site's model is an output of
// the round.
func (r *round) adoptModels(models []pipeline.SiteArtifact) {
	held := siteRefs(r.carry.Models)
	for _, m := range models {
		ref := m.Ref
		held[m.Site] = &ref
	}
	r.carry.Models = r.ordered(held)
	for _, m := range r.carry.Models {
		if contains(r.active, m.Site) {
			r.output(pipeline.RoleSiteModel, m.Site, &m.Ref)
		}
	}
}
