package trainer

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Handler does one task: it reads the task's inputs, writes its outputs
// (ModelOut, EmbedOut) and returns the result, which Main writes last. An
// *Error says what a failure means; any other error is a failure the
// worker retries (exit 1 per task, status 75 in serve mode).
type Handler func(Task) (Result, error)

// Error is a task failure with the protocol's status (StatusBadSiteData,
// StatusBadModel or StatusTransient) and a kind for the manifest.
type Error struct {
	Status int
	Kind   string
	Err    error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Fail returns an *Error: status, an identifier-like kind (ValidKind) for
// the manifest, and a message for the worker's log only.
func Fail(status int, kind, format string, args ...any) error {
	return &Error{Status: status, Kind: kind, Err: fmt.Errorf(format, args...)}
}

// Main runs h as a site worker asks: with PTOPOFL_SERVE=1 it serves tasks
// from standard input until it ends (Serve), else it does the one task
// $PTOPOFL_TASK names and exits with the protocol's status (RunTask). It
// never returns.
func Main(h Handler) {
	if os.Getenv(EnvServe) == "1" {
		if err := Serve(os.Stdin, h, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "trainer:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	path := os.Getenv(EnvTask)
	if path == "" {
		fmt.Fprintf(os.Stderr, "trainer: neither %s nor %s=1 is set; a ptopofl site worker runs this program\n", EnvTask, EnvServe)
		os.Exit(2)
	}
	os.Exit(RunTask(path, h, os.Stderr))
}

// RunTask does the task at path with h and returns the exit status a
// per-task program exits with: 0 once the result is written, else the
// *Error's status (1 for another error), with error.json written beside
// the task file. log gets the error's message.
func RunTask(path string, h Handler, log io.Writer) int {
	status, rep := do(path, h)
	if rep == nil {
		return 0
	}
	fmt.Fprintf(log, "trainer: %s: %s\n", rep.Kind, rep.Message)
	if err := WriteErrorReport(filepath.Dir(path), *rep); err != nil {
		fmt.Fprintln(log, "trainer: error.json:", err)
	}
	return status
}

// Serve reads task.json paths from in, one a line, does each with h in
// turn and prints "ptopofl:done PATH" on standard output once its result,
// or error.json with its status, is written. A failure gets error.json
// with the *Error's status, or 75 (transient) for another error. It
// returns at the end of in (the worker closes it when it stops).
func Serve(in io.Reader, h Handler, log io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		path := strings.TrimSpace(sc.Text())
		if path == "" {
			continue
		}
		status, rep := do(path, h)
		if rep != nil {
			rep.Status = status
			if status != StatusBadSiteData && status != StatusBadModel {
				rep.Status = StatusTransient
			}
			fmt.Fprintf(log, "trainer: %s: %s\n", rep.Kind, rep.Message)
			if err := WriteErrorReport(filepath.Dir(path), *rep); err != nil {
				fmt.Fprintln(log, "trainer: error.json:", err)
			}
		}
		stdout.Lock()
		_, err := fmt.Fprintf(stdout.w, "%s%s\n", DonePrefix, path)
		stdout.Unlock()
		if err != nil {
			return err
		}
	}
	return sc.Err()
}

// do runs one task; rep is nil on success (its result written).
func do(path string, h Handler) (status int, rep *ErrorReport) {
	t, err := ReadTask(path)
	if err != nil {
		return 1, &ErrorReport{Kind: "task_file", Message: err.Error()}
	}
	res, err := h(t)
	if err == nil {
		err = WriteResult(t, res)
	}
	if err == nil {
		return 0, nil
	}
	var e *Error
	if errors.As(err, &e) {
		kind := e.Kind
		if !ValidKind(kind) {
			kind = "failed"
		}
		return e.Status, &ErrorReport{Kind: kind, Message: e.Error()}
	}
	return 1, &ErrorReport{Kind: "failed", Message: err.Error()}
}
