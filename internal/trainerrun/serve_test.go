package trainerrun

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ptopofl/ptopofl/trainer"
)

func server(t *testing.T, mode string) (*Server, *syncBuffer) {
	t.Helper()
	log := &syncBuffer{}
	s := &Server{Argv: []string{os.Args[0]}, Root: t.TempDir(), Site: "site0", Name: "test", Log: log, Grace: 500 * time.Millisecond, Env: helperEnv(t, mode)}
	t.Cleanup(s.Close)
	return s, log
}

// TestServeSuccess: one process serves many tasks, one at a time; each
// task's inputs staged, outputs collected, progress routed to the task's
// own callback, output lines logged under the task; the task directories
// removed, and the process's own directory too once Close ends it.
func TestServeSuccess(t *testing.T) {
	s, log := server(t, "ok")
	var pids []int
	for i := range 3 {
		var progress []string
		var out []byte
		tk := task(trainer.TaskTrain)
		tk.Round = i + 1
		res, err := s.Run(context.Background(), tk,
			func(d string) error {
				return os.WriteFile(filepath.Join(d, trainer.ModelInFile), []byte("m"+strconv.Itoa(i)), 0o600)
			},
			func(d string, res trainer.Result) error {
				var err error
				out, err = os.ReadFile(filepath.Join(d, trainer.ModelOutFile))
				return err
			},
			func(m json.RawMessage) { progress = append(progress, string(m)) })
		if err != nil {
			t.Fatalf("task %d: %v", i, err)
		}
		if res.NumExamples != 12 || string(out) != "m"+strconv.Itoa(i)+"!" || len(progress) != 1 {
			t.Errorf("task %d: result %+v, model %q, progress %q", i, res, out, progress)
		}
		s.mu.Lock()
		for p := range s.live {
			pids = append(pids, p.pgid)
		}
		s.mu.Unlock()
	}
	if len(pids) != 3 || pids[0] != pids[1] || pids[1] != pids[2] {
		t.Errorf("processes per task %v, want one process for all three", pids)
	}
	if want := "trainer c/site0 round 2 train: starting on site0"; !strings.Contains(log.String(), want) {
		t.Errorf("log lacks %q:\n%s", want, log.String())
	}
	s.Close()
	if !gone(pids[0]) {
		t.Error("the process outlived Close")
	}
	if entries, _ := os.ReadDir(s.Root); len(entries) != 0 {
		t.Errorf("root not empty after Close: %v", entries)
	}
}

// TestServeFailures: each failure of failureCases in serve mode: error.json's
// status says what it means, an output fault is named and not retried, a
// process that exits mid-task fails it as transient, a done line for
// another task is a protocol fault; after each, the next task is served
// (by a fresh process where the last one died or was stopped).
func TestServeFailures(t *testing.T) {
	for i, c := range failureCases {
		code, reason, kind, fault, retryable := c.code, c.reason, c.kind, c.fault, c.retryable
		switch c.mode {
		case "crash":
			code, reason = -1, ReasonExited
		case "badkind":
			kind = "bad_weights"
		case "transient":
			kind = "cuda_oom"
		case "nostatus":
			code, reason, kind = 0, ReasonFailed, "x"
		case "wrongdone":
			reason, fault = ReasonProtocol, trainer.KindProtocol
		}
		s, log := server(t, c.mode)
		_, err := s.Run(context.Background(), task(trainer.TaskEvaluate), nil, nil, nil)
		var f *Failure
		if !errors.As(err, &f) {
			t.Fatalf("case %d (%s): error %v, want a *Failure", i, c.mode, err)
		}
		if f.Reason != reason || f.Code != code || f.Kind != kind || f.Fault != fault || f.Retryable != retryable {
			t.Errorf("case %d (%s): %+v (%v)", i, c.mode, f, f)
		}
		if strings.Contains(f.Error(), "3.14159") {
			t.Errorf("case %d (%s): the program's message reached the error: %v", i, c.mode, f)
		}
		if c.mode == "badsite" && !strings.Contains(log.String(), "cell value 3.14159 in row 7") {
			t.Errorf("case %d: the message is not in the log:\n%s", i, log.String())
		}
		// The same server serves its next task in the same way.
		if _, err := s.Run(context.Background(), task(trainer.TaskEvaluate), nil, nil, nil); !errors.As(err, &f) || f.Reason != reason {
			t.Errorf("case %d (%s): second task: %v", i, c.mode, err)
		}
	}
}

