package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sync"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/internal/trainerrun"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/safetensors"
	"github.com/ptopofl/ptopofl/store"
	"github.com/ptopofl/ptopofl/tda"
	"github.com/ptopofl/ptopofl/trainer"
)

// The external path of a site (model "external", issues 24 and 34): every
// task of the round runs the site's own training program under the trainer
// protocol ptopofl.trainer/v1 (package trainer; the processes are
// internal/trainerrun's), one process per task attempt or one serve-mode
// process per site, in a sealed environment. The site decides what runs:
// its worker maps trainer names to commands (trainerrun.Host), and a
// campaign only names one. What the server
// sees is what it sees of our own models: a flat parquet model (the
// program's safetensors tensors in the order of their names sorted
// byte-wise, safetensors.Flatten), a descriptor of 48 numbers, scores.

// Error types of the external path (non-retryable: the same program, data
// and model give the same failure again). The faults of a program's
// outputs are named by the trainer.Kind… constants (trainer.KindNoResult,
// trainer.KindUnsupportedDType, …), which reach the manifest as the
// dropped site's kind.
const (
	// ErrTypeUnknownTrainer: the campaign names a trainer this site's
	// worker does not map to a command.
	ErrTypeUnknownTrainer = "UnknownTrainer"
	// ErrTypeBadModel: the program exited 66 (its input model is unusable).
	ErrTypeBadModel = "BadModel"
	// ErrTypeLayoutMismatch: the program wrote a model whose tensors differ
	// from the campaign's layout.
	ErrTypeLayoutMismatch = trainer.KindLayoutMismatch
	// ErrTypeTrainerProtocol: a model the server was to adopt breaks the
	// protocol (its size differs from its layout's).
	ErrTypeTrainerProtocol = trainer.KindProtocol
	// ErrTypeTrainerFailed: the program failed in a way a retry may mend
	// (another exit status, a signal, a timeout, a serve-mode process
	// that died): retried under the site activities' bounded policy, and
	// the dropped site's kind once that gives up.
	ErrTypeTrainerFailed = "TrainerFailed"
)

// externalTrainers is a site's trainer set-up (WithTrainers).
type externalTrainers struct {
	host *trainerrun.Host
	root string
	log  io.Writer

	mu      sync.Mutex
	layouts map[string]safetensors.Layout // by the layout object's sha256
}

// WithTrainers lets the site run the programs of host (shared by every
// site of the worker: its programs, the variables they get, its slots) for
// campaigns of model "external". root is the directory its task
// directories go under (made if missing); what a previous worker over the
// same root left running when it died is killed first
// (trainerrun.SweepOrphans). log receives the programs' output; nil
// discards it.
func (s *Site) WithTrainers(host *trainerrun.Host, root string, log io.Writer) (*Site, error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("site %s: trainer directory: %w", s.name, err)
	}
	if _, err := trainerrun.SweepOrphans(root); err != nil {
		return nil, fmt.Errorf("site %s: %w", s.name, err)
	}
	s.trainers = &externalTrainers{host: host, root: root, log: log, layouts: map[string]safetensors.Layout{}}
	return s, nil
}

// externalConfig resolves a call's configuration when its model is
// "external" (external reports it).
func externalConfig(call pipeline.SiteCall) (cfg method.Config, external bool, err error) {
	if !call.Hyperparameters.IsExternal() {
		return method.Config{}, false, nil
	}
	cfg, err = method.Resolve(call.Method, call.Preset, call.Hyperparameters)
	if err != nil {
		return method.Config{}, true, temporal.NewNonRetryableApplicationError(err.Error(), pipeline.ErrTypeInvalidSpec, err)
	}
	return cfg, true, nil
}

// checkTrainer refuses, naming the trainer, a campaign whose trainer this
// site's worker does not have: the site drops out of the round.
func (s *Site) checkTrainer(cfg method.Config) error {
	if s.trainers == nil || !s.trainers.host.Has(cfg.Trainer) {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("site %s: no trainer named %q (the site's worker maps names to its own programs with --trainer %s=COMMAND or --trainer-serve %s=COMMAND)", s.name, cfg.Trainer, cfg.Trainer, cfg.Trainer),
			ErrTypeUnknownTrainer, nil)
	}
	return nil
}

// siteFiles is a site's data as its own program gets them: the absolute
// paths of each split's files (a tabular site's from the round's shift
// directory), whether they are images, and the record counts.
type siteFiles struct {
	train, test   []string
	label         string // a tabular site's label column, "" for images
	images        bool
	nTrain, nTest int
}

