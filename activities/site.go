package activities

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/ptopofl/ptopofl/aggregation"
	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/privacy/noise"
	"github.com/ptopofl/ptopofl/siteledger"
	"github.com/ptopofl/ptopofl/store"
	"github.com/ptopofl/ptopofl/tda"
)

// Site holds the activities of one site. A site worker registers exactly
// one Site, on SiteTaskQueue(Name): every activity reads Name's data from
// DataDir and nothing else, refuses calls addressed to another site, and
// sends only derived numbers (descriptor, model, scores) to the store.
type Site struct {
	name  string
	store *store.Store
	// label is the label column of the site's tabular files.
	label string

	// files is the site's data as last read and validated, with the
	// standardised splits prepared from it (see dataset.SiteCache).
	files *dataset.SiteCache[method.PreparedSite]
	// images is the site's image data, for campaigns with a deep model.
	images *imageCache
	// secret keys the site's noise and secret subsamples under dp record
	// (WithSecret); the zero Secret refuses such campaigns.
	secret noise.Secret
	// trainers runs the site's own programs (model "external",
	// WithTrainers); nil refuses such campaigns.
	trainers *externalTrainers
	// ledger is the site's privacy ledger (WithLedger): every private
	// release is charged to it first; nil keeps no account.
	ledger *siteledger.File
	// holdHook holds a private release for fault tests (WithHold).
	holdHook func(ctx context.Context, point string, call pipeline.SiteCall) error
	// keep is where the site keeps what secure aggregation must not send
	// (WithKeep); nil refuses such campaigns.
	keep *keep
}

// NewSite returns the activities of site, whose data is in dataDir (a
// federation directory or the site's own; see dataset.LoadSite).
func NewSite(site, dataDir string, st *store.Store, opt dataset.SiteOptions) *Site {
	prepare := func(d *dataset.SiteData) (method.PreparedSite, error) {
		return method.PrepareSite(site, d.Train.X, d.Train.Y, d.Test.X, d.Test.Y)
	}
	label := opt.LabelColumn
	if label == "" {
		label = dataset.DefaultLabelColumn
	}
	return &Site{name: site, store: st, label: label, files: dataset.NewSiteCache(dataDir, site, opt, prepare),
		images: &imageCache{dir: dataDir, site: site}}
}

// Name is the site's name.
func (s *Site) Name() string { return s.name }

// Register registers the site activities under their pipeline names.
func (s *Site) Register(r interface {
	RegisterActivityWithOptions(any, activity.RegisterOptions)
}) {
	for _, a := range s.activities() {
		r.RegisterActivityWithOptions(a.fn, activity.RegisterOptions{Name: a.name})
	}
}

// RegisterColocated registers the site activities under
// pipeline.ColocatedActivity names, on the server worker of a process that
// serves the site itself: a campaign started Colocated runs them there as
// local activities. They are the same activities, reading the site's own
// files with the site's own store identity.
func (s *Site) RegisterColocated(r interface {
	RegisterActivityWithOptions(any, activity.RegisterOptions)
}) {
	for _, a := range s.activities() {
		r.RegisterActivityWithOptions(a.fn, activity.RegisterOptions{Name: pipeline.ColocatedActivity(s.name, a.name)})
	}
}

// siteActivity is one site activity as it is registered: its pipeline
// name and its function.
type siteActivity struct {
	name string
	fn   any
}

// activities are the site's activities, each timed (timedActivity) and
// heartbeating while it runs (heartbeating): the round gives every site
// activity a heartbeat timeout.
func (s *Site) activities() []siteActivity {
	return []siteActivity{
		{pipeline.ActivityComputeDescriptor, timedActivity(heartbeating(s.ComputeDescriptor))},
		{pipeline.ActivityTrainLocal, timedActivity(heartbeating(s.TrainLocal))},
		{pipeline.ActivityEvaluate, timedActivity(heartbeating(s.Evaluate))},
		{pipeline.ActivityInitModel, timedActivity(heartbeating(s.InitModel))},
		{pipeline.ActivitySecAggShare, timedActivity(heartbeating(s.SecAggShare))},
		{pipeline.ActivitySecAggMask, timedActivity(heartbeating(s.SecAggMask))},
		{pipeline.ActivitySecAggUnmask, timedActivity(heartbeating(s.SecAggUnmask))},
	}
}

