// Package trainer runs a site's own training program for one task under
// the trainer protocol ptopofl.trainer/v1 (issue 24): one process per task
// attempt, files in and files out. The worker makes a fresh directory D,
// writes D/task.json (Task) and the task's input files, and runs the
// site's command with working directory D and PTOPOFL_TASK=D/task.json in
// its environment, as the leader of a process group of its own. The
// program's standard output and error go to the worker's log only; a line
// on standard output of the form "ptopofl:progress {…}" is handed to the
// caller as progress (the activity's heartbeat). The program writes its
// result file last, as the commit marker. On cancellation or at the
// deadline the whole group gets SIGTERM, then SIGKILL after a grace
// period; if the worker itself dies, the kernel kills the leader
// (Pdeathsig) and the next Runner over the same root kills what is left of
// the group (SweepOrphans). D is removed afterwards.
//
// The exit status decides what the attempt means (Classify): 0 with a
// well-formed result is success; 65 is bad site data and 66 a bad input
// model, neither retried; 75 is a transient failure; anything else,
// including a signal or 0 without a result, is retried under the
// activity's retry policy. A program may write error.json ({"kind",
// "message"}) beside its result: the kind, if it is a short identifier,
// goes into the error a workflow sees; the message, which could hold
// anything the program put there, goes to the worker's log only.
//
// This package is the process side of the protocol; the site activities
// that stage models and data for it are in package activities
// (external.go).
package trainer

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Protocol is the protocol name task.json carries.
const Protocol = "ptopofl.trainer/v1"

// The tasks a program is asked to do.
const (
	TaskInit     = "init"
	TaskTrain    = "train"
	TaskEvaluate = "evaluate"
	TaskEmbed    = "embed"
)

// The exit statuses the protocol gives a meaning (sysexits.h's EX_DATAERR,
// EX_NOINPUT and EX_TEMPFAIL).
const (
	ExitBadSiteData = 65
	ExitBadModel    = 66
	ExitTransient   = 75
)

// File names inside a task directory.
const (
	TaskFile     = "task.json"
	ResultFile   = "result.json"
	ErrorFile    = "error.json"
	ModelInFile  = "model_in.safetensors"
	ModelOutFile = "model_out.safetensors"
	EmbedOutFile = "embed_out.safetensors"
	pgidFile     = "pgid"
)

// progressPrefix starts a progress line on the program's standard output.
const progressPrefix = "ptopofl:progress "

// maxProgress bounds one progress line handed on; longer lines are logged
// and dropped.
const maxProgress = 4096

// Task is task.json. Paths are absolute; Run fills ModelIn, ModelOut,
// EmbedOut and Result with files in the task directory as the task needs
// them.
type Task struct {
	Protocol        string         `json:"protocol"`
	Task            string         `json:"task"`
	Campaign        string         `json:"campaign"`
	Site            string         `json:"site"`
	Round           int            `json:"round"`
	Seed            uint64         `json:"seed"`
	Method          string         `json:"method"`
	Hyperparameters map[string]any `json:"hyperparameters"`
	TrainData       []string       `json:"train_data"`
	TestData        []string       `json:"test_data"`
	ModelIn         string         `json:"model_in,omitempty"`
	ModelOut        string         `json:"model_out,omitempty"`
	Rows            []int          `json:"rows,omitempty"`
	EmbedOut        string         `json:"embed_out,omitempty"`
	Result          string         `json:"result"`
}

// Result is the program's result file.
type Result struct {
	NumExamples int64              `json:"num_examples"`
	Metrics     map[string]float64 `json:"metrics"`
}

// Runner runs tasks in fresh directories under Root.
type Runner struct {
	// Root holds one directory per running task; it must exist.
	Root string
	// Log receives the program's standard output and error, line by line,
	// prefixed with the site and the task, and what the runner itself has
	// to say (the program's error message). Nil discards them.
	Log io.Writer
	// Grace is how long the group has between SIGTERM and SIGKILL; 0 means
	// 10 s.
	Grace time.Duration
	// Progress receives each progress line's JSON object, in order; nil
	// ignores them.
	Progress func(json.RawMessage)
}

