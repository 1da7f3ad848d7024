package workers_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/internal/trainerrun"
	"github.com/ptopofl/ptopofl/internal/workers"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/nn"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/safetensors"
	"github.com/ptopofl/ptopofl/trainer"
)

// The test binary doubles as a faulty trainer (TestMain): run as
//
//	workers.test ptopofl-test-trainer FAULTS STATEDIR TRAINER
//
// per task or in serve mode (PTOPOFL_SERVE=1), it acts out the fault FAULTS
// names for the task's campaign, site and task
// ("c1:site3:train:exit65,c2:site1:train:kill9-once"), and otherwise runs
// the real trainer TRAINER (the Go example trainer) for the task, one
// process for it, as a per-task worker would. Every task it is given is
// counted in STATEDIR (attemptsFile).
const helperArg = "ptopofl-test-trainer"

func TestMain(m *testing.M) {
	if len(os.Args) == 5 && os.Args[1] == helperArg {
		faultyTrainer(os.Args[2], os.Args[3], os.Args[4])
		return
	}
	code := m.Run()
	if trainerBin != "" {
		os.RemoveAll(filepath.Dir(trainerBin))
	}
	os.Exit(code)
}

func faultyTrainer(faults, state, real string) {
	if os.Getenv(trainer.EnvServe) != "1" {
		os.Exit(faultyTask(faults, state, real, os.Getenv(trainer.EnvTask)))
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		path := strings.TrimSpace(in.Text())
		if code := faultyTask(faults, state, real, path); code != 0 {
			// Serve mode says in error.json what the exit status says.
			rep, _ := trainer.ReadErrorReport(filepath.Join(filepath.Dir(path), trainer.ErrorFile))
			rep.Status = code
			if code != trainer.StatusBadSiteData && code != trainer.StatusBadModel {
				rep.Status = trainer.StatusTransient
			}
			trainer.WriteErrorReport(filepath.Dir(path), rep)
		}
		fmt.Printf("%s%s\n", trainer.DonePrefix, path)
	}
	os.Exit(0)
}