// heartbeating runs a site activity under withHeartbeat, so that the whole
// activity, its store calls and computation alike, heartbeats every third
// of its heartbeat timeout: an attempt that stops heartbeating is one
// whose worker is gone, and a cancelled one returns at once.
func heartbeating[I, O any](f func(context.Context, I) (O, error)) func(context.Context, I) (O, error) {
	return func(ctx context.Context, in I) (O, error) {
		return withHeartbeat(ctx, func() (O, error) { return f(ctx, in) })
	}
}

// timedActivity wraps an activity so that its output records the wall time
// it spent in the store (pipeline.Spent, counted by a store.Timer), when it
// started and how long it ran, which `starter timings` reads from the
// history to tell storage from computation (and, for a local activity,
// when it ran).
func timedActivity[I, O any, P interface {
	*O
	Spend(float64, time.Time, float64)
}](f func(context.Context, I) (O, error)) func(context.Context, I) (O, error) {
	return func(ctx context.Context, in I) (O, error) {
		start := time.Now()
		ctx, t := store.WithTimer(ctx)
		out, err := f(ctx, in)
		P(&out).Spend(t.Seconds(), start.UTC(), time.Since(start).Seconds())
		return out, err
	}
}

// load reads and validates the site's data (from the cache while its files
// are unchanged); a problem with it is a non-retryable BadSiteData error
// naming site, file and line.
func (s *Site) load(call pipeline.SiteCall) (*dataset.CachedSite[method.PreparedSite], error) {
	if call.Site != s.name {
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("site %s: asked to run for site %q; check the task queue routing", s.name, call.Site),
			"WrongSite", nil)
	}
	// The data as they are in the call's round: files under
	// dataset.ShiftDir(dir, r) replace the originals from round r on.
	c, err := s.files.Load(call.Round)
	if err != nil {
		var de *dataset.SiteDataError
		if errors.As(err, &de) {
			// de's text names site, file, line, column and the kind of
			// problem, never a cell's value; it is all that leaves the
			// site (no cause is attached), into the history and manifest.
			return nil, pipeline.NewBadSiteDataError(de.Site, dataset.Position(de.File, de.Line, de.Column), 0, "%s", de.Msg)
		}
		return nil, err
	}
	if err := checkSchema(s.name, call.Schema, c.Data); err != nil {
		return nil, err
	}
	return c, nil
}

// checkSchema holds the site's data against the campaign's schema (nil
// checks nothing): a site whose feature columns differ in number, name or
// order is dropped here, with a BadSiteData error naming the difference,
// instead of sending a model of another shape that would fail the whole
// round at aggregation or, worse, be averaged with models whose weights
// mean other columns.
func checkSchema(site string, schema *pipeline.DataSchema, d *dataset.SiteData) error {
	if schema == nil {
		return nil
	}
	if schema.Kind != pipeline.SchemaTable {
		return pipeline.NewBadSiteDataError(site, d.TrainFile, 0,
			"the campaign's data are a %s, this site's files are a table", schema.Kind)
	}
	if err := d.CheckColumns(schema.Features); err != nil {
		var de *dataset.SiteDataError
		if errors.As(err, &de) {
			return pipeline.NewBadSiteDataError(de.Site, dataset.Position(de.File, de.Line, de.Column), 0, "%s", de.Msg)
		}
		return err
	}
	return nil
}

// prepared is a site's data for a call: as read (files, digests) and as
// the site uses them (the training rows it trains on, its preparation).
type prepared struct {
	cached *dataset.CachedSite[method.PreparedSite]
	data   *dataset.SiteData
	site   method.PreparedSite
}

// digests returns the digests of the files the data were read from.
func (p prepared) digests() (splitDigests, error) {
	train, test, err := p.cached.Digests()
	return splitDigests{train: train, test: test}, err
}

func (s *Site) prepare(call pipeline.SiteCall) (prepared, method.Config, error) {
	cfg, err := method.Resolve(call.Method, call.Preset, call.Hyperparameters)
	if err != nil {
		return prepared{}, method.Config{}, temporal.NewNonRetryableApplicationError(err.Error(), pipeline.ErrTypeInvalidSpec, err)
	}
	c, err := s.load(call)
	if err != nil {
		return prepared{}, method.Config{}, err
	}
	if c.DeriveErr != nil {
		// The data passed validation, so what is left (a constant
		// column overflowing the scaler, say) is still the data's fault.
		return prepared{}, method.Config{}, pipeline.NewBadSiteDataError(s.name, c.Data.TrainFile, 0, "%v", c.DeriveErr)
	}
	if cfg.ValidationFraction > 0 {
		d, p, err := s.validationView(call, cfg, c.Data)
		return prepared{cached: c, data: d, site: p}, cfg, err
	}
	return prepared{cached: c, data: c.Data, site: c.Derived}, cfg, nil
}

