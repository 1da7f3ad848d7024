package activities

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/ptopofl/ptopofl/aggregation"
	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/store"
	"github.com/ptopofl/ptopofl/tda"
)

// Server holds the server activities: those of the rounds, which read only
// what sites sent (descriptors, models, control variates), never site
// data, and those of SweepWorkflow, which read and write only specs,
// round manifests and the sweep's tables.
type Server struct {
	store       *store.Store
	codeVersion string
}

// NewServer returns the server activities writing to st.
func NewServer(st *store.Store) *Server { return &Server{store: st} }

// WithCodeVersion sets the code version CommitRound records in every
// manifest it writes: the version of the binary that commits the round
// (internal/workers.CodeVersion), whatever the spec says.
func (s *Server) WithCodeVersion(v string) *Server {
	s.codeVersion = v
	return s
}

// Register registers the server activities under their pipeline names.
// Every one heartbeats while it runs (heartbeating), so that an attempt
// lost with its worker (a server killed mid-activity) is noticed within
// the heartbeat timeout the workflows give server activities, not after
// the attempt's start-to-close.
func (s *Server) Register(r interface {
	RegisterActivityWithOptions(any, activity.RegisterOptions)
}) {
	r.RegisterActivityWithOptions(heartbeating(timedActivity(s.ClusterSites)), activity.RegisterOptions{Name: pipeline.ActivityClusterSites})
	r.RegisterActivityWithOptions(heartbeating(timedActivity(s.Aggregate)), activity.RegisterOptions{Name: pipeline.ActivityAggregate})
	r.RegisterActivityWithOptions(heartbeating(timedActivity(s.CommitRound)), activity.RegisterOptions{Name: pipeline.ActivityCommitRound})
	r.RegisterActivityWithOptions(heartbeating(timedActivity(s.AdoptInitialModel)), activity.RegisterOptions{Name: pipeline.ActivityAdoptInitialModel})
	r.RegisterActivityWithOptions(heartbeating(timedActivity(s.Reissue)), activity.RegisterOptions{Name: pipeline.ActivityReissue})
	r.RegisterActivityWithOptions(heartbeating(s.PruneRound), activity.RegisterOptions{Name: pipeline.ActivityPruneRound})
	r.RegisterActivityWithOptions(heartbeating(timedActivity(s.SecAggPlan)), activity.RegisterOptions{Name: pipeline.ActivitySecAggPlan})
	r.RegisterActivityWithOptions(heartbeating(timedActivity(s.SecAggRoute)), activity.RegisterOptions{Name: pipeline.ActivitySecAggRoute})
	r.RegisterActivityWithOptions(heartbeating(timedActivity(s.SecAggCheck)), activity.RegisterOptions{Name: pipeline.ActivitySecAggCheck})
	r.RegisterActivityWithOptions(heartbeating(timedActivity(s.SecAggSum)), activity.RegisterOptions{Name: pipeline.ActivitySecAggSum})
	r.RegisterActivityWithOptions(heartbeating(s.ChargePrivacy), activity.RegisterOptions{Name: pipeline.ActivityChargePrivacy})
	r.RegisterActivityWithOptions(heartbeating(s.RecordSweep), activity.RegisterOptions{Name: pipeline.ActivityRecordSweep})
	r.RegisterActivityWithOptions(heartbeating(s.BuildSweepResults), activity.RegisterOptions{Name: pipeline.ActivityBuildSweepResults})
	r.RegisterActivityWithOptions(heartbeating(s.SearchNext), activity.RegisterOptions{Name: pipeline.ActivitySearchNext})
	r.RegisterActivityWithOptions(heartbeating(s.RecordSearch), activity.RegisterOptions{Name: pipeline.ActivityRecordSearch})
	r.RegisterActivityWithOptions(heartbeating(s.SaveCampaignState), activity.RegisterOptions{Name: pipeline.ActivitySaveState})
	r.RegisterActivityWithOptions(heartbeating(s.LoadCampaignState), activity.RegisterOptions{Name: pipeline.ActivityLoadState})
	r.RegisterActivityWithOptions(RoundBoundary, activity.RegisterOptions{Name: pipeline.ActivityRoundBoundary})
}

