package activities

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"go.temporal.io/sdk/temporal"

	"github.com/ptopofl/ptopofl/aggregation"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/secagg"
	"github.com/ptopofl/ptopofl/store"
)

// The server's side of secure aggregation (secure_aggregation "secagg+"):
// it plans each group's run once the sites have trained (SecAggPlan),
// forwards the encrypted shares (SecAggRoute), checks that the survivors
// can be unmasked (SecAggCheck), and unmasks each group's sum and
// aggregates from the sums (SecAggSum). It reads no site model: only
// public keys, row counts, descriptors, ciphertexts it cannot open,
// masked inputs and the shares revealed to unmask their sum.

// secaggRound is what the plan and the sum both derive from the call, the
// sites' counts and (pTopoFL) their descriptors and clustering: the
// method's configuration and the aggregation's input without models.
type secaggRound struct {
	cfg   method.Config
	input aggregation.RoundInput
}

// secaggRoundInput builds the aggregation input of a secure round, as
// Aggregate does from the same descriptors and clustering, without any
// model.
func (s *Server) secaggRoundInput(ctx context.Context, call pipeline.ServerCall, counts []pipeline.SiteCount, descriptors []pipeline.SiteArtifact, clustering *pipeline.ArtifactRef) (secaggRound, error) {
	cfg, err := method.Resolve(call.Method, call.Preset, call.Hyperparameters)
	if err != nil {
		return secaggRound{}, temporal.NewNonRetryableApplicationError(err.Error(), pipeline.ErrTypeInvalidSpec, nil)
	}
	if !cfg.SecAgg.On {
		return secaggRound{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("campaign %s does not run under secure_aggregation %q", call.Campaign, method.SecAggPlus), "BadRequest", nil)
	}
	if len(counts) == 0 {
		return secaggRound{}, temporal.NewNonRetryableApplicationError("no site trained", "NoUpdates", nil)
	}
	descs := make(map[string]pipeline.ArtifactRef, len(descriptors))
	for _, d := range descriptors {
		descs[d.Site] = d.Ref
	}
	sites := make([]aggregation.SiteResult, len(counts))
	trained := make([]pipeline.SiteArtifact, len(counts))
	for i, c := range counts {
		if cfg.Method == learn.PTopoFL {
			ref, ok := descs[c.Site]
			if !ok {
				return secaggRound{}, temporal.NewNonRetryableApplicationError(
					fmt.Sprintf("site %s trained but has no descriptor", c.Site), "MissingDescriptor", nil)
			}
			if sites[i], err = s.descriptorResult(ctx, ref); err != nil {
				return secaggRound{}, err
			}
			trained[i] = pipeline.SiteArtifact{Site: c.Site, Ref: ref}
		}
		sites[i].N = c.NumTrain
	}
	state := aggregation.ServerState{Round: call.Round - 1}
	server := cfg.Server
	if cfg.Method == learn.PTopoFL {
		rows, err := getClustering(ctx, s.store, clustering)
		if err != nil {
			return secaggRound{}, err
		}
		st, ok := pTopoFLState(rows, trained)
		if !ok {
			return secaggRound{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("the clustering %v does not cover every site that trained", clustering), "MissingClustering", nil)
		}
		state.Labels, state.Reference, state.DriftSum, state.DriftCount = st.Labels, st.Reference, st.DriftSum, st.DriftCount
		server.DriftThreshold = 0 // the clusters are ClusterSites', as in Aggregate
	}
	return secaggRound{cfg: cfg, input: aggregation.RoundInput{Method: cfg.Method, Round: call.Round, Sites: sites, State: state, Config: server}}, nil
}

// secaggGroupConfig is the configuration of a group of n members under
// cfg.
func secaggGroupConfig(cfg method.Config, n int) secagg.Config {
	return cfg.SecAgg.GroupConfig(n)
}

