package activities

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
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

	// mu guards cache, the site's data as last read and validated, with
	// the standardised splits prepared from it, per data directory: a site
	// worker runs every round's training and evaluation (and any retry) on
	// the same files, so parsing them again for each call only burns CPU.
	// There is more than one directory only in a continual scenario, where
	// the site's data change from some round on (dataset.RoundDir). See
	// loadCached.
	mu    sync.Mutex
	cache map[string]*siteCache
	// shifts is the listing of dataDir's shift directories as last read
	// (dataset.ShiftRounds), kept while the directory is unchanged.
	shifts *shiftListing
}

// shiftListing is dataset.ShiftRounds(dir) read at checked, while dir's
// stat was st. Adding or removing a shift directory changes dir's mtime
// and ctime, so an unchanged stat, both times safely older than the
// reading (racyWindow), means an unchanged listing.
type shiftListing struct {
	st      fileStat
	checked time.Time
	rounds  []int
}

// siteCache is what one reading of the site's files gave. Nothing in it is
// ever written after it is cached: the core reads training rows and
// prepared splits and never modifies them (simulate.Run, which the
// pipeline must equal, likewise prepares each site once for all rounds).
type siteCache struct {
	stamps [2]fileStamp // train, test
	// checked is when the files were last hashed (see fresh).
	checked time.Time
	data    *dataset.SiteData
	prep    method.PreparedSite
	// prepErr is PrepareSite's error for these files: bad data stays bad
	// until the files change.
	prepErr error
}

// fileStat is what a stat says about a file's identity and version: path,
// device and inode, size, modification and status-change times. The
// status-change time (ctime) moves on every write, rename onto the path or
// metadata change, and no tool can set it back, unlike the mtime that
// cp -p, rsync or touch can.
type fileStat struct {
	path                      string
	dev, ino                  uint64
	size, modTime, changeTime int64 // ns
}

// fileStamp is a fileStat and the file's sha256.
type fileStamp struct {
	fileStat
	sha256 [sha256.Size]byte
}

func statFile(path string) (fileStat, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStat{}, err
	}
	st := fileStat{path: path, size: fi.Size(), modTime: fi.ModTime().UnixNano()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.dev, st.ino = uint64(sys.Dev), uint64(sys.Ino)
		st.changeTime = sys.Ctim.Sec*1e9 + sys.Ctim.Nsec
	}
	return st, nil
}

func hashFile(path string) (sum [sha256.Size]byte, err error) {
	f, err := os.Open(path)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return sum, err
	}
	h.Sum(sum[:0])
	return sum, nil
}

// racyWindow: a file whose mtime or ctime is this close to (or after) the
// moment it was hashed may have been rewritten within the resolution of
// those timestamps without changing them, so its hash is checked again on
// the next call (git's "racily clean" rule). Otherwise an unchanged stat
// means unchanged content, and no hashing is needed.
const racyWindow = 2 * time.Second

// fresh reports whether stats still describe the files c was read from
// without reading them: same path, inode, size, mtime and ctime, and both
// times safely older than the last hash.
func (c *siteCache) fresh(stats [2]fileStat) bool {
	limit := c.checked.Add(-racyWindow).UnixNano()
	for i, st := range stats {
		if c.stamps[i].fileStat != st || st.modTime >= limit || st.changeTime >= limit {
			return false
		}
	}
	return true
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

// load reads and validates the site's data (from the cache while its files
// are unchanged); a problem with it is a non-retryable BadSiteData error
// naming site, file and line.
func (s *Site) load(call pipeline.SiteCall) (*siteCache, error) {
	if call.Site != s.name {
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("site %s: asked to run for site %q; check the task queue routing", s.name, call.Site),
			"WrongSite", nil)
	}
	// The data as they are in the call's round: files under
	// dataset.ShiftDir(dir, r) replace the originals from round r on.
	c, err := s.loadCached(dataset.RoundDirAmong(s.dataDir, s.name, call.Round, s.shiftRounds()))
	if err != nil {
		var de *dataset.SiteDataError
		if errors.As(err, &de) {
			return nil, pipeline.NewBadSiteDataError(de.Site, de.File, de.Line, "%s", de.Msg)
		}
		return nil, err
	}
	return c, nil
}

// shiftRounds returns dataset.ShiftRounds(s.dataDir), listing the
// directory again only when its stat changed or is too recent to trust.
func (s *Site) shiftRounds() []int {
	st, err := statFile(s.dataDir)
	if err != nil {
		return dataset.ShiftRounds(s.dataDir)
	}
	s.mu.Lock()
	c := s.shifts
	s.mu.Unlock()
	if c != nil {
		limit := c.checked.Add(-racyWindow).UnixNano()
		if c.st == st && st.modTime < limit && st.changeTime < limit {
			return c.rounds
		}
	}
	checked := time.Now()
	rounds := dataset.ShiftRounds(s.dataDir)
	if after, err := statFile(s.dataDir); err == nil && after == st {
		s.mu.Lock()
		s.shifts = &shiftListing{st: st, checked: checked, rounds: rounds}
		s.mu.Unlock()
	}
	return rounds
}

