package trainerrun

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ptopofl/ptopofl/trainer"
)

// The test binary doubles as the trainer: with TRAINER_HELPER set (which
// the tests pass through the sealed environment as the site's
// --trainer-env would) it acts out that mode instead of running the tests,
// once per task ($PTOPOFL_TASK) or serving tasks (PTOPOFL_SERVE=1).
func TestMain(m *testing.M) {
	if mode := os.Getenv("TRAINER_HELPER"); mode != "" {
		helper(mode)
		return
	}
	os.Exit(m.Run())
}

// helper is a trainer that follows (or breaks) the protocol as mode says.
func helper(mode string) {
	if mode == "sleep" {
		time.Sleep(time.Hour)
		os.Exit(0)
	}
	if os.Getenv(trainer.EnvServe) != "1" {
		os.Exit(act(mode, os.Getenv(trainer.EnvTask)))
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		path := in.Text()
		code := act(mode, path)
		switch {
		case mode == "wrongdone":
			path += ".other"
		case code == 0:
		case mode == "crash":
			os.Exit(code)
		default:
			kind := map[int]string{65: "missing_column", 66: "bad_weights", 75: "cuda_oom"}[code]
			b, _ := json.Marshal(trainer.ErrorReport{Kind: kind, Message: "cell value 3.14159 in row 7", Status: code})
			if mode == "nostatus" {
				b = []byte(`{"kind": "x", "message": "no status"}`)
			}
			os.WriteFile(filepath.Join(filepath.Dir(path), trainer.ErrorFile), b, 0o644)
		}
		fmt.Printf("%s%s\n", trainer.DonePrefix, path)
	}
	os.Exit(0)
}

// act does one task as mode says and returns its exit status.
func act(mode, path string) int {
	task, err := trainer.ReadTask(path)
	if err != nil {
		return 64
	}
	result := func(n int, metrics string) {
		os.WriteFile(task.Result, []byte(`{"num_examples": `+strconv.Itoa(n)+`, "metrics": `+metrics+`}`), 0o644)
	}
	sleeper := func() int { // a process of its own in the group, holding stdout
		c := exec.Command(os.Args[0])
		c.Env = append(os.Environ(), "TRAINER_HELPER=sleep")
		c.Stdout = os.Stdout
		if c.Start() != nil {
			os.Exit(70)
		}
		if f := os.Getenv("TRAINER_PIDFILE"); f != "" {
			os.WriteFile(f, []byte(strconv.Itoa(c.Process.Pid)), 0o644)
		}
		return c.Process.Pid
	}
	switch mode {
	case "ok", "wrongdone":
		os.Stdout.WriteString("starting on " + task.Site + "\n")
		os.Stdout.WriteString(`ptopofl:progress {"epoch": 1, "loss": 0.7}` + "\n")
		os.Stdout.WriteString("ptopofl:progress not json\n")
		os.Stderr.WriteString("a warning\n")
		if task.Task == trainer.TaskTrain {
			in, err := os.ReadFile(task.ModelIn)
			if err != nil {
				return 66
			}
			os.WriteFile(task.ModelOut, append(in, '!'), 0o644)
		}
		result(12, `{"loss": 0.5}`)
	case "pid": // which process did it, and with what environment
		result(os.Getpid(), `{}`)
		env, _ := json.Marshal(os.Environ())
		os.WriteFile(filepath.Join(os.Getenv("TRAINER_STATE"), "env-"+strconv.Itoa(os.Getpid())+".json"), env, 0o644)
		wd, _ := os.Getwd()
		os.WriteFile(filepath.Join(os.Getenv("TRAINER_STATE"), "wd-"+strconv.Itoa(os.Getpid())), []byte(wd), 0o644)
	case "badsite":
		os.WriteFile(filepath.Join(filepath.Dir(task.Result), trainer.ErrorFile), []byte(`{"kind": "missing_column", "message": "cell value 3.14159 in row 7"}`), 0o644)
		return trainer.StatusBadSiteData
	case "badkind":
		os.WriteFile(filepath.Join(filepath.Dir(task.Result), trainer.ErrorFile), []byte(`{"kind": "value 3.14159", "message": "x"}`), 0o644)
		return trainer.StatusBadModel
	case "transient", "nostatus":
		return trainer.StatusTransient
	case "crash":
		return 1
	case "noresult":
	case "badresult":
		os.WriteFile(task.Result, []byte("done"), 0o644)
	case "nan": // what Python's json.dump writes for float("nan")
		os.WriteFile(task.Result, []byte(`{"num_examples": 3, "metrics": {"auc": NaN}}`), 0o644)
	case "huge":
		os.WriteFile(task.Result, []byte(`{"num_examples": 3, "metrics": {"loss": 1e999}}`), 0o644)
	case "negative":
		result(-1, `{}`)
	case "hang": // ignores SIGTERM; only SIGKILL ends it
		signal.Ignore(syscall.SIGTERM)
		sleeper()
		os.Stdout.WriteString(`ptopofl:progress {"started": true}` + "\n")
		time.Sleep(time.Hour)
	case "term": // stops at SIGTERM, as a trainer should
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM)
		os.Stdout.WriteString(`ptopofl:progress {"started": true}` + "\n")
		<-ch
		os.Exit(143)
	case "leave":
		sleeper()
		result(3, `{}`)
	case "once-hang": // hangs at its first task, in the group with a child; ok after
		mark := filepath.Join(os.Getenv("TRAINER_STATE"), "hung")
		if f, err := os.OpenFile(mark, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); err == nil {
			f.Close()
			sleeper()
			os.WriteFile(filepath.Join(os.Getenv("TRAINER_STATE"), "leader"), []byte(strconv.Itoa(os.Getpid())), 0o644)
			time.Sleep(time.Hour)
		}
		result(os.Getpid(), `{}`)
	}
	return 0
}