// dpData checks, under dp record, the site's record counts (its whole
// files) against the plan's and returns the digests of its files.
func (s *Site) dpData(call pipeline.SiteCall, pr prepared) (splitDigests, error) {
	full := pr.cached.Data
	if err := s.checkRecords(call, len(full.Train.X), len(full.Test.X), full.TrainFile); err != nil {
		return splitDigests{}, err
	}
	d, err := pr.digests()
	if err != nil {
		return splitDigests{}, fmt.Errorf("site %s: %w", s.name, err)
	}
	return d, nil
}

// validationView is the site's data under validation_fraction: the
// training rows it trains on (the held-out ones removed, drawn with the
// campaign seed and the site, the same in every round:
// method.ValidationRows) and their preparation with the validation split
// (method.PrepareSiteValidation). A split that leaves too few rows, or a
// single class to standardise, is the site's data's problem.
func (s *Site) validationView(call pipeline.SiteCall, cfg method.Config, d *dataset.SiteData) (*dataset.SiteData, method.PreparedSite, error) {
	seed := pipeline.DeriveSeed(call.CampaignSeed, 0, s.name, pipeline.PurposeValidation)
	train, val, err := method.ValidationRows(len(d.Train.X), cfg.ValidationFraction, seed)
	if err != nil {
		return nil, method.PreparedSite{}, pipeline.NewBadSiteDataError(s.name, d.TrainFile, 0, "%v", err)
	}
	p, err := method.PrepareSiteValidation(s.name, d.Train.X, d.Train.Y, d.Test.X, d.Test.Y, train, val)
	if err != nil {
		return nil, method.PreparedSite{}, pipeline.NewBadSiteDataError(s.name, d.TrainFile, 0, "%v", err)
	}
	view, tbl := *d, *d.Train
	tbl.X, tbl.Y = method.Pick(d.Train.X, d.Train.Y, train)
	view.Train = &tbl
	return &view, p, nil
}

// descriptorSeed is the seed of a site's descriptor subsample. It depends on
// the campaign seed and the site but not on the round (it is DeriveSeed at
// round 0): every round draws the same row indices, so the drift of Eq. 9
// between rounds measures a change of the data, never resampling noise.
// With a per-round subsample, a site of 180 unchanged rows drifted by 0.07
// between rounds, as much as a real shift of its data.
func descriptorSeed(call pipeline.SiteCall) uint64 {
	return pipeline.DeriveSeed(call.CampaignSeed, 0, call.Site, pipeline.PurposeDescriptor)
}