// RoundBoundary is pipeline.ActivityRoundBoundary: it does nothing, and
// completes at once. A campaign that runs its rounds as stages of its own
// workflow schedules it before each round so that the workflow task ends
// there (a timer would too, but the server fires timers about a second
// late).
func RoundBoundary(context.Context) error { return nil }

func (s *Server) checkBucket(bucket string) error {
	if bucket != "" && bucket != s.store.Bucket() {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("campaign bucket %q, but this worker's store is bucket %q", bucket, s.store.Bucket()),
			pipeline.ErrTypeInvalidSpec, nil)
	}
	return nil
}

func serverConfig(call pipeline.ServerCall) (aggregation.Config, learn.Method, error) {
	cfg, err := method.Resolve(call.Method, call.Preset, call.Hyperparameters)
	if err != nil {
		return aggregation.Config{}, "", temporal.NewNonRetryableApplicationError(err.Error(), pipeline.ErrTypeInvalidSpec, nil)
	}
	return cfg.Server, cfg.Method, nil
}

// descriptorResult reads a site's descriptor artifact into the fields of an
// aggregation.SiteResult that pTopoFL reads.
func (s *Server) descriptorResult(ctx context.Context, ref pipeline.ArtifactRef) (aggregation.SiteResult, error) {
	b, err := s.store.GetCached(ctx, ref)
	if err != nil {
		return aggregation.SiteResult{}, err
	}
	d, err := store.DecodeDescriptor(b)
	if err != nil {
		return aggregation.SiteResult{}, fmt.Errorf("decode %s: %w", ref.Key, err)
	}
	conv := func(ps []store.Pair) []tda.Pair {
		out := make([]tda.Pair, len(ps))
		for i, p := range ps {
			out[i] = tda.Pair{Birth: p.Birth, Death: p.Death}
		}
		return out
	}
	return aggregation.SiteResult{Descriptor: d.Descriptor, H0: conv(d.H0), H1: conv(d.H1)}, nil
}

// ClusterSites runs pTopoFL's server-side topology step
// (aggregation.TopologyStep) for the sites with descriptors: clustering (in
// the first round, or drift re-clustering later), trust, anomaly flags and
// drift. Aggregate runs the same step with the clusters this records, so
// the clusters and trust it reports are exactly those the aggregation then
// uses. The clustering artifact carries
// pTopoFL's per-site server state (label, reference descriptor, drift sum)
// to the next clustering and to Aggregate.
func (s *Server) ClusterSites(ctx context.Context, in pipeline.ClusterSitesInput) (pipeline.ClusterSitesOutput, error) {
	if err := s.checkBucket(in.Bucket); err != nil {
		return pipeline.ClusterSitesOutput{}, err
	}
	cfg, _, err := serverConfig(in.ServerCall)
	if err != nil {
		return pipeline.ClusterSitesOutput{}, err
	}
	if len(in.Descriptors) == 0 {
		return pipeline.ClusterSitesOutput{}, temporal.NewNonRetryableApplicationError("no descriptors", "NoDescriptors", nil)
	}
	// Errors say what went wrong and nothing more: the round workflow adds
	// "round N: cluster sites:", and a message that repeats it reads twice.
	sites := make([]aggregation.SiteResult, len(in.Descriptors))
	for i, d := range in.Descriptors {
		r, err := s.descriptorResult(ctx, d.Ref)
		if err != nil {
			return pipeline.ClusterSitesOutput{}, err
		}
		sites[i] = r
	}
	prev, err := getClustering(ctx, s.store, in.Previous)
	if err != nil {
		return pipeline.ClusterSitesOutput{}, err
	}
	state, ok := pTopoFLState(prev, in.Descriptors)
	if !ok {
		// A site without a previous clustering (the first round, or a
		// site that joined later): cluster every site afresh.
		state = aggregation.ServerState{}
	}
	// Only a descriptor computed this round is a drift measurement (Eq. 9
	// averages over measurements); the others are last round's, sent again.
	measured := make([]bool, len(in.Descriptors))
	for i, d := range in.Descriptors {
		measured[i] = slices.Contains(in.Fresh, d.Site)
	}
	out, err := aggregation.TopologyStep(aggregation.TopologyInput{Round: in.Round, Sites: sites, State: state, Config: cfg, Measured: measured})
	if err != nil {
		return pipeline.ClusterSitesOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), "ClusteringFailed", nil)
	}
	rows := make([]siteClustering, len(in.Descriptors))
	res := pipeline.ClusterSitesOutput{Sites: make([]pipeline.SiteCluster, len(in.Descriptors))}
	for i, d := range in.Descriptors {
		rows[i] = siteClustering{
			Site: d.Site, Label: out.Labels[i], Trust: out.Trust[i], ZScore: out.ZScores[i], Flagged: out.Flagged[i],
			Drift: out.Drift[i], Reference: out.State.Reference[i], DriftSum: out.State.DriftSum[i], DriftCount: out.State.DriftCount[i],
		}
		res.Sites[i] = pipeline.SiteCluster{Site: d.Site, Cluster: out.Labels[i], Trust: out.Trust[i], Flagged: out.Flagged[i], Drift: out.Drift[i],
			Reassigned: slices.Contains(out.Reassigned, i), Reclustered: slices.Contains(out.Reclustered, i)}
	}
	ref, err := putVectors(ctx, s.store, in.Keys().Clustering(), clusteringRecords(in.ServerCall, rows))
	if err != nil {
		return pipeline.ClusterSitesOutput{}, err
	}
	res.Clustering = ref
	// A site moved by drift is re-checked next round with fresh descriptors.
	res.RecheckDescriptors = len(out.Reclustered) > 0
	return res, nil
}