// SecAggPlan plans the round's secure aggregation once its sites have
// trained (aggregation.PlanSecure): the weight each site applies to its
// update, decided from the counts the sites reported and (pTopoFL) their
// descriptors, before any model exists outside its site; each group's run
// (secagg.NewGroup over the members formed before training, the
// configuration the campaign's parameters give its size) and its public
// record (artifact.RoundKeys.SecAggPublic); and for each member that
// trained its view (artifact.RoundKeys.SecAggView: its neighbours, their
// indices and the keys they advertised), which only it may read.
func (s *Server) SecAggPlan(ctx context.Context, in pipeline.SecAggPlanInput) (pipeline.SecAggPlanOutput, error) {
	if err := s.checkBucket(in.Bucket); err != nil {
		return pipeline.SecAggPlanOutput{}, err
	}
	rd, err := s.secaggRoundInput(ctx, in.ServerCall, in.Counts, in.Descriptors, in.Clustering)
	if err != nil {
		return pipeline.SecAggPlanOutput{}, err
	}
	groupOf := map[string]string{}
	for _, g := range in.Groups {
		for _, m := range g.Members {
			groupOf[m] = g.Name
		}
	}
	assign := make([]string, len(in.Counts))
	for i, c := range in.Counts {
		if assign[i] = groupOf[c.Site]; assign[i] == "" {
			return pipeline.SecAggPlanOutput{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("site %s trained but is in no group", c.Site), "BadRequest", nil)
		}
	}
	plan, err := aggregation.PlanSecure(rd.input, assign)
	if err != nil {
		return pipeline.SecAggPlanOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), "AggregationFailed", nil)
	}
	keys := make(map[string]secagg.PublicKeys, len(in.Advertised))
	for _, k := range in.Advertised {
		keys[k.Site] = k.Keys
	}
	var out pipeline.SecAggPlanOutput
	views := map[string]pipeline.ArtifactRef{}
	type viewJob struct {
		site, key string
		doc       pipeline.SecAggViewDoc
	}
	var jobs []viewJob // written at once after the loop
	for _, fg := range in.Groups {
		ctxG := secagg.Context{Campaign: in.Campaign, Attempt: in.Attempt, Round: in.Round, Group: fg.Name}
		g, err := secagg.NewGroup(ctxG, fg.Members, secaggGroupConfig(rd.cfg, len(fg.Members)))
		if err != nil {
			return pipeline.SecAggPlanOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), "BadRequest", nil)
		}
		doc := pipeline.SecAggPublicDoc{Context: ctxG, Config: g.Config(), Members: g.Members(), Keys: map[string]secagg.PublicKeys{}}
		for _, m := range fg.Members {
			if k, ok := keys[m]; ok {
				doc.Keys[m] = k
			}
		}
		pub, err := s.store.PutJSON(ctx, in.Keys().SecAggPublic(fg.Name), doc)
		if err != nil {
			return pipeline.SecAggPlanOutput{}, err
		}
		out.Groups = append(out.Groups, pipeline.SecAggGroupPlan{Name: fg.Name, Members: fg.Members, Config: g.Config(), Public: pub})
		for _, m := range fg.Members {
			if _, ok := keys[m]; !ok {
				continue // it did not train: no view
			}
			v, err := g.View(m)
			if err != nil {
				return pipeline.SecAggPlanOutput{}, err
			}
			vd := pipeline.SecAggViewDoc{View: v, Keys: map[string]secagg.PublicKeys{}}
			for _, n := range v.Neighbours {
				if k, ok := keys[n.Name]; ok {
					vd.Keys[n.Name] = k
				}
			}
			jobs = append(jobs, viewJob{site: m, key: in.Keys().SecAggView(fg.Name, m), doc: vd})
		}
	}
	refs := make([]pipeline.ArtifactRef, len(jobs))
	if err := inParallel(len(jobs), func(i int) (err error) {
		refs[i], err = s.store.PutJSON(ctx, jobs[i].key, jobs[i].doc)
		return err
	}); err != nil {
		return pipeline.SecAggPlanOutput{}, err
	}
	for i, j := range jobs {
		views[j.site] = refs[i]
	}
	for i, c := range in.Counts {
		sp := pipeline.SecAggSitePlan{Site: c.Site, Group: assign[i], View: views[c.Site], Weight: plan.Weight[i]}
		if plan.ControlWeight != nil {
			sp.ControlWeight = plan.ControlWeight[i]
		}
		out.Sites = append(out.Sites, sp)
	}
	return out, nil
}