// ComputeDescriptor computes the site's topological descriptor from its
// raw training rows (in.Rows, or NSub rows drawn with descriptorSeed) and
// writes it to DescriptorKey.
func (s *Site) ComputeDescriptor(ctx context.Context, in pipeline.ComputeDescriptorInput) (pipeline.ComputeDescriptorOutput, error) {
	if err := s.refuseUnprivate(in.SiteCall); err != nil {
		return pipeline.ComputeDescriptorOutput{}, err
	}
	cfg, err := method.Resolve(in.Method, in.Preset, in.Hyperparameters)
	if err != nil {
		return pipeline.ComputeDescriptorOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), pipeline.ErrTypeInvalidSpec, err)
	}
	if cfg.IsDeep() {
		return inDeepSlot(ctx, func() (pipeline.ComputeDescriptorOutput, error) { return s.computeDeepDescriptor(ctx, in, cfg) })
	}
	if cfg.IsExternal() {
		if out, done, err := s.descriptorExternal(ctx, in, cfg); done || err != nil {
			return out, err
		}
	}
	c, err := s.load(in.SiteCall)
	if err != nil {
		return pipeline.ComputeDescriptorOutput{}, err
	}
	d := c.Data
	if cfg.ValidationFraction > 0 {
		// The descriptor of the rows the site trains on.
		if d, _, err = s.validationView(in.SiteCall, cfg, d); err != nil {
			return pipeline.ComputeDescriptorOutput{}, err
		}
	}
	if cfg.DP.On {
		digests, err := s.dpData(in.SiteCall, prepared{cached: c})
		if err != nil {
			return pipeline.ComputeDescriptorOutput{}, err
		}
		desc, label, pend, err := s.dpDescriptor(in, cfg, d.Train.X, d.Train.Y)
		if err != nil {
			return pipeline.ComputeDescriptorOutput{}, dpDescriptorError(s.name, d.TrainFile, err)
		}
		lifetime, err := s.charge(ctx, in.SiteCall, digests, pend)
		if err != nil {
			return pipeline.ComputeDescriptorOutput{}, err
		}
		out, err := s.putDescriptor(ctx, in, cfg, desc, label)
		if err != nil {
			return out, fmt.Errorf("site %s: %w", s.name, err)
		}
		if err := s.hold(ctx, HoldReleased, in.SiteCall); err != nil {
			return pipeline.ComputeDescriptorOutput{}, err
		}
		out.NumTrain = len(d.Train.X)
		out.Lifetime = lifetime
		return out, nil
	}
	opt := tda.DescriptorOptions{Variant: cfg.Descriptor, NSub: cfg.NSub, Seed: descriptorSeed(in.SiteCall)}
	if len(in.Rows) > 0 {
		opt.Rows = in.Rows
	}
	desc, err := tda.ComputeDescriptor(d.Train.X, opt)
	if err != nil {
		return pipeline.ComputeDescriptorOutput{}, pipeline.NewBadSiteDataError(s.name, d.TrainFile, 0, "descriptor: %v", err)
	}
	if cfg.LabelAware() {
		// The label-aware extension follows the paper's 48 numbers; its rows
		// are drawn with the same fixed seed, so re-computing it in a later
		// round measures a change of the data, never resampling noise.
		label, err := tda.LabelledSummary(d.Train.X, d.Train.Y, tda.LabelledOptions{NSub: cfg.LabelNSub, Seed: descriptorSeed(in.SiteCall)})
		if err != nil {
			return pipeline.ComputeDescriptorOutput{}, pipeline.NewBadSiteDataError(s.name, d.TrainFile, 0, "label-aware summary: %v", err)
		}
		desc.Vector = append(desc.Vector, label...)
	}
	out, err := s.putDescriptor(ctx, in, cfg, desc, len(desc.Vector)-tda.DescriptorLen)
	if err != nil {
		return out, fmt.Errorf("site %s: %w", s.name, err)
	}
	out.NumTrain = len(d.Train.X)
	return out, nil
}

// putDescriptor writes a site's descriptor artifact: its vector, whose
// last label numbers are the label-aware summary, and its persistence
// pairs only when the campaign's site distance reads them (Wasserstein,
// Eq. 3): a site releases only what the method reads. It lists what it
// wrote in the output's Released.
func (s *Site) putDescriptor(ctx context.Context, in pipeline.ComputeDescriptorInput, cfg method.Config, desc tda.Descriptor, label int) (pipeline.ComputeDescriptorOutput, error) {
	rec := store.DescriptorRecord{
		Campaign: in.Campaign, Round: in.Round, Site: s.name, Method: string(in.Method),
		Descriptor: desc.Vector,
	}
	var out pipeline.ComputeDescriptorOutput
	out.Add(pipeline.ReleaseDescriptor, len(desc.Vector)-label)
	if label > 0 {
		out.Add(pipeline.ReleaseLabelSummary, label)
	}
	if cfg.Server.Distance == aggregation.WassersteinDistance {
		rec.H0, rec.H1 = pairs(desc.H0), pairs(desc.H1)
		out.Add(pipeline.ReleaseDiagrams, 2*(len(rec.H0)+len(rec.H1)))
	}
	b, err := store.EncodeDescriptor(rec)
	if err != nil {
		return out, err
	}
	if out.Descriptor, err = s.store.PutCached(ctx, in.Keys().Descriptor(s.name), b); err != nil {
		return out, err
	}
	return out, nil
}

func pairs(ps []tda.Pair) []store.Pair {
	out := make([]store.Pair, len(ps))
	for i, p := range ps {
		out[i] = store.Pair{Birth: p.Birth, Death: p.Death}
	}
	return out
}