// externalData returns the site's files for call, as its worker reads them.
func (s *Site) externalData(call pipeline.SiteCall, cfg method.Config) (siteFiles, error) {
	if call.Site != s.name {
		return siteFiles{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("site %s: asked to run for site %q; check the task queue routing", s.name, call.Site),
			"WrongSite", nil)
	}
	if dataset.IsImageSite(s.images.dir, s.name) {
		// The images are read and checked here, as our own models read
		// them, so that bad files drop the site with a named error before
		// any program runs; the program reads them again itself.
		d, err := s.images.load(call.Hyperparameters.Classes)
		if err != nil {
			var de *dataset.SiteDataError
			if errors.As(err, &de) {
				return siteFiles{}, pipeline.NewBadSiteDataError(de.Site, de.File, de.Line, "%s", de.Msg)
			}
			return siteFiles{}, err
		}
		f, err := absAll(d.Files[:])
		if err != nil {
			return siteFiles{}, err
		}
		return siteFiles{train: f[:2], test: f[2:], images: true, nTrain: d.Train.N, nTest: d.Test.N}, nil
	}
	c, err := s.load(call)
	if err != nil {
		return siteFiles{}, err
	}
	f, err := absAll([]string{c.Data.TrainFile, c.Data.TestFile})
	if err != nil {
		return siteFiles{}, err
	}
	return siteFiles{train: f[:1], test: f[1:], label: s.label, nTrain: len(c.Data.Train.X), nTest: len(c.Data.Test.X)}, nil
}

func absAll(paths []string) ([]string, error) {
	out := make([]string, len(paths))
	for i, p := range paths {
		a, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		out[i] = a
	}
	return out, nil
}

// taskHyperparameters is task.json's hyperparameters: every hyper-parameter
// of the campaign by its JSON name with the preset's defaults filled in, as
// the spec stores them (the privacy and site-distance settings only when a
// campaign sets them; without model, trainer and trainer_params, which say
// how the program was chosen), the preset, and trainer_params' keys,
// passed through unchanged.
func taskHyperparameters(call pipeline.SiteCall, cfg method.Config) (map[string]any, error) {
	h := call.Hyperparameters.WithDefaults(call.Preset)
	b, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	delete(m, "model")
	delete(m, "trainer")
	delete(m, "trainer_params")
	m["preset"] = call.Preset
	extra, err := cfg.TrainerParams.Object()
	if err != nil {
		return nil, err
	}
	for k, v := range extra {
		m[k] = v
	}
	return m, nil
}

// runTask runs one task of the site's program for call: stage writes the
// input model (nil: none), collect reads the outputs. Progress lines
// become the activity's heartbeat details. A failure of the program is
// mapped to the round's terms: status 65 drops the site as bad site data,
// 66 as a bad model, an output that breaks the protocol under its fault's
// kind (trainer.KindNoResult, …), all named and not retried; anything
// else (ErrTypeTrainerFailed) is retried under the activity's bounded
// policy. The error text is the runner's Failure text (a status, its
// meaning, an identifier-like kind and the runner's own words), never the
// program's message or output, which go to the worker's log only.
func (s *Site) runTask(ctx context.Context, call pipeline.SiteCall, cfg method.Config, task trainer.Task,
	stage func(dir string) error, collect func(dir string, res trainer.Result) error) (trainer.Result, error) {
	if err := s.checkTrainer(cfg); err != nil {
		return trainer.Result{}, err
	}
	hp, err := taskHyperparameters(call, cfg)
	if err != nil {
		return trainer.Result{}, temporal.NewNonRetryableApplicationError(err.Error(), pipeline.ErrTypeInvalidSpec, nil)
	}
	task.Campaign, task.Site, task.Round, task.Method, task.Hyperparameters = call.Campaign, s.name, call.Round, string(call.Method), hp
	c := trainerrun.Call{Site: s.name, Root: s.trainers.root, Log: s.trainers.log, Program: cfg.Trainer, Task: task, Stage: stage, Collect: collect}
	if activity.IsActivity(ctx) {
		c.Progress = func(p json.RawMessage) { activity.RecordHeartbeat(ctx, p) }
	}
	res, err := s.trainers.host.Run(ctx, c)
	if err == nil {
		return res, nil
	}
	var f *trainerrun.Failure
	if !errors.As(err, &f) {
		var te *temporal.ApplicationError
		if errors.As(err, &te) {
			return trainer.Result{}, err
		}
		return trainer.Result{}, fmt.Errorf("site %s round %d: %s: %w", s.name, call.Round, task.Task, err)
	}
	what := fmt.Sprintf("site %s round %d: trainer %s, task %s: %v", s.name, call.Round, cfg.Trainer, task.Task, f)
	switch {
	case f.Reason == trainerrun.ReasonBadSiteData:
		return trainer.Result{}, pipeline.NewBadSiteDataError(s.name, "trainer "+cfg.Trainer, 0, "task %s: %v", task.Task, f)
	case f.Reason == trainerrun.ReasonBadModel:
		return trainer.Result{}, temporal.NewNonRetryableApplicationError(what, ErrTypeBadModel, nil)
	case f.Fault != "":
		return trainer.Result{}, temporal.NewNonRetryableApplicationError(what, f.Fault, nil)
	case !f.Retryable:
		return trainer.Result{}, temporal.NewNonRetryableApplicationError(what, ErrTypeTrainerFailed, nil)
	}
	return trainer.Result{}, temporal.NewApplicationError(what, ErrTypeTrainerFailed)
}