// pTopoFLState assembles aggregation's per-site pTopoFL state for sites,
// in their order, from a clustering artifact; ok is false unless every
// site has a row.
func pTopoFLState(rows map[string]siteClustering, sites []pipeline.SiteArtifact) (aggregation.ServerState, bool) {
	var st aggregation.ServerState
	if len(rows) == 0 {
		return st, false
	}
	for _, d := range sites {
		r, found := rows[d.Site]
		if !found || r.Reference == nil {
			return aggregation.ServerState{}, false
		}
		st.Labels = append(st.Labels, r.Label)
		st.Reference = append(st.Reference, r.Reference)
		st.DriftSum = append(st.DriftSum, r.DriftSum)
		st.DriftCount = append(st.DriftCount, r.DriftCount)
	}
	if slices.Contains(st.DriftCount, 0) {
		// A clustering written before counts were recorded: TopologyStep
		// falls back to the divisor the old code used.
		st.DriftCount = nil
	}
	return st, true
}

// Aggregate runs the method's server step (aggregation.AggregateRound) on
// the round's local models and writes what each site receives, at a key
// the site may read (artifact.SiteReadPatterns): one "global" model, or a
// model under each site's name — its cluster's blended model under
// pTopoFL, its own under local training. It writes the server's state,
// which only the server reads, and the part of it the sites read
// (SCAFFOLD's control variate) apart, in the shared state.
//
// For pTopoFL the clusters come from the round's clustering artifact and
// are not changed here (drift re-clustering is ClusterSites' job), so the
// manifest's clusters are the ones the models were built from.
func (s *Server) Aggregate(ctx context.Context, in pipeline.AggregateInput) (pipeline.AggregateOutput, error) {
	if err := s.checkBucket(in.Bucket); err != nil {
		return pipeline.AggregateOutput{}, err
	}
	cfg, method, err := serverConfig(in.ServerCall)
	if err != nil {
		return pipeline.AggregateOutput{}, err
	}
	// Errors say what went wrong and nothing more: the round workflow adds
	// "round N: aggregate:", and a message that repeats it reads twice. A
	// non-retryable error carries its cause's text in its message, not also
	// as a cause, which Temporal would print again after it.
	if len(in.Updates) == 0 {
		return pipeline.AggregateOutput{}, temporal.NewNonRetryableApplicationError("no site updates", "NoUpdates", nil)
	}
	descs := make(map[string]pipeline.ArtifactRef, len(in.Descriptors))
	for _, d := range in.Descriptors {
		descs[d.Site] = d.Ref
	}
	// load reads site i's model and control variate. The methods that
	// aggregation.Streams names read them one at a time during the
	// aggregation (a deep model is tens of MB as float64); the others
	// read them all first. A read error stays retryable (loadErr).
	var loadErr error
	load := func(i int) (params, control []float64, err error) {
		defer func() { loadErr = err }()
		u := in.Updates[i]
		if params, err = s.store.GetModelParamsCached(ctx, u.Model); err != nil {
			return nil, nil, err
		}
		if u.Control != nil {
			recs, err := getVectors(ctx, s.store, *u.Control, kindControl)
			if err != nil {
				return nil, nil, err
			}
			if len(recs) != 1 || recs[0].Vectors[vecControl] == nil {
				return nil, nil, fmt.Errorf("%s: no control variate", u.Control.Key)
			}
			control = recs[0].Vectors[vecControl]
		}
		return params, control, nil
	}
	stream := aggregation.Streams(method)
	sites := make([]aggregation.SiteResult, len(in.Updates))
	updated := make([]pipeline.SiteArtifact, len(in.Updates))
	for i, u := range in.Updates {
		var r aggregation.SiteResult
		if method == learn.PTopoFL {
			ref, ok := descs[u.Site]
			if !ok {
				return pipeline.AggregateOutput{}, temporal.NewNonRetryableApplicationError(
					fmt.Sprintf("site %s trained but has no descriptor", u.Site), "MissingDescriptor", nil)
			}
			if r, err = s.descriptorResult(ctx, ref); err != nil {
				return pipeline.AggregateOutput{}, err
			}
		}
		if !stream {
			if r.Params, r.Control, err = load(i); err != nil {
				return pipeline.AggregateOutput{}, err
			}
		}
		r.N = u.NumTrain
		sites[i] = r
		updated[i] = pipeline.SiteArtifact{Site: u.Site, Ref: u.Model}
	}
	server, err := getServerState(ctx, s.store, in.ServerState)
	if err != nil {
		return pipeline.AggregateOutput{}, err
	}
	state := aggregation.ServerState{Round: in.Round - 1, Global: server.Global, Control: server.Control}
	if method == learn.FoolsGold && in.ServerState != nil {
		state.FoolsGoldHistory = foolsGoldHistory(server, in.Updates)
	}
	if method == learn.PTopoFL {
		rows, err := getClustering(ctx, s.store, in.Clustering)
		if err != nil {
			return pipeline.AggregateOutput{}, err
		}
		st, ok := pTopoFLState(rows, updated)
		if !ok {
			return pipeline.AggregateOutput{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("the clustering %v does not cover every site that trained", in.Clustering), "MissingClustering", nil)
		}
		state.Labels, state.Reference, state.DriftSum, state.DriftCount = st.Labels, st.Reference, st.DriftSum, st.DriftCount
		cfg.DriftThreshold = 0
	}
	round := aggregation.RoundInput{Method: method, Round: in.Round, Sites: sites, State: state, Config: cfg}
	var out aggregation.RoundOutput
	if stream {
		out, err = aggregation.AggregateStream(round, load)
	} else {
		out, err = aggregation.AggregateRound(round)
	}
	if loadErr != nil {
		return pipeline.AggregateOutput{}, loadErr
	}
	if err != nil {
		return pipeline.AggregateOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), "AggregationFailed", nil)
	}

	names := make([]string, len(in.Updates))
	for i, u := range in.Updates {
		names[i] = u.Site
	}
	return s.writeAggregate(ctx, in.ServerCall, in.Float32, names, method, out)
}