// faultyTask does the task at path as faults says, and returns the exit
// status a per-task program would exit with.
func faultyTask(faults, state, real, path string) int {
	task, err := trainer.ReadTask(path)
	if err != nil {
		return 64
	}
	mode := ""
	for _, f := range strings.Split(faults, ",") {
		p := strings.Split(f, ":")
		if len(p) == 4 && p[0] == task.Campaign && p[1] == task.Site && p[2] == task.Task {
			mode = p[3]
		}
	}
	// Every attempt at a task is counted.
	if f, err := os.OpenFile(attemptsFile(state, task.Campaign, task.Site, task.Task, task.Round), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); err == nil {
		f.WriteString("x")
		f.Close()
	}
	// once: the first attempt of this site's task misbehaves, later ones
	// do not.
	once := func() bool {
		mark := filepath.Join(state, fmt.Sprintf("%s-%s-%s-%d.once", task.Campaign, task.Site, task.Task, task.Round))
		f, err := os.OpenFile(mark, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return false
		}
		f.Close()
		return true
	}
	// sleeper starts a process of its own in the group and records its pid.
	sleeper := func() {
		c := exec.Command("sleep", "3600")
		if c.Start() == nil {
			os.WriteFile(filepath.Join(state, task.Campaign+".child"), []byte(fmt.Sprint(c.Process.Pid)), 0o600)
		}
		os.WriteFile(filepath.Join(state, task.Campaign+".leader"), []byte(fmt.Sprint(os.Getpid())), 0o600)
	}
	// then runs the real trainer, then edit on what it wrote.
	then := func(edit func() error) int {
		if code := delegate(real, path); code != 0 {
			return code
		}
		if edit() != nil {
			return 70
		}
		return 0
	}
	// model rewrites the model the real trainer wrote.
	model := func(edit func(*safetensors.File)) int {
		return then(func() error {
			b, err := os.ReadFile(task.ModelOut)
			if err != nil {
				return err
			}
			f, err := safetensors.Decode(b)
			if err != nil {
				return err
			}
			edit(f)
			if b, err = safetensors.Encode(f); err != nil {
				return err
			}
			return os.WriteFile(task.ModelOut, b, 0o600)
		})
	}
	write := func(path, body string) int {
		return then(func() error { return os.WriteFile(path, []byte(body), 0o600) })
	}
	switch mode {
	case "exit65":
		// A message with a data value: it must reach the worker's log only.
		os.WriteFile(filepath.Join(filepath.Dir(path), trainer.ErrorFile),
			[]byte(`{"kind": "bad_rows", "message": "row 7 holds 4242.4242, out of range"}`), 0o600)
		return 65
	case "kill9-once":
		if once() {
			sleeper()
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	case "hang-once":
		if once() {
			sleeper()
			time.Sleep(time.Hour)
		}
	case "hang":
		sleeper()
		time.Sleep(time.Hour)
	case "layout": // one tensor more than the campaign's layout
		return model(func(f *safetensors.File) {
			f.Tensors = append(f.Tensors, safetensors.Tensor{Name: "zz_extra", DType: safetensors.F32, Shape: []int{1}, Data: make([]byte, 4)})
		})
	case "i64": // BatchNorm's counter, as torch's state_dict holds it
		return model(func(f *safetensors.File) {
			f.Tensors = append(f.Tensors, safetensors.Tensor{Name: "bn.num_batches_tracked", DType: safetensors.I64, Shape: []int{}, Data: make([]byte, 8)})
		})
	case "nanmodel":
		return model(func(f *safetensors.File) {
			binary.LittleEndian.PutUint64(f.Tensors[0].Data, math.Float64bits(math.NaN()))
		})
	case "malformed": // a header that runs past the end of the file
		return write(task.ModelOut, "\x10\x00\x00\x00\x00\x00\x00\x00{\"w\": ")
	case "nanmetric": // what Python's json.dump writes for float("nan")
		return write(task.Result, `{"num_examples": 10, "metrics": {"loss": NaN}}`)
	case "range":
		return write(task.Result, `{"num_examples": 10, "metrics": {"auc": 1.5, "accuracy": 0.5}}`)
	case "badresult":
		return write(task.Result, `{"examples": 10}`)
	case "noresult":
		return then(func() error { return os.Remove(task.Result) })
	case "nanembed":
		return then(func() error {
			b, err := os.ReadFile(task.EmbedOut)
			if err != nil {
				return err
			}
			f, err := safetensors.Decode(b)
			if err != nil {
				return err
			}
			binary.LittleEndian.PutUint32(f.Tensors[0].Data[4:], math.Float32bits(float32(math.Inf(1))))
			if b, err = safetensors.Encode(f); err != nil {
				return err
			}
			return os.WriteFile(task.EmbedOut, b, 0o600)
		})
	}
	return delegate(real, path)
}

// attemptsFile counts the attempts at one task (faultyTask), one byte each.
func attemptsFile(state, campaign, site, task string, round int) string {
	return filepath.Join(state, fmt.Sprintf("attempts-%s-%s-%s-%d", campaign, site, task, round))
}

// delegate runs the real per-task trainer for the task at path, as a
// worker would, and returns its exit status.
func delegate(real, path string) int {
	c := exec.Command(real)
	c.Dir = filepath.Dir(path)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PTOPOFL_") {
			c.Env = append(c.Env, kv)
		}
	}
	c.Env = append(c.Env, trainer.EnvTask+"="+path)
	c.Stdout, c.Stderr = os.Stderr, os.Stderr
	if err := c.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		return 70
	}
	return 0
}

// moduleRoot is the repository root, found before any test runs (s3local
// changes the working directory).
var moduleRoot, _ = filepath.Abs("../..")

var (
	trainerOnce sync.Once
	trainerBin  string
	trainerErr  error
)

// goTrainer builds the Go example trainer (examples/trainers/gotrainer) once.
func goTrainer(t *testing.T) string {
	t.Helper()
	trainerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ptopofl-go-trainer-")
		if err != nil {
			trainerErr = err
			return
		}
		trainerBin = filepath.Join(dir, "trainer")
		c := exec.Command("go", "build", "-o", trainerBin, "./examples/trainers/gotrainer")
		c.Dir = moduleRoot
		out, err := c.CombinedOutput()
		if err != nil {
			trainerErr = fmt.Errorf("build the Go example trainer: %v\n%s", err, out)
		}
	})
	if trainerErr != nil {
		t.Fatal(trainerErr)
	}
	return trainerBin
}