// outputFault is the non-retryable error of a program's output that
// breaks the protocol: kind is a trainer.Kind… constant, detail safe words
// (tensor names only when identifier-like, positions, dtypes, shapes).
func (s *Site) outputFault(round int, cfg method.Config, task, kind, detail string) error {
	return temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("site %s round %d: trainer %s, task %s: %s: %s", s.name, round, cfg.Trainer, task, kind, detail), kind, nil)
}

// layout returns the campaign's model layout (cached by its sha256).
func (s *Site) layout(ctx context.Context, m *pipeline.ExternalModel) (safetensors.Layout, error) {
	if m == nil {
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("site %s: a campaign of model %q without its model layout in the call", s.name, method.ModelExternal), "BadRequest", nil)
	}
	t := s.trainers
	if t != nil {
		t.mu.Lock()
		l, ok := t.layouts[m.Layout.SHA256]
		t.mu.Unlock()
		if ok {
			return l, nil
		}
	}
	b, err := s.store.GetCached(ctx, m.Layout)
	if err != nil {
		return nil, err
	}
	l, err := DecodeLayout(b)
	if err != nil {
		return nil, err
	}
	if t != nil {
		t.mu.Lock()
		t.layouts[m.Layout.SHA256] = l
		t.mu.Unlock()
	}
	return l, nil
}

// DecodeLayout reads a model layout object (artifact.ModelLayoutKey) and
// checks it: tensor names sorted and unique, F32 or F64, shapes within the
// safetensors bounds.
func DecodeLayout(b []byte) (safetensors.Layout, error) {
	var l safetensors.Layout
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("model layout: %w", err)
	}
	if len(l) == 0 {
		return nil, errors.New("model layout: no tensors")
	}
	if _, err := safetensors.Unflatten(make([]float64, l.Size()), l); err != nil {
		return nil, fmt.Errorf("model layout: %w", err)
	}
	return l, nil
}

// allF32 reports whether every tensor of l is F32: the campaign's models
// are then stored as float32.
func allF32(l safetensors.Layout) bool {
	for _, t := range l {
		if t.DType != safetensors.F32 {
			return false
		}
	}
	return true
}

// stageModel writes the flat model ref points at as the safetensors file
// of layout at path.
func (s *Site) stageModel(ctx context.Context, ref pipeline.ArtifactRef, layout safetensors.Layout, path string) error {
	params, err := s.store.GetModelParamsCached(ctx, ref)
	if err != nil {
		return err
	}
	f, err := safetensors.Unflatten(params, layout)
	if err != nil {
		return fmt.Errorf("model %s: %w", ref.Key, err)
	}
	b, err := safetensors.Encode(f)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// maxModelFile bounds the model file a program may write (4 GiB: a
// ResNet-50 in F32 is 0.1 GiB).
const maxModelFile = 4 << 30

// readModelOut reads and flattens the program's model file. What breaks
// the protocol is a *trainer.Fault, named once and not retried (a program
// killed mid-write never gets here, as it wrote no result): no file
// (KindMissingOutput), a file that is not safetensors
// (KindMalformedSafetensors), a tensor that is neither F32 nor F64
// (KindUnsupportedDType), a value that is not finite
// (KindNonFiniteModel). Tensors are named only when their names are
// identifier-like, else by position; values never.
func readModelOut(path string) ([]float64, safetensors.Layout, *trainer.Fault) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, nil, &trainer.Fault{Kind: trainer.KindMissingOutput, Detail: "the program wrote its result but no model file"}
	}
	if fi.Size() > maxModelFile {
		return nil, nil, &trainer.Fault{Kind: trainer.KindMalformedSafetensors, Detail: fmt.Sprintf("the model file has %d bytes, more than %d", fi.Size(), maxModelFile)}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, &trainer.Fault{Kind: trainer.KindMalformedSafetensors, Detail: "the model file is unreadable"}
	}
	f, err := safetensors.Decode(b)
	if err != nil {
		return nil, nil, &trainer.Fault{Kind: trainer.KindMalformedSafetensors, Detail: "the model file is not a valid safetensors file"}
	}
	for i, t := range f.Tensors {
		if t.DType != safetensors.F32 && t.DType != safetensors.F64 {
			return nil, nil, &trainer.Fault{Kind: trainer.KindUnsupportedDType, Detail: fmt.Sprintf(
				"tensor %s is %s; a model's tensors are F32 or F64 (leave integer buffers such as BatchNorm's num_batches_tracked out)", tensorName(t.Name, i), t.DType)}
		}
	}
	params, layout, err := safetensors.Flatten(f)
	if err != nil {
		return nil, nil, &trainer.Fault{Kind: trainer.KindMalformedSafetensors, Detail: "the model file's tensors cannot be read"}
	}
	if len(params) == 0 {
		return nil, nil, &trainer.Fault{Kind: trainer.KindLayoutMismatch, Detail: "the model has no parameters"}
	}
	for j, v := range params {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, nil, &trainer.Fault{Kind: trainer.KindNonFiniteModel, Detail: fmt.Sprintf(
				"parameter %d (of tensor %s) is not finite; a model that diverges in training needs a lower lr", j, tensorName(layoutTensorAt(layout, j)))}
		}
	}
	return params, layout, nil
}