// TestServeKilledMidTask: kill -9 of the serve-mode process while it
// works on a task fails that task as transient (retried), its child is
// killed with its group, and the next task starts a fresh process, which
// completes it.
func TestServeKilledMidTask(t *testing.T) {
	s, _ := server(t, "once-hang")
	state := envValue(s.Env, "TRAINER_STATE")
	type answer struct {
		res trainer.Result
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		res, err := s.Run(context.Background(), task(trainer.TaskEvaluate), nil, nil, nil)
		ch <- answer{res, err}
	}()
	var leader int
	for deadline := time.Now().Add(30 * time.Second); leader == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the process never started its task")
		}
		b, _ := os.ReadFile(filepath.Join(state, "leader"))
		leader, _ = strconv.Atoi(string(b))
	}
	b, _ := os.ReadFile(envValue(s.Env, "TRAINER_PIDFILE"))
	child, _ := strconv.Atoi(string(b))
	syscall.Kill(leader, syscall.SIGKILL)
	a := <-ch
	var f *Failure
	if !errors.As(a.err, &f) || f.Reason != ReasonExited || !f.Retryable {
		t.Fatalf("error %v, want a retryable failure of a process that exited", a.err)
	}
	if child == 0 || !gone(child) {
		t.Errorf("the killed process's child %d outlived it", child)
	}
	res, err := s.Run(context.Background(), task(trainer.TaskEvaluate), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if int(res.NumExamples) == leader {
		t.Errorf("the retry ran in the killed process %d", leader)
	}
}

// TestServeCancelKillsTheGroup: a task whose context ends (the attempt's
// timeout) kills the process's whole group, SIGTERM ignored, within the
// grace period; the next task starts afresh.
func TestServeCancelKillsTheGroup(t *testing.T) {
	s, _ := server(t, "hang")
	var progress int
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err := s.Run(ctx, task(trainer.TaskTrain), nil, nil, func(json.RawMessage) { progress++ })
	var f *Failure
	if !errors.As(err, &f) || f.Reason != ReasonTimeout || !f.Retryable {
		t.Fatalf("error %v, want a retryable timeout", err)
	}
	if el := time.Since(start); el > 2*time.Second+s.Grace+3*time.Second {
		t.Errorf("took %v", el)
	}
	b, _ := os.ReadFile(envValue(s.Env, "TRAINER_PIDFILE"))
	child, _ := strconv.Atoi(string(b))
	if child == 0 || !gone(child) {
		t.Errorf("the program's child %d outlived the timeout", child)
	}
	if progress != 1 {
		t.Errorf("%d progress lines, want 1", progress)
	}
	s.mu.Lock()
	n := len(s.live)
	s.mu.Unlock()
	if n != 0 {
		t.Errorf("%d processes still live after the timeout", n)
	}
}

// TestServeConcurrent: Run calls that overlap get processes of their own,
// tasks never share one; afterwards their processes are reused.
func TestServeConcurrent(t *testing.T) {
	s, _ := server(t, "pid")
	var mu sync.Mutex
	pids := map[int64]int{}
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.Run(context.Background(), task(trainer.TaskEvaluate), nil, nil, nil)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			pids[res.NumExamples]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	s.mu.Lock()
	live := len(s.live)
	s.mu.Unlock()
	if live != len(pids) || live < 1 {
		t.Errorf("%d processes live, %d served: %v", live, len(pids), pids)
	}
}

// TestHostSlots: a host with one slot runs one task at a time across its
// sites and programs; with two, two.
func TestHostSlots(t *testing.T) {
	for _, slots := range []int{1, 2} {
		h := &Host{Slots: slots, Programs: map[string]Program{
			"a": {Argv: []string{os.Args[0]}, Serve: true},
			"b": {Argv: []string{os.Args[0]}},
		}, Env: []string{"TRAINER_HELPER=term"}}
		var mu sync.Mutex
		running, most := 0, 0
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := Call{Site: "s" + strconv.Itoa(i), Root: t.TempDir(), Program: []string{"a", "b"}[i%2], Task: task(trainer.TaskTrain),
					Progress: func(json.RawMessage) {
						mu.Lock()
						running++
						most = max(most, running)
						mu.Unlock()
						time.Sleep(300 * time.Millisecond)
						mu.Lock()
						running--
						mu.Unlock()
					}}
				h.Run(ctx, c)
			}()
		}
		time.Sleep(2 * time.Second)
		cancel()
		wg.Wait()
		h.Close()
		if most != slots {
			t.Errorf("slots %d: at most %d tasks ran at once", slots, most)
		}
	}
}