// trainerOptions are site-worker options whose Host maps trainer "go" (per
// task) and "go-serve" (serve mode) to the test binary acting out faults
// before running the Go example trainer. Four slots: eight sites' tasks
// need not all wait on each other here. The Host is closed once the
// test's workers have stopped.
func trainerOptions(t *testing.T, faults string) (workers.Options, string) {
	t.Helper()
	state := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	argv := []string{self, helperArg, faults, state, goTrainer(t)}
	h := &trainerrun.Host{Slots: 4, Grace: 2 * time.Second, Programs: map[string]trainerrun.Program{
		"go":       {Argv: argv},
		"go-serve": {Argv: argv, Serve: true},
	}}
	t.Cleanup(h.Close)
	return workers.Options{
		Trainers:   h,
		TrainerDir: t.TempDir(),
		TrainerLog: testLog{t},
	}, state
}

// testLog sends the programs' output to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Logf("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// runExternal is runCampaign with the spec's defaults filled in and the
// campaign's error returned, for the tests that expect one.
func runExternal(t *testing.T, s *stack, spec pipeline.CampaignSpec) (pipeline.CampaignWorkflowOutput, error) {
	t.Helper()
	return awaitCampaign(t, s, spec.WithDefaults())
}

// heldModels returns the model each site holds after round r.
func heldModels(t *testing.T, s *stack, campaign string, r int) (map[string][]float64, pipeline.RoundManifest) {
	t.Helper()
	ctx := context.Background()
	var man pipeline.RoundManifest
	if _, err := s.store.GetJSONKey(ctx, artifact.ManifestKey(campaign, r), &man); err != nil {
		t.Fatal(err)
	}
	held := map[string][]float64{}
	for _, o := range man.Outputs {
		if o.Role == pipeline.RoleSiteModel {
			m, err := s.store.GetModel(ctx, artifact.Ref(o.Ref))
			if err != nil {
				t.Fatal(err)
			}
			held[o.Site] = m.Params
		}
	}
	return held, man
}

// sameCampaign requires two campaigns' curves and final models to be equal
// bit for bit.
func sameCampaign(t *testing.T, s *stack, a, b pipeline.CampaignWorkflowOutput, rounds int, update bool) {
	t.Helper()
	if !sameBits(a.AUCCurve, b.AUCCurve) || !sameBits(a.AccCurve, b.AccCurve) {
		t.Errorf("curves differ:\n%s: auc %v acc %v\n%s: auc %v acc %v", a.Campaign, a.AUCCurve, a.AccCurve, b.Campaign, b.AUCCurve, b.AccCurve)
	}
	if update && !sameBits(a.UpdateAccCurve, b.UpdateAccCurve) {
		t.Errorf("update accuracy curves differ: %v vs %v", a.UpdateAccCurve, b.UpdateAccCurve)
	}
	ma, _ := heldModels(t, s, a.Campaign, rounds)
	mb, _ := heldModels(t, s, b.Campaign, rounds)
	if len(ma) == 0 || len(ma) != len(mb) {
		t.Fatalf("held models: %d and %d sites", len(ma), len(mb))
	}
	for site, p := range ma {
		if !sameBits(p, mb[site]) {
			t.Errorf("site %s: final models differ", site)
		}
	}
}

