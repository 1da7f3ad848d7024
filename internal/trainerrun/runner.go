// Package trainerrun is the worker's side of the trainer protocol
// ptopofl.trainer/v1 (package trainer, docs/how-to/own-trainer.md): it
// runs a site's own training program for a task, in one of two modes.
//
// Per task (Runner): one process per task attempt. The worker makes a
// fresh directory D, writes D/task.json and the task's input files, and
// runs the site's command with working directory D and PTOPOFL_TASK set,
// as the leader of a process group of its own. The exit status decides
// what the attempt means (Classify).
//
// Serve (Server): one long-lived process per site and program, started at
// the first task with PTOPOFL_SERVE=1, which reads one absolute task.json
// path per line on standard input and prints "ptopofl:done PATH" once that
// task's outputs are written; error.json's status says what a failure
// means. A process that dies fails its task in flight as transient, and
// the next task starts a fresh one; a task cancelled or timed out kills the
// process's group (SIGTERM, the grace period, SIGKILL).
//
// Both modes run the program in a sealed environment (Environ): PATH,
// HOME, LANG and LC_*, TMPDIR, the protocol's variables and only the
// variables the site names; never the worker's S3 credentials, payload
// keys or secret directory. The program's standard output and error go to
// the worker's log only; "ptopofl:progress {…}" lines on standard output
// are handed to the caller as progress (the activity's heartbeat). If the
// worker dies, the kernel kills each group's leader (Pdeathsig) and the
// next worker over the same root kills what is left (SweepOrphans).
//
// Host puts the two together for a worker: its programs by name, the
// variables they get, and how many of their tasks run at once (slots).
package trainerrun

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
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ptopofl/ptopofl/trainer"
)

// pgidFile ends the name of the marker beside a directory whose program
// runs: it holds the program's process group id (SweepOrphans).
const pgidFile = "pgid"

// maxProgress bounds one progress line handed on; longer lines are logged
// and dropped.
const maxProgress = 4096

// DefaultGrace is how long a process group has between SIGTERM and
// SIGKILL.
const DefaultGrace = 10 * time.Second

// Runner runs tasks one process each, in fresh directories under Root.
type Runner struct {
	// Root holds one directory per running task; it must exist.
	Root string
	// Log receives the program's standard output and error, line by line,
	// prefixed with the site and the task, and what the runner itself has
	// to say (the program's error message). Nil discards them.
	Log io.Writer
	// Grace is how long the group has between SIGTERM and SIGKILL; 0 means
	// DefaultGrace.
	Grace time.Duration
	// Env is what the site adds to the sealed environment (ParseEnv):
	// "NAME" passes the worker's NAME, "NAME=VALUE" sets it.
	Env []string
	// Progress receives each progress line's JSON object, in order; nil
	// ignores them.
	Progress func(json.RawMessage)
}

// Failure is a task attempt that did not succeed. Its Error text is safe to
// record in Temporal: an exit status, a meaning, an identifier-like kind
// and the runner's own words; never the program's message or output.
type Failure struct {
	// Code is the exit status (per task) or error.json's status (serve),
	// 0 for a fault in the outputs of a program that exited 0 or said it
	// was done, and -1 when the program was ended by a signal, died in
	// serve mode, or never started.
	Code int
	// Reason is what the attempt means: ReasonBadSiteData, ReasonBadModel,
	// ReasonTransient, ReasonProtocol (outputs that break the protocol:
	// Fault says how), ReasonFailed (another status or a signal),
	// ReasonExited (a serve-mode process died with the task in flight),
	// ReasonTimeout (killed at the deadline) or ReasonCanceled.
	Reason string
	// Kind is error.json's kind when it is a short identifier, else "".
	Kind string
	// Fault is the trainer.Kind… constant of a protocol fault, "" for the
	// other reasons.
	Fault string
	// Retryable: everything but bad site data, a bad model and a
	// protocol fault.
	Retryable bool
	serve     bool   // the code is error.json's status, not an exit status
	detail    string // safe words on what was wrong
}

// The reasons of a Failure.
const (
	ReasonBadSiteData = "bad site data"
	ReasonBadModel    = "bad input model"
	ReasonTransient   = "transient failure"
	ReasonProtocol    = "protocol violation"
	ReasonFailed      = "failed"
	ReasonExited      = "exited with the task in flight"
	ReasonTimeout     = "timed out"
	ReasonCanceled    = "canceled"
)