// tensorName names tensor i in an error: its name when identifier-like
// (safeName), else its position.
func tensorName(name string, i int) string {
	if safeName.MatchString(name) {
		return fmt.Sprintf("%q", name)
	}
	return fmt.Sprintf("#%d", i)
}

// layoutTensorAt returns the name and position of the tensor of l that
// holds flat parameter j.
func layoutTensorAt(l safetensors.Layout, j int) (string, int) {
	off := 0
	for i, t := range l {
		n := 1
		for _, d := range t.Shape {
			n *= d
		}
		if j < off+n {
			return t.Name, i
		}
		off += n
	}
	return "", len(l)
}

// safeName is what a tensor name may look like to be named in an error
// that reaches Temporal; another name is given by its position.
var safeName = regexp.MustCompile(`^[A-Za-z0-9_.\-]{1,64}$`)

// layoutMismatch describes how got differs from want with tensor names
// only where they are identifier-like (safeName), dtypes and shapes: what
// a program chose as a tensor name could be anything.
func layoutMismatch(want, got safetensors.Layout) string {
	clean := func(l safetensors.Layout) safetensors.Layout {
		out := make(safetensors.Layout, len(l))
		for i, t := range l {
			out[i] = t
			if !safeName.MatchString(t.Name) {
				out[i].Name = fmt.Sprintf("#%d", i)
			}
		}
		return out
	}
	if m := want.Mismatch(got); m == "" {
		return ""
	}
	if m := clean(want).Mismatch(clean(got)); m != "" {
		return m
	}
	return "a tensor's name differs"
}

// putModel writes a flat model as float32 when the campaign's tensors are
// all F32, else as float64.
func (s *Site) putModel(ctx context.Context, key string, rec store.ModelRecord, params []float64, f32 bool) (pipeline.ArtifactRef, error) {
	if f32 {
		return s.store.PutModel32(ctx, key, rec, method.ToFloat32(params))
	}
	rec.Params = params
	return s.store.PutModelCached(ctx, key, rec)
}

// initExternal is InitModel: the program's init task, seeded by the
// campaign seed alone (as our deep models' initialisation), whose model
// and layout are written to RoundKeys.Init and InitLayout.
func (s *Site) initExternal(ctx context.Context, in pipeline.InitModelInput, cfg method.Config) (pipeline.InitModelOutput, error) {
	files, err := s.externalData(in.SiteCall, cfg)
	if err != nil {
		return pipeline.InitModelOutput{}, err
	}
	var params []float64
	var layout safetensors.Layout
	task := trainer.Task{Task: trainer.TaskInit, Seed: deepInitSeed(in.SiteCall), Label: files.label, TrainData: files.train, TestData: files.test}
	_, err = s.runTask(ctx, in.SiteCall, cfg, task, nil, func(dir string, _ trainer.Result) error {
		var f *trainer.Fault
		if params, layout, f = readModelOut(filepath.Join(dir, trainer.ModelOutFile)); f != nil {
			return s.outputFault(in.Round, cfg, task.Task, f.Kind, f.Detail)
		}
		return nil
	})
	if err != nil {
		return pipeline.InitModelOutput{}, err
	}
	wrap := func(err error) error { return fmt.Errorf("site %s round %d: init: %w", s.name, in.Round, err) }
	lb, err := json.Marshal(layout)
	if err != nil {
		return pipeline.InitModelOutput{}, wrap(err)
	}
	var out pipeline.InitModelOutput
	if out.Layout, err = s.store.PutCached(ctx, in.Keys().InitLayout(s.name), lb); err != nil {
		return out, wrap(err)
	}
	out.Model, err = s.putModel(ctx, in.Keys().Init(s.name), store.ModelRecord{
		Campaign: in.Campaign, Round: in.Round, Site: s.name, Method: string(in.Method), Kind: store.KindModel,
	}, params, allF32(layout))
	if err != nil {
		return out, wrap(err)
	}
	return out, nil
}