// Failure is a task attempt that did not succeed. Its Error text is safe to
// record in Temporal: an exit status, a meaning and, when the program gave
// one, an identifier-like kind; never the program's message or output.
type Failure struct {
	// Code is the exit status, or -1 when the program was ended by a
	// signal or never started.
	Code int
	// Reason is what the attempt means: ReasonBadSiteData, ReasonBadModel,
	// ReasonTransient, ReasonProtocol (exit 0 without a well-formed
	// result), ReasonFailed (another status or a signal), ReasonTimeout
	// (killed at the deadline) or ReasonCanceled.
	Reason string
	// Kind is error.json's kind when it is a short identifier
	// ([A-Za-z0-9_.-]{1,64}), else "".
	Kind string
	// Retryable: everything but bad site data and a bad model.
	Retryable bool
	detail    string // safe words on what was wrong (a protocol fault)
}

// The reasons of a Failure.
const (
	ReasonBadSiteData = "bad site data"
	ReasonBadModel    = "bad input model"
	ReasonTransient   = "transient failure"
	ReasonProtocol    = "protocol violation"
	ReasonFailed      = "failed"
	ReasonTimeout     = "timed out"
	ReasonCanceled    = "canceled"
)

func (f *Failure) Error() string {
	var b strings.Builder
	b.WriteString("trainer ")
	switch {
	case f.Code >= 0:
		fmt.Fprintf(&b, "exited %d (%s)", f.Code, f.Reason)
	default:
		b.WriteString(f.Reason)
	}
	if f.Kind != "" {
		fmt.Fprintf(&b, ", kind %s", f.Kind)
	}
	if f.detail != "" {
		fmt.Fprintf(&b, ": %s", f.detail)
	}
	return b.String()
}

var kindPattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// Classify maps an exit status to a Failure (nil for 0), with kind from
// error.json when it is an identifier.
func Classify(code int, kind string) *Failure {
	if code == 0 {
		return nil
	}
	if !kindPattern.MatchString(kind) {
		kind = ""
	}
	f := &Failure{Code: code, Kind: kind, Retryable: true, Reason: ReasonFailed}
	switch code {
	case ExitBadSiteData:
		f.Reason, f.Retryable = ReasonBadSiteData, false
	case ExitBadModel:
		f.Reason, f.Retryable = ReasonBadModel, false
	case ExitTransient:
		f.Reason = ReasonTransient
	}
	return f
}