func (f *Failure) Error() string {
	var b strings.Builder
	b.WriteString("trainer ")
	switch {
	case f.serve && f.Code > 0:
		fmt.Fprintf(&b, "reported status %d (%s)", f.Code, f.Reason)
	case f.serve && f.Code == 0:
		fmt.Fprintf(&b, "said done (%s)", f.Reason)
	case f.Code >= 0:
		fmt.Fprintf(&b, "exited %d (%s)", f.Code, f.Reason)
	default:
		b.WriteString(f.Reason)
	}
	if f.Kind != "" {
		fmt.Fprintf(&b, ", kind %s", f.Kind)
	}
	if f.Fault != "" {
		fmt.Fprintf(&b, ": %s", f.Fault)
	}
	if f.detail != "" {
		fmt.Fprintf(&b, ": %s", f.detail)
	}
	return b.String()
}

// Classify maps a status (an exit status, or error.json's in serve mode)
// to a Failure (nil for 0), with kind from error.json when it is an
// identifier.
func Classify(code int, kind string) *Failure {
	if code == 0 {
		return nil
	}
	if !trainer.ValidKind(kind) {
		kind = ""
	}
	f := &Failure{Code: code, Kind: kind, Retryable: true, Reason: ReasonFailed}
	switch code {
	case trainer.StatusBadSiteData:
		f.Reason, f.Retryable = ReasonBadSiteData, false
	case trainer.StatusBadModel:
		f.Reason, f.Retryable = ReasonBadModel, false
	case trainer.StatusTransient:
		f.Reason = ReasonTransient
	}
	return f
}

// FaultFailure is the Failure of a program whose outputs break the
// protocol (a *trainer.Fault): named by its kind, not retried.
func FaultFailure(err *trainer.Fault) *Failure {
	return &Failure{Code: 0, Reason: ReasonProtocol, Fault: err.Kind, detail: err.Detail}
}

// taskDir makes a fresh task directory under root and writes task.json
// into it, with the file paths the task needs in that directory. The
// runner's pid is in the name: SweepOrphans leaves the directories of
// runners that are still alive (two workers over one root) alone.
func taskDir(root string, task trainer.Task) (string, trainer.Task, error) {
	switch task.Task {
	case trainer.TaskInit, trainer.TaskTrain, trainer.TaskEvaluate, trainer.TaskEmbed:
	default:
		return "", task, fmt.Errorf("trainer: unknown task %q", task.Task)
	}
	dir, err := os.MkdirTemp(root, fmt.Sprintf("task-%d-", os.Getpid()))
	if err != nil {
		return "", task, fmt.Errorf("trainer: task directory: %w", err)
	}
	task.Protocol = trainer.Protocol
	task.Result = filepath.Join(dir, trainer.ResultFile)
	task.ModelIn, task.ModelOut, task.EmbedOut = "", "", ""
	if task.Task != trainer.TaskInit {
		task.ModelIn = filepath.Join(dir, trainer.ModelInFile)
	}
	if task.Task == trainer.TaskInit || task.Task == trainer.TaskTrain {
		task.ModelOut = filepath.Join(dir, trainer.ModelOutFile)
	}
	if task.Task == trainer.TaskEmbed {
		task.EmbedOut = filepath.Join(dir, trainer.EmbedOutFile)
	}
	b, err := json.MarshalIndent(task, "", "  ")
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, trainer.TaskFile), b, 0o600)
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", task, fmt.Errorf("trainer: task.json: %w", err)
	}
	return dir, task, nil
}

// finish reads a finished task's outcome from its directory: the result
// (checked, trainer.ReadResult) and what collect reads of the outputs.
func finish(dir string, task trainer.Task, collect func(dir string, res trainer.Result) error) (trainer.Result, error) {
	res, err := trainer.ReadResult(task.Result)
	if err != nil {
		var f *trainer.Fault
		if errors.As(err, &f) {
			return trainer.Result{}, FaultFailure(f)
		}
		return trainer.Result{}, err
	}
	if collect != nil {
		if err := collect(dir, res); err != nil {
			return trainer.Result{}, err
		}
	}
	return res, nil
}

// Run runs cmd (argv; no shell) for task in a fresh directory: stage
// writes the task's input files into it (the input model at
// trainer.ModelInFile for every task but init), the program runs, and on
// success collect reads its outputs (trainer.ModelOutFile,
// trainer.EmbedOutFile) before the directory is removed. ctx's
// cancellation or deadline ends the program's whole process group. The
// error is a *Failure for anything the program did, or a plain error for
// the runner's own trouble (a directory it could not make).
func (r Runner) Run(ctx context.Context, cmd []string, task trainer.Task, stage func(dir string) error, collect func(dir string, res trainer.Result) error) (trainer.Result, error) {
	if len(cmd) == 0 || cmd[0] == "" {
		return trainer.Result{}, errors.New("trainer: empty command")
	}
	dir, task, err := taskDir(r.Root, task)
	if err != nil {
		return trainer.Result{}, err
	}
	defer os.RemoveAll(dir)
	if stage != nil {
		if err := stage(dir); err != nil {
			return trainer.Result{}, fmt.Errorf("trainer: stage the task's inputs: %w", err)
		}
	}
	if fail := r.execute(ctx, cmd, task, dir); fail != nil {
		return trainer.Result{}, fail
	}
	return finish(dir, task, collect)
}

