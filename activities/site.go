package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/simulate"
	"github.com/ptopofl/ptopofl/store"
	"github.com/ptopofl/ptopofl/tda"
)

// Site holds the activities of one site. A site worker registers exactly
// one Site, on SiteTaskQueue(Name): every activity reads Name's data from
// DataDir and nothing else, refuses calls addressed to another site, and
// sends only derived numbers (descriptor, model, scores) to the store.
type Site struct {
	name    string
	dataDir string
	store   *store.Store
	opt     dataset.SiteOptions
}

// NewSite returns the activities of site, whose data is in dataDir (a
// federation directory or the site's own; see dataset.LoadSite).
func NewSite(site, dataDir string, st *store.Store, opt dataset.SiteOptions) *Site {
	return &Site{name: site, dataDir: dataDir, store: st, opt: opt}
}

// Name is the site's name.
func (s *Site) Name() string { return s.name }

// Register registers the site activities under their pipeline names.
func (s *Site) Register(r interface {
	RegisterActivityWithOptions(any, activity.RegisterOptions)
}) {
	r.RegisterActivityWithOptions(s.ComputeDescriptor, activity.RegisterOptions{Name: pipeline.ActivityComputeDescriptor})
	r.RegisterActivityWithOptions(s.TrainLocal, activity.RegisterOptions{Name: pipeline.ActivityTrainLocal})
	r.RegisterActivityWithOptions(s.Evaluate, activity.RegisterOptions{Name: pipeline.ActivityEvaluate})
}

// load reads and validates the site's data; a problem with it is a
// non-retryable BadSiteData error naming site, file and line.
func (s *Site) load(call pipeline.SiteCall) (*dataset.SiteData, error) {
	if call.Site != s.name {
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("site %s: asked to run for site %q; check the task queue routing", s.name, call.Site),
			"WrongSite", nil)
	}
	d, err := dataset.LoadSite(s.dataDir, s.name, s.opt)
	if err != nil {
		var de *dataset.SiteDataError
		if errors.As(err, &de) {
			return nil, pipeline.NewBadSiteDataError(de.Site, de.File, de.Line, "%s", de.Msg)
		}
		return nil, err
	}
	return d, nil
}

func (s *Site) prepare(call pipeline.SiteCall) (*dataset.SiteData, simulate.PreparedSite, simulate.Config, error) {
	cfg, err := Config(call.Method, call.Preset, call.Hyperparameters)
	if err != nil {
		return nil, simulate.PreparedSite{}, simulate.Config{}, temporal.NewNonRetryableApplicationError(err.Error(), pipeline.ErrTypeInvalidSpec, err)
	}
	d, err := s.load(call)
	if err != nil {
		return nil, simulate.PreparedSite{}, simulate.Config{}, err
	}
	p, err := simulate.PrepareSite(simulate.Site{Name: s.name, TrainX: d.Train.X, TrainY: d.Train.Y, TestX: d.Test.X, TestY: d.Test.Y})
	if err != nil {
		// The data passed validation, so what is left (a constant
		// column overflowing the scaler, say) is still the data's fault.
		return nil, simulate.PreparedSite{}, simulate.Config{}, pipeline.NewBadSiteDataError(s.name, d.TrainFile, 0, "%v", err)
	}
	return d, p, cfg, nil
}