// SecAggRoute is the server's part of the second stage: it reads each
// member's shares (artifact.RoundKeys.SecAggShares) and writes to each
// member that shared the ciphertexts addressed to it
// (artifact.RoundKeys.SecAggInbox), which only it may read and open.
func (s *Server) SecAggRoute(ctx context.Context, in pipeline.SecAggRouteInput) (pipeline.SecAggRouteOutput, error) {
	if err := s.checkBucket(in.Bucket); err != nil {
		return pipeline.SecAggRouteOutput{}, err
	}
	var out pipeline.SecAggRouteOutput
	for _, g := range in.Groups {
		inbox := map[string]map[string][]byte{}
		docs := make([]pipeline.SecAggSharesDoc, len(g.Shares))
		if err := inParallel(len(g.Shares), func(i int) error { return s.store.GetJSON(ctx, g.Shares[i].Ref, &docs[i]) }); err != nil {
			return pipeline.SecAggRouteOutput{}, err
		}
		for i, sh := range g.Shares {
			doc := docs[i]
			if doc.From != sh.Site {
				return pipeline.SecAggRouteOutput{}, temporal.NewNonRetryableApplicationError(
					fmt.Sprintf("group %s: %s holds the shares of %s", g.Name, sh.Ref.Key, doc.From), "BadRequest", nil)
			}
			for to, ct := range doc.To {
				if inbox[to] == nil {
					inbox[to] = map[string][]byte{}
				}
				inbox[to][sh.Site] = ct
			}
		}
		refs := make([]pipeline.ArtifactRef, len(g.Shares))
		if err := inParallel(len(g.Shares), func(i int) (err error) {
			sh := g.Shares[i]
			doc := pipeline.SecAggInboxDoc{To: sh.Site, From: inbox[sh.Site]}
			if doc.From == nil {
				doc.From = map[string][]byte{}
			}
			refs[i], err = s.store.PutJSON(ctx, in.Keys().SecAggInbox(g.Name, sh.Site), doc)
			return err
		}); err != nil {
			return pipeline.SecAggRouteOutput{}, err
		}
		for i, sh := range g.Shares { // the senders, in spec order
			out.Inboxes = append(out.Inboxes, pipeline.SiteArtifact{Site: sh.Site, Ref: refs[i]})
		}
	}
	return out, nil
}

// SecAggCheck says whether each group can be unmasked with the members
// that sent a masked input (secagg.Group.CheckUnmask): every secret to
// reconstruct has t share holders among them, and their neighbour graph
// is connected. Failure says which group cannot and why, for the round's
// quorum failure.
func (s *Server) SecAggCheck(ctx context.Context, in pipeline.SecAggCheckInput) (pipeline.SecAggCheckOutput, error) {
	if err := s.checkBucket(in.Bucket); err != nil {
		return pipeline.SecAggCheckOutput{}, err
	}
	var out pipeline.SecAggCheckOutput
	for _, cg := range in.Groups {
		g, err := secagg.NewGroup(secagg.Context{Campaign: in.Campaign, Attempt: in.Attempt, Round: in.Round, Group: cg.Plan.Name}, cg.Plan.Members, cg.Plan.Config)
		if err != nil {
			return pipeline.SecAggCheckOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), "BadRequest", nil)
		}
		err = g.CheckUnmask(cg.Shared, cg.Survivors)
		if errors.Is(err, secagg.ErrTooFew) {
			return pipeline.SecAggCheckOutput{Failure: err.Error()}, nil
		}
		if err != nil {
			return pipeline.SecAggCheckOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), "BadRequest", nil)
		}
		surv := map[string]bool{}
		for _, u := range cg.Survivors {
			surv[u] = true
		}
		shared := map[string]bool{}
		for _, u := range cg.Shared {
			shared[u] = true
		}
		for _, u := range cg.Survivors {
			l := pipeline.SecAggUnmaskList{Site: u, Survivors: []string{}}
			for _, v := range g.Neighbours(u) { // sorted
				switch {
				case surv[v]:
					l.Survivors = append(l.Survivors, v)
				case shared[v]:
					l.Dropped = append(l.Dropped, v)
				}
			}
			out.Unmask = append(out.Unmask, l)
		}
	}
	return out, nil
}

