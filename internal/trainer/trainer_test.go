package trainer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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
)

// The test binary doubles as the trainer: with TRAINER_HELPER set it acts
// out that mode instead of running the tests.
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
	var task Task
	b, err := os.ReadFile(os.Getenv("PTOPOFL_TASK"))
	if err == nil {
		err = json.Unmarshal(b, &task)
	}
	if err != nil || task.Protocol != Protocol {
		os.Exit(64)
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
	case "ok":
		os.Stdout.WriteString("starting on " + task.Site + "\n")
		os.Stdout.WriteString(`ptopofl:progress {"epoch": 1, "loss": 0.7}` + "\n")
		os.Stdout.WriteString("ptopofl:progress not json\n")
		os.Stderr.WriteString("a warning\n")
		if task.Task == TaskTrain {
			in, err := os.ReadFile(task.ModelIn)
			if err != nil {
				os.Exit(66)
			}
			os.WriteFile(task.ModelOut, append(in, '!'), 0o644)
		}
		result(12, `{"loss": 0.5}`)
	case "badsite":
		os.WriteFile(filepath.Join(filepath.Dir(task.Result), ErrorFile), []byte(`{"kind": "missing_column", "message": "cell value 3.14159 in row 7"}`), 0o644)
		os.Exit(ExitBadSiteData)
	case "badkind":
		os.WriteFile(filepath.Join(filepath.Dir(task.Result), ErrorFile), []byte(`{"kind": "value 3.14159", "message": "x"}`), 0o644)
		os.Exit(ExitBadModel)
	case "transient":
		os.Exit(ExitTransient)
	case "crash":
		os.Exit(1)
	case "noresult":
	case "badresult":
		os.WriteFile(task.Result, []byte("done"), 0o644)
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
	}
	os.Exit(0)
}