// TestExternalTrainerMatchesInProcess runs campaigns whose sites train
// with the Go example trainer (model "external") in both modes of the
// trainer protocol, one process per task ("go") and one serve-mode process
// per site ("go-serve"), and the same campaigns with our in-process
// models, on the local stack, and requires equal curves and final models,
// bit for bit: FedAvg on the golden healthcare federation (tabular, the
// default preset: the program standardises and fits as the worker does),
// and deep-small FedAvg and pTopoFL on a 3-site image federation
// (pTopoFL's descriptors come from the program's embed task there).
func TestExternalTrainerMatchesInProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack")
	}
	s := startStack(t)
	tabular, _, _ := goldenSites(t, s.dataDir)
	opts, _ := trainerOptions(t, "")
	startWorkersWith(t, s, tabular, opts)
	const rounds = 3
	t.Run("tabular-fedavg", func(t *testing.T) {
		h := method.Defaults(method.Default)
		spec := pipeline.CampaignSpec{Campaign: "in-tab", Method: learn.FedAvg, Preset: method.Default, Rounds: rounds, Seed: 5,
			Sites: tabular, Bucket: s.store.Bucket(), Hyperparameters: h}
		in, err := runExternal(t, s, spec)
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range []string{"go", "go-serve"} {
			spec.Campaign = "ext-tab-" + tr
			spec.Hyperparameters.Model, spec.Hyperparameters.Trainer = method.ModelExternal, tr
			ext, err := runExternal(t, s, spec)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: final AUC: in-process %.6f, external %.6f", tr, in.AUCCurve[rounds-1], ext.AUCCurve[rounds-1])
			sameCampaign(t, s, in, ext, rounds, false)
			_, man := heldModels(t, s, spec.Campaign, 1)
			var roles []string
			for _, o := range man.Outputs {
				if o.Role == pipeline.RoleInitialModel || o.Role == pipeline.RoleModelLayout {
					roles = append(roles, o.Role+"/"+o.Site)
				}
			}
			// The first site in sorted order made it; the server adopted it.
			want := "initial_model/client0 model_layout/client0 initial_model/ model_layout/"
			if got := strings.Join(roles, " "); got != want {
				t.Errorf("%s: round 1's initial model records: %q, want %q", tr, got, want)
			}
		}
	})

	t.Run("deep-small", func(t *testing.T) {
		s.dataDir = filepath.Join(t.TempDir(), "images")
		_, sites := bandFederation(t, s.dataDir, "img")
		startWorkersWith(t, s, sites, opts)
		inProcess := map[learn.Method]pipeline.CampaignWorkflowOutput{}
		for _, m := range []learn.Method{learn.FedAvg, learn.PTopoFL} {
			h := method.Defaults(method.DeepSmall)
			h.Classes, h.NSub = 3, 30
			spec := pipeline.CampaignSpec{Campaign: "in-deep-" + string(m), Method: m, Preset: method.DeepSmall, Rounds: rounds, Seed: 17,
				Sites: sites, Bucket: s.store.Bucket(), Hyperparameters: h}
			in, err := runExternal(t, s, spec)
			if err != nil {
				t.Fatal(err)
			}
			inProcess[m] = in
			for _, tr := range []string{"go", "go-serve"} {
				spec.Campaign = "ext-deep-" + string(m) + "-" + tr
				spec.Hyperparameters.Model, spec.Hyperparameters.Trainer = method.ModelExternal, tr
				ext, err := runExternal(t, s, spec)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%s, %s: accuracy in-process %v, external %v", m, tr, in.AccCurve, ext.AccCurve)
				sameCampaign(t, s, in, ext, rounds, true)
			}
		}

		// The same initial model given as the spec's initial_model (the
		// file a starter uploads) instead of made by the first site's
		// init task: the same campaign again.
		h := method.Defaults(method.DeepSmall)
		h.Classes, h.NSub = 3, 30
		cfg, err := method.Resolve(learn.FedAvg, method.DeepSmall, h)
		if err != nil {
			t.Fatal(err)
		}
		net, err := cfg.NewNetwork(nn.Shape{H: 8, W: 8, C: 1})
		if err != nil {
			t.Fatal(err)
		}
		net.Init(pipeline.DeriveSeed(17, 0, "", pipeline.PurposeTrain))
		data := make([]byte, 4*net.NumParams())
		for i, v := range net.Params() {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v))
		}
		file, err := safetensors.Encode(&safetensors.File{Tensors: []safetensors.Tensor{{Name: "params", DType: safetensors.F32, Shape: []int{len(net.Params())}, Data: data}}})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "init.safetensors")
		if err := os.WriteFile(path, file, 0o600); err != nil {
			t.Fatal(err)
		}
		spec := pipeline.CampaignSpec{Campaign: "ext-deep-given", Method: learn.FedAvg, Preset: method.DeepSmall, Rounds: rounds, Seed: 17,
			Sites: sites, Bucket: s.store.Bucket(), Hyperparameters: h}
		spec.Hyperparameters.Model, spec.Hyperparameters.Trainer = method.ModelExternal, "go-serve"
		im, _, err := campaign.ReadInitialModel(path)
		if err != nil {
			t.Fatal(err)
		}
		spec.InitialModel = &im
		if err := (&campaign.Service{Store: s.store}).UploadInitialModel(context.Background(), spec, path); err != nil {
			t.Fatal(err)
		}
		given, err := runExternal(t, s, spec)
		if err != nil {
			t.Fatal(err)
		}
		sameCampaign(t, s, inProcess[learn.FedAvg], given, rounds, true)
		_, man := heldModels(t, s, "ext-deep-given", 1)
		if len(man.Inputs) == 0 || man.Inputs[0].Role != pipeline.RoleInitialModel || man.Inputs[0].Ref.SHA256 != im.SHA256 {
			t.Errorf("round 1's first input is not the given file: %+v", man.Inputs[:1])
		}
	})
}