// Run runs cmd (argv; no shell) for task in a fresh directory: stage
// writes the task's input files into it (the input model at ModelInFile
// for every task but init), the program runs, and on success collect reads
// its outputs (ModelOutFile, EmbedOutFile) before the directory is
// removed. ctx's cancellation or deadline ends the program's whole process
// group. The error is a *Failure for anything the program did, or a plain
// error for the runner's own trouble (a directory it could not make).
func (r Runner) Run(ctx context.Context, cmd []string, task Task, stage func(dir string) error, collect func(dir string, res Result) error) (Result, error) {
	if len(cmd) == 0 || cmd[0] == "" {
		return Result{}, errors.New("trainer: empty command")
	}
	switch task.Task {
	case TaskInit, TaskTrain, TaskEvaluate, TaskEmbed:
	default:
		return Result{}, fmt.Errorf("trainer: unknown task %q", task.Task)
	}
	// The runner's pid in the name: SweepOrphans leaves the directories
	// of runners that are still alive (two workers over one root) alone.
	dir, err := os.MkdirTemp(r.Root, fmt.Sprintf("task-%d-", os.Getpid()))
	if err != nil {
		return Result{}, fmt.Errorf("trainer: task directory: %w", err)
	}
	defer os.RemoveAll(dir)
	task.Protocol = Protocol
	task.Result = filepath.Join(dir, ResultFile)
	task.ModelIn, task.ModelOut, task.EmbedOut = "", "", ""
	if task.Task != TaskInit {
		task.ModelIn = filepath.Join(dir, ModelInFile)
	}
	if task.Task == TaskInit || task.Task == TaskTrain {
		task.ModelOut = filepath.Join(dir, ModelOutFile)
	}
	if task.Task == TaskEmbed {
		task.EmbedOut = filepath.Join(dir, EmbedOutFile)
	}
	b, err := json.MarshalIndent(task, "", "  ")
	if err != nil {
		return Result{}, fmt.Errorf("trainer: task.json: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, TaskFile), b, 0o600); err != nil {
		return Result{}, fmt.Errorf("trainer: task.json: %w", err)
	}
	if stage != nil {
		if err := stage(dir); err != nil {
			return Result{}, fmt.Errorf("trainer: stage the task's inputs: %w", err)
		}
	}
	fail := r.execute(ctx, cmd, task, dir)
	if fail != nil {
		return Result{}, fail
	}
	res, err := readResult(task.Result)
	if err != nil {
		return Result{}, &Failure{Code: 0, Reason: ReasonProtocol, Retryable: true, detail: err.Error()}
	}
	if collect != nil {
		if err := collect(dir, res); err != nil {
			return Result{}, err
		}
	}
	return res, nil
}

// execute runs the program and waits for its group; nil when it exited 0.
func (r Runner) execute(ctx context.Context, argv []string, task Task, dir string) *Failure {
	c := exec.Command(argv[0], argv[1:]...)
	c.Dir = dir
	c.Env = append(os.Environ(), "PTOPOFL_TASK="+filepath.Join(dir, TaskFile))
	// Its own process group, so that one signal reaches whatever it
	// starts; the kernel kills the leader if this process dies.
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	c.Stdin = nil
	prefix := fmt.Sprintf("trainer %s/%s round %d %s: ", task.Campaign, task.Site, task.Round, task.Task)
	// Pipes of our own rather than exec's: a process the program leaves
	// behind may hold them open, and the leader's exit, not their end, is
	// what the runner waits for.
	outR, outW, err := os.Pipe()
	if err != nil {
		return &Failure{Code: -1, Reason: ReasonFailed, Retryable: true, detail: "no pipe for its output"}
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return &Failure{Code: -1, Reason: ReasonFailed, Retryable: true, detail: "no pipe for its output"}
	}
	c.Stdout, c.Stderr = outW, errW
	startErr := c.Start()
	outW.Close()
	errW.Close()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); r.pump(outR, prefix, true); outR.Close() }()
	go func() { defer wg.Done(); r.pump(errR, prefix, false); errR.Close() }()
	if startErr != nil {
		wg.Wait()
		// The command's own name only: it is the site's configuration.
		return &Failure{Code: -1, Reason: ReasonFailed, Retryable: true, detail: "could not start " + filepath.Base(argv[0])}
	}
	pgid := c.Process.Pid
	mark := filepath.Join(r.Root, filepath.Base(dir)+"."+pgidFile)
	_ = os.WriteFile(mark, []byte(strconv.Itoa(pgid)), 0o600)
	defer os.Remove(mark)

	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	var waitErr error
	var ended string // why the runner ended it, "" if it ended by itself
	select {
	case waitErr = <-done:
	case <-ctx.Done():
		ended = ReasonCanceled
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			ended = ReasonTimeout
		}
		waitErr = r.stop(pgid, done)
	}
	// Whatever the leader left running in its group goes with it, and
	// with it the last holders of the pipes.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	pumped := make(chan struct{})
	go func() { wg.Wait(); close(pumped) }()
	select {
	case <-pumped:
	case <-time.After(5 * time.Second):
		// A process outside the group (one that broke away with setsid,
		// which the protocol forbids) still holds a pipe: stop reading.
		outR.Close()
		errR.Close()
		<-pumped
	}
	if ended != "" {
		return &Failure{Code: -1, Reason: ended, Retryable: true}
	}
	code := exitCode(waitErr)
	if code == 0 {
		return nil
	}
	kind, msg := readErrorFile(filepath.Join(dir, ErrorFile))
	if msg != "" {
		r.logf("%serror.json: %s", prefix, msg)
	}
	if code < 0 {
		return &Failure{Code: -1, Reason: ReasonFailed, Retryable: true, Kind: Classify(1, kind).Kind, detail: "ended by a signal"}
	}
	return Classify(code, kind)
}