// TrainLocal runs one round of the method's local update (learn.UpdateSite)
// from the model and state the workflow hands over, and writes the local
// model to ModelKey, the site's new state and any control-variate message
// beside it.
func (s *Site) TrainLocal(ctx context.Context, in pipeline.TrainLocalInput) (pipeline.TrainLocalOutput, error) {
	if err := s.refuseUnprivate(in.SiteCall); err != nil {
		return pipeline.TrainLocalOutput{}, err
	}
	if err := s.checkSecAggTrain(in); err != nil {
		return pipeline.TrainLocalOutput{}, err
	}
	if cfg, deep, err := deepConfig(in.SiteCall); err != nil || deep {
		if err != nil {
			return pipeline.TrainLocalOutput{}, err
		}
		return inDeepSlot(ctx, func() (pipeline.TrainLocalOutput, error) { return s.trainDeep(ctx, in, cfg) })
	}
	if cfg, ext, err := externalConfig(in.SiteCall); err != nil || ext {
		if err != nil {
			return pipeline.TrainLocalOutput{}, err
		}
		return s.trainExternal(ctx, in, cfg)
	}
	pr, cfg, err := s.prepare(in.SiteCall)
	if err != nil {
		return pipeline.TrainLocalOutput{}, err
	}
	d, p := pr.data, pr.site
	// A site that drift re-clustered this round trains at drift_lr_factor
	// times its learning rate (§3.5).
	cfg = cfg.DriftLR(in.Cluster != nil && in.Cluster.Reclustered)
	wrap := func(err error) error { return fmt.Errorf("site %s round %d: %w", s.name, in.Round, err) }
	train, test := p.Splits(cfg.DP.On)
	val := p.Val
	// charged charges what the activity releases before the first of it
	// leaves (dp record; a no-op otherwise).
	charged := func() (*pipeline.SiteLifetime, error) { return nil, nil }
	if cfg.DP.On {
		val = p.RawVal
		digests, err := s.dpData(in.SiteCall, pr)
		if err != nil {
			return pipeline.TrainLocalOutput{}, err
		}
		rels := []method.SiteRelease{}
		if r, ok := cfg.TrainRelease(len(train.X)); ok {
			rels = append(rels, r)
		}
		if in.Evaluate {
			rels = append(rels, cfg.MetricsRelease(purposeMetrics))
			if len(val.X) > 0 {
				rels = append(rels, cfg.ValidationRelease())
			}
		}
		pend := make([]pendingRelease, len(rels))
		for i, r := range rels {
			if pend[i], err = s.pending(in.SiteCall, r, in); err != nil {
				return pipeline.TrainLocalOutput{}, err
			}
		}
		charged = func() (*pipeline.SiteLifetime, error) { return s.charge(ctx, in.SiteCall, digests, pend) }
		st, err := s.dpStream(in.SiteCall, purposeTrain, in)
		if err != nil {
			return pipeline.TrainLocalOutput{}, err
		}
		cfg.Site.DP.Random = st
	}
	sin := learn.SiteInput{
		Method: cfg.Method, Round: in.Round, Seed: method.TrainSeed(in.Preset, in.CampaignSeed, in.SiteIndex, in.Seed),
		Train: train, TopologyX: d.Train.X, Config: cfg.Site,
	}
	if in.StartModel != nil {
		if sin.Pushed, err = s.store.GetModelParamsCached(ctx, *in.StartModel); err != nil {
			return pipeline.TrainLocalOutput{}, wrap(err)
		}
	}
	if sin.State, err = s.getSiteState(ctx, in.SiteState); err != nil {
		return pipeline.TrainLocalOutput{}, wrap(err)
	}
	if method.SitesReadServerState(cfg.Method) {
		// SCAFFOLD's c, from the shared state (a round begun before it
		// existed names the server's whole state). Other methods read
		// nothing of the server's state.
		server, err := getServerState(ctx, s.store, in.ServerState)
		if err != nil {
			return pipeline.TrainLocalOutput{}, wrap(err)
		}
		sin.ServerControl = server.Control
	}
	if in.Descriptor != nil {
		if sin.Descriptor, err = s.descriptorVector(ctx, *in.Descriptor); err != nil {
			return pipeline.TrainLocalOutput{}, wrap(err)
		}
	}
	if train, test, val, err = augmentTopology(cfg, train, test, val, sin.Descriptor); err != nil {
		return pipeline.TrainLocalOutput{}, wrap(err)
	}
	sin.Train = train

	out, err := learn.UpdateSite(sin)
	if err != nil {
		return pipeline.TrainLocalOutput{}, wrap(err)
	}
	if err := checkDiverged(s.name, in.Round, in.Method, out.Params); err != nil {
		return pipeline.TrainLocalOutput{}, err
	}

	res := pipeline.TrainLocalOutput{NumTrain: out.N}
	if res.Lifetime, err = charged(); err != nil {
		return pipeline.TrainLocalOutput{}, err
	}
	// Under secure aggregation the model, the control variate and the
	// state stay in the site's keep: they leave it only inside a group's
	// masked sum (SecAggMask).
	sa := in.SecAgg != nil
	modelRec := store.ModelRecord{
		Campaign: in.Campaign, Round: in.Round, Site: s.name, Method: string(in.Method), Kind: store.KindModel, Params: out.Params,
	}
	var ref pipeline.ArtifactRef
	if sa {
		b, eerr := store.EncodeModel(modelRec)
		ref, err = s.keepBytes(in.Keys().Model(s.name), b, eerr)
	} else {
		ref, err = s.store.PutModelCached(ctx, in.Keys().Model(s.name), modelRec)
	}
	if err != nil {
		return pipeline.TrainLocalOutput{}, wrap(err)
	}
	var kept *pipeline.SecAggAdvert
	if sa {
		kept = &pipeline.SecAggAdvert{Model: ref}
	} else {
		res.Model = ref
		res.Add(pipeline.ReleaseModel, len(out.Params))
	}
	if cfg.DP.On {
		if err := s.hold(ctx, HoldReleased, in.SiteCall); err != nil {
			return pipeline.TrainLocalOutput{}, err
		}
	}
	if out.Control != nil {
		rec := store.VectorRecord{Campaign: in.Campaign, Round: in.Round, Site: s.name, Method: string(in.Method),
			Kind: kindControl, Vectors: map[string][]float64{vecControl: out.Control}}
		var ref pipeline.ArtifactRef
		if sa {
			b, eerr := store.EncodeVectors([]store.VectorRecord{rec})
			ref, err = s.keepBytes(in.Keys().Control(s.name), b, eerr)
		} else {
			ref, err = putVectors(ctx, s.store, in.Keys().Control(s.name), []store.VectorRecord{rec})
		}
		if err != nil {
			return pipeline.TrainLocalOutput{}, wrap(err)
		}
		if sa {
			kept.Control = &ref
		} else {
			res.Control = &ref
			res.Add(pipeline.ReleaseControl, len(out.Control))
		}
	}
	// A method that keeps nothing between rounds (FedAvg, FedProx,
	// pTopoFL, the robust baselines) writes no state object: the round
	// carries no state for the site, and the next round reads none.
	if st := out.State; st.Control != nil || st.Personal != nil || st.Local != nil {
		var stateRef pipeline.ArtifactRef
		recs := []store.VectorRecord{siteStateRecord(in.SiteCall, st)}
		if sa {
			b, eerr := store.EncodeVectors(recs)
			stateRef, err = s.keepBytes(in.Keys().SiteState(s.name), b, eerr)
		} else {
			stateRef, err = putVectors(ctx, s.store, in.Keys().SiteState(s.name), recs)
		}
		if err != nil {
			return pipeline.TrainLocalOutput{}, wrap(err)
		}
		res.SiteState = &stateRef
		if !sa {
			res.Add(pipeline.ReleaseSiteState, stateNumbers(st))
		}
	}
	if sa {
		if res.SecAgg, err = s.advertise(in.SiteCall, in.SecAgg.Group, kept.Model, kept.Control); err != nil {
			return pipeline.TrainLocalOutput{}, err
		}
	}
	if !cfg.DP.On {
		// The training loss is a number computed from every training
		// record with no noise: under dp record it is not released.
		m := cfg.Site.Model(train.NumFeatures())
		res.Loss = m.Objective(out.Params, train, nil)
	}
	if in.Evaluate {
		if !method.EvaluatesOwnUpdate(in.Method) {
			return pipeline.TrainLocalOutput{}, temporal.NewNonRetryableApplicationError(
				wrap(fmt.Errorf("asked to evaluate in training, but %s scores the aggregated model", in.Method)).Error(), "BadRequest", nil)
		}
		// The model to score is the site's own update (nothing the
		// aggregation sends back changes it), so no pushed model.
		ev, err := s.score(in.SiteCall, in, cfg, test, val, nil, out.State)
		if err != nil {
			return pipeline.TrainLocalOutput{}, wrap(fmt.Errorf("evaluate: %w", err))
		}
		res.Evaluation = &ev
		res.Released.Released = append(res.Released.Released, ev.Released.Released...)
		res.Evaluation.Released = pipeline.Released{}
	}
	return res, nil
}

