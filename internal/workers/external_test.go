package workers_test

import (
	"context"
	"encoding/json"
	"fmt"
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
	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/internal/workers"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/safetensors"
)

// The test binary doubles as a faulty trainer (TestMain): run as
//
//	workers.test ptopofl-test-trainer FAULTS STATEDIR TRAINER
//
// it acts out the fault FAULTS names for the task's site and task
// ("site3:train:exit65,site1:train:kill9-once"), and otherwise executes the
// real trainer TRAINER (the Go example trainer) in its place.
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
		Site, Task, ModelOut string
		Round               int
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
		if len(p) == 3 && p[0] == task.Site && p[1] == task.Task {
			mode = p[2]
		}
	}
	// once: the first attempt of this site's task misbehaves, later ones
	// do not.
	once := func() bool {
		mark := filepath.Join(state, fmt.Sprintf("%s-%s-%d.once", task.Site, task.Task, task.Round))
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
			os.WriteFile(filepath.Join(state, task.Site+".child"), []byte(fmt.Sprint(c.Process.Pid)), 0o600)
		}
		os.WriteFile(filepath.Join(state, task.Site+".leader"), []byte(fmt.Sprint(os.Getpid())), 0o600)
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

// goTrainer builds the Go example trainer (examples/trainers/go) once.
func goTrainer(t *testing.T) string {
	t.Helper()
	trainerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ptopofl-go-trainer-")
		if err != nil {
			trainerErr = err
			return
		}
		trainerBin = filepath.Join(dir, "trainer")
		c := exec.Command("go", "build", "-o", trainerBin, "./examples/trainers/go")
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

// runExternal runs spec to its end and returns its output.
func runExternal(t *testing.T, s *stack, spec pipeline.CampaignSpec) (pipeline.CampaignWorkflowOutput, error) {
	t.Helper()
	spec = spec.WithDefaults()
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run, err := s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: spec.Campaign, TaskQueue: pipeline.ServerTaskQueue},
		pipeline.CampaignWorkflowName, pipeline.CampaignWorkflowInput{Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	var out pipeline.CampaignWorkflowOutput
	err = run.Get(ctx, &out)
	return out, err
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
		var fed []dataset.ImageSite
		var sites []pipeline.Site
		for k := range 3 {
			name := fmt.Sprintf("img%d", k)
			fed = append(fed, dataset.ImageSite{Name: name, Train: bandImages(40+8*k, uint64(100+k)), Test: bandImages(20, uint64(200+k))})
			sites = append(sites, pipeline.Site{Name: name})
		}
		if err := dataset.WriteImageFederation(s.dataDir, fed, dataset.ImageManifest{Generator: "test", Classes: 3}); err != nil {
			t.Fatal(err)
		}
		startWorkersWith(t, s, sites, opts)
		for _, m := range []learn.Method{learn.FedAvg, learn.PTopoFL} {
			h := method.Defaults(method.DeepSmall)
			h.Classes, h.NSub = 3, 30
			spec := pipeline.CampaignSpec{Campaign: "in-deep-" + string(m), Method: m, Preset: method.DeepSmall, Rounds: rounds, Seed: 17,
				Sites: sites, Bucket: s.store.Bucket(), Hyperparameters: h}
			in, err := runExternal(t, s, spec)
			if err != nil {
				t.Fatal(err)
			}
			spec.Campaign = "ext-deep-" + string(m)
			spec.Hyperparameters.Model, spec.Hyperparameters.Trainer = method.ModelExternal, "go"
			ext, err := runExternal(t, s, spec)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: accuracy in-process %v, external %v", m, in.AccCurve, ext.AccCurve)
			sameCampaign(t, s, in, ext, rounds, true)
		}
	})
}