// execute runs the program and waits for its group; nil when it exited 0.
func (r Runner) execute(ctx context.Context, argv []string, task trainer.Task, dir string) *Failure {
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return &Failure{Code: -1, Reason: ReasonFailed, Retryable: true, detail: "no temporary directory"}
	}
	c := exec.Command(argv[0], argv[1:]...)
	c.Dir = dir
	c.Env = Environ(r.Env, dir, tmp, trainer.EnvTask+"="+filepath.Join(dir, trainer.TaskFile))
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
	lines := func(line string) {
		if raw, ok := progressLine(line); ok {
			if r.Progress != nil {
				r.Progress(raw)
			}
			return
		}
		logf(r.Log, "%s%s", prefix, line)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); readLines(outR, lines); outR.Close() }()
	go func() {
		defer wg.Done()
		readLines(errR, func(l string) { logf(r.Log, "%s%s", prefix, l) })
		errR.Close()
	}()
	if startErr != nil {
		wg.Wait()
		// The command's own name only: it is the site's configuration.
		return &Failure{Code: -1, Reason: ReasonFailed, Retryable: true, detail: "could not start " + filepath.Base(argv[0])}
	}
	pgid := c.Process.Pid
	mark := dir + "." + pgidFile
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
		waitErr = stopGroup(pgid, done, r.Grace)
	}
	// Whatever the leader left running in its group goes with it, and
	// with it the last holders of the pipes.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	waitPumps(&wg, outR, errR)
	if ended != "" {
		return &Failure{Code: -1, Reason: ended, Retryable: true}
	}
	code := exitCode(waitErr)
	if code == 0 {
		return nil
	}
	rep, _ := trainer.ReadErrorReport(filepath.Join(dir, trainer.ErrorFile))
	if rep.Message != "" {
		logf(r.Log, "%serror.json: %s", prefix, rep.Message)
	}
	if code < 0 {
		return &Failure{Code: -1, Reason: ReasonFailed, Retryable: true, Kind: rep.Kind, detail: "ended by a signal"}
	}
	return Classify(code, rep.Kind)
}

// waitPumps waits for the output readers; if a process outside the group
// (one that broke away with setsid, which the protocol forbids) still
// holds a pipe after 5 s, it stops reading.
func waitPumps(wg *sync.WaitGroup, pipes ...*os.File) {
	pumped := make(chan struct{})
	go func() { wg.Wait(); close(pumped) }()
	select {
	case <-pumped:
	case <-time.After(5 * time.Second):
		for _, p := range pipes {
			p.Close()
		}
		<-pumped
	}
}

// stopGroup ends a process group: SIGTERM, then SIGKILL after the grace
// period (DefaultGrace when 0); it returns the leader's wait error.
func stopGroup(pgid int, done <-chan error, grace time.Duration) error {
	if grace <= 0 {
		grace = DefaultGrace
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	return <-done
}

// progressLine returns the JSON object of a progress line.
func progressLine(line string) (json.RawMessage, bool) {
	rest, ok := strings.CutPrefix(line, trainer.ProgressPrefix)
	if !ok {
		return nil, false
	}
	raw := strings.TrimSpace(rest)
	if len(raw) > maxProgress || !strings.HasPrefix(raw, "{") || !json.Valid([]byte(raw)) {
		return nil, false
	}
	return json.RawMessage(raw), true
}

// maxLine is the longest output line handed on whole; the rest of a
// longer line is dropped (it never holds a protocol line).
const maxLine = 64 * 1024

// readLines calls fn with each line of rd (without its end), lines longer
// than maxLine cut there, until rd ends.
func readLines(rd io.Reader, fn func(string)) {
	br := bufio.NewReaderSize(rd, maxLine)
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			fn(string(line) + "…")
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err != nil {
				return
			}
			continue
		}
		if len(line) > 0 {
			fn(strings.TrimRight(string(line), "\r\n"))
		}
		if err != nil {
			return
		}
	}
}

func logf(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
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