// writeAggregate writes what an aggregation out of the updates of sites
// (in that order) sends back and keeps, at keys each site may read
// (artifact.SiteReadPatterns): one "global" model, or a model under each
// site's name — its cluster's blended model under pTopoFL, its own under
// local training; the server's state, which only the server reads, and
// the part of it the sites read (SCAFFOLD's control variate) apart, in
// the shared state. Aggregate and SecAggSum end with it.
func (s *Server) writeAggregate(ctx context.Context, call pipeline.ServerCall, f32 bool, sites []string, method learn.Method, out aggregation.RoundOutput) (pipeline.AggregateOutput, error) {
	var err error
	// put writes params as the aggregate for target, recording label as
	// the model's name in the record.
	put := func(target, label string, params []float64) (pipeline.ArtifactRef, error) {
		ref, err := s.store.PutModelCached(ctx, call.Keys().Aggregate(target), store.ModelRecord{
			Campaign: call.Campaign, Round: call.Round, Site: label, Method: string(call.Method), Kind: store.KindAggregate, Params: params,
			// A deep model's aggregate is stored, and so sent, as float32.
			Float32: call.Hyperparameters.IsDeep() || f32,
		})
		return ref, err
	}
	res := pipeline.AggregateOutput{}
	switch method {
	case learn.PTopoFL:
		// Each site gets its cluster's blended model θ*_c under its own
		// name, never another cluster's: with the public β and cluster
		// sizes, two blended models give back each cluster's own model
		// (Eq. 7), a site's own model when it is alone in its cluster. A
		// cluster's model is uploaded once, at its first member's key, and
		// copied inside the bucket to the other members' keys: byte for
		// byte the same object (its record is named "cluster-<c>"), so the
		// manifest lists one sha256 per cluster.
		first := make(map[int]pipeline.ArtifactRef)
		for i, site := range sites {
			c := out.Labels[i]
			src, copied := first[c]
			var ref pipeline.ArtifactRef
			if copied {
				ref, err = s.store.CopyCached(ctx, src, call.Keys().Aggregate(site))
			} else {
				ref, err = put(site, fmt.Sprintf("%s%d", artifact.ClusterTargetPrefix, c), out.ClusterModels[c])
				first[c] = ref
			}
			if err != nil {
				return pipeline.AggregateOutput{}, err
			}
			res.Aggregates = append(res.Aggregates, pipeline.NamedArtifact{Name: site, Ref: ref})
			res.Models = append(res.Models, pipeline.SiteArtifact{Site: site, Ref: ref})
		}
	case learn.LocalOnly:
		for i, site := range sites {
			ref, err := put(site, site, out.Models[i])
			if err != nil {
				return pipeline.AggregateOutput{}, err
			}
			res.Aggregates = append(res.Aggregates, pipeline.NamedArtifact{Name: site, Ref: ref})
			res.Models = append(res.Models, pipeline.SiteArtifact{Site: site, Ref: ref})
		}
	default:
		ref, err := put(artifact.GlobalTarget, artifact.GlobalTarget, out.Models[0])
		if err != nil {
			return pipeline.AggregateOutput{}, err
		}
		res.Aggregates = append(res.Aggregates, pipeline.NamedArtifact{Name: artifact.GlobalTarget, Ref: ref})
		for _, site := range sites {
			res.Models = append(res.Models, pipeline.SiteArtifact{Site: site, Ref: ref})
		}
	}
	for i, site := range sites {
		if i < len(out.Flagged) && out.Flagged[i] && method != learn.PTopoFL {
			res.Flagged = append(res.Flagged, site)
		}
		if out.SiteWeights != nil {
			res.SiteWeights = append(res.SiteWeights, pipeline.SiteWeight{Site: site, Weight: out.SiteWeights[i]})
		}
	}
	// The server state is written only when the next round needs it:
	// SCAFFOLD's control variate c (with the global model it goes with),
	// the global model that norm clipping and FoolsGold measure updates
	// from, and FoolsGold's per-site update histories (by site name, so a
	// site that misses a round keeps its history). For the other methods
	// the global model is already the "global" aggregate above, and no
	// aggregation reads it back. Only the server reads it: what the sites
	// read of it, SCAFFOLD's c, is written again in the shared state, with
	// nothing of any one site.
	if out.State.Control != nil || method == learn.NormClip || method == learn.FoolsGold {
		v := map[string][]float64{}
		if out.State.Global != nil {
			v[vecGlobal] = out.State.Global
		}
		if out.State.Control != nil {
			v[vecControl] = out.State.Control
		}
		for i, h := range out.State.FoolsGoldHistory {
			v[vecFoolsGold+sites[i]] = h
		}
		ref, err := putVectors(ctx, s.store, call.Keys().ServerState(), []store.VectorRecord{{
			Campaign: call.Campaign, Round: call.Round, Method: string(call.Method), Kind: kindServerState, Vectors: v,
		}})
		if err != nil {
			return pipeline.AggregateOutput{}, err
		}
		res.ServerState = &ref
	}
	if out.State.Control != nil && sitesReadServerState(method) {
		ref, err := putSharedState(ctx, s.store, call.Keys().SharedState(), call, out.State.Control)
		if err != nil {
			return pipeline.AggregateOutput{}, err
		}
		res.SharedState = &ref
	}
	return res, nil
}

