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
	"strings"
	"sync"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/internal/trainer"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/safetensors"
	"github.com/ptopofl/ptopofl/store"
	"github.com/ptopofl/ptopofl/tda"
)

// The external path of a site (model "external", issue 24): every task of
// the round runs the site's own training program under the trainer
// protocol ptopofl.trainer/v1 (package internal/trainer), one process per
// task attempt. The site decides what runs: its worker maps trainer names
// to commands (Trainers), and a campaign only names one. What the server
// sees is what it sees of our own models: a flat parquet model (the
// program's safetensors tensors in the order of their names sorted
// byte-wise, safetensors.Flatten), a descriptor of 48 numbers, scores.

// Error types of the external path (non-retryable: the same program, data
// and model give the same failure again).
const (
	// ErrTypeUnknownTrainer: the campaign names a trainer this site's
	// worker does not map to a command.
	ErrTypeUnknownTrainer = "UnknownTrainer"
	// ErrTypeBadModel: the program exited 66 (its input model is unusable).
	ErrTypeBadModel = "BadModel"
	// ErrTypeLayoutMismatch: the program wrote a model whose tensors differ
	// from the campaign's layout.
	ErrTypeLayoutMismatch = "LayoutMismatch"
	// ErrTypeTrainerProtocol: the program's output breaks the protocol in
	// a way a retry cannot mend (an embedding of the wrong shape).
	ErrTypeTrainerProtocol = "TrainerProtocol"
)

// Trainers maps the name of a site's own training program to its command
// line, split into words (no shell): `worker --role site --trainer
// NAME=COMMAND`.
type Trainers map[string][]string

// ParseTrainers reads repeated --trainer flags (ParseTrainer each) into
// Trainers; a name given twice is an error.
func ParseTrainers(flags []string) (Trainers, error) {
	out := Trainers{}
	for _, fl := range flags {
		name, argv, err := ParseTrainer(fl)
		if err != nil {
			return nil, err
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("--trainer %s: given twice", name)
		}
		out[name] = argv
	}
	return out, nil
}

// ParseTrainer reads one --trainer flag, NAME=COMMAND: COMMAND is split
// into words at white space, with no shell and no quoting (a command that
// needs either is a script). The program runs in its task directory, so a
// relative path the worker can see — the program itself when it names a
// directory ("bin/trainer"), or an argument naming a file that exists
// ("examples/trainers/pytorch/tabular.py") — is made absolute against the
// worker's working directory; a bare name is looked up in PATH.
func ParseTrainer(flag string) (name string, argv []string, err error) {
	name, command, ok := strings.Cut(flag, "=")
	if !ok {
		return "", nil, fmt.Errorf("--trainer %q: want NAME=COMMAND", flag)
	}
	if !method.ValidTrainerName(name) {
		return "", nil, fmt.Errorf("--trainer %q: the name must be letters, digits, '.', '_' and '-' (at most 64), starting with a letter or digit", name)
	}
	argv = strings.Fields(command)
	if len(argv) == 0 {
		return "", nil, fmt.Errorf("--trainer %s: empty command", name)
	}
	for i, a := range argv {
		if filepath.IsAbs(a) || !strings.Contains(a, "/") {
			continue
		}
		if _, err := os.Stat(a); err != nil {
			if i == 0 {
				return "", nil, fmt.Errorf("--trainer %s: program %s: %w", name, a, err)
			}
			continue // not a file here: passed as it is
		}
		if argv[i], err = filepath.Abs(a); err != nil {
			return "", nil, fmt.Errorf("--trainer %s: %w", name, err)
		}
	}
	return name, argv, nil
}

// externalTrainers is a site's trainer set-up (WithTrainers).
type externalTrainers struct {
	cmds Trainers
	root string
	log  io.Writer

	mu      sync.Mutex
	layouts map[string]safetensors.Layout // by the layout object's sha256
}