// descriptorVector reads a descriptor artifact's vector (the site's own).
func (s *Site) descriptorVector(ctx context.Context, ref pipeline.ArtifactRef) ([]float64, error) {
	b, err := s.store.GetCached(ctx, ref)
	if err != nil {
		return nil, err
	}
	rec, err := store.DecodeDescriptor(b)
	if err != nil {
		return nil, err
	}
	return rec.Descriptor, nil
}

// augmentTopology appends the four topological columns of §3.2
// (method.AugmentTopology) to the splits under topo_features "augment" or
// "both", and returns them unchanged otherwise.
func augmentTopology(cfg method.Config, train, test, val learn.Data, desc []float64) (learn.Data, learn.Data, learn.Data, error) {
	if !cfg.AugmentsFeatures() {
		return train, test, val, nil
	}
	if desc == nil {
		return train, test, val, fmt.Errorf("topo_features %q: no descriptor", cfg.TopoFeatures)
	}
	return method.AugmentTopology(train, test, val, desc)
}

// withHeartbeat runs train while heartbeating, so that a worker that dies
// mid-training is noticed after the heartbeat timeout. Training itself is
// pure and cannot be interrupted; a cancelled activity returns at once and
// lets the computation finish in the background.
func withHeartbeat[T any](ctx context.Context, train func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := train()
		done <- result{v, err}
	}()
	every := 10 * time.Second
	if activity.IsActivity(ctx) {
		if hb := activity.GetInfo(ctx).HeartbeatTimeout; hb > 0 && hb/3 < every {
			every = hb / 3
		}
		// No heartbeat at the start: the heartbeat timeout counts from the
		// attempt's start, the first tick comes at a third of it, and an
		// immediate heartbeat would cost every training call one more
		// round trip to the server and one more history update, while
		// most training finishes long before the first tick.
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case r := <-done:
			return r.v, r.err
		case <-tick.C:
			if activity.IsActivity(ctx) {
				activity.RecordHeartbeat(ctx, "training")
			}
		case <-ctx.Done():
			var zero T
			return zero, ctx.Err()
		}
	}
}

