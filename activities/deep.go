package activities

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/nn"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/store"
	"github.com/ptopofl/ptopofl/tda"
)

// The deep path of a site: a campaign whose model is an image network
// (method.Config.IsDeep) reads the site's image federation files
// (dataset.LoadImageSite), trains with nn.UpdateSite and stores its models
// as float32 parquet (store.ModelRecord.Float32). What the server sees is
// the same as for a tabular site: a model reference, a control-variate
// reference, a descriptor of 48 numbers.

// deepSlots bounds the deep site activities (training, evaluation,
// descriptors) that run at once in this process to the number of CPUs,
// each network on one thread. Ten in-process site workers of `starter run
// --local`, each training on every CPU, starved the embedded Temporal
// server in the same process: its internal calls (history to matching)
// missed their deadlines and activity tasks were lost until a timeout. A
// queue in front of CPU-bound work loses no throughput, and it shapes no
// result (nn gives the same bits on any number of threads).
//
// A slot is held for the whole activity, its S3 reads and writes included,
// not only for the computation: with the store calls outside, the sites
// waiting for a slot read and wrote while every CPU trained, and each
// network round trip waited for the Go scheduler's 10 ms preemption tick
// (a 2 ms S3 request took 20–45 ms; storage grew to an eighth of a deep
// round). Inside, a site's request runs on the processor its own network
// wait frees, at its isolated speed, for about 1 % of the slot's time.
var deepSlots = make(chan struct{}, runtime.GOMAXPROCS(0))

// inDeepSlot runs a deep site activity's body f holding one of deepSlots;
// a cancelled activity stops waiting for a slot. The activity heartbeats
// while it waits and runs (the heartbeating wrapper every site activity is
// registered with).
func inDeepSlot[T any](ctx context.Context, f func() (T, error)) (T, error) {
	select {
	case deepSlots <- struct{}{}:
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
	defer func() { <-deepSlots }()
	return f()
}

// oneThread runs f with net on one thread: the process's CPUs are shared
// out by deepSlots, one each.
func oneThread[T any](net *nn.Network, f func() (T, error)) (T, error) {
	net.SetWorkers(1)
	return f()
}

// imageCache holds a site's images as last read, re-read when a file's
// size or modification time changes or the campaign asks for another
// number of classes.
type imageCache struct {
	dir, site string

	mu      sync.Mutex
	classes int
	stamps  [4]fileStamp
	data    *dataset.ImageSiteData
	// digests are those of the training and the test split's files
	// (dataset.FilesDigest), computed once per reading when first asked.
	digests *splitDigests
}

// splitDigests returns the digests of the image files of d, the reading
// load last returned.
func (c *imageCache) splitDigests(d *dataset.ImageSiteData) (splitDigests, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.data == d && c.digests != nil {
		return *c.digests, nil
	}
	train, err := dataset.FilesDigest(d.Files[0], d.Files[1])
	if err != nil {
		return splitDigests{}, fmt.Errorf("site %s: %w", c.site, err)
	}
	test, err := dataset.FilesDigest(d.Files[2], d.Files[3])
	if err != nil {
		return splitDigests{}, fmt.Errorf("site %s: %w", c.site, err)
	}
	out := splitDigests{train: train, test: test}
	if c.data == d {
		c.digests = &out
	}
	return out, nil
}

type fileStamp struct {
	size int64
	mod  time.Time
}

func stampFiles(files [4]string) ([4]fileStamp, error) {
	var st [4]fileStamp
	for i, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			return st, err
		}
		st[i] = fileStamp{fi.Size(), fi.ModTime()}
	}
	return st, nil
}

// load returns the site's images for a campaign of classes classes.
func (c *imageCache) load(classes int) (*dataset.ImageSiteData, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.data != nil && c.classes == classes {
		if st, err := stampFiles(c.data.Files); err == nil && st == c.stamps {
			return c.data, nil
		}
	}
	d, err := dataset.LoadImageSite(c.dir, c.site, classes)
	if err != nil {
		return nil, err
	}
	st, err := stampFiles(d.Files)
	if err != nil {
		return nil, err
	}
	c.data, c.classes, c.stamps, c.digests = d, classes, st, nil
	return d, nil
}

