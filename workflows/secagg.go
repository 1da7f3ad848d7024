package workflows

import (
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ptopofl/ptopofl/aggregation"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
)

// A round under secure aggregation (hyperparameters secure_aggregation
// "secagg+", issue 37). RoundWorkflow calls secureRound in place of train
// and aggregate; everything before (descriptors, clustering) and after
// (evaluation, commit) is the plain round's. Its steps:
//
//  1. the groups are formed from the sites still in the round and, under
//     pTopoFL's clusters, their clusters (aggregation.FormGroups), before
//     any site trains;
//  2. training: each site trains, keeps what it trained on its premises
//     and advertises its keys for its group's run (the first stage);
//  3. SecAggPlan: the weights, from the counts the sites reported and
//     their descriptors, each group's run and each member's view;
//  4. the second stage: each site encrypts shares of its secrets to its
//     neighbours; SecAggRoute forwards them;
//  5. the third stage: each site sends its weighted update, masked;
//     SecAggCheck says whether each group's survivors can be unmasked;
//  6. the fourth stage: each survivor reveals the shares the server needs;
//  7. SecAggSum: each group's sum and the models from the sums.
//
// Every stage is a fan-out with the round's deadline and retries: a site
// that fails or misses it leaves the round with the stage's phase. A group
// whose survivors cannot be unmasked (too few share holders left, a
// survivor graph that falls apart, too few reveals) fails the round under
// its quorum, with the reason, as a round below min_sites does. The
// manifest records, per group, its members, who advertised, shared,
// survived and revealed, the dropped, the threshold and the weights, and
// each site's model as released only inside its group's sum.

// secureGroup is one group's run as the round goes.
type secureGroup struct {
	formed     pipeline.SecAggGroupFormed
	plan       pipeline.SecAggGroupPlan
	advertised []string // spec order
	shared     []string
	survivors  []string
	revealed   []string
	shares     []pipeline.SiteArtifact
	masked     []pipeline.SiteArtifact
	reveals    []pipeline.SiteArtifact
}

// secure is the state of a round's secure aggregation.
type secure struct {
	all     []*secureGroup          // every group formed, for the manifest
	groups  []*secureGroup          // those still summing
	groupOf map[string]*secureGroup // site → its group (lookups only)
	plan    map[string]pipeline.SecAggSitePlan
	kept    map[string]*pipeline.SecAggAdvert
	inbox   map[string]pipeline.ArtifactRef
	lists   map[string]pipeline.SecAggUnmaskList
	starts  map[string]*pipeline.ArtifactRef
	counts  []pipeline.SiteCount
}

// secureRound runs steps 1 to 7.
func (r *round) secureRound(ctx workflow.Context) error {
	sa := &secure{groupOf: map[string]*secureGroup{}, plan: map[string]pipeline.SecAggSitePlan{},
		kept: map[string]*pipeline.SecAggAdvert{}, inbox: map[string]pipeline.ArtifactRef{}, lists: map[string]pipeline.SecAggUnmaskList{}}
	r.secure = sa
	if err := r.formGroups(sa); err != nil {
		return r.secureFail(ctx, pipeline.PhaseTrain, err.Error())
	}
	if err := r.secureTrain(ctx, sa); err != nil {
		return err
	}
	if err := r.securePlan(ctx, sa); err != nil {
		return err
	}
	if err := r.secureShare(ctx, sa); err != nil {
		return err
	}
	if err := r.secureMask(ctx, sa); err != nil {
		return err
	}
	if err := r.secureUnmask(ctx, sa); err != nil {
		return err
	}
	return r.secureSum(ctx, sa)
}