// InitModel asks the site's own program for the campaign's initial model
// (model "external", round 1).
func (s *Site) InitModel(ctx context.Context, in pipeline.InitModelInput) (pipeline.InitModelOutput, error) {
	if err := s.refuseUnprivate(in.SiteCall); err != nil {
		return pipeline.InitModelOutput{}, err
	}
	cfg, ext, err := externalConfig(in.SiteCall)
	if err != nil {
		return pipeline.InitModelOutput{}, err
	}
	if !ext {
		return pipeline.InitModelOutput{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("site %s: an initial model is asked of the site's own program only, under model %q", s.name, method.ModelExternal), "BadRequest", nil)
	}
	return s.initExternal(ctx, in, cfg)
}

// trainExternal is TrainLocal for model "external": the program's train
// task from the model the site received, whose output must have the
// campaign's layout; for a method scored on its own update, an evaluate
// task on that output follows.
func (s *Site) trainExternal(ctx context.Context, in pipeline.TrainLocalInput, cfg method.Config) (pipeline.TrainLocalOutput, error) {
	if in.StartModel == nil {
		return pipeline.TrainLocalOutput{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("site %s round %d: model %q trains from the model it is sent, and the call has none", s.name, in.Round, method.ModelExternal), "BadRequest", nil)
	}
	layout, err := s.layout(ctx, in.External)
	if err != nil {
		return pipeline.TrainLocalOutput{}, err
	}
	files, err := s.externalData(in.SiteCall, cfg)
	if err != nil {
		return pipeline.TrainLocalOutput{}, err
	}
	var params []float64
	task := trainer.Task{Task: trainer.TaskTrain, Seed: in.Seed, Label: files.label, TrainData: files.train, TestData: files.test}
	res, err := s.runTask(ctx, in.SiteCall, cfg, task,
		func(dir string) error {
			return s.stageModel(ctx, *in.StartModel, layout, filepath.Join(dir, trainer.ModelInFile))
		},
		func(dir string, res trainer.Result) error {
			var got safetensors.Layout
			var f *trainer.Fault
			if params, got, f = readModelOut(filepath.Join(dir, trainer.ModelOutFile)); f != nil {
				return s.outputFault(in.Round, cfg, task.Task, f.Kind, f.Detail)
			}
			if m := layoutMismatch(layout, got); m != "" {
				return s.outputFault(in.Round, cfg, task.Task, trainer.KindLayoutMismatch, "the model's layout differs from the campaign's: "+m)
			}
			if res.NumExamples <= 0 {
				return s.outputFault(in.Round, cfg, task.Task, trainer.KindBadResult,
					fmt.Sprintf("num_examples %d; a trained model weighs at least 1", res.NumExamples))
			}
			for _, k := range []string{"accuracy", "auc"} {
				if v, ok := res.Metrics[k]; ok && !(v >= 0 && v <= 1) {
					return s.outputFault(in.Round, cfg, task.Task, trainer.KindMetricOutOfRange, k+" outside [0, 1]")
				}
			}
			return nil
		})
	if err != nil {
		return pipeline.TrainLocalOutput{}, err
	}
	wrap := func(err error) error { return fmt.Errorf("site %s round %d: %w", s.name, in.Round, err) }
	out := pipeline.TrainLocalOutput{NumTrain: int(res.NumExamples)}
	if loss, ok := res.Metrics["loss"]; ok {
		out.Loss = loss // finite: trainer.ReadResult refuses anything else
	}
	modelRec := store.ModelRecord{
		Campaign: in.Campaign, Round: in.Round, Site: s.name, Method: string(in.Method), Kind: store.KindModel,
	}
	if in.SecAgg != nil {
		// Kept on the site's premises: it leaves only inside a group's
		// masked sum (SecAggMask).
		var b []byte
		var eerr error
		if in.External.Float32 {
			b, eerr = store.EncodeModel32(modelRec, method.ToFloat32(params))
		} else {
			modelRec.Params = params
			b, eerr = store.EncodeModel(modelRec)
		}
		ref, err := s.keepBytes(in.Keys().Model(s.name), b, eerr)
		if err != nil {
			return pipeline.TrainLocalOutput{}, wrap(err)
		}
		if out.SecAgg, err = s.advertise(in.SiteCall, in.SecAgg.Group, ref, nil); err != nil {
			return pipeline.TrainLocalOutput{}, err
		}
	} else {
		out.Model, err = s.putModel(ctx, in.Keys().Model(s.name), modelRec, params, in.External.Float32)
		if err != nil {
			return pipeline.TrainLocalOutput{}, wrap(err)
		}
		out.Add(pipeline.ReleaseModel, len(params))
	}
	// A program may report its trained model's own scores on the test
	// split (before aggregation), as our deep models do.
	if acc, ok := res.Metrics["accuracy"]; ok {
		upd := pipeline.EvaluateOutput{Accuracy: acc, NumTest: files.nTest}
		upd.Missing = []string{"auc"}
		if auc, ok := res.Metrics["auc"]; ok {
			upd.AUC, upd.Missing = auc, nil
		}
		out.UpdateEvaluation = &upd
		out.Add(pipeline.ReleaseMetrics, 2-len(upd.Missing))
	}
	if in.Evaluate {
		if !method.EvaluatesOwnUpdate(in.Method) {
			return pipeline.TrainLocalOutput{}, temporal.NewNonRetryableApplicationError(
				wrap(fmt.Errorf("asked to evaluate in training, but %s scores the aggregated model", in.Method)).Error(), "BadRequest", nil)
		}
		ev, err := s.evaluateExternal(ctx, in.SiteCall, cfg, out.Model, layout, files)
		if err != nil {
			return pipeline.TrainLocalOutput{}, err
		}
		out.Released.Released = append(out.Released.Released, ev.Released.Released...)
		ev.Released = pipeline.Released{}
		out.Evaluation = &ev
	}
	return out, nil
}