// gone waits up to 5 s for pid to be dead or a zombie.
func gone(pid int) bool {
	for i := 0; i < 100; i++ {
		if goneNow(pid) {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// goneNow reports whether pid is dead or a zombie.
func goneNow(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) > 0 && f[0] == "Z"
}

// syncBuffer is a log safe for the runner's output pumps.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// helperEnv is what the site passes its test programs: the helper's mode
// and where it writes what it has to tell.
func helperEnv(t *testing.T, mode string) []string {
	return []string{"TRAINER_HELPER=" + mode, "TRAINER_STATE=" + t.TempDir(), "TRAINER_PIDFILE=" + filepath.Join(t.TempDir(), "pid")}
}

func envValue(env []string, name string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

func runner(t *testing.T, mode string) (Runner, *syncBuffer, *[]string) {
	t.Helper()
	log := &syncBuffer{}
	var mu sync.Mutex
	var progress []string
	r := Runner{Root: t.TempDir(), Log: log, Grace: 500 * time.Millisecond, Env: helperEnv(t, mode), Progress: func(m json.RawMessage) {
		mu.Lock()
		defer mu.Unlock()
		progress = append(progress, string(m))
	}}
	return r, log, &progress
}

func task(kind string) trainer.Task {
	return trainer.Task{Task: kind, Campaign: "c", Site: "site0", Round: 3, Seed: 42, Method: "fedavg", Label: "y",
		Hyperparameters: map[string]any{"lr": 0.1}, TrainData: []string{"/data/site0_train.csv"}, TestData: []string{"/data/site0_test.csv"}}
}

// TestRunSuccess: the task file as the protocol says, the input model
// staged and the output model collected, the result read, progress lines
// handed on and everything else logged, the directory removed.
func TestRunSuccess(t *testing.T) {
	r, log, progress := runner(t, "ok")
	var dir string
	var out []byte
	res, err := r.Run(context.Background(), []string{os.Args[0]}, task(trainer.TaskTrain),
		func(d string) error {
			dir = d
			return os.WriteFile(filepath.Join(d, trainer.ModelInFile), []byte("model"), 0o600)
		},
		func(d string, res trainer.Result) error {
			var err error
			out, err = os.ReadFile(filepath.Join(d, trainer.ModelOutFile))
			return err
		})
	if err != nil {
		t.Fatal(err)
	}
	if res.NumExamples != 12 || res.Metrics["loss"] != 0.5 {
		t.Errorf("result %+v", res)
	}
	if string(out) != "model!" {
		t.Errorf("collected model %q", out)
	}
	if len(*progress) != 1 || (*progress)[0] != `{"epoch": 1, "loss": 0.7}` {
		t.Errorf("progress %q", *progress)
	}
	for _, want := range []string{"trainer c/site0 round 3 train: starting on site0", "a warning", "ptopofl:progress not json"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log.String())
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("task directory %s left behind", dir)
	}
	if entries, _ := os.ReadDir(r.Root); len(entries) != 0 {
		t.Errorf("root not empty: %v", entries)
	}
}

// TestTaskFile: what task.json holds for each task: model_in for all but
// init, model_out for init and train, embed_out for embed, paths in the
// task directory, the protocol name, the site's label column.
func TestTaskFile(t *testing.T) {
	cases := []struct {
		kind                    string
		modelIn, modelOut, embd bool
	}{
		{trainer.TaskInit, false, true, false},
		{trainer.TaskTrain, true, true, false},
		{trainer.TaskEvaluate, true, false, false},
		{trainer.TaskEmbed, true, false, true},
	}
	for i, c := range cases {
		r, _, _ := runner(t, "ok")
		var got trainer.Task
		_, err := r.Run(context.Background(), []string{os.Args[0]}, task(c.kind), func(d string) error {
			b, err := os.ReadFile(filepath.Join(d, trainer.TaskFile))
			if err != nil {
				return err
			}
			if err := json.Unmarshal(b, &got); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(d, trainer.ModelInFile), nil, 0o600)
		}, nil)
		if err != nil {
			t.Fatalf("case %d (%s): %v", i, c.kind, err)
		}
		if got.Protocol != trainer.Protocol || got.Task != c.kind || got.Seed != 42 || got.Site != "site0" || got.Label != "y" || !filepath.IsAbs(got.Result) ||
			(got.ModelIn != "") != c.modelIn || (got.ModelOut != "") != c.modelOut || (got.EmbedOut != "") != c.embd {
			t.Errorf("case %d (%s): task.json %+v", i, c.kind, got)
		}
	}
}

// failureCases are each exit status and output fault, what it means and
// whether it is retried, in either mode (in serve mode the status comes
// in error.json; "crash" exits the process there).
var failureCases = []struct {
	mode      string
	reason    string
	code      int // per task; serve mode's is the same but for crash (-1)
	kind      string
	fault     string
	retryable bool
}{
	0:  {"badsite", ReasonBadSiteData, 65, "missing_column", "", false},
	1:  {"badkind", ReasonBadModel, 66, "", "", false}, // per task; the serve helper writes kind bad_weights
	2:  {"transient", ReasonTransient, 75, "", "", true},
	3:  {"crash", ReasonFailed, 1, "", "", true},
	4:  {"noresult", ReasonProtocol, 0, "", trainer.KindNoResult, false},
	5:  {"badresult", ReasonProtocol, 0, "", trainer.KindBadResult, false},
	6:  {"negative", ReasonProtocol, 0, "", trainer.KindBadResult, false},
	7:  {"nan", ReasonProtocol, 0, "", trainer.KindNonFiniteMetric, false},
	8:  {"huge", ReasonProtocol, 0, "", trainer.KindNonFiniteMetric, false},
	9:  {"nostatus", ReasonTransient, 75, "", "", true}, // per task; serve: no status, retried as failed
	10: {"wrongdone", "", 0, "", "", false},             // serve only
}

// TestRunFailures: each exit status and protocol fault per task, what it
// means and whether it is retried; the program's message reaches the log,
// never the error (which a workflow records).
func TestRunFailures(t *testing.T) {
	for i, c := range failureCases {
		if c.mode == "wrongdone" {
			continue
		}
		r, log, _ := runner(t, c.mode)
		_, err := r.Run(context.Background(), []string{os.Args[0]}, task(trainer.TaskEvaluate), nil, nil)
		var f *Failure
		if !errors.As(err, &f) {
			t.Fatalf("case %d (%s): error %v, want a *Failure", i, c.mode, err)
		}
		if f.Reason != c.reason || f.Code != c.code || f.Kind != c.kind || f.Fault != c.fault || f.Retryable != c.retryable {
			t.Errorf("case %d (%s): %+v (%v)", i, c.mode, f, f)
		}
		if strings.Contains(f.Error(), "3.14159") {
			t.Errorf("case %d (%s): the program's message reached the error: %v", i, c.mode, f)
		}
		if c.mode == "badsite" && !strings.Contains(log.String(), "cell value 3.14159 in row 7") {
			t.Errorf("case %d: the message is not in the log:\n%s", i, log.String())
		}
	}
	if _, err := (Runner{Root: t.TempDir()}).Run(context.Background(), []string{filepath.Join(t.TempDir(), "no-such-trainer")}, task(trainer.TaskTrain), nil, nil); err == nil {
		t.Error("a command that does not exist: no error")
	} else if f := (*Failure)(nil); !errors.As(err, &f) || !f.Retryable {
		t.Errorf("a command that does not exist: %v", err)
	}
}

// TestDeadlineKillsTheGroup: a trainer that ignores SIGTERM and has
// started a process of its own is killed, both of them, at the deadline
// after the grace period; the attempt is a retryable timeout.
func TestDeadlineKillsTheGroup(t *testing.T) {
	r, _, progress := runner(t, "hang")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err := r.Run(ctx, []string{os.Args[0]}, task(trainer.TaskTrain), nil, nil)
	var f *Failure
	if !errors.As(err, &f) || f.Reason != ReasonTimeout || !f.Retryable {
		t.Fatalf("error %v, want a retryable timeout", err)
	}
	if el := time.Since(start); el > 2*time.Second+r.Grace+3*time.Second {
		t.Errorf("took %v", el)
	}
	b, err := os.ReadFile(envValue(r.Env, "TRAINER_PIDFILE"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(string(b))
	if !gone(pid) {
		t.Errorf("the trainer's child %d outlived the deadline", pid)
	}
	if len(*progress) != 1 {
		t.Errorf("progress %q", *progress)
	}
}

// TestCancelStopsWithinGrace: cancellation sends SIGTERM, and a trainer
// that stops at it is gone well before the grace period.
func TestCancelStopsWithinGrace(t *testing.T) {
	r, _, _ := runner(t, "term")
	r.Grace = 10 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	r.Progress = func(json.RawMessage) { cancel() } // cancel once it runs
	start := time.Now()
	_, err := r.Run(ctx, []string{os.Args[0]}, task(trainer.TaskTrain), nil, nil)
	var f *Failure
	if !errors.As(err, &f) || f.Reason != ReasonCanceled {
		t.Fatalf("error %v, want canceled", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("stopping took %v: SIGTERM was not delivered", el)
	}
}

// TestLeftBehindProcessIsKilled: a trainer that exits 0 leaving a process
// that holds its output open still completes at once, and that process is
// killed.
func TestLeftBehindProcessIsKilled(t *testing.T) {
	r, _, _ := runner(t, "leave")
	start := time.Now()
	res, err := r.Run(context.Background(), []string{os.Args[0]}, task(trainer.TaskEvaluate), nil, nil)
	if err != nil || res.NumExamples != 3 {
		t.Fatalf("result %+v, error %v", res, err)
	}
	if el := time.Since(start); el > 4*time.Second {
		t.Errorf("took %v: the runner waited for the left-behind process", el)
	}
	b, _ := os.ReadFile(envValue(r.Env, "TRAINER_PIDFILE"))
	pid, _ := strconv.Atoi(string(b))
	if pid == 0 || !gone(pid) {
		t.Errorf("left-behind process %d still running", pid)
	}
}

// TestSweepOrphans: a program whose runner died leaves its group running
// and its marker; SweepOrphans kills exactly the processes of that group
// that carry the directory's PTOPOFL_TASK (per task) or PTOPOFL_SERVE_DIR
// (serve), and not another process of the same group, and removes the
// directories and the markers.
func TestSweepOrphans(t *testing.T) {
	for i, c := range []struct{ dir, env string }{
		{"task-123", trainer.EnvTask + "=%s/" + trainer.TaskFile},
		{"serve-123-x", trainer.EnvServeDir + "=%s"},
	} {
		root := t.TempDir()
		dir := filepath.Join(root, c.dir)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		orphan := exec.Command(os.Args[0])
		orphan.Env = append(os.Environ(), "TRAINER_HELPER=sleep", fmt.Sprintf(c.env, dir))
		orphan.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := orphan.Start(); err != nil {
			t.Fatal(err)
		}
		defer orphan.Process.Kill()
		// Another process put in the same group but not the program's.
		other := exec.Command(os.Args[0])
		other.Env = append(os.Environ(), "TRAINER_HELPER=sleep")
		other.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: orphan.Process.Pid}
		if err := other.Start(); err != nil {
			t.Fatal(err)
		}
		defer other.Process.Kill()
		if err := os.WriteFile(dir+"."+pgidFile, []byte(strconv.Itoa(orphan.Process.Pid)), 0o600); err != nil {
			t.Fatal(err)
		}
		n, err := SweepOrphans(root)
		if err != nil || n != 1 {
			t.Fatalf("%d (%s): killed %d, error %v; want 1", i, c.dir, n, err)
		}
		go orphan.Wait()
		if !gone(orphan.Process.Pid) {
			t.Errorf("%d (%s): the orphaned trainer is still running", i, c.dir)
		}
		if goneNow(other.Process.Pid) {
			t.Errorf("%d (%s): a process without the program's environment was killed", i, c.dir)
		}
		if entries, _ := os.ReadDir(root); len(entries) != 0 {
			t.Errorf("%d (%s): root not empty: %v", i, c.dir, entries)
		}
	}
}

// BenchmarkRunTask is the runner's cost of one task of a program that
// does next to nothing (this test binary, reading task.json and writing a
// result): the directory, task.json, fork and exec of a process group,
// the output pumps, the wait and the clean-up. A real program adds its
// own start-up (`import torch` alone takes 2 s on this machine).
func BenchmarkRunTask(b *testing.B) {
	r := Runner{Root: b.TempDir(), Log: io.Discard, Env: []string{"TRAINER_HELPER=ok"}}
	for b.Loop() {
		if _, err := r.Run(context.Background(), []string{os.Args[0]}, task(trainer.TaskEvaluate), nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkServeTask is the same task through a serve-mode process that
// is already running: the directory, task.json, one line each way and the
// clean-up.
func BenchmarkServeTask(b *testing.B) {
	s := &Server{Argv: []string{os.Args[0]}, Root: b.TempDir(), Log: io.Discard, Env: []string{"TRAINER_HELPER=ok"}}
	defer s.Close()
	for b.Loop() {
		if _, err := s.Run(context.Background(), task(trainer.TaskEvaluate), nil, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}