// pythonTrainer is the command of the numpy example trainer
// (examples/trainers/pytorch/tabular_numpy.py: the standard library and
// Debian's python3-numpy, which .ci/run installs); the test is skipped,
// saying so, where numpy cannot be imported.
func pythonTrainer(t *testing.T) []string {
	t.Helper()
	const python = "/usr/bin/python3"
	if out, err := exec.Command(python, "-c", "import numpy").CombinedOutput(); err != nil {
		t.Skipf("%s cannot import numpy (%v: %s): install Debian's python3-numpy (apt-get install python3-numpy; .ci/run does) to run the Python trainer's campaigns",
			python, err, strings.TrimSpace(string(out)))
	}
	return []string{python, filepath.Join(moduleRoot, "examples", "trainers", "pytorch", "tabular_numpy.py")}
}

// TestPythonTrainerMatchesInProcess runs FedAvg on the golden healthcare
// federation (8 sites, 3 rounds) with the numpy example trainer in both
// modes of the trainer protocol (per task, and serve: one process per site
// keeping its data loaded) and in process, and requires the two modes to
// give the same campaign bit for bit, and the same AUC and accuracy
// curves as the in-process one with every site's final model within
// 1e-9 of it (numpy's BLAS sums in another order than learn's loops; the
// largest difference is logged).
func TestPythonTrainerMatchesInProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack")
	}
	py := pythonTrainer(t)
	s := startStack(t)
	sites, _, _ := goldenSites(t, s.dataDir)
	h := &trainerrun.Host{Slots: 2, Programs: map[string]trainerrun.Program{"py": {Argv: py}, "py-serve": {Argv: py, Serve: true}}}
	t.Cleanup(h.Close)
	startWorkersWith(t, s, sites, workers.Options{Trainers: h, TrainerDir: t.TempDir(), TrainerLog: testLog{t}})
	const rounds = 3
	spec := pipeline.CampaignSpec{Campaign: "py-in", Method: learn.FedAvg, Preset: method.Default, Rounds: rounds, Seed: 5,
		Sites: sites, Bucket: s.store.Bucket(), Hyperparameters: method.Defaults(method.Default)}
	in, err := runExternal(t, s, spec)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]pipeline.CampaignWorkflowOutput{}
	for _, tr := range []string{"py", "py-serve"} {
		sp := spec
		sp.Campaign = "py-" + tr
		sp.Hyperparameters.Model, sp.Hyperparameters.Trainer = method.ModelExternal, tr
		start := time.Now()
		if out[tr], err = runExternal(t, s, sp); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %v; final AUC %.10f (in process %.10f)", tr, time.Since(start).Round(time.Millisecond), out[tr].AUCCurve[rounds-1], in.AUCCurve[rounds-1])
	}
	sameCampaign(t, s, out["py"], out["py-serve"], rounds, false)
	if !sameBits(in.AUCCurve, out["py"].AUCCurve) || !sameBits(in.AccCurve, out["py"].AccCurve) {
		t.Errorf("curves differ from the in-process campaign's:\nin process auc %v acc %v\npython     auc %v acc %v",
			in.AUCCurve, in.AccCurve, out["py"].AUCCurve, out["py"].AccCurve)
	}
	ma, _ := heldModels(t, s, "py-in", rounds)
	mb, _ := heldModels(t, s, "py-py", rounds)
	worst := 0.0
	for site, p := range ma {
		if len(p) != len(mb[site]) {
			t.Fatalf("site %s: %d parameters, python %d", site, len(p), len(mb[site]))
		}
		for j := range p {
			worst = max(worst, math.Abs(p[j]-mb[site][j])/max(1, math.Abs(p[j])))
		}
	}
	t.Logf("largest relative difference of a final model's parameter from the in-process one: %.3g", worst)
	if worst > 1e-9 {
		t.Errorf("final models differ from the in-process ones by up to %.3g", worst)
	}
}

// pidGone reports whether the process whose pid is in file has exited (or
// never was); a zombie not yet reaped counts as gone.
func pidGone(t *testing.T, file string) bool {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("no pid file %s: %v", file, err)
	}
	var pid int
	fmt.Sscan(string(b), &pid)
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// "pid (comm) S ...": the state letter after the command's ')'.
	f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:]))
	return len(f) > 0 && f[0] == "Z"
}