// evaluateExternal runs the program's evaluate task on the model ref
// points at. The result must hold accuracy or auc (or both): a score the
// program does not report is recorded as missing (EvaluateOutput.Missing),
// never as a number.
func (s *Site) evaluateExternal(ctx context.Context, call pipeline.SiteCall, cfg method.Config, ref pipeline.ArtifactRef, layout safetensors.Layout, files siteFiles) (pipeline.EvaluateOutput, error) {
	task := trainer.Task{Task: trainer.TaskEvaluate, Seed: call.Seed, Label: files.label, TrainData: files.train, TestData: files.test}
	var out pipeline.EvaluateOutput
	n := 0
	_, err := s.runTask(ctx, call, cfg, task,
		func(dir string) error { return s.stageModel(ctx, ref, layout, filepath.Join(dir, trainer.ModelInFile)) },
		func(dir string, res trainer.Result) error {
			out = pipeline.EvaluateOutput{NumTest: int(res.NumExamples)}
			for _, m := range []struct {
				name string
				to   *float64
			}{{"auc", &out.AUC}, {"accuracy", &out.Accuracy}} {
				v, ok := res.Metrics[m.name]
				if !ok {
					out.Missing = append(out.Missing, m.name)
					continue
				}
				if !(v >= 0 && v <= 1) {
					return s.outputFault(call.Round, cfg, task.Task, trainer.KindMetricOutOfRange, m.name+" outside [0, 1]")
				}
				*m.to = v
				n++
			}
			if n == 0 {
				return s.outputFault(call.Round, cfg, task.Task, trainer.KindBadResult, "the evaluate result holds neither accuracy nor auc")
			}
			return nil
		})
	if err != nil {
		return pipeline.EvaluateOutput{}, err
	}
	out.Add(pipeline.ReleaseMetrics, n)
	return out, nil
}

// evaluateExternalCall is Evaluate for model "external".
func (s *Site) evaluateExternalCall(ctx context.Context, in pipeline.EvaluateInput, cfg method.Config) (pipeline.EvaluateOutput, error) {
	layout, err := s.layout(ctx, in.External)
	if err != nil {
		return pipeline.EvaluateOutput{}, err
	}
	files, err := s.externalData(in.SiteCall, cfg)
	if err != nil {
		return pipeline.EvaluateOutput{}, err
	}
	return s.evaluateExternal(ctx, in.SiteCall, cfg, in.Model, layout, files)
}