// SecAggSum is the server's last step: each group's sum of its survivors'
// weighted updates, unmasked from what is stored (pipeline.UnmaskSum over
// the public record, the masked inputs and the reveals) and written to
// artifact.RoundKeys.SecAggSum; then the models, from the sums and the
// start models it sent the sites (aggregation.CombineSecure), written as
// Aggregate writes them. A group that cannot be unmasked (too few
// reveals) fails with the reason as a non-retryable SecAggTooFew error.
func (s *Server) SecAggSum(ctx context.Context, in pipeline.SecAggSumInput) (pipeline.SecAggSumOutput, error) {
	if err := s.checkBucket(in.Bucket); err != nil {
		return pipeline.SecAggSumOutput{}, err
	}
	rd, err := s.secaggRoundInput(ctx, in.ServerCall, in.Counts, in.Descriptors, in.Clustering)
	if err != nil {
		return pipeline.SecAggSumOutput{}, err
	}
	index := make(map[string]int, len(in.Counts))
	assign := make([]string, len(in.Counts))
	for i, c := range in.Counts {
		index[c.Site] = i
	}
	for _, sp := range in.Sites {
		i, ok := index[sp.Site]
		if !ok {
			return pipeline.SecAggSumOutput{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("site %s is planned but did not train", sp.Site), "BadRequest", nil)
		}
		assign[i] = sp.Group
	}
	plan, err := aggregation.PlanSecure(rd.input, assign)
	if err != nil {
		return pipeline.SecAggSumOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), "AggregationFailed", nil)
	}
	for _, sp := range in.Sites {
		// The weights are a function of the counts and descriptors: the
		// plan made again must be the plan the sites applied.
		if i := index[sp.Site]; plan.Weight[i] != sp.Weight {
			return pipeline.SecAggSumOutput{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("site %s applied weight %v, the plan gives %v", sp.Site, sp.Weight, plan.Weight[i]), "AggregationFailed", nil)
		}
	}
	var out pipeline.SecAggSumOutput
	var sums []aggregation.SecureSum
	for _, g := range in.Groups {
		sum, err := s.groupSum(ctx, g)
		if err != nil {
			return pipeline.SecAggSumOutput{}, err
		}
		ref, err := putVectors(ctx, s.store, in.Keys().SecAggSum(g.Plan.Name), []store.VectorRecord{{
			Campaign: in.Campaign, Round: in.Round, Site: g.Plan.Name, Method: string(in.Method), Kind: pipeline.SecAggSumKind,
			Vectors: map[string][]float64{pipeline.SecAggSumVector: sum},
		}})
		if err != nil {
			return pipeline.SecAggSumOutput{}, err
		}
		out.Sums = append(out.Sums, pipeline.NamedArtifact{Name: g.Plan.Name, Ref: ref})
		ss := aggregation.SecureSum{Group: g.Plan.Name, Update: sum}
		if rd.cfg.Method == learn.SCAFFOLD {
			if len(sum)%2 != 0 {
				return pipeline.SecAggSumOutput{}, temporal.NewNonRetryableApplicationError(
					fmt.Sprintf("group %s: a SCAFFOLD sum of %d values is not a model and a control variate of one size", g.Plan.Name, len(sum)), "AggregationFailed", nil)
			}
			ss.Update, ss.Control = sum[:len(sum)/2], sum[len(sum)/2:]
		}
		for _, m := range g.Masked {
			i, ok := index[m.Site]
			if !ok {
				return pipeline.SecAggSumOutput{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("group %s: %s sent a masked input but did not train", g.Plan.Name, m.Site), "BadRequest", nil)
			}
			ss.Survivors = append(ss.Survivors, i)
		}
		sums = append(sums, ss)
	}
	if rd.cfg.Method == learn.SCAFFOLD {
		// CombineSecure adds the survivors' mean control update to the
		// server's control variate.
		server, err := getServerState(ctx, s.store, in.ServerState)
		if err != nil {
			return pipeline.SecAggSumOutput{}, err
		}
		rd.input.State.Global, rd.input.State.Control = server.Global, server.Control
	}
	starts := make(map[string]pipeline.ArtifactRef, len(in.Starts))
	for _, st := range in.Starts {
		starts[st.Site] = st.Ref
	}
	start := func(i int) ([]float64, error) {
		ref, ok := starts[in.Counts[i].Site]
		if !ok {
			return nil, nil
		}
		return s.store.GetModelParamsCached(ctx, ref)
	}
	res, err := aggregation.CombineSecure(rd.input, plan, sums, start)
	if err != nil {
		return pipeline.SecAggSumOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), "AggregationFailed", nil)
	}
	// Every site that trained is sent a model (those that dropped after
	// training too, as a site that misses a round's evaluation is).
	names := make([]string, len(in.Counts))
	for i, c := range in.Counts {
		names[i] = c.Site
	}
	agg, err := s.writeAggregate(ctx, in.ServerCall, in.Float32, names, rd.cfg.Method, res)
	if err != nil {
		return pipeline.SecAggSumOutput{}, err
	}
	// The weights a secure aggregation applies are the plan's, recorded
	// per group in the manifest; pTopoFL's softmax rule reports them as
	// its site weights too, as Aggregate does.
	out.AggregateOutput = agg
	return out, nil
}