// stop ends the process group: SIGTERM, then SIGKILL after the grace
// period; it returns the leader's wait error.
func (r Runner) stop(pgid int, done <-chan error) error {
	grace := r.Grace
	if grace <= 0 {
		grace = 10 * time.Second
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case err := <-done:
		return err
	case <-time.After(grace):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	return <-done
}

// pump copies one output stream of the program to the log, line by line,
// and hands progress lines (stdout only) to Progress.
func (r Runner) pump(rd io.Reader, prefix string, progress bool) {
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if progress && strings.HasPrefix(line, progressPrefix) {
			raw := strings.TrimSpace(strings.TrimPrefix(line, progressPrefix))
			if len(raw) <= maxProgress && strings.HasPrefix(raw, "{") && json.Valid([]byte(raw)) {
				if r.Progress != nil {
					r.Progress(json.RawMessage(raw))
				}
				continue
			}
		}
		r.logf("%s%s", prefix, line)
	}
	// A line over 1 MiB stops the scanner: drain the rest so the program
	// never blocks on a full pipe.
	_, _ = io.Copy(io.Discard, rd)
}

func (r Runner) logf(format string, args ...any) {
	if r.Log != nil {
		fmt.Fprintf(r.Log, format+"\n", args...)
	}
}

// exitCode is the program's exit status, -1 when a signal ended it.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return -1
		}
		return ee.ExitCode()
	}
	return -1
}

// readResult reads and checks the result file. Its metrics are finite:
// JSON has no NaN or infinity, and a number beyond float64's range fails
// to decode.
func readResult(path string) (Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Result{}, errors.New("exited 0 without writing its result file")
	}
	var res Result
	d := json.NewDecoder(strings.NewReader(string(b)))
	if err := d.Decode(&res); err != nil {
		return Result{}, errors.New("its result file is not the protocol's JSON object")
	}
	if res.NumExamples < 0 {
		return Result{}, errors.New("its result has a negative num_examples")
	}
	return res, nil
}

// readErrorFile reads error.json's kind and message, the message cut to
// 1,000 bytes; both "" when there is none or it is malformed.
func readErrorFile(path string) (kind, msg string) {
	b, err := os.ReadFile(path)
	if err != nil || len(b) > 1<<20 {
		return "", ""
	}
	var e struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	}
	if json.Unmarshal(b, &e) != nil {
		return "", ""
	}
	return e.Kind, truncate(e.Message, 1000)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// SweepOrphans kills the process groups of tasks whose runner died with
// them still running (a worker killed with -9: the kernel kills each
// group's leader, not what the leader started) and removes their
// directories. Call it once at start, before any Run over the same root.
// The tasks of another runner that is still alive (a second worker over the
// same root) are left alone: a task directory's name carries its runner's
// pid. Only processes that are still in the recorded group and still carry that
// task's PTOPOFL_TASK in their environment are killed, so a process group
// id the system has since given to someone else is left alone. It returns
// how many processes it killed.
func SweepOrphans(root string) (int, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return 0, fmt.Errorf("trainer: %w", err)
	}
	n := 0
	for _, e := range entries {
		name := e.Name()
		if owner := runnerOf(name); owner > 0 && owner != os.Getpid() && alive(owner) {
			continue // another live runner's task
		}
		if strings.HasSuffix(name, "."+pgidFile) {
			b, err := os.ReadFile(filepath.Join(root, name))
			if err == nil {
				if pgid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pgid > 1 {
					n += killGroupOf(pgid, filepath.Join(root, strings.TrimSuffix(name, "."+pgidFile)))
				}
			}
			os.Remove(filepath.Join(root, name))
			continue
		}
		if e.IsDir() && strings.HasPrefix(name, "task-") {
			os.RemoveAll(filepath.Join(root, name))
		}
	}
	return n, nil
}

// runnerOf returns the pid of the runner that made the task directory (or
// its pgid mark) called name, "task-<pid>-<random>", or 0.
func runnerOf(name string) int {
	rest, ok := strings.CutPrefix(name, "task-")
	if !ok {
		return 0
	}
	pid, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(pid)
	if err != nil {
		return 0
	}
	return n
}

// alive reports whether a process pid exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// killGroupOf kills every process in process group pgid whose environment
// names a task.json under dir, and returns how many it killed. It reads
// /proc (Linux).
func killGroupOf(pgid int, dir string) int {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	want := "PTOPOFL_TASK=" + filepath.Join(dir, TaskFile)
	n := 0
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid <= 1 {
			continue
		}
		if g, err := syscall.Getpgid(pid); err != nil || g != pgid {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", p.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, kv := range strings.Split(string(env), "\x00") {
			if kv == want {
				if syscall.Kill(pid, syscall.SIGKILL) == nil {
					n++
				}
				break
			}
		}
	}
	return n
}