// descriptorExternal is ComputeDescriptor for model "external" on image
// sites: the program embeds the descriptor's rows (the same rows our deep
// models use: in.Rows, or NSub rows drawn with descriptorSeed) under the
// model the site holds, and the worker computes the descriptor from the
// embeddings, which never leave the site. A tabular site's descriptor
// comes from its raw rows, as for our own models (descriptor reports
// false).
func (s *Site) descriptorExternal(ctx context.Context, in pipeline.ComputeDescriptorInput, cfg method.Config) (out pipeline.ComputeDescriptorOutput, done bool, err error) {
	files, err := s.externalData(in.SiteCall, cfg)
	if err != nil || !files.images {
		return pipeline.ComputeDescriptorOutput{}, false, err
	}
	if cfg.LabelAware() {
		return out, true, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("hyperparameters.detector = %q: the label-aware summary is defined on tabular rows, and site %s holds images", cfg.Server.Detector, s.name),
			pipeline.ErrTypeInvalidSpec, nil)
	}
	if in.Model == nil {
		return out, true, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("site %s round %d: an image site's descriptor is computed under the model it holds, and the call names none", s.name, in.Round), "BadRequest", nil)
	}
	layout, err := s.layout(ctx, in.External)
	if err != nil {
		return out, true, err
	}
	rows := in.Rows
	if len(rows) == 0 {
		rows = method.DescriptorRows(files.nTrain, cfg.NSub, descriptorSeed(in.SiteCall))
	} else {
		for _, r := range rows {
			if r < 0 || r >= files.nTrain {
				return out, true, pipeline.NewBadSiteDataError(s.name, files.train[0], 0, "descriptor_rows names row %d of %d training images", r, files.nTrain)
			}
		}
	}
	var x [][]float64
	task := trainer.Task{Task: trainer.TaskEmbed, Seed: in.Seed, Label: files.label, TrainData: files.train, TestData: files.test, Rows: rows}
	_, err = s.runTask(ctx, in.SiteCall, cfg, task,
		func(dir string) error {
			return s.stageModel(ctx, *in.Model, layout, filepath.Join(dir, trainer.ModelInFile))
		},
		func(dir string, _ trainer.Result) error {
			var f *trainer.Fault
			if x, f = readEmbeddings(filepath.Join(dir, trainer.EmbedOutFile), len(rows)); f != nil {
				return s.outputFault(in.Round, cfg, task.Task, f.Kind, "embeddings: "+f.Detail)
			}
			return nil
		})
	if err != nil {
		return out, true, err
	}
	desc, err := tda.ComputeDescriptor(x, tda.DescriptorOptions{Variant: cfg.Descriptor, NSub: len(x)})
	if err != nil {
		return out, true, fmt.Errorf("site %s round %d: descriptor of the embeddings: %w", s.name, in.Round, err)
	}
	out, err = s.putDescriptor(ctx, in, cfg, desc, 0)
	if err != nil {
		return out, true, fmt.Errorf("site %s round %d: %w", s.name, in.Round, err)
	}
	out.NumTrain = files.nTrain
	return out, true, nil
}

// readEmbeddings reads the embed task's file: one tensor "embeddings" of
// shape [rows, k], F32 or F64, every value finite. What breaks that is a
// *trainer.Fault, named once and not retried.
func readEmbeddings(path string, rows int) ([][]float64, *trainer.Fault) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &trainer.Fault{Kind: trainer.KindMissingOutput, Detail: "the program wrote its result but no embeddings file"}
	}
	f, err := safetensors.Decode(b)
	if err != nil {
		return nil, &trainer.Fault{Kind: trainer.KindMalformedSafetensors, Detail: "the embeddings file is not a valid safetensors file"}
	}
	var t *safetensors.Tensor
	for i := range f.Tensors {
		if f.Tensors[i].Name == "embeddings" {
			t = &f.Tensors[i]
		}
	}
	switch {
	case t == nil:
		return nil, &trainer.Fault{Kind: trainer.KindLayoutMismatch, Detail: `no tensor "embeddings"`}
	case t.DType != safetensors.F32 && t.DType != safetensors.F64:
		return nil, &trainer.Fault{Kind: trainer.KindUnsupportedDType, Detail: fmt.Sprintf("dtype %s, want F32 or F64", t.DType)}
	case len(t.Shape) != 2 || t.Shape[0] != rows || t.Shape[1] < 1:
		return nil, &trainer.Fault{Kind: trainer.KindLayoutMismatch, Detail: fmt.Sprintf("shape %v, want [%d, k] with k >= 1", t.Shape, rows)}
	}
	flat, _, err := safetensors.Flatten(&safetensors.File{Tensors: []safetensors.Tensor{*t}})
	if err != nil {
		return nil, &trainer.Fault{Kind: trainer.KindMalformedSafetensors, Detail: "unreadable tensor"}
	}
	k := t.Shape[1]
	x := make([][]float64, rows)
	for i := range x {
		x[i] = flat[i*k : (i+1)*k]
		for _, v := range x[i] {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, &trainer.Fault{Kind: trainer.KindNonFiniteEmbedding, Detail: fmt.Sprintf("row %d holds a value that is not finite", i)}
			}
		}
	}
	return x, nil
}