// formGroups is step 1: FedAvg-style methods and pTopoFL's softmax rule
// sum one group; pTopoFL's clusters one group each, the clusters below
// secagg_min_group folded into the global group.
func (r *round) formGroups(sa *secure) error {
	h := r.spec.Hyperparameters
	var labels []int
	if r.spec.Method == learn.PTopoFL && h.TopoAggregation != string(aggregation.SoftmaxAggregation) {
		cluster := make(map[string]int, len(r.carry.Clusters))
		for _, c := range r.carry.Clusters {
			cluster[c.Site] = c.Cluster
		}
		for _, site := range r.active {
			c, ok := cluster[site]
			if !ok {
				return fmt.Errorf("round %d: site %s has no cluster to form its secure-aggregation group by", r.n, site)
			}
			labels = append(labels, c)
		}
	}
	groupOf, names, err := aggregation.FormGroups(labels, len(r.active), h.SecAggMinGroupValue())
	if err != nil {
		return fmt.Errorf("round %d: secure aggregation: %v (secagg_min_group=%d)", r.n, err, h.SecAggMinGroupValue())
	}
	for _, name := range names {
		g := &secureGroup{formed: pipeline.SecAggGroupFormed{Name: name}}
		for i, site := range r.active {
			if groupOf[i] == name {
				g.formed.Members = append(g.formed.Members, site)
				sa.groupOf[site] = g
			}
		}
		sa.groups = append(sa.groups, g)
	}
	sa.all = sa.groups
	return nil
}

// secureTrain is step 2, the plain round's training with the site's group:
// the site keeps its model, control-variate update and state, which the
// manifest therefore does not list, and advertises its keys.
func (r *round) secureTrain(ctx workflow.Context, sa *secure) error {
	models := siteRefs(r.carry.Models)
	states := siteRefs(r.carry.SiteStates)
	descs := siteRefs(r.carry.Descriptors)
	sa.starts = models
	clusters := make(map[string]*pipeline.SiteCluster, len(r.carry.Clusters))
	for i := range r.carry.Clusters {
		clusters[r.carry.Clusters[i].Site] = &r.carry.Clusters[i]
	}
	res := fanOut[pipeline.TrainLocalOutput](ctx, r.spec, fanOutRequest{
		Phase: pipeline.PhaseTrain, Protocol: r.protocol, Colocated: r.colocated, Activity: pipeline.ActivityTrainLocal, Sites: r.active,
		Progress: r.progress,
		Input: func(site string) any {
			return pipeline.TrainLocalInput{
				SiteCall:    r.siteCall(site, pipeline.PurposeTrain),
				StartModel:  models[site],
				SiteState:   states[site],
				ServerState: r.carry.SharedState,
				Cluster:     clusters[site],
				Descriptor:  descs[site],
				Evaluate:    r.evaluatesInTraining(),
				SecAgg:      &pipeline.SecAggTrain{Group: sa.groupOf[site].formed.Name},
			}
		},
	})
	r.input(pipeline.RoleServerState, "", r.carry.ServerState)
	r.input(pipeline.RoleSharedState, "", r.carry.SharedState)
	for _, site := range r.active {
		r.seed(site, pipeline.PurposeTrain)
		r.input(pipeline.RoleStartModel, site, models[site])
		if s := states[site]; s != nil && !pipeline.IsKept(s) {
			r.input(pipeline.RoleSiteState, site, s)
		}
	}
	drops := res.Drops
	for _, site := range r.active {
		out, ok := res.OK[site]
		if ok && (out.SecAgg == nil || out.SecAgg.Group != sa.groupOf[site].formed.Name) {
			drops = append(drops, pipeline.SiteDrop{Site: site, Phase: pipeline.PhaseTrain, Reason: pipeline.DropError,
				Error: "the training returned no keys for its secure-aggregation group"})
			delete(res.OK, site)
		}
	}
	r.drop(drops)
	for _, site := range r.active {
		out := res.OK[site]
		r.release(site, out.Released)
		if out.SiteState != nil {
			states[site] = out.SiteState
		}
		r.nTrain[site] = out.NumTrain
		r.scored[site] = out.Evaluation
		r.updateScored[site] = out.UpdateEvaluation
		sa.kept[site] = out.SecAgg
		sa.counts = append(sa.counts, pipeline.SiteCount{Site: site, NumTrain: out.NumTrain})
		g := sa.groupOf[site]
		g.advertised = append(g.advertised, site)
	}
	r.carry.SiteStates = r.ordered(states)
	r.secureRecord(sa)
	return r.quorum(ctx, pipeline.PhaseTrain)
}