// WithTrainers lets the site run the programs cmds names for campaigns of
// model "external". root is the directory its task directories go under
// (made if missing); what a previous worker over the same root left
// running when it died is killed first (trainer.SweepOrphans). log
// receives the programs' output; nil discards it.
func (s *Site) WithTrainers(cmds Trainers, root string, log io.Writer) (*Site, error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("site %s: trainer directory: %w", s.name, err)
	}
	if _, err := trainer.SweepOrphans(root); err != nil {
		return nil, fmt.Errorf("site %s: %w", s.name, err)
	}
	s.trainers = &externalTrainers{cmds: cmds, root: root, log: log, layouts: map[string]safetensors.Layout{}}
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

// command returns the site's command for cfg's trainer, or a
// non-retryable error naming the trainer: the site drops out of the round.
func (s *Site) command(cfg method.Config) ([]string, error) {
	var argv []string
	if s.trainers != nil {
		argv = s.trainers.cmds[cfg.Trainer]
	}
	if argv == nil {
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("site %s: no trainer named %q (the site's worker maps names to its own programs with --trainer %s=COMMAND)", s.name, cfg.Trainer, cfg.Trainer),
			ErrTypeUnknownTrainer, nil)
	}
	return argv, nil
}

// siteFiles is a site's data as its own program gets them: the absolute
// paths of each split's files (a tabular site's from the round's shift
// directory), whether they are images, and the record counts.
type siteFiles struct {
	train, test   []string
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
	return siteFiles{train: f[:1], test: f[1:], nTrain: len(c.Data.Train.X), nTest: len(c.Data.Test.X)}, nil
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
// mapped to the round's terms: exit 65 drops the site as bad site data,
// exit 66 as a bad model, both named and not retried; anything else is
// retried under the activity's policy. The error text is the runner's
// Failure text (an exit status, its meaning and an identifier-like kind),
// never the program's message or output, which go to the worker's log
// only.
func (s *Site) runTask(ctx context.Context, call pipeline.SiteCall, cfg method.Config, task trainer.Task,
	stage func(dir string) error, collect func(dir string, res trainer.Result) error) (trainer.Result, error) {
	argv, err := s.command(cfg)
	if err != nil {
		return trainer.Result{}, err
	}
	hp, err := taskHyperparameters(call, cfg)
	if err != nil {
		return trainer.Result{}, temporal.NewNonRetryableApplicationError(err.Error(), pipeline.ErrTypeInvalidSpec, nil)
	}
	task.Campaign, task.Site, task.Round, task.Method, task.Hyperparameters = call.Campaign, s.name, call.Round, string(call.Method), hp
	r := trainer.Runner{Root: s.trainers.root, Log: s.trainers.log}
	if activity.IsActivity(ctx) {
		r.Progress = func(p json.RawMessage) { activity.RecordHeartbeat(ctx, p) }
	}
	res, err := r.Run(ctx, argv, task, stage, collect)
	if err == nil {
		return res, nil
	}
	var f *trainer.Failure
	if !errors.As(err, &f) {
		var te *temporal.ApplicationError
		if errors.As(err, &te) {
			return trainer.Result{}, err
		}
		return trainer.Result{}, fmt.Errorf("site %s round %d: %s: %w", s.name, call.Round, task.Task, err)
	}
	what := fmt.Sprintf("trainer %s, task %s: %v", cfg.Trainer, task.Task, f)
	switch {
	case f.Reason == trainer.ReasonBadSiteData:
		return trainer.Result{}, pipeline.NewBadSiteDataError(s.name, "trainer "+cfg.Trainer, 0, "task %s: %v", task.Task, f)
	case f.Reason == trainer.ReasonBadModel:
		return trainer.Result{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("site %s round %d: %s", s.name, call.Round, what), ErrTypeBadModel, nil)
	case !f.Retryable:
		return trainer.Result{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("site %s round %d: %s", s.name, call.Round, what), "TrainerFailed", nil)
	}
	return trainer.Result{}, fmt.Errorf("site %s round %d: %s", s.name, call.Round, what)
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

// readModelOut reads and flattens the program's model file. A file that
// is not safetensors, or holds a non-float tensor or a non-finite value,
// is a protocol fault: retried (a program killed mid-write never gets
// here, as it wrote no result), named by the tensor's position, not its
// name or values.
func readModelOut(path string) ([]float64, safetensors.Layout, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, nil, fmt.Errorf("the program wrote no model file: %w", err)
	}
	if fi.Size() > maxModelFile {
		return nil, nil, fmt.Errorf("the program's model file has %d bytes, more than %d", fi.Size(), maxModelFile)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	f, err := safetensors.Decode(b)
	if err != nil {
		return nil, nil, errors.New("the program's model file is not a valid safetensors file")
	}
	params, layout, err := safetensors.Flatten(f)
	if err != nil {
		return nil, nil, errors.New("the program's model holds a tensor that is neither F32 nor F64")
	}
	return params, layout, nil
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
	task := trainer.Task{Task: trainer.TaskInit, Seed: deepInitSeed(in.SiteCall), TrainData: files.train, TestData: files.test}
	_, err = s.runTask(ctx, in.SiteCall, cfg, task, nil, func(dir string, _ trainer.Result) error {
		var err error
		params, layout, err = readModelOut(filepath.Join(dir, trainer.ModelOutFile))
		if err != nil {
			return &trainer.Failure{Code: 0, Reason: trainer.ReasonProtocol, Retryable: true}
		}
		return nil
	})
	if err != nil {
		return pipeline.InitModelOutput{}, err
	}
	if len(params) == 0 {
		return pipeline.InitModelOutput{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("site %s: trainer %s's initial model has no parameters", s.name, cfg.Trainer), ErrTypeTrainerProtocol, nil)
	}
	if err := checkDiverged(s.name, in.Round, in.Method, params); err != nil {
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
	var mismatch string
	task := trainer.Task{Task: trainer.TaskTrain, Seed: in.Seed, TrainData: files.train, TestData: files.test}
	res, err := s.runTask(ctx, in.SiteCall, cfg, task,
		func(dir string) error {
			return s.stageModel(ctx, *in.StartModel, layout, filepath.Join(dir, trainer.ModelInFile))
		},
		func(dir string, _ trainer.Result) error {
			var got safetensors.Layout
			var err error
			params, got, err = readModelOut(filepath.Join(dir, trainer.ModelOutFile))
			if err != nil {
				return &trainer.Failure{Code: 0, Reason: trainer.ReasonProtocol, Retryable: true}
			}
			mismatch = layoutMismatch(layout, got)
			return nil
		})
	if err != nil {
		return pipeline.TrainLocalOutput{}, err
	}
	if mismatch != "" {
		return pipeline.TrainLocalOutput{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("site %s round %d: trainer %s wrote a model whose layout differs from the campaign's: %s", s.name, in.Round, cfg.Trainer, mismatch),
			ErrTypeLayoutMismatch, nil)
	}
	if err := checkDiverged(s.name, in.Round, in.Method, params); err != nil {
		return pipeline.TrainLocalOutput{}, err
	}
	if res.NumExamples <= 0 {
		return pipeline.TrainLocalOutput{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("site %s round %d: trainer %s reported num_examples %d; a trained model weighs at least 1", s.name, in.Round, cfg.Trainer, res.NumExamples),
			ErrTypeTrainerProtocol, nil)
	}
	wrap := func(err error) error { return fmt.Errorf("site %s round %d: %w", s.name, in.Round, err) }
	out := pipeline.TrainLocalOutput{NumTrain: int(res.NumExamples)}
	if loss, ok := res.Metrics["loss"]; ok && !math.IsNaN(loss) && !math.IsInf(loss, 0) {
		out.Loss = loss
	}
	out.Model, err = s.putModel(ctx, in.Keys().Model(s.name), store.ModelRecord{
		Campaign: in.Campaign, Round: in.Round, Site: s.name, Method: string(in.Method), Kind: store.KindModel,
	}, params, in.External.Float32)
	if err != nil {
		return pipeline.TrainLocalOutput{}, wrap(err)
	}
	out.Add(pipeline.ReleaseModel, len(params))
	// A program may report its trained model's own scores on the test
	// split (before aggregation), as our deep models do.
	if acc, ok := res.Metrics["accuracy"]; ok && acc >= 0 && acc <= 1 {
		upd := pipeline.EvaluateOutput{Accuracy: acc, NumTest: files.nTest}
		upd.Missing = []string{"auc"}
		if auc, ok := res.Metrics["auc"]; ok && auc >= 0 && auc <= 1 {
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
	task := trainer.Task{Task: trainer.TaskEvaluate, Seed: call.Seed, TrainData: files.train, TestData: files.test}
	res, err := s.runTask(ctx, call, cfg, task,
		func(dir string) error { return s.stageModel(ctx, ref, layout, filepath.Join(dir, trainer.ModelInFile)) }, nil)
	if err != nil {
		return pipeline.EvaluateOutput{}, err
	}
	out := pipeline.EvaluateOutput{NumTest: int(res.NumExamples)}
	n := 0
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
			return pipeline.EvaluateOutput{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("site %s round %d: trainer %s reported %s outside [0, 1]", s.name, call.Round, cfg.Trainer, m.name),
				ErrTypeTrainerProtocol, nil)
		}
		*m.to = v
		n++
	}
	if n == 0 {
		return pipeline.EvaluateOutput{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("site %s round %d: trainer %s's evaluate result holds neither accuracy nor auc", s.name, call.Round, cfg.Trainer),
			ErrTypeTrainerProtocol, nil)
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
	var bad string
	task := trainer.Task{Task: trainer.TaskEmbed, Seed: in.Seed, TrainData: files.train, TestData: files.test, Rows: rows}
	_, err = s.runTask(ctx, in.SiteCall, cfg, task,
		func(dir string) error {
			return s.stageModel(ctx, *in.Model, layout, filepath.Join(dir, trainer.ModelInFile))
		},
		func(dir string, _ trainer.Result) error {
			var err error
			x, bad, err = readEmbeddings(filepath.Join(dir, trainer.EmbedOutFile), len(rows))
			return err
		})
	if err != nil {
		return out, true, err
	}
	if bad != "" {
		return out, true, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("site %s round %d: trainer %s's embeddings: %s", s.name, in.Round, cfg.Trainer, bad), ErrTypeTrainerProtocol, nil)
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
// shape [rows, k], F32 or F64, every value finite. bad says what is wrong
// with a file that breaks that (a program's fault a retry does not mend);
// err is a file that is missing or not safetensors (retried).
func readEmbeddings(path string, rows int) (x [][]float64, bad string, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, "", &trainer.Failure{Code: 0, Reason: trainer.ReasonProtocol, Retryable: true}
	}
	f, err := safetensors.Decode(b)
	if err != nil {
		return nil, "", &trainer.Failure{Code: 0, Reason: trainer.ReasonProtocol, Retryable: true}
	}
	var t *safetensors.Tensor
	for i := range f.Tensors {
		if f.Tensors[i].Name == "embeddings" {
			t = &f.Tensors[i]
		}
	}
	switch {
	case t == nil:
		return nil, `no tensor "embeddings"`, nil
	case len(t.Shape) != 2 || t.Shape[0] != rows || t.Shape[1] < 1:
		return nil, fmt.Sprintf("shape %v, want [%d, k] with k >= 1", t.Shape, rows), nil
	case t.DType != safetensors.F32 && t.DType != safetensors.F64:
		return nil, fmt.Sprintf("dtype %s, want F32 or F64", t.DType), nil
	}
	flat, _, err := safetensors.Flatten(&safetensors.File{Tensors: []safetensors.Tensor{*t}})
	if err != nil {
		return nil, "unreadable tensor", nil
	}
	k := t.Shape[1]
	x = make([][]float64, rows)
	for i := range x {
		x[i] = flat[i*k : (i+1)*k]
		for _, v := range x[i] {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Sprintf("row %d holds a value that is not finite", i), nil
			}
		}
	}
	return x, "", nil
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