// AdoptInitialModel makes the initial model that in.Site's program made
// (InitModel) the campaign's: its layout is checked and copied to
// artifact.ModelLayoutKey, the model, once its size fits the layout and
// every value is finite, to artifact.InitialModelKey, both keys every
// site may read (a site never reads another site's own uploads).
func (s *Server) AdoptInitialModel(ctx context.Context, in pipeline.AdoptInitialModelInput) (pipeline.AdoptInitialModelOutput, error) {
	if err := s.checkBucket(in.Bucket); err != nil {
		return pipeline.AdoptInitialModelOutput{}, err
	}
	if in.File != nil {
		return s.adoptFile(ctx, in)
	}
	wrap := func(err error) error { return fmt.Errorf("adopt the initial model of site %s: %w", in.Site, err) }
	lb, err := s.store.GetCached(ctx, in.Layout)
	if err != nil {
		return pipeline.AdoptInitialModelOutput{}, wrap(err)
	}
	layout, err := DecodeLayout(lb)
	if err != nil {
		return pipeline.AdoptInitialModelOutput{}, temporal.NewNonRetryableApplicationError(wrap(err).Error(), ErrTypeTrainerProtocol, nil)
	}
	mb, err := s.store.GetCached(ctx, in.Model)
	if err != nil {
		return pipeline.AdoptInitialModelOutput{}, wrap(err)
	}
	rec, err := store.DecodeModel(mb)
	if err != nil {
		return pipeline.AdoptInitialModelOutput{}, wrap(err)
	}
	if len(rec.Params) != layout.Size() {
		return pipeline.AdoptInitialModelOutput{}, temporal.NewNonRetryableApplicationError(
			wrap(fmt.Errorf("the model has %d parameters and its layout %d", len(rec.Params), layout.Size())).Error(), ErrTypeTrainerProtocol, nil)
	}
	out := pipeline.AdoptInitialModelOutput{External: pipeline.ExternalModel{Float32: allF32(layout)}}
	if out.External.Layout, err = s.store.PutCached(ctx, artifact.ModelLayoutKey(in.Campaign), lb); err != nil {
		return out, wrap(err)
	}
	if out.Model, err = s.store.PutCached(ctx, artifact.InitialModelKey(in.Campaign), mb); err != nil {
		return out, wrap(err)
	}
	return out, nil
}

// adoptFile is AdoptInitialModel for the safetensors file a campaign file
// names (pipeline.InitialModel): read by its sha256 (the store checks the
// bytes against it), flattened (safetensors.Flatten) and written as the
// campaign's initial model and layout. A file that is not a model (another
// dtype, a value that is not finite) fails the campaign, naming the
// problem, not retried.
func (s *Server) adoptFile(ctx context.Context, in pipeline.AdoptInitialModelInput) (pipeline.AdoptInitialModelOutput, error) {
	wrap := func(err error) error { return fmt.Errorf("initial_model %s: %w", in.File.Key, err) }
	bad := func(err error) error {
		return temporal.NewNonRetryableApplicationError(wrap(err).Error(), pipeline.ErrTypeInvalidSpec, nil)
	}
	b, err := s.store.Get(ctx, *in.File)
	if err != nil {
		return pipeline.AdoptInitialModelOutput{}, wrap(err)
	}
	f, err := safetensors.Decode(b)
	if err != nil {
		return pipeline.AdoptInitialModelOutput{}, bad(err)
	}
	params, layout, err := safetensors.Flatten(f)
	if err != nil {
		return pipeline.AdoptInitialModelOutput{}, bad(err)
	}
	if len(params) == 0 {
		return pipeline.AdoptInitialModelOutput{}, bad(errors.New("no parameters"))
	}
	for i, v := range params {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return pipeline.AdoptInitialModelOutput{}, bad(fmt.Errorf("parameter %d is not finite", i))
		}
	}
	lb, err := json.Marshal(layout)
	if err != nil {
		return pipeline.AdoptInitialModelOutput{}, wrap(err)
	}
	out := pipeline.AdoptInitialModelOutput{External: pipeline.ExternalModel{Float32: allF32(layout)}}
	if out.External.Layout, err = s.store.PutCached(ctx, artifact.ModelLayoutKey(in.Campaign), lb); err != nil {
		return out, wrap(err)
	}
	rec := store.ModelRecord{Campaign: in.Campaign, Round: in.Round, Method: string(in.Method), Kind: store.KindModel, Params: params, Float32: out.External.Float32}
	if out.Model, err = s.store.PutModelCached(ctx, artifact.InitialModelKey(in.Campaign), rec); err != nil {
		return out, wrap(err)
	}
	return out, nil
}
