package trainer

import (
	"bytes"
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
)

// ReadTask reads and checks task.json at path: the protocol's name and a
// known task.
func ReadTask(path string) (Task, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Task{}, fmt.Errorf("task file: %w", err)
	}
	var t Task
	if err := json.Unmarshal(b, &t); err != nil {
		return Task{}, fmt.Errorf("task file %s: %w", path, err)
	}
	if t.Protocol != Protocol {
		return Task{}, fmt.Errorf("task file %s: protocol %q, want %s", path, t.Protocol, Protocol)
	}
	switch t.Task {
	case TaskInit, TaskTrain, TaskEvaluate, TaskEmbed:
	default:
		return Task{}, fmt.Errorf("task file %s: unknown task %q", path, t.Task)
	}
	return t, nil
}

// Dir is the task's directory, where task.json, error.json and the
// worker's input files are.
func (t Task) Dir() string { return filepath.Dir(t.Result) }

// WriteFile writes data to path through a temporary name in the same
// directory and a rename, so that a reader never sees a partial file.
func WriteFile(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// WriteResult writes the task's result file: last, since it marks the
// task as done. Metrics must be finite (JSON has no NaN).
func WriteResult(t Task, r Result) error {
	for k, v := range r.Metrics {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("result: metric %q is not finite", k)
		}
	}
	if r.Metrics == nil {
		r.Metrics = map[string]float64{}
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return WriteFile(t.Result, b)
}

// WriteErrorReport writes error.json into dir, the task's directory.
func WriteErrorReport(dir string, e ErrorReport) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return WriteFile(filepath.Join(dir, ErrorFile), b)
}

// stdout serialises what Progress and Main's done lines write, so that
// their lines never interleave.
var stdout = struct {
	sync.Mutex
	w io.Writer
}{w: os.Stdout}

// Progress prints a progress line, "ptopofl:progress {json}", on standard
// output: the worker makes v (counters such as {"epoch": 3}, never data)
// the activity's heartbeat details.
func Progress(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	stdout.Lock()
	defer stdout.Unlock()
	_, err = fmt.Fprintf(stdout.w, "%s%s\n", ProgressPrefix, b)
	return err
}

// kindPattern is what error.json's kind must look like to reach the
// manifest.
var kindPattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// ValidKind reports whether kind may reach the manifest: an identifier
// of letters, digits, '_', '.' and '-', at most 64 characters.
func ValidKind(kind string) bool { return kindPattern.MatchString(kind) }

// Fault is a program's output that breaks the protocol: Kind is one of
// the Kind constants, Detail says what was wrong in words that hold no
// value the program wrote (safe to record in Temporal and the manifest).
type Fault struct {
	Kind   string
	Detail string
}

func (f *Fault) Error() string { return f.Kind + ": " + f.Detail }

func faultf(kind, format string, args ...any) *Fault {
	return &Fault{Kind: kind, Detail: fmt.Sprintf(format, args...)}
}

// maxResult bounds the result file the worker reads.
const maxResult = 1 << 20

// ReadResult reads and checks a result file, as the worker does. A file
// that is missing is a *Fault of KindNoResult; one that is not the
// protocol's object, KindBadResult; a metric that is NaN or infinite
// (Python's json writes the bare tokens NaN, Infinity and -Infinity,
// which are not JSON) or beyond float64's range, KindNonFiniteMetric.
// Metric names appear in the detail only when they are identifiers.
func ReadResult(path string) (Result, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Result{}, faultf(KindNoResult, "no result file")
		}
		return Result{}, faultf(KindNoResult, "result file unreadable")
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxResult+1))
	if err != nil {
		return Result{}, faultf(KindNoResult, "result file unreadable")
	}
	if len(b) > maxResult {
		return Result{}, faultf(KindBadResult, "result file over %d bytes", maxResult)
	}
	return ParseResult(b)
}

// ParseResult checks a result file's bytes (ReadResult).
func ParseResult(b []byte) (Result, error) {
	if hasNonFiniteToken(b) {
		return Result{}, faultf(KindNonFiniteMetric, "the result holds NaN or Infinity, which JSON has no number for (Python's json.dump writes them unless allow_nan=False)")
	}
	var raw struct {
		NumExamples *json.Number        `json:"num_examples"`
		Metrics     map[string]*float64 `json:"metrics"`
	}
	d := json.NewDecoder(bytes.NewReader(b))
	if err := d.Decode(&raw); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && strings.HasPrefix(te.Value, "number") && te.Field != "num_examples" {
			return Result{}, faultf(KindNonFiniteMetric, "a metric is beyond float64's range")
		}
		return Result{}, faultf(KindBadResult, "the result file is not the protocol's JSON object {\"num_examples\": N, \"metrics\": {...}}")
	}
	if _, err := d.Token(); err != io.EOF {
		return Result{}, faultf(KindBadResult, "the result file holds more than one JSON value")
	}
	var res Result
	if raw.NumExamples == nil {
		return Result{}, faultf(KindBadResult, "the result has no num_examples")
	}
	n, err := raw.NumExamples.Int64()
	if err != nil || n < 0 {
		return Result{}, faultf(KindBadResult, "num_examples is not a non-negative integer")
	}
	res.NumExamples = n
	res.Metrics = make(map[string]float64, len(raw.Metrics))
	for k, v := range raw.Metrics {
		if v == nil {
			return Result{}, faultf(KindBadResult, "metric %s is null, not a number", nameOf(k))
		}
		res.Metrics[k] = *v
	}
	return res, nil
}

// nameOf is a metric name for an error: quoted when it is an identifier,
// else "(a name that is not an identifier)".
func nameOf(k string) string {
	if kindPattern.MatchString(k) {
		return fmt.Sprintf("%q", k)
	}
	return "(a name that is not an identifier)"
}

// hasNonFiniteToken reports whether b holds, outside JSON strings, one of
// the bare words NaN, Infinity or -Infinity that Python's json writes for
// non-finite floats.
func hasNonFiniteToken(b []byte) bool {
	inString, escaped := false, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case 'N':
			if bytes.HasPrefix(b[i:], []byte("NaN")) {
				return true
			}
		case 'I':
			if bytes.HasPrefix(b[i:], []byte("Infinity")) {
				return true
			}
		}
	}
	return false
}

// ReadErrorReport reads error.json at path: ok is false when there is none
// or it is not a JSON object. The kind is kept only when it is an
// identifier (ValidKind), the message cut to 1,000 bytes.
func ReadErrorReport(path string) (e ErrorReport, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil || len(b) > maxResult {
		return ErrorReport{}, false
	}
	if json.Unmarshal(b, &e) != nil {
		return ErrorReport{}, false
	}
	if !kindPattern.MatchString(e.Kind) {
		e.Kind = ""
	}
	e.Message = truncate(e.Message, 1000)
	return e, true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