// Evaluate scores the model the site holds after the round's aggregation
// (learn.EvaluationParams: the pushed model, pFedMe's personal model, or
// the site's own fit for local training) on its test split.
func (s *Site) Evaluate(ctx context.Context, in pipeline.EvaluateInput) (pipeline.EvaluateOutput, error) {
	if err := s.refuseUnprivate(in.SiteCall); err != nil {
		return pipeline.EvaluateOutput{}, err
	}
	if cfg, deep, err := deepConfig(in.SiteCall); err != nil || deep {
		if err != nil {
			return pipeline.EvaluateOutput{}, err
		}
		return inDeepSlot(ctx, func() (pipeline.EvaluateOutput, error) { return s.evaluateDeep(ctx, in, cfg) })
	}
	if cfg, ext, err := externalConfig(in.SiteCall); err != nil || ext {
		if err != nil {
			return pipeline.EvaluateOutput{}, err
		}
		return s.evaluateExternalCall(ctx, in, cfg)
	}
	pr, cfg, err := s.prepare(in.SiteCall)
	if err != nil {
		return pipeline.EvaluateOutput{}, err
	}
	p := pr.site
	wrap := func(err error) error { return fmt.Errorf("site %s round %d: evaluate: %w", s.name, in.Round, err) }
	train, test := p.Splits(cfg.DP.On)
	val := p.Val
	var digests splitDigests
	if cfg.DP.On {
		val = p.RawVal
		if digests, err = s.dpData(in.SiteCall, pr); err != nil {
			return pipeline.EvaluateOutput{}, err
		}
	}
	pushed, err := s.store.GetModelParamsCached(ctx, in.Model)
	if err != nil {
		return pipeline.EvaluateOutput{}, wrap(err)
	}
	state, err := s.getSiteState(ctx, in.SiteState)
	if err != nil {
		return pipeline.EvaluateOutput{}, wrap(err)
	}
	if cfg.AugmentsFeatures() {
		if in.Descriptor == nil {
			return pipeline.EvaluateOutput{}, temporal.NewNonRetryableApplicationError(
				wrap(fmt.Errorf("topo_features %q: no descriptor to compute the test rows' columns from", cfg.TopoFeatures)).Error(), "BadRequest", nil)
		}
		desc, err := s.descriptorVector(ctx, *in.Descriptor)
		if err != nil {
			return pipeline.EvaluateOutput{}, wrap(err)
		}
		if _, test, val, err = augmentTopology(cfg, train, test, val, desc); err != nil {
			return pipeline.EvaluateOutput{}, wrap(err)
		}
	}
	ev, err := s.score(in.SiteCall, in, cfg, test, val, pushed, state)
	if err != nil {
		return pipeline.EvaluateOutput{}, wrap(err)
	}
	if cfg.DP.On {
		rels := []method.SiteRelease{cfg.MetricsRelease(purposeMetrics)}
		if len(val.X) > 0 {
			rels = append(rels, cfg.ValidationRelease())
		}
		pend := make([]pendingRelease, len(rels))
		for i, r := range rels {
			if pend[i], err = s.pending(in.SiteCall, r, in); err != nil {
				return pipeline.EvaluateOutput{}, err
			}
		}
		if ev.Lifetime, err = s.charge(ctx, in.SiteCall, digests, pend); err != nil {
			return pipeline.EvaluateOutput{}, err
		}
	}
	return ev, nil
}

