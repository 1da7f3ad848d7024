package trainer

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseResult: what the worker accepts of a result file, and the kind
// it names every other file by. The NaN cases are what Python's
// json.dumps({"auc": float("nan")}) writes; a "NaN" inside a string is
// text, not a number.
func TestParseResult(t *testing.T) {
	for i, c := range []struct {
		in   string
		kind string // "" when accepted
		n    int64
	}{
		0:  {`{"num_examples": 12, "metrics": {"loss": 0.5, "auc": 1}}`, "", 12},
		1:  {`{"num_examples": 0, "metrics": {}}`, "", 0},
		2:  {`{"num_examples": 3, "metrics": {"NaN count": 2}, "note": "Infinity and NaN \"NaN\""}`, "", 3},
		3:  {`{"num_examples": 3, "metrics": {"auc": NaN}}`, KindNonFiniteMetric, 0},
		4:  {`{"num_examples": 3, "metrics": {"loss": Infinity}}`, KindNonFiniteMetric, 0},
		5:  {`{"num_examples": 3, "metrics": {"loss": -Infinity}}`, KindNonFiniteMetric, 0},
		6:  {`{"num_examples": 3, "metrics": {"loss": 1e999}}`, KindNonFiniteMetric, 0},
		7:  {`{"num_examples": 3, "metrics": {"loss": null}}`, KindBadResult, 0},
		8:  {`{"num_examples": 3, "metrics": {"loss": "0.5"}}`, KindBadResult, 0},
		9:  {`{"num_examples": -1, "metrics": {}}`, KindBadResult, 0},
		10: {`{"num_examples": 2.5, "metrics": {}}`, KindBadResult, 0},
		11: {`{"metrics": {}}`, KindBadResult, 0},
		12: {`done`, KindBadResult, 0},
		13: {`{"num_examples": 1, "metrics": {}} {}`, KindBadResult, 0},
		14: {``, KindBadResult, 0},
	} {
		res, err := ParseResult([]byte(c.in))
		var f *Fault
		switch {
		case c.kind == "" && (err != nil || res.NumExamples != c.n):
			t.Errorf("%d: %q: %+v, %v", i, c.in, res, err)
		case c.kind != "" && (!errors.As(err, &f) || f.Kind != c.kind):
			t.Errorf("%d: %q: error %v, want kind %s", i, c.in, err, c.kind)
		}
	}
	if _, err := ReadResult(filepath.Join(t.TempDir(), "none")); err == nil || !strings.Contains(err.Error(), KindNoResult) {
		t.Errorf("no file: %v", err)
	}
}

// TestReadErrorReport: kind kept only when it is an identifier, the message
// cut to 1,000 bytes, the status read.
func TestReadErrorReport(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, ErrorFile)
	os.WriteFile(p, []byte(`{"kind": "row 7: 3.14", "message": "`+strings.Repeat("é", 600)+`", "status": 65}`), 0o600)
	e, ok := ReadErrorReport(p)
	if !ok || e.Kind != "" || e.Status != 65 || len(e.Message) > 1000+len("…") || !strings.HasPrefix(e.Message, "é") {
		t.Errorf("%+v %v", e, ok)
	}
	os.WriteFile(p, []byte(`not json`), 0o600)
	if _, ok := ReadErrorReport(p); ok {
		t.Error("a file that is not JSON was read")
	}
}

// writeTask writes a task.json for a task of kind in a fresh directory.
func writeTask(t *testing.T, kind string) string {
	t.Helper()
	dir := t.TempDir()
	task := Task{Protocol: Protocol, Task: kind, Site: "s", Result: filepath.Join(dir, ResultFile)}
	b, _ := json.Marshal(task)
	p := filepath.Join(dir, TaskFile)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// handler succeeds for evaluate, fails with 65 for train and with a plain
// error for init.
func handler(tk Task) (Result, error) {
	switch tk.Task {
	case TaskEvaluate:
		return Result{NumExamples: 4, Metrics: map[string]float64{"auc": 0.75}}, nil
	case TaskTrain:
		return Result{}, Fail(StatusBadSiteData, "bad_rows", "row 7 holds 42")
	}
	return Result{}, errors.New("out of memory")
}

// TestRunTask: per task, the exit status and files a program leaves.
func TestRunTask(t *testing.T) {
	var log bytes.Buffer
	ok := writeTask(t, TaskEvaluate)
	if code := RunTask(ok, handler, &log); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if res, err := ReadResult(filepath.Join(filepath.Dir(ok), ResultFile)); err != nil || res.NumExamples != 4 || res.Metrics["auc"] != 0.75 {
		t.Errorf("result %+v, %v", res, err)
	}
	for i, c := range []struct {
		kind, wantKind string
		code           int
	}{{TaskTrain, "bad_rows", 65}, {TaskInit, "failed", 1}} {
		p := writeTask(t, c.kind)
		if code := RunTask(p, handler, &log); code != c.code {
			t.Errorf("%d: exit %d, want %d", i, code, c.code)
		}
		e, _ := ReadErrorReport(filepath.Join(filepath.Dir(p), ErrorFile))
		if e.Kind != c.wantKind || e.Status != 0 {
			t.Errorf("%d: error.json %+v", i, e)
		}
	}
}

// TestServe: serve mode, one task a line, a done line after each, a
// failure's status in error.json (75 for a plain error), until the end of
// the input.
func TestServe(t *testing.T) {
	paths := []string{writeTask(t, TaskEvaluate), writeTask(t, TaskTrain), writeTask(t, TaskInit)}
	var out, log bytes.Buffer
	stdout.w = &out
	defer func() { stdout.w = os.Stdout }()
	if err := Serve(strings.NewReader(strings.Join(paths, "\n")+"\n\n"), handler, &log); err != nil {
		t.Fatal(err)
	}
	var want string
	for _, p := range paths {
		want += DonePrefix + p + "\n"
	}
	if out.String() != want {
		t.Errorf("output %q, want %q", out.String(), want)
	}
	for i, c := range []struct {
		kind   string
		status int
	}{{"bad_rows", 65}, {"failed", 75}} {
		e, _ := ReadErrorReport(filepath.Join(filepath.Dir(paths[i+1]), ErrorFile))
		if e.Kind != c.kind || e.Status != c.status {
			t.Errorf("%d: error.json %+v", i, e)
		}
	}
	if _, err := ReadResult(filepath.Join(filepath.Dir(paths[0]), ResultFile)); err != nil {
		t.Error(err)
	}
}
