package workers_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
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

	"github.com/ptopofl/ptopofl/activities"
	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/internal/workers"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/nn"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/safetensors"
)

// The test binary doubles as a faulty trainer (TestMain): run as
//
//	workers.test ptopofl-test-trainer FAULTS STATEDIR TRAINER
//
// it acts out the fault FAULTS names for the task's campaign, site and
// task ("c1:site3:train:exit65,c2:site1:train:kill9-once"), and otherwise
// executes the real trainer TRAINER (the Go example trainer) in its place.
const helperArg = "ptopofl-test-trainer"

func TestMain(m *testing.M) {
	if len(os.Args) == 5 && os.Args[1] == helperArg && os.Getenv("PTOPOFL_TASK") != "" {
		faultyTrainer(os.Args[2], os.Args[3], os.Args[4])
		return
	}
	os.Exit(m.Run())
}

func faultyTrainer(faults, state, real string) {
	var task struct {
		Campaign, Site, Task, ModelOut string
		Round                          int
	}
	b, err := os.ReadFile(os.Getenv("PTOPOFL_TASK"))
	if err == nil {
		err = json.Unmarshal(b, &task)
	}
	if err != nil {
		os.Exit(64)
	}
	task.ModelOut = modelOut(b)
	mode := ""
	for _, f := range strings.Split(faults, ",") {
		p := strings.Split(f, ":")
		if len(p) == 4 && p[0] == task.Campaign && p[1] == task.Site && p[2] == task.Task {
			mode = p[3]
		}
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
	switch mode {
	case "exit65":
		// A message with a data value: it must reach the worker's log only.
		os.WriteFile(filepath.Join(filepath.Dir(os.Getenv("PTOPOFL_TASK")), "error.json"),
			[]byte(`{"kind": "bad_rows", "message": "row 7 holds 4242.4242, out of range"}`), 0o600)
		os.Exit(65)
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
	case "layout":
		// The real trainer, then one more tensor in its model.
		c := exec.Command(real)
		c.Stdout, c.Stderr = os.Stdout, os.Stderr
		if err := c.Run(); err != nil {
			os.Exit(1)
		}
		b, err := os.ReadFile(task.ModelOut)
		if err != nil {
			os.Exit(1)
		}
		f, err := safetensors.Decode(b)
		if err != nil {
			os.Exit(1)
		}
		f.Tensors = append(f.Tensors, safetensors.Tensor{Name: "zz_extra", DType: safetensors.F32, Shape: []int{1}, Data: make([]byte, 4)})
		if b, err = safetensors.Encode(f); err != nil {
			os.Exit(1)
		}
		os.WriteFile(task.ModelOut, b, 0o600)
		os.Exit(0)
	}
	if err := syscall.Exec(real, []string{real}, os.Environ()); err != nil {
		os.Exit(70)
	}
}

func modelOut(taskJSON []byte) string {
	var t struct {
		ModelOut string `json:"model_out"`
	}
	json.Unmarshal(taskJSON, &t)
	return t.ModelOut
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

// trainerOptions are site-worker options that map trainer "go" to the
// test binary acting out faults before running the Go example trainer.
func trainerOptions(t *testing.T, faults string) (workers.Options, string) {
	t.Helper()
	state := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return workers.Options{
		Trainers:   activities.Trainers{"go": {self, helperArg, faults, state, goTrainer(t)}},
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
// with the Go example trainer (model "external", one process per task
// under the trainer protocol) and the same campaigns with our in-process
// models, on the local stack, and requires equal curves and final models,
// bit for bit: FedAvg on the golden healthcare federation (tabular, the
// default preset: the program standardises and fits as the worker does),
// and deep-small FedAvg and pTopoFL on a 3-site image federation (pTopoFL's
// descriptors come from the program's embed task there).
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
		spec.Campaign = "ext-tab"
		spec.Hyperparameters.Model, spec.Hyperparameters.Trainer = method.ModelExternal, "go"
		ext, err := runExternal(t, s, spec)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("final AUC: in-process %.6f, external %.6f", in.AUCCurve[rounds-1], ext.AUCCurve[rounds-1])
		sameCampaign(t, s, in, ext, rounds, false)
		_, man := heldModels(t, s, "ext-tab", 1)
		var roles []string
		for _, o := range man.Outputs {
			if o.Role == pipeline.RoleInitialModel || o.Role == pipeline.RoleModelLayout {
				roles = append(roles, o.Role+"/"+o.Site)
			}
		}
		// The first site in sorted order made it; the server adopted it.
		want := "initial_model/client0 model_layout/client0 initial_model/ model_layout/"
		if got := strings.Join(roles, " "); got != want {
			t.Errorf("round 1's initial model records: %q, want %q", got, want)
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
			spec.Campaign = "ext-deep-" + string(m)
			spec.Hyperparameters.Model, spec.Hyperparameters.Trainer = method.ModelExternal, "go"
			ext, err := runExternal(t, s, spec)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: accuracy in-process %v, external %v", m, in.AccCurve, ext.AccCurve)
			sameCampaign(t, s, in, ext, rounds, true)
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
		spec.Hyperparameters.Model, spec.Hyperparameters.Trainer = method.ModelExternal, "go"
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
// the golden healthcare federation whose trainer misbehaves at one site,
// and requires what the protocol promises of each failure:
//   - exit 65: the site is dropped from the round, named, with the
//     program's error kind in the manifest and never its message (which
//     holds a data value), and the campaign completes on its quorum;
//   - a model whose layout differs from the campaign's: dropped, named;
//   - a trainer name no site has: every site refuses, naming it;
//   - kill -9 of the program mid-task, and a program that hangs until the
//     attempt's timeout: retried, the same final models as a clean run,
//     and nothing left running of the killed process group;
//   - the campaign cancelled mid-task: the program's process group is gone
//     within the grace period.
func TestExternalTrainerFailures(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack")
	}
	s := startStack(t)
	sites, _, _ := goldenSites(t, s.dataDir)
	faults := "exit65:client3:train:exit65,layout:client5:train:layout,kill9:client1:train:kill9-once," +
		"hang:client2:train:hang-once,cancel:client0:train:hang"
	opts, state := trainerOptions(t, faults)
	startWorkersWith(t, s, sites, opts)
	const rounds = 2
	spec := func(name string) pipeline.CampaignSpec {
		h := method.Defaults(method.Default)
		h.Model, h.Trainer = method.ModelExternal, "go"
		return pipeline.CampaignSpec{Campaign: name, Method: learn.FedAvg, Preset: method.Default, Rounds: rounds, Seed: 9,
			Sites: sites, MinSites: len(sites) - 1, Bucket: s.store.Bucket(), Hyperparameters: h,
			SiteActivityTimeout: 5 * time.Second, TrainHeartbeat: 3 * time.Second}
	}
	clean, err := runExternal(t, s, spec("clean"))
	if err != nil {
		t.Fatal(err)
	}

	dropped := func(t *testing.T, campaign, site string) pipeline.SiteDrop {
		t.Helper()
		_, man := heldModels(t, s, campaign, 1)
		for _, d := range man.Dropped {
			if d.Site == site {
				return d
			}
		}
		t.Fatalf("%s round 1: %s not dropped (dropped: %+v)", campaign, site, man.Dropped)
		return pipeline.SiteDrop{}
	}
	t.Run("exit65", func(t *testing.T) {
		out, err := runExternal(t, s, spec("exit65"))
		if err != nil {
			t.Fatal(err)
		}
		if out.RoundsDone != rounds {
			t.Fatalf("rounds done %d", out.RoundsDone)
		}
		d := dropped(t, "exit65", "client3")
		if d.Reason != pipeline.DropBadSiteData || !strings.Contains(d.Error, "exited 65") || !strings.Contains(d.Error, "kind bad_rows") {
			t.Errorf("drop %+v: want bad site data, exit 65, kind bad_rows", d)
		}
		if strings.Contains(d.Error, "4242") {
			t.Errorf("drop %+v carries the program's message", d)
		}
		// Nowhere in the campaign's history either.
		ctx := context.Background()
		iter := s.client.GetWorkflowHistory(ctx, "exit65", "", false, 0)
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
	t.Run("layout", func(t *testing.T) {
		if _, err := runExternal(t, s, spec("layout")); err != nil {
			t.Fatal(err)
		}
		d := dropped(t, "layout", "client5")
		if !strings.Contains(d.Error, "layout differs") || !strings.Contains(d.Error, "2 tensors") && !strings.Contains(d.Error, "tensor") {
			t.Errorf("drop %+v: want a named layout mismatch", d)
		}
	})
	t.Run("unknown-trainer", func(t *testing.T) {
		sp := spec("unknown")
		sp.Hyperparameters.Trainer = "torch"
		_, err := runExternal(t, s, sp)
		if err == nil {
			t.Fatal("a campaign whose trainer no site has completed")
		}
		d := dropped(t, "unknown", "client0")
		if d.Phase != pipeline.PhaseInit || !strings.Contains(d.Error, `no trainer named "torch"`) {
			t.Errorf("drop %+v: want the init task refused, naming the trainer", d)
		}
	})
	for _, name := range []string{"kill9", "hang"} {
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
		})
	}
	t.Run("cancel", func(t *testing.T) {
		sp := spec("cancel").WithDefaults()
		ctx := context.Background()
		run, err := s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: sp.Campaign, TaskQueue: pipeline.ServerTaskQueue},
			pipeline.CampaignWorkflowName, pipeline.CampaignWorkflowInput{Spec: sp})
		if err != nil {
			t.Fatal(err)
		}
		leader := filepath.Join(state, "cancel.leader")
		deadline := time.Now().Add(2 * time.Minute)
		for {
			if _, err := os.Stat(filepath.Join(state, "cancel.child")); err == nil {
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
		// after the grace period, 10 s, had it ignored SIGTERM).
		for !pidGone(t, leader) || !pidGone(t, filepath.Join(state, "cancel.child")) {
			if time.Since(cancelled) > 15*time.Second {
				t.Fatalf("the trainer's process group is still running %v after the cancellation", time.Since(cancelled))
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("process group gone %v after the cancellation", time.Since(cancelled).Round(time.Millisecond))
	})
}