// putVectors32 is putVectors for vectors of float32 values (a deep site's
// control variate and state), stored as float32 (store.EncodeVectors32).
func putVectors32(ctx context.Context, st *store.Store, key string, recs []store.VectorRecord) (pipeline.ArtifactRef, error) {
	b, err := store.EncodeVectors32(recs)
	if err != nil {
		return pipeline.ArtifactRef{}, fmt.Errorf("encode %s: %w", key, err)
	}
	return st.PutCached(ctx, key, b)
}

// deepConfig resolves a call's configuration when its model is deep
// (deep reports it); an invalid spec is a non-retryable error.
func deepConfig(call pipeline.SiteCall) (cfg method.Config, deep bool, err error) {
	if !call.Hyperparameters.IsDeep() {
		return method.Config{}, false, nil
	}
	cfg, err = method.Resolve(call.Method, call.Preset, call.Hyperparameters)
	if err != nil {
		return method.Config{}, true, temporal.NewNonRetryableApplicationError(err.Error(), pipeline.ErrTypeInvalidSpec, err)
	}
	return cfg, true, nil
}

// deepSite reads and prepares the site's images for cfg's network; a
// problem with them is a non-retryable BadSiteData error naming the site
// and the file.
func (s *Site) deepSite(call pipeline.SiteCall, cfg method.Config) (method.DeepSite, error) {
	p, _, err := s.deepSiteFiles(call, cfg)
	return p, err
}

// deepSiteFiles is deepSite that also returns the file of the training
// images, for errors about them.
func (s *Site) deepSiteFiles(call pipeline.SiteCall, cfg method.Config) (method.DeepSite, string, error) {
	p, d, err := s.deepSiteData(call, cfg)
	if err != nil {
		return method.DeepSite{}, "", err
	}
	return p, d.Files[0], nil
}

// deepDP checks, under dp record, the site's image counts (its whole
// files) against the plan's and returns the digests of its files.
func (s *Site) deepDP(call pipeline.SiteCall, d *dataset.ImageSiteData) (splitDigests, error) {
	if err := s.checkRecords(call, d.Train.N, d.Test.N, d.Files[0]); err != nil {
		return splitDigests{}, err
	}
	return s.images.splitDigests(d)
}

// deepSiteData is deepSiteFiles returning the images as read.
func (s *Site) deepSiteData(call pipeline.SiteCall, cfg method.Config) (method.DeepSite, *dataset.ImageSiteData, error) {
	if call.Site != s.name {
		return method.DeepSite{}, nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("site %s: asked to run for site %q; check the task queue routing", s.name, call.Site),
			"WrongSite", nil)
	}
	d, err := s.images.load(cfg.Network.Classes)
	if err != nil {
		var de *dataset.SiteDataError
		if errors.As(err, &de) {
			return method.DeepSite{}, nil, pipeline.NewBadSiteDataError(de.Site, de.File, de.Line, "%s", de.Msg)
		}
		return method.DeepSite{}, nil, err
	}
	shape := nn.Shape{H: d.Train.H, W: d.Train.W, C: d.Train.C}
	p, err := method.PrepareDeepSite(s.name, cfg, shape,
		nn.Data{N: d.Train.N, X: d.Train.Pixels, Labels: d.Train.Labels},
		nn.Data{N: d.Test.N, X: d.Test.Pixels, Labels: d.Test.Labels})
	if err != nil {
		return method.DeepSite{}, nil, pipeline.NewBadSiteDataError(s.name, d.Files[0], 0, "%v", err)
	}
	if cfg.ValidationFraction > 0 {
		// The images it trains on, and those it holds out (the same in
		// every round: validationView's draw).
		train, val, err := method.ValidationRows(p.Train.N, cfg.ValidationFraction, pipeline.DeriveSeed(call.CampaignSeed, 0, s.name, pipeline.PurposeValidation))
		if err != nil {
			return method.DeepSite{}, nil, pipeline.NewBadSiteDataError(s.name, d.Files[0], 0, "%v", err)
		}
		p = p.HoldOut(train, val)
	}
	return p, d, nil
}

// deepInitSeed seeds a deep campaign's initial model. It depends on the
// campaign seed alone, so that every site starts from the same network:
// averaging networks initialised apart averages unrelated features.
func deepInitSeed(call pipeline.SiteCall) uint64 {
	return pipeline.DeriveSeed(call.CampaignSeed, 0, "", pipeline.PurposeTrain)
}

// initialParams returns the campaign's seeded initial model.
func initialParams(net *nn.Network, call pipeline.SiteCall) []float32 {
	net.Init(deepInitSeed(call))
	return append([]float32(nil), net.Params()...)
}