// TestSealedEnvironment: a program sees PATH, HOME (its directory),
// LANG/LC_*, TMPDIR, the protocol's variables and what the site names,
// in either mode; never the worker's S3 credentials, payload keys or
// secret directory, nor another variable of the worker's.
func TestSealedEnvironment(t *testing.T) {
	secrets := map[string]string{
		"PTOPOFL_S3_ACCESS_KEY":    "AKIA-do-not-leak",
		"PTOPOFL_S3_SECRET_KEY":    "s3-secret-do-not-leak",
		"PTOPOFL_PAYLOAD_KEYS":     "k1:payload-key-do-not-leak",
		"PTOPOFL_PAYLOAD_KEY_FILE": "/srv/keys/payload-do-not-leak",
		"PTOPOFL_SECRET_DIR":       "/srv/secret-dir-do-not-leak",
		"SOME_OTHER_VARIABLE":      "other-do-not-leak",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	t.Setenv("LANG", "C.UTF-8")
	t.Setenv("LC_NUMERIC", "C")
	t.Setenv("CUDA_VISIBLE_DEVICES", "1")
	for _, serve := range []bool{false, true} {
		state := t.TempDir()
		h := &Host{Programs: map[string]Program{"p": {Argv: []string{os.Args[0]}, Serve: serve}},
			Env: []string{"TRAINER_HELPER=pid", "TRAINER_STATE=" + state, "CUDA_VISIBLE_DEVICES", "UNSET_ONE"}}
		root := t.TempDir()
		res, err := h.Run(context.Background(), Call{Site: "s", Root: root, Program: "p", Task: task(trainer.TaskEvaluate)})
		h.Close()
		if err != nil {
			t.Fatalf("serve %v: %v", serve, err)
		}
		pid := strconv.Itoa(int(res.NumExamples))
		b, err := os.ReadFile(filepath.Join(state, "env-"+pid+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var env []string
		json.Unmarshal(b, &env)
		wd, _ := os.ReadFile(filepath.Join(state, "wd-"+pid))
		var names []string
		for _, kv := range env {
			name, _, _ := strings.Cut(kv, "=")
			names = append(names, name)
			for k, v := range secrets {
				if strings.Contains(kv, v) || name == k {
					t.Errorf("serve %v: the program sees %s", serve, kv)
				}
			}
		}
		want := "CUDA_VISIBLE_DEVICES HOME LANG LC_NUMERIC PATH PTOPOFL_TASK TMPDIR TRAINER_HELPER TRAINER_STATE"
		if serve {
			want = "CUDA_VISIBLE_DEVICES HOME LANG LC_NUMERIC PATH PTOPOFL_SERVE PTOPOFL_SERVE_DIR TMPDIR TRAINER_HELPER TRAINER_STATE"
		}
		if got := strings.Join(names, " "); got != want {
			t.Errorf("serve %v: variables %s, want %s", serve, got, want)
		}
		home := envValue(env, "HOME")
		if home != string(wd) || !strings.HasPrefix(home, root+"/") || envValue(env, "TMPDIR") != home+"/tmp" ||
			envValue(env, "CUDA_VISIBLE_DEVICES") != "1" || envValue(env, "PATH") != os.Getenv("PATH") {
			t.Errorf("serve %v: HOME %s, working directory %s, environment %q", serve, home, wd, env)
		}
		if serve && (envValue(env, "PTOPOFL_SERVE") != "1" || envValue(env, "PTOPOFL_SERVE_DIR") != home) {
			t.Errorf("serve: environment %q", env)
		}
	}
}

// TestParseEnv: NAME and NAME=VALUE; the worker's own PTOPOFL_ variables
// and malformed or repeated names refused.
func TestParseEnv(t *testing.T) {
	for i, c := range []struct {
		in      []string
		wantErr string
	}{
		0: {[]string{"CUDA_VISIBLE_DEVICES", "HOME=/var/cache/trainer", "OMP_NUM_THREADS=2"}, ""},
		1: {[]string{"PTOPOFL_S3_SECRET_KEY"}, "PTOPOFL_ variables"},
		2: {[]string{"ptopofl_payload_keys"}, "PTOPOFL_ variables"},
		3: {[]string{"1X"}, "want NAME"},
		4: {[]string{"A=1", "A"}, "given twice"},
		5: {[]string{""}, "want NAME"},
	} {
		_, err := ParseEnv(c.in)
		if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("%d: %q: error %v, want %q", i, c.in, err, c.wantErr)
		}
	}
}

// TestParseProgram: NAME=COMMAND split into words; a bare program name
// looked up in PATH, relative paths and arguments naming files here made
// absolute (the program runs in a directory of its own); other
// arguments passed as they are; bad flags named.
func TestParseProgram(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"bin/tr", "train.py"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", filepath.Join(dir, "bin")+":/usr/bin:/bin")
	t.Chdir(dir)
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		flag    string
		name    string
		argv    []string
		wantErr string
	}{
		0: {"go=bin/tr --fast", "go", []string{filepath.Join(dir, "bin/tr"), "--fast"}, ""},
		1: {"torch=tr ./train.py a/b", "torch", []string{filepath.Join(dir, "bin/tr"), filepath.Join(dir, "train.py"), "a/b"}, ""},
		2: {"py=sh train.py -u 0.1", "py", []string{sh, filepath.Join(dir, "train.py"), "-u", "0.1"}, ""}, // a bare script name
		3: {"abs=/bin/true", "abs", []string{"/bin/true"}, ""},
		4: {"x=bin/missing", "", nil, "program bin/missing"},
		5: {"x=no-such-program-here", "", nil, "is not in PATH"},
		6: {"go", "", nil, "want NAME=COMMAND"},
		7: {"a b=/bin/true", "", nil, "the name must be"},
		8: {"go=  ", "", nil, "empty command"},
	} {
		name, argv, err := ParseProgram("trainer", c.flag)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%d: %q: error %v, want %q", i, c.flag, err, c.wantErr)
			}
			continue
		}
		if err != nil || name != c.name || strings.Join(argv, " ") != strings.Join(c.argv, " ") {
			t.Errorf("%d: %q: %q %q %v, want %q %q", i, c.flag, name, argv, err, c.name, c.argv)
		}
	}
}