// TestExternalTrainerFailures runs FedAvg campaigns of model "external" on
// the golden healthcare federation whose trainer misbehaves at one site or
// more, in either mode of the protocol ("go" per task, "go-serve"), and
// requires what the protocol promises of each failure:
//   - exit 65 (per task) or status 65 in error.json (serve): the site is
//     dropped from the round, named, with the program's error kind in the
//     error and never its message (which holds a data value), and the
//     campaign completes on its quorum;
//   - each fault of a program's outputs, named once, not retried, with its
//     kind in the manifest (TestTrainerOutputFaults);
//   - a trainer name no site has: every site refuses, naming it;
//   - kill -9 of the program mid-task (per task, and a serve-mode process),
//     and a program that hangs until the attempt's timeout: retried, the
//     same final models as a clean run, and nothing left running of the
//     killed process group;
//   - the campaign cancelled mid-task: the program's process group is gone
//     within the grace period, in either mode.
func TestExternalTrainerFailures(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack")
	}
	s := startStack(t)
	sites, _, _ := goldenSites(t, s.dataDir)
	faults := "exit65:client3:train:exit65,exit65-serve:client3:train:exit65,kill9:client1:train:kill9-once," +
		"kill9-serve:client1:train:kill9-once,hang:client2:train:hang-once,cancel:client0:train:hang,cancel-serve:client0:train:hang"
	opts, state := trainerOptions(t, faults)
	startWorkersWith(t, s, sites, opts)
	const rounds = 2
	spec := func(name string) pipeline.CampaignSpec {
		h := method.Defaults(method.Default)
		h.Model, h.Trainer = method.ModelExternal, "go"
		if strings.HasSuffix(name, "-serve") {
			h.Trainer = "go-serve"
		}
		return pipeline.CampaignSpec{Campaign: name, Method: learn.FedAvg, Preset: method.Default, Rounds: rounds, Seed: 9,
			Sites: sites, MinSites: len(sites) - 1, Bucket: s.store.Bucket(), Hyperparameters: h,
			SiteActivityTimeout: 5 * time.Second, TrainHeartbeat: 3 * time.Second}
	}
	clean, err := runExternal(t, s, spec("clean"))
	if err != nil {
		t.Fatal(err)
	}

	for _, name := range []string{"exit65", "exit65-serve"} {
		t.Run(name, func(t *testing.T) {
			out, err := runExternal(t, s, spec(name))
			if err != nil {
				t.Fatal(err)
			}
			if out.RoundsDone != rounds {
				t.Fatalf("rounds done %d", out.RoundsDone)
			}
			d := droppedSite(t, s, name, 1, "client3")
			status := "exited 65"
			if name == "exit65-serve" {
				status = "reported status 65"
			}
			if d.Reason != pipeline.DropBadSiteData || d.Kind != pipeline.ErrTypeBadSiteData || !strings.Contains(d.Error, status) || !strings.Contains(d.Error, "kind bad_rows") {
				t.Errorf("drop %+v: want bad site data, %s, kind bad_rows", d, status)
			}
			if strings.Contains(d.Error, "4242") {
				t.Errorf("drop %+v carries the program's message", d)
			}
			if n := attempts(t, state, name, "client3", "train", 1); n != 1 {
				t.Errorf("%d attempts at the failing task, want 1", n)
			}
			// Nowhere in the campaign's history either.
			ctx := context.Background()
			iter := s.client.GetWorkflowHistory(ctx, name, "", false, 0)
			for iter.HasNext() {
				ev, err := iter.Next()
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(ev.String(), "4242.4242") {
					t.Fatalf("history event %d carries the program's message", ev.GetEventId())
				}
			}
		})
	}
	t.Run("unknown-trainer", func(t *testing.T) {
		sp := spec("unknown")
		sp.Hyperparameters.Trainer = "torch"
		_, err := runExternal(t, s, sp)
		if err == nil {
			t.Fatal("a campaign whose trainer no site has completed")
		}
		d := droppedSite(t, s, "unknown", 1, "client0")
		if d.Phase != pipeline.PhaseInit || d.Kind != "UnknownTrainer" || !strings.Contains(d.Error, `no trainer named "torch"`) {
			t.Errorf("drop %+v: want the init task refused, naming the trainer", d)
		}
	})
	for _, name := range []string{"kill9", "kill9-serve", "hang"} {
		t.Run(name, func(t *testing.T) {
			out, err := runExternal(t, s, spec(name))
			if err != nil {
				t.Fatal(err)
			}
			a, _ := heldModels(t, s, "clean", rounds)
			b, man := heldModels(t, s, name, rounds)
			for site, p := range a {
				if !sameBits(p, b[site]) {
					t.Errorf("site %s: final model differs from the clean run's", site)
				}
			}
			if len(man.Dropped) != 0 || !sameBits(out.AUCCurve, clean.AUCCurve) {
				t.Errorf("dropped %+v, AUC %v (clean %v)", man.Dropped, out.AUCCurve, clean.AUCCurve)
			}
			for _, f := range []string{name + ".leader", name + ".child"} {
				if !pidGone(t, filepath.Join(state, f)) {
					t.Errorf("%s: still running", f)
				}
			}
			site := map[string]string{"kill9": "client1", "kill9-serve": "client1", "hang": "client2"}[name]
			if n := attempts(t, state, name, site, "train", 1); n != 2 {
				t.Errorf("%d attempts at the task that failed once, want 2", n)
			}
		})
	}
	for _, name := range []string{"cancel", "cancel-serve"} {
		t.Run(name, func(t *testing.T) {
			sp := spec(name).WithDefaults()
			ctx := context.Background()
			run, err := s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: sp.Campaign, TaskQueue: pipeline.ServerTaskQueue},
				pipeline.CampaignWorkflowName, pipeline.CampaignWorkflowInput{Spec: sp})
			if err != nil {
				t.Fatal(err)
			}
			leader, child := filepath.Join(state, name+".leader"), filepath.Join(state, name+".child")
			deadline := time.Now().Add(2 * time.Minute)
			for {
				if _, err := os.Stat(child); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the hanging trainer never started")
				}
				time.Sleep(50 * time.Millisecond)
			}
			cancelled := time.Now()
			if err := s.client.CancelWorkflow(ctx, run.GetID(), ""); err != nil {
				t.Fatal(err)
			}
			// The activity learns of it at its next heartbeat (a third of
			// TrainHeartbeat), then the group gets SIGTERM (and SIGKILL
			// after the grace period had it ignored SIGTERM).
			for !pidGone(t, leader) || !pidGone(t, child) {
				if time.Since(cancelled) > 15*time.Second {
					t.Fatalf("the trainer's process group is still running %v after the cancellation", time.Since(cancelled))
				}
				time.Sleep(50 * time.Millisecond)
			}
			t.Logf("process group gone %v after the cancellation", time.Since(cancelled).Round(time.Millisecond))
		})
	}
}