// gone waits up to 5 s for pid to be dead or a zombie.
func gone(pid int) bool {
	for i := 0; i < 100; i++ {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return true
		}
		if f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:])); len(f) > 0 && f[0] == "Z" {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// syncBuffer is a log safe for the runner's two output pumps.
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

func runner(t *testing.T, mode string) (Runner, *syncBuffer, *[]string) {
	t.Helper()
	t.Setenv("TRAINER_HELPER", mode)
	log := &syncBuffer{}
	var mu sync.Mutex
	var progress []string
	r := Runner{Root: t.TempDir(), Log: log, Grace: 500 * time.Millisecond, Progress: func(m json.RawMessage) {
		mu.Lock()
		defer mu.Unlock()
		progress = append(progress, string(m))
	}}
	return r, log, &progress
}

func task(kind string) Task {
	return Task{Task: kind, Campaign: "c", Site: "site0", Round: 3, Seed: 42, Method: "fedavg",
		Hyperparameters: map[string]any{"lr": 0.1}, TrainData: []string{"/data/site0_train.csv"}, TestData: []string{"/data/site0_test.csv"}}
}

// TestRunSuccess: the task file as the protocol says, the input model
// staged and the output model collected, the result read, progress lines
// handed on and everything else logged, the directory removed.
func TestRunSuccess(t *testing.T) {
	r, log, progress := runner(t, "ok")
	var dir string
	var out []byte
	res, err := r.Run(context.Background(), []string{os.Args[0]}, task(TaskTrain),
		func(d string) error {
			dir = d
			return os.WriteFile(filepath.Join(d, ModelInFile), []byte("model"), 0o600)
		},
		func(d string, res Result) error {
			var err error
			out, err = os.ReadFile(filepath.Join(d, ModelOutFile))
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
// task directory, the protocol name.
func TestTaskFile(t *testing.T) {
	cases := []struct {
		kind                    string
		modelIn, modelOut, embd bool
	}{
		{TaskInit, false, true, false},
		{TaskTrain, true, true, false},
		{TaskEvaluate, true, false, false},
		{TaskEmbed, true, false, true},
	}
	for i, c := range cases {
		r, _, _ := runner(t, "ok")
		var got Task
		_, err := r.Run(context.Background(), []string{os.Args[0]}, task(c.kind), func(d string) error {
			b, err := os.ReadFile(filepath.Join(d, TaskFile))
			if err != nil {
				return err
			}
			if err := json.Unmarshal(b, &got); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(d, ModelInFile), nil, 0o600)
		}, nil)
		if err != nil {
			t.Fatalf("case %d (%s): %v", i, c.kind, err)
		}
		if got.Protocol != Protocol || got.Task != c.kind || got.Seed != 42 || got.Site != "site0" || !filepath.IsAbs(got.Result) ||
			(got.ModelIn != "") != c.modelIn || (got.ModelOut != "") != c.modelOut || (got.EmbedOut != "") != c.embd {
			t.Errorf("case %d (%s): task.json %+v", i, c.kind, got)
		}
	}
}

// TestRunFailures: each exit status and protocol fault, what it means and
// whether it is retried; the program's message reaches the log, never the
// error (which a workflow records).
func TestRunFailures(t *testing.T) {
	cases := []struct {
		mode      string
		reason    string
		code      int
		kind      string
		retryable bool
	}{
		{"badsite", ReasonBadSiteData, 65, "missing_column", false},
		{"badkind", ReasonBadModel, 66, "", false},
		{"transient", ReasonTransient, 75, "", true},
		{"crash", ReasonFailed, 1, "", true},
		{"noresult", ReasonProtocol, 0, "", true},
		{"badresult", ReasonProtocol, 0, "", true},
		{"negative", ReasonProtocol, 0, "", true},
	}
	for i, c := range cases {
		r, log, _ := runner(t, c.mode)
		_, err := r.Run(context.Background(), []string{os.Args[0]}, task(TaskEvaluate), nil, nil)
		var f *Failure
		if !errors.As(err, &f) {
			t.Fatalf("case %d (%s): error %v, want a *Failure", i, c.mode, err)
		}
		if f.Reason != c.reason || f.Code != c.code || f.Kind != c.kind || f.Retryable != c.retryable {
			t.Errorf("case %d (%s): %+v (%v)", i, c.mode, f, f)
		}
		if strings.Contains(f.Error(), "3.14159") {
			t.Errorf("case %d (%s): the program's message reached the error: %v", i, c.mode, f)
		}
		if c.mode == "badsite" && !strings.Contains(log.String(), "cell value 3.14159 in row 7") {
			t.Errorf("case %d: the message is not in the log:\n%s", i, log.String())
		}
	}
	if _, err := (Runner{Root: t.TempDir()}).Run(context.Background(), []string{filepath.Join(t.TempDir(), "no-such-trainer")}, task(TaskTrain), nil, nil); err == nil {
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
	pidfile := filepath.Join(t.TempDir(), "pid")
	t.Setenv("TRAINER_PIDFILE", pidfile)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err := r.Run(ctx, []string{os.Args[0]}, task(TaskTrain), nil, nil)
	var f *Failure
	if !errors.As(err, &f) || f.Reason != ReasonTimeout || !f.Retryable {
		t.Fatalf("error %v, want a retryable timeout", err)
	}
	if el := time.Since(start); el > 2*time.Second+r.Grace+3*time.Second {
		t.Errorf("took %v", el)
	}
	b, err := os.ReadFile(pidfile)
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
	_, err := r.Run(ctx, []string{os.Args[0]}, task(TaskTrain), nil, nil)
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
	pidfile := filepath.Join(t.TempDir(), "pid")
	t.Setenv("TRAINER_PIDFILE", pidfile)
	start := time.Now()
	res, err := r.Run(context.Background(), []string{os.Args[0]}, task(TaskEvaluate), nil, nil)
	if err != nil || res.NumExamples != 3 {
		t.Fatalf("result %+v, error %v", res, err)
	}
	if el := time.Since(start); el > 4*time.Second {
		t.Errorf("took %v: the runner waited for the left-behind process", el)
	}
	b, _ := os.ReadFile(pidfile)
	pid, _ := strconv.Atoi(string(b))
	if pid == 0 || !gone(pid) {
		t.Errorf("left-behind process %d still running", pid)
	}
}

// TestSweepOrphans: a task whose runner died leaves its group running and
// its marker; SweepOrphans kills exactly the processes of that group that
// carry the task's PTOPOFL_TASK, and not another process of the same
// group, and removes the directory and the marker.
func TestSweepOrphans(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "task-123")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	orphan := exec.Command(os.Args[0])
	orphan.Env = append(os.Environ(), "TRAINER_HELPER=sleep", "PTOPOFL_TASK="+filepath.Join(dir, TaskFile))
	orphan.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	defer orphan.Process.Kill()
	// Another process put in the same group but not the task's.
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
		t.Fatalf("killed %d, error %v; want 1", n, err)
	}
	go orphan.Wait()
	if !gone(orphan.Process.Pid) {
		t.Error("the orphaned trainer is still running")
	}
	if gone(other.Process.Pid) {
		t.Error("a process without the task's environment was killed")
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("root not empty: %v", entries)
	}
}

// BenchmarkRunTask is the runner's cost of one task of a program that
// does next to nothing (this test binary, reading task.json and writing a
// result): the directory, task.json, fork and exec of a process group,
// the output pumps, the wait and the clean-up. A real program adds its
// own start-up (`import torch` alone takes 2 s on this machine).
func BenchmarkRunTask(b *testing.B) {
	root := b.TempDir()
	os.Setenv("TRAINER_HELPER", "ok")
	defer os.Unsetenv("TRAINER_HELPER")
	r := Runner{Root: root, Log: io.Discard}
	for b.Loop() {
		if _, err := r.Run(context.Background(), []string{os.Args[0]}, task(TaskEvaluate), nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}