// TestNewHost: programs of both modes by name, a name given twice refused,
// slots at least 1, --trainer-env without a program refused.
func TestNewHost(t *testing.T) {
	h, err := NewHost([]string{"a=/bin/true"}, []string{"b=/bin/cat"}, []string{"CUDA_VISIBLE_DEVICES"}, 2)
	if err != nil || h.Programs["a"].Serve || !h.Programs["b"].Serve || h.Slots != 2 || len(h.Env) != 1 {
		t.Fatalf("%+v, %v", h, err)
	}
	for i, c := range []struct {
		perTask, serve, env []string
		slots               int
		wantErr             string
	}{
		0: {[]string{"a=/bin/true"}, []string{"a=/bin/cat"}, nil, 1, "given twice"},
		1: {[]string{"a=/bin/true"}, nil, nil, 0, "at least 1"},
		2: {nil, nil, []string{"X"}, 1, "no --trainer"},
	} {
		if _, err := NewHost(c.perTask, c.serve, c.env, c.slots); err == nil || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("%d: error %v, want %q", i, err, c.wantErr)
		}
	}
	if h, err := NewHost(nil, nil, nil, 1); h != nil || err != nil {
		t.Errorf("no programs: %v, %v", h, err)
	}
}

// TestHideEnvironment: after HideEnvironment the process is not dumpable
// (prctl PR_GET_DUMPABLE answers 0), which makes its /proc/<pid>/environ
// unreadable to the other processes of its user.
func TestHideEnvironment(t *testing.T) {
	if err := HideEnvironment(); err != nil {
		t.Fatal(err)
	}
	const prGetDumpable = 3
	v, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, prGetDumpable, 0, 0, 0, 0, 0)
	if errno != 0 || v != 0 {
		t.Errorf("PR_GET_DUMPABLE = %d (errno %v), want 0", v, errno)
	}
}