// droppedSite returns site's drop in round r of campaign, failing the test
// when the site was not dropped.
func droppedSite(t *testing.T, s *stack, campaign string, r int, site string) pipeline.SiteDrop {
	t.Helper()
	_, man := heldModels(t, s, campaign, r)
	for _, d := range man.Dropped {
		if d.Site == site {
			return d
		}
	}
	t.Fatalf("%s round %d: %s not dropped (dropped: %+v)", campaign, r, site, man.Dropped)
	return pipeline.SiteDrop{}
}

// attempts is how many times the faulty trainer was given a task.
func attempts(t *testing.T, state, campaign, site, task string, round int) int {
	t.Helper()
	b, err := os.ReadFile(attemptsFile(state, campaign, site, task, round))
	if err != nil {
		t.Fatalf("%s %s %s round %d never ran: %v", campaign, site, task, round, err)
	}
	return len(b)
}

// TestTrainerOutputFaults runs, in either mode of the protocol, a
// one-round FedAvg campaign on the golden healthcare federation whose
// sites' program breaks the protocol in a different way at each site, and
// a one-round deep-small pTopoFL campaign on an image federation whose
// program writes an infinite embedding at one site. Each fault ends its
// site's round in one attempt (the program is given the task once), with
// its kind in the manifest (dropped[].kind), and the campaign completes
// with the sites that did not fail: a malformed safetensors file, an I64
// tensor (BatchNorm's num_batches_tracked), a model holding NaN, a NaN
// metric as Python's json writes it, an auc of 1.5 (in the evaluate
// phase), a missing result, a result that is not the protocol's object, a
// model of another layout, a non-finite embedding (descriptor phase).
func TestTrainerOutputFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack")
	}
	type fault struct {
		site, task, mode, phase, kind string
	}
	tabular := []fault{
		{"client1", "evaluate", "range", pipeline.PhaseEvaluate, trainer.KindMetricOutOfRange},
		{"client2", "train", "malformed", pipeline.PhaseTrain, trainer.KindMalformedSafetensors},
		{"client3", "train", "i64", pipeline.PhaseTrain, trainer.KindUnsupportedDType},
		{"client4", "train", "nanmodel", pipeline.PhaseTrain, trainer.KindNonFiniteModel},
		{"client5", "train", "nanmetric", pipeline.PhaseTrain, trainer.KindNonFiniteMetric},
		{"client6", "train", "noresult", pipeline.PhaseTrain, trainer.KindNoResult},
		{"client7", "train", "badresult", pipeline.PhaseTrain, trainer.KindBadResult},
	}
	layout := fault{"client1", "train", "layout", pipeline.PhaseTrain, trainer.KindLayoutMismatch}
	embed := fault{"img1", "embed", "nanembed", pipeline.PhaseDescriptor, trainer.KindNonFiniteEmbedding}
	trainers := []string{"go", "go-serve"}
	var faults []string
	for _, tr := range trainers {
		for _, f := range tabular {
			faults = append(faults, "faults-"+tr+":"+f.site+":"+f.task+":"+f.mode)
		}
		faults = append(faults, "layout-"+tr+":"+layout.site+":"+layout.task+":"+layout.mode,
			"embed-"+tr+":"+embed.site+":"+embed.task+":"+embed.mode)
	}
	s := startStack(t)
	sites, _, _ := goldenSites(t, s.dataDir)
	opts, state := trainerOptions(t, strings.Join(faults, ","))
	startWorkersWith(t, s, sites, opts)
	check := func(t *testing.T, campaign string, f fault) {
		t.Helper()
		d := droppedSite(t, s, campaign, 1, f.site)
		if d.Phase != f.phase || d.Kind != f.kind || !strings.Contains(d.Error, f.kind) {
			t.Errorf("%s (%s): drop %+v, want phase %s, kind %s", f.site, f.mode, d, f.phase, f.kind)
		}
		if n := attempts(t, state, campaign, f.site, f.task, 1); n != 1 {
			t.Errorf("%s (%s): %d attempts, want 1", f.site, f.mode, n)
		}
	}
	for _, tr := range trainers {
		t.Run("tabular-"+tr, func(t *testing.T) {
			h := method.Defaults(method.Default)
			h.Model, h.Trainer = method.ModelExternal, tr
			spec := pipeline.CampaignSpec{Campaign: "faults-" + tr, Method: learn.FedAvg, Preset: method.Default, Rounds: 1, Seed: 9,
				Sites: sites, MinSites: 1, Bucket: s.store.Bucket(), Hyperparameters: h}
			out, err := runExternal(t, s, spec)
			if err != nil {
				t.Fatal(err)
			}
			_, man := heldModels(t, s, spec.Campaign, 1)
			if out.RoundsDone != 1 || strings.Join(man.Participants, ",") != "client0" || len(man.Dropped) != len(tabular) {
				t.Errorf("rounds %d, participants %v, %d dropped; want client0 alone", out.RoundsDone, man.Participants, len(man.Dropped))
			}
			for _, f := range tabular {
				check(t, spec.Campaign, f)
			}
			spec.Campaign, spec.MinSites = "layout-"+tr, len(sites)-1
			if _, err := runExternal(t, s, spec); err != nil {
				t.Fatal(err)
			}
			check(t, spec.Campaign, layout)
		})
	}
	s.dataDir = filepath.Join(t.TempDir(), "images")
	_, imgSites := bandFederation(t, s.dataDir, "img")
	startWorkersWith(t, s, imgSites, opts)
	for _, tr := range trainers {
		t.Run("embed-"+tr, func(t *testing.T) {
			h := method.Defaults(method.DeepSmall)
			h.Classes, h.NSub = 3, 30
			h.Model, h.Trainer = method.ModelExternal, tr
			spec := pipeline.CampaignSpec{Campaign: "embed-" + tr, Method: learn.PTopoFL, Preset: method.DeepSmall, Rounds: 1, Seed: 17,
				Sites: imgSites, MinSites: 2, Bucket: s.store.Bucket(), Hyperparameters: h}
			if _, err := runExternal(t, s, spec); err != nil {
				t.Fatal(err)
			}
			check(t, spec.Campaign, embed)
		})
	}
}