func toNNState(st learn.SiteState) nn.SiteState {
	return nn.SiteState{Control: method.ToFloat32(st.Control), Personal: method.ToFloat32(st.Personal), Local: method.ToFloat32(st.Local)}
}

func toLearnState(st nn.SiteState) learn.SiteState {
	return learn.SiteState{Control: method.ToFloat64(st.Control), Personal: method.ToFloat64(st.Personal), Local: method.ToFloat64(st.Local)}
}

// computeDeepDescriptor is ComputeDescriptor for a deep model: the
// descriptor of the penultimate activations of n_sub training images under
// the model the site holds (in.Model, or the initial model in round 1).
func (s *Site) computeDeepDescriptor(ctx context.Context, in pipeline.ComputeDescriptorInput, cfg method.Config) (pipeline.ComputeDescriptorOutput, error) {
	p, files, err := s.deepSiteData(in.SiteCall, cfg)
	if err != nil {
		return pipeline.ComputeDescriptorOutput{}, err
	}
	trainFile := files.Files[0]
	wrap := func(err error) error { return fmt.Errorf("site %s round %d: %w", s.name, in.Round, err) }
	net, err := cfg.NewNetwork(p.Shape)
	if err != nil {
		return pipeline.ComputeDescriptorOutput{}, temporal.NewNonRetryableApplicationError(wrap(err).Error(), pipeline.ErrTypeInvalidSpec, err)
	}
	var params []float32
	if in.Model != nil {
		if params, err = s.store.GetModelParams32(ctx, *in.Model); err != nil {
			return pipeline.ComputeDescriptorOutput{}, wrap(err)
		}
	} else {
		params = initialParams(net, in.SiteCall)
	}
	if cfg.DP.On {
		digests, err := s.deepDP(in.SiteCall, files)
		if err != nil {
			return pipeline.ComputeDescriptorOutput{}, err
		}
		// Every training image's activations under the model the site
		// holds (itself post-processing of released models): one point
		// per record, which is what the DP descriptor's proof needs.
		all := make([]int, p.Train.N)
		for i := range all {
			all[i] = i
		}
		acts, err := oneThread(net, func() ([][]float64, error) { return method.DeepActivations(net, params, p.Train, all) })
		if err != nil {
			return pipeline.ComputeDescriptorOutput{}, wrap(err)
		}
		desc, label, pend, err := s.dpDescriptor(in, cfg, acts, nil)
		if err != nil {
			return pipeline.ComputeDescriptorOutput{}, dpDescriptorError(s.name, trainFile, err)
		}
		lifetime, err := s.charge(ctx, in.SiteCall, digests, pend)
		if err != nil {
			return pipeline.ComputeDescriptorOutput{}, err
		}
		out, err := s.putDescriptor(ctx, in, cfg, desc, label)
		if err != nil {
			return out, wrap(err)
		}
		if err := s.hold(ctx, HoldReleased, in.SiteCall); err != nil {
			return pipeline.ComputeDescriptorOutput{}, err
		}
		out.NumTrain = p.Train.N
		out.Lifetime = lifetime
		return out, nil
	}
	var rows []int
	if len(in.Rows) > 0 {
		rows = in.Rows
	}
	desc, err := oneThread(net, func() (tda.Descriptor, error) {
		return method.DeepDescriptor(net, params, p.Train, cfg, descriptorSeed(in.SiteCall), rows)
	})
	var rowsErr *method.RowsError
	if errors.As(err, &rowsErr) {
		// The spec's descriptor_rows do not fit this site's images:
		// retrying cannot help, so the site drops itself from the round
		// at once, as a tabular site does (ComputeDescriptor).
		return pipeline.ComputeDescriptorOutput{}, pipeline.NewBadSiteDataError(s.name, trainFile, 0, "%v", err)
	}
	if err != nil {
		return pipeline.ComputeDescriptorOutput{}, wrap(err)
	}
	out, err := s.putDescriptor(ctx, in, cfg, desc, 0)
	if err != nil {
		return out, wrap(err)
	}
	out.NumTrain = p.Train.N
	return out, nil
}