// sitesReadServerState is method.SitesReadServerState, for functions whose
// method variable hides the package.
func sitesReadServerState(m learn.Method) bool { return method.SitesReadServerState(m) }

// putSharedState writes the part of the server state every site reads,
// SCAFFOLD's control variate c, at key: a server-state record (the kind
// sites have always read) holding that vector alone.
func putSharedState(ctx context.Context, st *store.Store, key string, call pipeline.ServerCall, control []float64) (pipeline.ArtifactRef, error) {
	return putVectors(ctx, st, key, []store.VectorRecord{{
		Campaign: call.Campaign, Round: call.Round, Method: string(call.Method), Kind: kindServerState,
		Vectors: map[string][]float64{vecControl: control},
	}})
}

// CommitRound writes the round's manifest, as canonical JSON, to the
// manifest key of its round and attempt (artifact.RoundKeys), with this
// binary's code version. A retry with the same manifest is a no-op, and so
// is one that differs only in the code version (the round was committed by
// a binary replaced before the workflow recorded it); any other manifest
// at a committed key is refused, so committed history never changes.
func (s *Server) CommitRound(ctx context.Context, in pipeline.CommitRoundInput) (pipeline.CommitRoundOutput, error) {
	if err := s.checkBucket(in.Bucket); err != nil {
		return pipeline.CommitRoundOutput{}, err
	}
	m := in.Manifest
	if s.codeVersion != "" {
		m.CodeVersion = s.codeVersion
	}
	key := artifact.RoundKeys{Campaign: m.Campaign, Round: m.Round, Attempt: m.Attempt}.Manifest()
	ref, err := s.store.PutJSONIfAbsentOrSame(ctx, key, m)
	if errors.Is(err, store.ErrConflict) {
		var stored pipeline.RoundManifest
		sref, gerr := s.store.GetJSONKey(ctx, key, &stored)
		if gerr == nil {
			stored.CodeVersion, m.CodeVersion = "", ""
			same, serr := sameJSON(stored, m)
			if serr == nil && same {
				return pipeline.CommitRoundOutput{Manifest: sref}, nil
			}
		}
		// One sentence, no wrapped cause: the workflows add the round.
		return pipeline.CommitRoundOutput{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("%s already holds another manifest (sha256 %.12s)", key, sref.SHA256),
			pipeline.ErrTypeManifestConflict, nil)
	}
	if err != nil { // the round workflow adds "round N: commit manifest:"
		return pipeline.CommitRoundOutput{}, err
	}
	return pipeline.CommitRoundOutput{Manifest: ref}, nil
}

// sameJSON reports whether a and b have the same canonical JSON.
func sameJSON(a, b any) (bool, error) {
	ab, err := store.MarshalJSON(a)
	if err != nil {
		return false, err
	}
	bb, err := store.MarshalJSON(b)
	if err != nil {
		return false, err
	}
	return string(ab) == string(bb), nil
}

// vecFoolsGold prefixes the site name of a FoolsGold update history in the
// server state.
const vecFoolsGold = "foolsgold/"

// foolsGoldHistory returns FoolsGold's update histories held in the server
// state, in the order of updates; a site without one gets nil.
func foolsGoldHistory(server serverState, updates []pipeline.SiteUpdate) [][]float64 {
	hist := make([][]float64, len(updates))
	for i, u := range updates {
		hist[i] = server.vectors[vecFoolsGold+u.Site]
	}
	return hist
}