// securePlan is step 3. A group none of whose members trained is left out:
// it has nothing to sum.
func (r *round) securePlan(ctx workflow.Context, sa *secure) error {
	in := pipeline.SecAggPlanInput{
		ServerCall: r.serverCall(pipeline.PurposeAggregate),
		Counts:     sa.counts,
		Float32:    r.carry.External != nil && r.carry.External.Float32,
	}
	if r.spec.Method == learn.PTopoFL {
		in.Clustering, in.Descriptors = r.carry.Clustering, r.carry.Descriptors
	}
	var groups []*secureGroup
	for _, g := range sa.groups {
		if len(g.advertised) > 0 {
			groups = append(groups, g)
			in.Groups = append(in.Groups, g.formed)
		}
	}
	sa.groups = groups
	for _, site := range r.active {
		in.Advertised = append(in.Advertised, pipeline.SecAggSiteKeys{Site: site, Keys: sa.kept[site].Keys})
	}
	r.seed("", pipeline.PurposeAggregate)
	r.progress.step(pipeline.StepAggregate)
	var out pipeline.SecAggPlanOutput
	actx := workflow.WithLocalActivityOptions(ctx, serverLocalActivityOptions())
	if err := workflow.ExecuteLocalActivity(actx, pipeline.ActivitySecAggPlan, in).Get(ctx, &out); err != nil {
		return fmt.Errorf("round %d: plan the secure aggregation: %w", r.n, err)
	}
	for i, gp := range out.Groups {
		sa.groups[i].plan = gp
		r.m.Outputs = append(r.m.Outputs, pipeline.ArtifactRecord{Role: pipeline.RoleSecAggPublic, Name: gp.Name, Ref: gp.Public})
	}
	for _, sp := range out.Sites {
		sa.plan[sp.Site] = sp
	}
	return nil
}

// secureShare is step 4.
func (r *round) secureShare(ctx workflow.Context, sa *secure) error {
	res := fanOut[pipeline.SecAggShareOutput](ctx, r.spec, fanOutRequest{
		Phase: pipeline.PhaseSecAggShare, Protocol: r.protocol, Colocated: r.colocated, Activity: pipeline.ActivitySecAggShare, Sites: r.active,
		Progress: r.progress,
		Input: func(site string) any {
			sp := sa.plan[site]
			return pipeline.SecAggShareInput{SiteCall: r.siteCall(site, pipeline.PurposeAggregate), Group: sp.Group, View: sp.View}
		},
	})
	r.drop(res.Drops)
	for _, site := range r.active {
		out := res.OK[site]
		g := sa.groupOf[site]
		g.shared = append(g.shared, site)
		g.shares = append(g.shares, pipeline.SiteArtifact{Site: site, Ref: out.Shares})
		r.output(pipeline.RoleSecAggShares, site, &out.Shares)
	}
	r.secureRecord(sa)
	if err := r.quorum(ctx, pipeline.PhaseSecAggShare); err != nil {
		return err
	}
	in := pipeline.SecAggRouteInput{ServerCall: r.serverCall(pipeline.PurposeAggregate)}
	for _, g := range sa.groups {
		if len(g.shares) > 0 {
			in.Groups = append(in.Groups, pipeline.SecAggRouteGroup{Name: g.plan.Name, Shares: g.shares})
		}
	}
	var out pipeline.SecAggRouteOutput
	actx := workflow.WithLocalActivityOptions(ctx, serverLocalActivityOptions())
	if err := workflow.ExecuteLocalActivity(actx, pipeline.ActivitySecAggRoute, in).Get(ctx, &out); err != nil {
		return fmt.Errorf("round %d: forward the secure aggregation's shares: %w", r.n, err)
	}
	for _, ib := range out.Inboxes {
		sa.inbox[ib.Site] = ib.Ref
	}
	return nil
}