// groupSum unmasks one group's sum from its stored transcript.
func (s *Server) groupSum(ctx context.Context, g pipeline.SecAggSumGroup) ([]float64, error) {
	var pub pipeline.SecAggPublicDoc
	if err := s.store.GetJSON(ctx, g.Plan.Public, &pub); err != nil {
		return nil, err
	}
	masked := make(map[string]pipeline.ArtifactRef, len(g.Masked))
	senders := make([]string, 0, len(g.Masked))
	for _, m := range g.Masked {
		masked[m.Site] = m.Ref
		senders = append(senders, m.Site)
	}
	load := func(site string) ([]uint64, error) {
		b, err := s.store.Get(ctx, masked[site])
		if err != nil {
			return nil, readError{err}
		}
		y, bits, err := secagg.DecodeMasked(b)
		if err != nil {
			return nil, err
		}
		if bits != pub.Config.ModulusBits {
			return nil, fmt.Errorf("%d-bit words, the group's modulus is 2^%d", bits, pub.Config.ModulusBits)
		}
		return y, nil
	}
	reveals := make([]secagg.Reveal, len(g.Reveals))
	if err := inParallel(len(g.Reveals), func(i int) error { return s.store.GetJSON(ctx, g.Reveals[i].Ref, &reveals[i]) }); err != nil {
		return nil, err
	}
	for i, r := range g.Reveals {
		if rv := reveals[i]; rv.From != r.Site {
			return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("group %s: %s holds %s's reveal", g.Plan.Name, r.Ref.Key, rv.From), "BadRequest", nil)
		}
	}
	sum, err := pipeline.UnmaskSum(pub, slices.Clone(g.Shared), senders, load, reveals)
	if errors.Is(err, secagg.ErrTooFew) {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), pipeline.ErrTypeSecAggTooFew, nil)
	}
	var re readError
	if errors.As(err, &re) {
		return nil, err // S3 briefly away: a retry mends it
	}
	if err != nil {
		// A transcript that does not unmask (a share that does not match
		// its commitment, a masked input of another length) is not mended
		// by a retry.
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("group %s: %v", g.Plan.Name, err), "AggregationFailed", nil)
	}
	return sum, nil
}

// secaggParallel is how many small objects the server reads or writes at
// once in a secure aggregation's steps (views, shares, inboxes, reveals:
// one of each per site).
const secaggParallel = 16

// inParallel runs fn(0), …, fn(n−1), secaggParallel at a time, and returns
// the error of the lowest index that failed (nil when none did). Each fn
// writes only its own index's results, so the outcome does not depend on
// the order they finish in.
func inParallel(n int, fn func(i int) error) error {
	errs := make([]error, n)
	sem := make(chan struct{}, secaggParallel)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			errs[i] = fn(i)
		}(i)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// readError is an error reading a stored object, which a retry may mend.
type readError struct{ err error }

func (e readError) Error() string { return e.err.Error() }
func (e readError) Unwrap() error { return e.err }