// loadCached returns the site's data, parsed and prepared, re-reading the
// files only when one of them changed (path, inode, size, mtime, ctime, and
// the sha256 of the content while the timestamps are too recent to trust;
// see fresh). Errors are not cached: a missing or bad file is looked at
// again by the next call, so a fixed file is picked up at once.
func (s *Site) loadCached(dir string) (*siteCache, error) {
	stats := func() ([2]fileStat, error) {
		var st [2]fileStat
		for i, split := range []string{dataset.TrainSplit, dataset.TestSplit} {
			p, err := dataset.SiteFile(dir, s.name, split)
			if err != nil {
				return st, err
			}
			if st[i], err = statFile(p); err != nil {
				return st, err
			}
		}
		return st, nil
	}
	stamps := func() (t time.Time, st [2]fileStamp, err error) {
		t = time.Now()
		sts, err := stats()
		if err != nil {
			return t, st, err
		}
		for i := range sts {
			st[i].fileStat = sts[i]
			if st[i].sha256, err = hashFile(sts[i].path); err != nil {
				return t, st, err
			}
		}
		return t, st, nil
	}
	s.mu.Lock()
	c := s.cache[dir]
	s.mu.Unlock()
	if c != nil {
		if st, err := stats(); err == nil {
			s.mu.Lock()
			ok := c.fresh(st)
			s.mu.Unlock()
			if ok {
				return c, nil
			}
		}
	}
	checked, before, err := stamps()
	if err == nil && c != nil && c.stamps == before {
		s.mu.Lock()
		if checked.After(c.checked) {
			c.checked = checked
		}
		s.mu.Unlock()
		return c, nil
	}
	// A missing file or one that cannot be read: LoadSite reports it the
	// way it reports every problem with the data.
	d, lerr := dataset.LoadSite(dir, s.name, s.opt)
	if lerr != nil {
		return nil, lerr
	}
	c = &siteCache{data: d, checked: checked}
	c.prep, c.prepErr = method.PrepareSite(s.name, d.Train.X, d.Train.Y, d.Test.X, d.Test.Y)
	// Cache only what was read from files that did not change while they
	// were being read; otherwise the next call reads them again.
	if _, after, err2 := stamps(); err == nil && err2 == nil && after == before {
		c.stamps = before
		s.mu.Lock()
		if s.cache == nil {
			s.cache = map[string]*siteCache{}
		}
		s.cache[dir] = c
		s.mu.Unlock()
	}
	return c, nil
}