// secureMask is step 5.
func (r *round) secureMask(ctx workflow.Context, sa *secure) error {
	res := fanOut[pipeline.SecAggMaskOutput](ctx, r.spec, fanOutRequest{
		Phase: pipeline.PhaseSecAggMask, Protocol: r.protocol, Colocated: r.colocated, Activity: pipeline.ActivitySecAggMask, Sites: r.active,
		Progress: r.progress,
		Input: func(site string) any {
			sp, kept := sa.plan[site], sa.kept[site]
			return pipeline.SecAggMaskInput{
				SiteCall: r.siteCall(site, pipeline.PurposeAggregate), Group: sp.Group, View: sp.View, Inbox: sa.inbox[site],
				Weight: sp.Weight, ControlWeight: sp.ControlWeight,
				StartModel: sa.starts[site], Model: kept.Model, Control: kept.Control,
			}
		},
	})
	r.drop(res.Drops)
	for _, site := range r.active {
		out := res.OK[site]
		g := sa.groupOf[site]
		g.survivors = append(g.survivors, site)
		g.masked = append(g.masked, pipeline.SiteArtifact{Site: site, Ref: out.Masked})
		r.output(pipeline.RoleSecAggMasked, site, &out.Masked)
		r.release(site, out.Released)
	}
	r.secureRecord(sa)
	if err := r.quorum(ctx, pipeline.PhaseSecAggMask); err != nil {
		return err
	}
	in := pipeline.SecAggCheckInput{ServerCall: r.serverCall(pipeline.PurposeAggregate)}
	var groups []*secureGroup
	for _, g := range sa.groups {
		if len(g.survivors) == 0 {
			// Every member that shared dropped: no sum to unmask, and
			// every one of them is recorded with its reason.
			continue
		}
		groups = append(groups, g)
		in.Groups = append(in.Groups, pipeline.SecAggCheckGroup{Plan: g.plan, Shared: g.shared, Survivors: g.survivors})
	}
	sa.groups = groups
	var out pipeline.SecAggCheckOutput
	actx := workflow.WithLocalActivityOptions(ctx, serverLocalActivityOptions())
	if err := workflow.ExecuteLocalActivity(actx, pipeline.ActivitySecAggCheck, in).Get(ctx, &out); err != nil {
		return fmt.Errorf("round %d: check the secure aggregation's survivors: %w", r.n, err)
	}
	if out.Failure != "" {
		return r.secureFail(ctx, pipeline.PhaseSecAggMask, out.Failure)
	}
	for _, u := range out.Unmask {
		sa.lists[u.Site] = u
	}
	return nil
}

// secureUnmask is step 6. A survivor that fails to reveal still counts in
// its group's sum (its masked input arrived); it leaves the round's
// evaluation, and the sum is unmasked without its shares as long as every
// secret keeps t of them.
func (r *round) secureUnmask(ctx workflow.Context, sa *secure) error {
	res := fanOut[pipeline.SecAggUnmaskOutput](ctx, r.spec, fanOutRequest{
		Phase: pipeline.PhaseSecAggUnmask, Protocol: r.protocol, Colocated: r.colocated, Activity: pipeline.ActivitySecAggUnmask, Sites: r.active,
		Progress: r.progress,
		Input: func(site string) any {
			sp, l := sa.plan[site], sa.lists[site]
			return pipeline.SecAggUnmaskInput{
				SiteCall: r.siteCall(site, pipeline.PurposeAggregate), Group: sp.Group, View: sp.View, Inbox: sa.inbox[site],
				Survivors: l.Survivors, Dropped: l.Dropped,
			}
		},
	})
	r.drop(res.Drops)
	for _, site := range r.active {
		out := res.OK[site]
		g := sa.groupOf[site]
		g.revealed = append(g.revealed, site)
		g.reveals = append(g.reveals, pipeline.SiteArtifact{Site: site, Ref: out.Reveal})
		r.output(pipeline.RoleSecAggReveal, site, &out.Reveal)
	}
	r.secureRecord(sa)
	return r.quorum(ctx, pipeline.PhaseSecAggUnmask)
}