// score evaluates, on the site's test split (and its validation split val,
// when it holds one out), the model the method scores
// the site with (learn.EvaluationParams) given the pushed model and the
// site's state after the round: exactly (plainScore), or under dp record
// through the noised score counts of dpScore, drawn from the stream of
// the activity's input in.
func (s *Site) score(call pipeline.SiteCall, in any, cfg method.Config, test, val learn.Data, pushed []float64, state learn.SiteState) (pipeline.EvaluateOutput, error) {
	if !cfg.DP.On {
		ev, err := plainScore(cfg, test, pushed, state)
		ev.Add(pipeline.ReleaseMetrics, 2)
		if err != nil || len(val.X) == 0 {
			return ev, err
		}
		// The same model on the held-out training rows.
		v, err := plainScore(cfg, val, pushed, state)
		if err != nil {
			return pipeline.EvaluateOutput{}, fmt.Errorf("validation: %w", err)
		}
		ev.ValAUC, ev.ValAccuracy, ev.NumVal = &v.AUC, &v.Accuracy, v.NumTest
		ev.Add(pipeline.ReleaseMetrics, 2)
		return ev, nil
	}
	st, err := s.dpStream(call, purposeMetrics, in)
	if err != nil {
		return pipeline.EvaluateOutput{}, err
	}
	valSt, err := s.dpStream(call, purposeValidation, in)
	if err != nil {
		return pipeline.EvaluateOutput{}, err
	}
	return dpScore(cfg, test, val, pushed, state, st, valSt)
}

// plainScore is score without privacy: the exact AUC and accuracy.
func plainScore(cfg method.Config, test learn.Data, pushed []float64, state learn.SiteState) (pipeline.EvaluateOutput, error) {
	params := learn.EvaluationParams(cfg.Method, pushed, state)
	if params == nil {
		return pipeline.EvaluateOutput{}, fmt.Errorf("method %s evaluates the site's own state, and the site has none", cfg.Method)
	}
	auc, acc, err := method.EvaluateSite(cfg.Site, params, test)
	if err != nil {
		return pipeline.EvaluateOutput{}, err
	}
	return pipeline.EvaluateOutput{AUC: auc, Accuracy: acc, NumTest: len(test.X)}, nil
}

// checkDiverged returns a non-retryable error (pipeline.ErrTypeDiverged)
// when a parameter of the trained model is not finite: the same inputs give
// the same bits again, so retrying cannot help, and the round drops the
// site (pipeline.DropError) with the message at once instead of retrying
// until its deadline.
func checkDiverged[F float32 | float64](site string, round int, m learn.Method, params []F) error {
	for j, v := range params {
		if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
			return temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("site %s round %d: the %s model diverged in local training (parameter %d is not finite); a lower lr (or, with a deep model, momentum) keeps it finite", site, round, m, j),
				pipeline.ErrTypeDiverged, nil)
		}
	}
	return nil
}