func (s *Site) prepare(call pipeline.SiteCall) (*dataset.SiteData, method.PreparedSite, method.Config, error) {
	cfg, err := method.Resolve(call.Method, call.Preset, call.Hyperparameters)
	if err != nil {
		return nil, method.PreparedSite{}, method.Config{}, temporal.NewNonRetryableApplicationError(err.Error(), pipeline.ErrTypeInvalidSpec, err)
	}
	c, err := s.load(call)
	if err != nil {
		return nil, method.PreparedSite{}, method.Config{}, err
	}
	if c.prepErr != nil {
		// The data passed validation, so what is left (a constant
		// column overflowing the scaler, say) is still the data's fault.
		return nil, method.PreparedSite{}, method.Config{}, pipeline.NewBadSiteDataError(s.name, c.data.TrainFile, 0, "%v", c.prepErr)
	}
	return c.data, c.prep, cfg, nil
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
	cfg, err := method.Resolve(in.Method, in.Preset, in.Hyperparameters)
	if err != nil {
		return pipeline.ComputeDescriptorOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), pipeline.ErrTypeInvalidSpec, err)
	}
	c, err := s.load(in.SiteCall)
	if err != nil {
		return pipeline.ComputeDescriptorOutput{}, err
	}
	d := c.data
	opt := tda.DescriptorOptions{Variant: cfg.Descriptor, NSub: cfg.NSub, Seed: descriptorSeed(in.SiteCall)}
	if len(in.Rows) > 0 {
		opt.Rows = in.Rows
	}
	desc, err := tda.ComputeDescriptor(d.Train.X, opt)
	if err != nil {
		return pipeline.ComputeDescriptorOutput{}, pipeline.NewBadSiteDataError(s.name, d.TrainFile, 0, "descriptor: %v", err)
	}
	rec := store.DescriptorRecord{
		Campaign: in.Campaign, Round: in.Round, Site: s.name, Method: string(in.Method),
		Descriptor: desc.Vector, H0: pairs(desc.H0), H1: pairs(desc.H1),
	}
	b, err := store.EncodeDescriptor(rec)
	if err != nil {
		return pipeline.ComputeDescriptorOutput{}, fmt.Errorf("site %s: %w", s.name, err)
	}
	ref, err := s.store.PutCached(ctx, artifact.DescriptorKey(in.Campaign, in.Round, s.name), b)
	if err != nil {
		return pipeline.ComputeDescriptorOutput{}, fmt.Errorf("site %s: %w", s.name, err)
	}
	return pipeline.ComputeDescriptorOutput{Descriptor: ref, NumTrain: len(d.Train.X)}, nil
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
		Method: cfg.Method, Round: in.Round, Seed: method.TrainSeed(in.Preset, in.CampaignSeed, in.SiteIndex, in.Seed),
		Train: p.Train, TopologyX: d.Train.X, Config: cfg.Site,
	}
	if in.StartModel != nil {
		if sin.Pushed, err = s.store.GetModelParamsCached(ctx, *in.StartModel); err != nil {
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
		b, err := s.store.GetCached(ctx, *in.Descriptor)
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
	ref, err := s.store.PutModelCached(ctx, artifact.ModelKey(in.Campaign, in.Round, s.name), store.ModelRecord{
		Campaign: in.Campaign, Round: in.Round, Site: s.name, Method: string(in.Method), Kind: store.KindModel, Params: out.Params,
	})
	if err != nil {
		return pipeline.TrainLocalOutput{}, wrap(err)
	}
	res.Model = ref
	if out.Control != nil {
		rec := store.VectorRecord{Campaign: in.Campaign, Round: in.Round, Site: s.name, Method: string(in.Method),
			Kind: kindControl, Vectors: map[string][]float64{vecControl: out.Control}}
		ref, err := putVectors(ctx, s.store, artifact.ControlKey(in.Campaign, in.Round, s.name), []store.VectorRecord{rec})
		if err != nil {
			return pipeline.TrainLocalOutput{}, wrap(err)
		}
		res.Control = &ref
	}
	// A method that keeps nothing between rounds (FedAvg, FedProx,
	// pTopoFL, the robust baselines) writes no state object: the round
	// carries no state for the site, and the next round reads none.
	if st := out.State; st.Control != nil || st.Personal != nil || st.Local != nil {
		stateRef, err := putVectors(ctx, s.store, artifact.SiteStateKey(in.Campaign, in.Round, s.name),
			[]store.VectorRecord{siteStateRecord(in.SiteCall, st)})
		if err != nil {
			return pipeline.TrainLocalOutput{}, wrap(err)
		}
		res.SiteState = &stateRef
	}
	m := cfg.Site.Model(p.Train.NumFeatures())
	res.Loss = m.Objective(out.Params, p.Train, nil)
	if in.Evaluate {
		if !method.EvaluatesOwnUpdate(in.Method) {
			return pipeline.TrainLocalOutput{}, temporal.NewNonRetryableApplicationError(
				wrap(fmt.Errorf("asked to evaluate in training, but %s scores the aggregated model", in.Method)).Error(), "BadRequest", nil)
		}
		// The model to score is the site's own update (nothing the
		// aggregation sends back changes it), so no pushed model.
		ev, err := score(cfg, p.Test, nil, out.State)
		if err != nil {
			return pipeline.TrainLocalOutput{}, wrap(fmt.Errorf("evaluate: %w", err))
		}
		res.Evaluation = &ev
	}
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
	_, p, cfg, err := s.prepare(in.SiteCall)
	if err != nil {
		return pipeline.EvaluateOutput{}, err
	}
	wrap := func(err error) error { return fmt.Errorf("site %s round %d: evaluate: %w", s.name, in.Round, err) }
	pushed, err := s.store.GetModelParamsCached(ctx, in.Model)
	if err != nil {
		return pipeline.EvaluateOutput{}, wrap(err)
	}
	state, err := getSiteState(ctx, s.store, in.SiteState)
	if err != nil {
		return pipeline.EvaluateOutput{}, wrap(err)
	}
	ev, err := score(cfg, p.Test, pushed, state)
	if err != nil {
		return pipeline.EvaluateOutput{}, wrap(err)
	}
	return ev, nil
}

// score evaluates, on the site's test split, the model the method scores
// the site with (learn.EvaluationParams) given the pushed model and the
// site's state after the round.
func score(cfg method.Config, test learn.Data, pushed []float64, state learn.SiteState) (pipeline.EvaluateOutput, error) {
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