// secureSum is step 7: the sums and the models, taken as the plain
// round's aggregation is.
func (r *round) secureSum(ctx workflow.Context, sa *secure) error {
	in := pipeline.SecAggSumInput{
		ServerCall:  r.serverCall(pipeline.PurposeAggregate),
		Counts:      sa.counts,
		ServerState: r.carry.ServerState,
		Float32:     r.carry.External != nil && r.carry.External.Float32,
	}
	if r.spec.Method == learn.PTopoFL {
		in.Clustering, in.Descriptors = r.carry.Clustering, r.carry.Descriptors
	}
	for _, c := range sa.counts {
		in.Sites = append(in.Sites, sa.plan[c.Site])
		if s := sa.starts[c.Site]; s != nil {
			in.Starts = append(in.Starts, pipeline.SiteArtifact{Site: c.Site, Ref: *s})
		}
	}
	for _, g := range sa.groups {
		in.Groups = append(in.Groups, pipeline.SecAggSumGroup{Plan: g.plan, Shared: g.shared, Masked: g.masked, Reveals: g.reveals})
	}
	var out pipeline.SecAggSumOutput
	actx := workflow.WithLocalActivityOptions(ctx, serverLocalActivityOptions())
	err := workflow.ExecuteLocalActivity(actx, pipeline.ActivitySecAggSum, in).Get(ctx, &out)
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Type() == pipeline.ErrTypeSecAggTooFew {
		return r.secureFail(ctx, pipeline.PhaseSecAggUnmask, appErr.Message())
	}
	if err != nil {
		return fmt.Errorf("round %d: aggregate from the secure sums: %w", r.n, err)
	}
	for _, s := range out.Sums {
		r.m.Outputs = append(r.m.Outputs, pipeline.ArtifactRecord{Role: pipeline.RoleSecAggSum, Name: s.Name, Ref: s.Ref})
	}
	// From here as the plain round's aggregate step.
	for _, a := range out.Aggregates {
		r.m.Outputs = append(r.m.Outputs, pipeline.ArtifactRecord{Role: pipeline.RoleAggregate, Name: a.Name, Ref: a.Ref})
	}
	r.output(pipeline.RoleServerState, "", out.ServerState)
	r.output(pipeline.RoleSharedState, "", out.SharedState)
	if out.SharedState != nil {
		r.carry.SharedState = out.SharedState
	}
	r.m.SiteWeights = out.SiteWeights
	if out.ServerState != nil {
		r.carry.ServerState = out.ServerState
	}
	r.adoptModels(out.Models)
	return nil
}

// secureRecord writes the manifest's record of the round's groups.
func (r *round) secureRecord(sa *secure) {
	rec := &pipeline.RoundSecAgg{Protocol: method.SecAggPlus, Groups: []pipeline.SecAggGroupRecord{}}
	nonNil := func(l []string) []string {
		if l == nil {
			return []string{}
		}
		return l
	}
	for _, g := range sa.all {
		c := g.plan.Config // zero before the plan
		gr := pipeline.SecAggGroupRecord{
			Name: g.formed.Name, Members: g.formed.Members, Advertised: nonNil(g.advertised), Shared: nonNil(g.shared),
			Survivors: nonNil(g.survivors), Revealed: nonNil(g.revealed), Dropped: []string{},
			Shares: c.Shares, Threshold: c.Threshold, ModulusBits: c.ModulusBits, Clip: c.Clip, QuantBits: c.QuantBits,
			Weights: []pipeline.SiteWeight{},
		}
		for _, m := range g.formed.Members {
			if !contains(g.survivors, m) {
				gr.Dropped = append(gr.Dropped, m)
			}
		}
		for _, m := range g.survivors {
			gr.Weights = append(gr.Weights, pipeline.SiteWeight{Site: m, Weight: sa.plan[m].Weight})
		}
		rec.Groups = append(rec.Groups, gr)
	}
	r.m.SecAgg = rec
}

// secureFail fails the round, after committing its manifest, as a round
// below its quorum does (round.quorum): a secure aggregation that cannot
// go on, for reason, after phase.
func (r *round) secureFail(ctx workflow.Context, phase, reason string) error {
	reason = fmt.Sprintf("round %d, %s phase: secure aggregation cannot go on: %s", r.n, phase, reason)
	if r.secure != nil {
		r.secureRecord(r.secure)
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