// trainDeep is TrainLocal for a deep model: nn.UpdateSite under the
// method's rule from the pushed model (or the campaign's initial one),
// minibatches drawn with the call's seed. pTopoFL's site update is
// FedAvg's here: its topology sample weights are defined on tabular rows
// (learn.TopologySampleWeights), and its deep variant acts through the
// server's clustering, trust and blending alone.
func (s *Site) trainDeep(ctx context.Context, in pipeline.TrainLocalInput, cfg method.Config) (pipeline.TrainLocalOutput, error) {
	cfg = cfg.DriftLR(in.Cluster != nil && in.Cluster.Reclustered) // §3.5
	p, files, err := s.deepSiteData(in.SiteCall, cfg)
	if err != nil {
		return pipeline.TrainLocalOutput{}, err
	}
	// charged charges what the activity releases before the first of it
	// leaves (dp record; a no-op otherwise).
	charged := func() (*pipeline.SiteLifetime, error) { return nil, nil }
	if cfg.DP.On {
		digests, err := s.deepDP(in.SiteCall, files)
		if err != nil {
			return pipeline.TrainLocalOutput{}, err
		}
		rels := []method.SiteRelease{}
		if r, ok := cfg.TrainRelease(p.Train.N); ok {
			rels = append(rels, r)
		}
		if in.Evaluate {
			rels = append(rels, cfg.MetricsRelease(purposeMetrics))
			if p.Val.N > 0 {
				rels = append(rels, cfg.ValidationRelease())
			}
		}
		rels = append(rels, cfg.MetricsRelease(purposeUpdateMetrics))
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
		cfg.DeepSite.Train.DP.Random = st
	}
	wrap := func(err error) error { return fmt.Errorf("site %s round %d: %w", s.name, in.Round, err) }
	net, err := cfg.NewNetwork(p.Shape)
	if err != nil {
		return pipeline.TrainLocalOutput{}, temporal.NewNonRetryableApplicationError(wrap(err).Error(), pipeline.ErrTypeInvalidSpec, err)
	}
	sin := nn.SiteInput{Method: cfg.Method, Round: in.Round, InitSeed: deepInitSeed(in.SiteCall), Train: p.Train, Config: cfg.DeepSite}
	sin.Config.Train.Seed = in.Seed
	if in.StartModel != nil {
		if sin.Pushed, err = s.store.GetModelParams32(ctx, *in.StartModel); err != nil {
			return pipeline.TrainLocalOutput{}, wrap(err)
		}
	}
	st, err := s.getSiteState(ctx, in.SiteState)
	if err != nil {
		return pipeline.TrainLocalOutput{}, wrap(err)
	}
	sin.State = toNNState(st)
	if method.SitesReadServerState(cfg.Method) {
		// SCAFFOLD's c, as for a tabular site (TrainLocal).
		server, err := getServerState(ctx, s.store, in.ServerState)
		if err != nil {
			return pipeline.TrainLocalOutput{}, wrap(err)
		}
		sin.ServerControl = method.ToFloat32(server.Control)
	}

	out, err := oneThread(net, func() (nn.SiteOutput, error) { return nn.UpdateSite(net, sin) })
	if err != nil {
		return pipeline.TrainLocalOutput{}, wrap(err)
	}
	if err := checkDiverged(s.name, in.Round, in.Method, out.Params); err != nil {
		return pipeline.TrainLocalOutput{}, err
	}
	res := pipeline.TrainLocalOutput{NumTrain: out.N, Loss: out.MeanLoss}
	if cfg.DP.On {
		res.Loss = 0 // computed from the records without noise: not released under dp record
	}
	if res.Lifetime, err = charged(); err != nil {
		return pipeline.TrainLocalOutput{}, err
	}
	// Written from the network's float32 slab, without a float64 copy of
	// a model that may hold millions of parameters; under secure
	// aggregation into the site's keep, which it leaves only inside a
	// group's masked sum (SecAggMask).
	sa := in.SecAgg != nil
	modelRec := store.ModelRecord{
		Campaign: in.Campaign, Round: in.Round, Site: s.name, Method: string(in.Method), Kind: store.KindModel,
	}
	var kept *pipeline.SecAggAdvert
	if sa {
		b, eerr := store.EncodeModel32(modelRec, out.Params)
		var ref pipeline.ArtifactRef
		if ref, err = s.keepBytes(in.Keys().Model(s.name), b, eerr); err != nil {
			return pipeline.TrainLocalOutput{}, wrap(err)
		}
		kept = &pipeline.SecAggAdvert{Model: ref}
	} else {
		if res.Model, err = s.store.PutModel32(ctx, in.Keys().Model(s.name), modelRec, out.Params); err != nil {
			return pipeline.TrainLocalOutput{}, wrap(err)
		}
		res.Add(pipeline.ReleaseModel, len(out.Params))
	}
	if cfg.DP.On {
		if err := s.hold(ctx, HoldReleased, in.SiteCall); err != nil {
			return pipeline.TrainLocalOutput{}, err
		}
	}
	if out.Control != nil {
		rec := store.VectorRecord{Campaign: in.Campaign, Round: in.Round, Site: s.name, Method: string(in.Method),
			Kind: kindControl, Vectors: map[string][]float64{vecControl: method.ToFloat64(out.Control)}}
		var ref pipeline.ArtifactRef
		if sa {
			b, eerr := store.EncodeVectors32([]store.VectorRecord{rec})
			ref, err = s.keepBytes(in.Keys().Control(s.name), b, eerr)
		} else {
			ref, err = putVectors32(ctx, s.store, in.Keys().Control(s.name), []store.VectorRecord{rec})
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
	state := toLearnState(out.State)
	if state.Control != nil || state.Personal != nil || state.Local != nil {
		recs := []store.VectorRecord{siteStateRecord(in.SiteCall, state)}
		var ref pipeline.ArtifactRef
		if sa {
			b, eerr := store.EncodeVectors32(recs)
			ref, err = s.keepBytes(in.Keys().SiteState(s.name), b, eerr)
		} else {
			ref, err = putVectors32(ctx, s.store, in.Keys().SiteState(s.name), recs)
		}
		if err != nil {
			return pipeline.TrainLocalOutput{}, wrap(err)
		}
		res.SiteState = &ref
		if !sa {
			res.Add(pipeline.ReleaseSiteState, stateNumbers(state))
		}
	}
	if sa {
		if res.SecAgg, err = s.advertise(in.SiteCall, in.SecAgg.Group, kept.Model, kept.Control); err != nil {
			return pipeline.TrainLocalOutput{}, err
		}
	}
	if in.Evaluate {
		if !method.EvaluatesOwnUpdate(in.Method) {
			return pipeline.TrainLocalOutput{}, temporal.NewNonRetryableApplicationError(
				wrap(fmt.Errorf("asked to evaluate in training, but %s scores the aggregated model", in.Method)).Error(), "BadRequest", nil)
		}
		ev, err := s.scoreDeep(in.SiteCall, in, purposeMetrics, net, cfg, p.Test, p.Val, nil, out.State)
		if err != nil {
			return pipeline.TrainLocalOutput{}, wrap(fmt.Errorf("evaluate: %w", err))
		}
		res.Released.Released = append(res.Released.Released, ev.Released.Released...)
		ev.Released = pipeline.Released{}
		res.Evaluation = &ev
	}
	// The trained model's own score, before aggregation (the anchor's
	// "local" accuracy): the network still holds out.Params.
	type scores struct{ auc, acc float64 }
	sc, err := oneThread(net, func() (scores, error) {
		auc, acc, err := method.EvaluateDeep(net, out.Params, p.Test)
		return scores{auc, acc}, err
	})
	if err != nil {
		return pipeline.TrainLocalOutput{}, wrap(fmt.Errorf("evaluate the update: %w", err))
	}
	upd := pipeline.EvaluateOutput{AUC: sc.auc, Accuracy: sc.acc, NumTest: p.Test.N}
	updNumbers := 2 // its AUC and accuracy
	if cfg.DP.On {
		updNumbers = 1 // its noised accuracy
		st, err := s.dpStream(in.SiteCall, purposeUpdateMetrics, in)
		if err != nil {
			return pipeline.TrainLocalOutput{}, err
		}
		upd = dpTop1(cfg, sc.acc, p.Test.N, st)
		upd.Released = pipeline.Released{}
	}
	res.Add(pipeline.ReleaseMetrics, updNumbers)
	res.UpdateEvaluation = &upd
	return res, nil
}

// evaluateDeep is Evaluate for a deep model.
func (s *Site) evaluateDeep(ctx context.Context, in pipeline.EvaluateInput, cfg method.Config) (pipeline.EvaluateOutput, error) {
	p, files, err := s.deepSiteData(in.SiteCall, cfg)
	if err != nil {
		return pipeline.EvaluateOutput{}, err
	}
	var digests splitDigests
	if cfg.DP.On {
		if digests, err = s.deepDP(in.SiteCall, files); err != nil {
			return pipeline.EvaluateOutput{}, err
		}
	}
	wrap := func(err error) error { return fmt.Errorf("site %s round %d: evaluate: %w", s.name, in.Round, err) }
	net, err := cfg.NewNetwork(p.Shape)
	if err != nil {
		return pipeline.EvaluateOutput{}, temporal.NewNonRetryableApplicationError(wrap(err).Error(), pipeline.ErrTypeInvalidSpec, err)
	}
	pushed, err := s.store.GetModelParams32(ctx, in.Model)
	if err != nil {
		return pipeline.EvaluateOutput{}, wrap(err)
	}
	st, err := s.getSiteState(ctx, in.SiteState)
	if err != nil {
		return pipeline.EvaluateOutput{}, wrap(err)
	}
	ev, err := s.scoreDeep(in.SiteCall, in, purposeMetrics, net, cfg, p.Test, p.Val, pushed, toNNState(st))
	if err != nil {
		return pipeline.EvaluateOutput{}, wrap(err)
	}
	if cfg.DP.On {
		rels := []method.SiteRelease{cfg.MetricsRelease(purposeMetrics)}
		if p.Val.N > 0 {
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

// scoreDeep evaluates the model the method scores the site with
// (nn.EvaluationParams) on its test images: its top-1 accuracy and macro
// AUC, or under dp record its noised top-1 accuracy alone (dpTop1, drawn
// from the stream of the activity's input in and purpose).
func (s *Site) scoreDeep(call pipeline.SiteCall, in any, purpose string, net *nn.Network, cfg method.Config, test, val nn.Data, pushed []float32, state nn.SiteState) (pipeline.EvaluateOutput, error) {
	ev, err := plainScoreDeep(net, cfg, test, pushed, state)
	if err != nil || !cfg.DP.On {
		ev.Add(pipeline.ReleaseMetrics, 2)
		if err != nil || val.N == 0 {
			return ev, err
		}
		// The same model on the held-out training images.
		v, err := plainScoreDeep(net, cfg, val, pushed, state)
		if err != nil {
			return pipeline.EvaluateOutput{}, fmt.Errorf("validation: %w", err)
		}
		ev.ValAUC, ev.ValAccuracy, ev.NumVal = &v.AUC, &v.Accuracy, v.NumTest
		ev.Add(pipeline.ReleaseMetrics, 2)
		return ev, nil
	}
	st, err := s.dpStream(call, purpose, in)
	if err != nil {
		return pipeline.EvaluateOutput{}, err
	}
	out := dpTop1(cfg, ev.Accuracy, test.N, st)
	if val.N == 0 {
		return out, nil
	}
	// The held-out training images' top-1 count, through the same
	// mechanism at dp_validation_noise; their AUC is not released.
	v, err := plainScoreDeep(net, cfg, val, pushed, state)
	if err != nil {
		return pipeline.EvaluateOutput{}, fmt.Errorf("validation: %w", err)
	}
	valSt, err := s.dpStream(call, purposeValidation, in)
	if err != nil {
		return pipeline.EvaluateOutput{}, err
	}
	acc, _ := method.ReleaseDPTop1(v.Accuracy*float64(val.N), val.N, cfg.DP.ValidationNoise, valSt)
	out.ValAccuracy, out.NumVal = &acc, val.N
	out.Add(pipeline.ReleaseMetrics, 1)
	return out, nil
}

// plainScoreDeep is scoreDeep without privacy.
func plainScoreDeep(net *nn.Network, cfg method.Config, test nn.Data, pushed []float32, state nn.SiteState) (pipeline.EvaluateOutput, error) {
	params := nn.EvaluationParams(cfg.Method, pushed, state)
	if params == nil {
		return pipeline.EvaluateOutput{}, fmt.Errorf("method %s evaluates the site's own state, and the site has none", cfg.Method)
	}
	type scores struct{ auc, acc float64 }
	sc, err := oneThread(net, func() (scores, error) {
		auc, acc, err := method.EvaluateDeep(net, params, test)
		return scores{auc, acc}, err
	})
	if err != nil {
		return pipeline.EvaluateOutput{}, err
	}
	auc, acc := sc.auc, sc.acc
	return pipeline.EvaluateOutput{AUC: auc, Accuracy: acc, NumTest: test.N}, nil
}