// ComputeDescriptor computes the site's topological descriptor from its
// raw training rows (in.Rows, or NSub rows drawn with in.Seed) and writes it
// to DescriptorKey.
func (s *Site) ComputeDescriptor(ctx context.Context, in pipeline.ComputeDescriptorInput) (pipeline.ComputeDescriptorOutput, error) {
	cfg, err := Config(in.Method, in.Preset, in.Hyperparameters)
	if err != nil {
		return pipeline.ComputeDescriptorOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), pipeline.ErrTypeInvalidSpec, err)
	}
	d, err := s.load(in.SiteCall)
	if err != nil {
		return pipeline.ComputeDescriptorOutput{}, err
	}
	opt := tda.DescriptorOptions{Variant: cfg.Descriptor, NSub: cfg.NSub, Seed: in.Seed}
	if len(in.Rows) > 0 {
		opt.Rows = in.Rows
	}
	desc, err := tda.ComputeDescriptor(d.Train.X, opt)
	if err != nil {
		return pipeline.ComputeDescriptorOutput{}, pipeline.NewBadSiteDataError(s.name, d.TrainFile, 0, "descriptor: %v", err)
	}
	rec := store.DescriptorRecord{
		Campaign: in.Campaign, Round: in.Round, Site: s.name, Method: in.Method,
		Descriptor: desc.Vector, H0: pairs(desc.H0), H1: pairs(desc.H1),
	}
	b, err := store.EncodeDescriptor(rec)
	if err != nil {
		return pipeline.ComputeDescriptorOutput{}, fmt.Errorf("site %s: %w", s.name, err)
	}
	ref, err := s.store.Put(ctx, pipeline.DescriptorKey(in.Campaign, in.Round, s.name), b)
	if err != nil {
		return pipeline.ComputeDescriptorOutput{}, fmt.Errorf("site %s: %w", s.name, err)
	}
	return pipeline.ComputeDescriptorOutput{Descriptor: toPipeline(ref), NumTrain: len(d.Train.X)}, nil
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
// beside it. It heartbeats while training.
func (s *Site) TrainLocal(ctx context.Context, in pipeline.TrainLocalInput) (pipeline.TrainLocalOutput, error) {
	d, p, cfg, err := s.prepare(in.SiteCall)
	if err != nil {
		return pipeline.TrainLocalOutput{}, err
	}
	wrap := func(err error) error { return fmt.Errorf("site %s round %d: %w", s.name, in.Round, err) }
	sin := learn.SiteInput{
		Method: cfg.Method, Round: in.Round, Seed: trainSeed(in.SiteCall),
		Train: p.Train, TopologyX: d.Train.X, Config: cfg.Site,
	}
	if in.StartModel != nil {
		if sin.Pushed, err = getParams(ctx, s.store, *in.StartModel); err != nil {
			return pipeline.TrainLocalOutput{}, wrap(err)
		}
	}
	if sin.State, err = getSiteState(ctx, s.store, in.SiteState); err != nil {
		return pipeline.TrainLocalOutput{}, wrap(err)
	}
	server, err := getServerState(ctx, s.store, in.ServerState)
	if err != nil {
		return pipeline.TrainLocalOutput{}, wrap(err)
	}
	sin.ServerControl = server.Control
	if in.Descriptor != nil {
		b, err := s.store.Get(ctx, toStore(*in.Descriptor))
		if err != nil {
			return pipeline.TrainLocalOutput{}, wrap(err)
		}
		rec, err := store.DecodeDescriptor(b)
		if err != nil {
			return pipeline.TrainLocalOutput{}, wrap(err)
		}
		sin.Descriptor = rec.Descriptor
	}

	out, err := withHeartbeat(ctx, func() (learn.SiteOutput, error) { return learn.UpdateSite(sin) })
	if err != nil {
		return pipeline.TrainLocalOutput{}, wrap(err)
	}

	res := pipeline.TrainLocalOutput{NumTrain: out.N}
	model, err := store.EncodeModel(store.ModelRecord{
		Campaign: in.Campaign, Round: in.Round, Site: s.name, Method: in.Method, Kind: store.KindModel, Params: out.Params,
	})
	if err != nil {
		return pipeline.TrainLocalOutput{}, wrap(err)
	}
	ref, err := s.store.Put(ctx, pipeline.ModelKey(in.Campaign, in.Round, s.name), model)
	if err != nil {
		return pipeline.TrainLocalOutput{}, wrap(err)
	}
	res.Model = toPipeline(ref)
	if out.Control != nil {
		rec := store.VectorRecord{Campaign: in.Campaign, Round: in.Round, Site: s.name, Method: in.Method,
			Kind: kindControl, Vectors: map[string][]float64{vecControl: out.Control}}
		ref, err := putVectors(ctx, s.store, controlKey(in.Campaign, in.Round, s.name), []store.VectorRecord{rec})
		if err != nil {
			return pipeline.TrainLocalOutput{}, wrap(err)
		}
		res.Control = &ref
	}
	stateRef, err := putVectors(ctx, s.store, siteStateKey(in.Campaign, in.Round, s.name),
		[]store.VectorRecord{siteStateRecord(in.SiteCall, out.State)})
	if err != nil {
		return pipeline.TrainLocalOutput{}, wrap(err)
	}
	res.SiteState = &stateRef
	m := cfg.Site.Model(p.Train.NumFeatures())
	res.Loss = m.Objective(out.Params, p.Train, nil)
	return res, nil
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
		activity.RecordHeartbeat(ctx, "training")
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
	_, p, cfg, err := s.prepare(in.SiteCall)
	if err != nil {
		return pipeline.EvaluateOutput{}, err
	}
	wrap := func(err error) error { return fmt.Errorf("site %s round %d: evaluate: %w", s.name, in.Round, err) }
	pushed, err := getParams(ctx, s.store, in.Model)
	if err != nil {
		return pipeline.EvaluateOutput{}, wrap(err)
	}
	state, err := getSiteState(ctx, s.store, in.SiteState)
	if err != nil {
		return pipeline.EvaluateOutput{}, wrap(err)
	}
	params := learn.EvaluationParams(cfg.Method, pushed, state)
	if params == nil {
		return pipeline.EvaluateOutput{}, wrap(fmt.Errorf("method %s evaluates the site's own state, and the site has none", cfg.Method))
	}
	auc, acc, err := simulate.EvaluateSite(cfg.Site, params, p.Test)
	if err != nil {
		return pipeline.EvaluateOutput{}, wrap(err)
	}
	return pipeline.EvaluateOutput{AUC: auc, Accuracy: acc, NumTest: len(p.Test.X)}, nil
}
