package trainerrun

import (
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

// Server runs one program in serve mode for one site: a long-lived process
// started at the first task (with PTOPOFL_SERVE=1, PTOPOFL_SERVE_DIR, no
// PTOPOFL_TASK), in a process group of its own and the sealed environment,
// with a directory of its own under Root (its working directory, HOME and,
// under tmp/, TMPDIR). Each task gets a fresh directory D with task.json
// written as per task; the absolute path of D/task.json goes to the
// program's standard input as one line, and the task is over when the
// program prints "ptopofl:done PATH" on standard output. Tasks go to a
// process one at a time; Run calls that overlap get processes of their
// own (the Host's slots bound how many).
//
// A process that exits with a task in flight fails it as transient
// (retried), and the next task starts a fresh process; a task whose
// context ends (cancellation, the attempt's timeout) kills the process's
// group (SIGTERM, Grace, SIGKILL), and the next task starts afresh too.
type Server struct {
	// Argv is the program's command line (no shell).
	Argv []string
	// Root holds the task directories and the processes' own; it must
	// exist.
	Root string
	// Site and Name (the program's name) prefix the program's lines in
	// Log; nil Log discards them.
	Site, Name string
	Log        io.Writer
	// Grace is how long a group has between SIGTERM and SIGKILL; 0 means
	// DefaultGrace.
	Grace time.Duration
	// Env is what the site adds to the sealed environment (ParseEnv).
	Env []string

	mu     sync.Mutex
	idle   []*process
	live   map[*process]struct{}
	closed bool
}

// process is one running serve-mode program.
type process struct {
	cmd    *exec.Cmd
	pgid   int
	dir    string
	stdin  *os.File
	exited chan struct{} // closed once the leader has exited, its group is killed and its output read
	done   chan string   // the paths of its done lines

	mu       sync.Mutex
	progress func(json.RawMessage)
	prefix   string

	stopOnce sync.Once
}

func (p *process) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// setTask routes the process's progress lines to fn and its other lines
// under prefix.
func (p *process) setTask(prefix string, fn func(json.RawMessage)) {
	p.mu.Lock()
	p.prefix, p.progress = prefix, fn
	p.mu.Unlock()
}

// line handles one line of the program's standard output.
func (p *process) line(log io.Writer, line string) {
	if raw, ok := progressLine(line); ok {
		p.mu.Lock()
		fn := p.progress
		p.mu.Unlock()
		if fn != nil {
			fn(raw)
		}
		return
	}
	if rest, ok := strings.CutPrefix(line, trainer.DonePrefix); ok {
		select {
		case p.done <- strings.TrimSpace(rest):
		default:
			logf(log, "%sa done line with none awaited, dropped", p.currentPrefix())
		}
		return
	}
	logf(log, "%s%s", p.currentPrefix(), line)
}

func (p *process) currentPrefix() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.prefix
}

// idlePrefix prefixes the lines a process prints between tasks.
func (s *Server) idlePrefix() string {
	return fmt.Sprintf("trainer %s (serve, site %s): ", s.Name, s.Site)
}

// start starts a process.
func (s *Server) start() (*process, error) {
	if len(s.Argv) == 0 || s.Argv[0] == "" {
		return nil, errors.New("trainer: empty command")
	}
	dir, err := os.MkdirTemp(s.Root, fmt.Sprintf("serve-%d-", os.Getpid()))
	if err != nil {
		return nil, fmt.Errorf("trainer: serve directory: %w", err)
	}
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("trainer: serve directory: %w", err)
	}
	c := exec.Command(s.Argv[0], s.Argv[1:]...)
	c.Dir = dir
	c.Env = Environ(s.Env, dir, tmp, trainer.EnvServe+"=1", trainer.EnvServeDir+"="+dir)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var pipes [6]*os.File // in r/w, out r/w, err r/w
	for i := 0; i < 6; i += 2 {
		if pipes[i], pipes[i+1], err = os.Pipe(); err != nil {
			for _, f := range pipes[:i] {
				f.Close()
			}
			os.RemoveAll(dir)
			return nil, fmt.Errorf("trainer: pipes: %w", err)
		}
	}
	inR, inW, outR, outW, errR, errW := pipes[0], pipes[1], pipes[2], pipes[3], pipes[4], pipes[5]
	c.Stdin, c.Stdout, c.Stderr = inR, outW, errW
	startErr := c.Start()
	inR.Close()
	outW.Close()
	errW.Close()
	p := &process{cmd: c, dir: dir, stdin: inW, exited: make(chan struct{}), done: make(chan string, 8), prefix: s.idlePrefix()}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); readLines(outR, func(l string) { p.line(s.Log, l) }); outR.Close() }()
	go func() {
		defer wg.Done()
		readLines(errR, func(l string) { logf(s.Log, "%s%s", p.currentPrefix(), l) })
		errR.Close()
	}()
	if startErr != nil {
		inW.Close()
		wg.Wait()
		os.RemoveAll(dir)
		return nil, &Failure{Code: -1, Reason: ReasonFailed, Retryable: true, detail: "could not start " + filepath.Base(s.Argv[0])}
	}
	p.pgid = c.Process.Pid
	mark := dir + "." + pgidFile
	_ = os.WriteFile(mark, []byte(strconv.Itoa(p.pgid)), 0o600)
	logf(s.Log, "%sstarted (pid %d)", s.idlePrefix(), p.pgid)
	go func() {
		err := c.Wait()
		// What the leader left running goes with it.
		_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
		waitPumps(&wg, outR, errR)
		inW.Close()
		os.Remove(mark)
		os.RemoveAll(dir)
		logf(s.Log, "%sexited (%s)", s.idlePrefix(), exitText(err))
		close(p.exited)
	}()
	return p, nil
}

// exitText says how a process ended, for the log.
func exitText(err error) string {
	if err == nil {
		return "status 0"
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "signal " + ws.Signal().String()
		}
		return "status " + strconv.Itoa(ee.ExitCode())
	}
	return err.Error()
}

// get returns an idle live process, or starts one.
func (s *Server) get() (*process, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errors.New("trainer: the worker is stopping")
	}
	for len(s.idle) > 0 {
		p := s.idle[len(s.idle)-1]
		s.idle = s.idle[:len(s.idle)-1]
		if p.alive() {
			s.mu.Unlock()
			return p, nil
		}
		delete(s.live, p)
	}
	s.mu.Unlock()
	p, err := s.start()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		go s.stop(p)
		return nil, errors.New("trainer: the worker is stopping")
	}
	if s.live == nil {
		s.live = map[*process]struct{}{}
	}
	s.live[p] = struct{}{}
	return p, nil
}

// put makes p idle again.
func (s *Server) put(p *process) {
	p.setTask(s.idlePrefix(), nil)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		go s.stop(p)
		return
	}
	if p.alive() {
		s.idle = append(s.idle, p)
	} else {
		delete(s.live, p)
	}
}

// stop ends p's group (SIGTERM, the grace period, SIGKILL) and waits until
// it is gone; p is no longer used.
func (s *Server) stop(p *process) {
	s.mu.Lock()
	delete(s.live, p)
	s.mu.Unlock()
	p.stopOnce.Do(func() {
		grace := s.Grace
		if grace <= 0 {
			grace = DefaultGrace
		}
		_ = syscall.Kill(-p.pgid, syscall.SIGTERM)
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-p.exited:
			return
		case <-t.C:
		}
		_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
	})
	<-p.exited
}

// Close stops every process: each gets the end of its input, then, if it
// has not exited within a second, SIGTERM and after the grace period
// SIGKILL. Tasks still in flight fail. Run refuses tasks afterwards.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	var ps []*process
	for p := range s.live {
		ps = append(ps, p)
	}
	s.idle = nil
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.stdin.Close()
			select {
			case <-p.exited:
			case <-time.After(time.Second):
			}
			s.stop(p)
		}()
	}
	wg.Wait()
}

// Run does task with the program: stage writes the task's input files
// into its fresh directory, the path of its task.json goes to a process,
// and once the process says it is done, collect reads its outputs before
// the directory is removed. progress receives the task's progress lines.
// The error is a *Failure for anything the program did, or a plain error
// for the runner's own trouble.
func (s *Server) Run(ctx context.Context, task trainer.Task, stage func(dir string) error, collect func(dir string, res trainer.Result) error, progress func(json.RawMessage)) (trainer.Result, error) {
	dir, task, err := taskDir(s.Root, task)
	if err != nil {
		return trainer.Result{}, err
	}
	defer os.RemoveAll(dir)
	if stage != nil {
		if err := stage(dir); err != nil {
			return trainer.Result{}, fmt.Errorf("trainer: stage the task's inputs: %w", err)
		}
	}
	want := filepath.Join(dir, trainer.TaskFile)
	prefix := fmt.Sprintf("trainer %s/%s round %d %s: ", task.Campaign, task.Site, task.Round, task.Task)
	var p *process
	for try := 0; ; try++ {
		if p, err = s.get(); err != nil {
			return trainer.Result{}, err
		}
		for len(p.done) > 0 { // a done line no task awaited
			logf(s.Log, "%sdropped a done line for %s, which no task awaited", prefix, <-p.done)
		}
		p.setTask(prefix, progress)
		if _, err = io.WriteString(p.stdin, want+"\n"); err == nil {
			break
		}
		// It had exited since its last task, and never got this one.
		s.stop(p)
		if try > 0 {
			return trainer.Result{}, &Failure{Code: -1, Reason: ReasonExited, Retryable: true, detail: "its standard input is closed"}
		}
	}
	var path string
	select {
	case path = <-p.done:
	case <-p.exited:
		select {
		case path = <-p.done: // its last words
		default:
			s.stop(p)
			return trainer.Result{}, &Failure{Code: -1, Reason: ReasonExited, Retryable: true}
		}
	case <-ctx.Done():
		why := ReasonCanceled
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			why = ReasonTimeout
		}
		s.stop(p)
		return trainer.Result{}, &Failure{Code: -1, Reason: why, Retryable: true}
	}
	if path != want {
		// It is confused about which task it does: a fresh process next.
		s.stop(p)
		return trainer.Result{}, &Failure{Code: 0, Reason: ReasonProtocol, Fault: trainer.KindProtocol, serve: true,
			detail: "its done line names another task.json than the one sent"}
	}
	s.put(p)
	if f := serveError(s.Log, prefix, dir); f != nil {
		return trainer.Result{}, f
	}
	res, err := finish(dir, task, collect)
	var f *Failure
	if errors.As(err, &f) {
		f.serve = true
	}
	return res, err
}

// serveError reads a serve-mode task's error.json, if it wrote one.
func serveError(log io.Writer, prefix, dir string) *Failure {
	path := filepath.Join(dir, trainer.ErrorFile)
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	rep, ok := trainer.ReadErrorReport(path)
	if !ok {
		return &Failure{Code: 0, Reason: ReasonFailed, Retryable: true, serve: true, detail: "its error.json is not the protocol's object"}
	}
	if rep.Message != "" {
		logf(log, "%serror.json: %s", prefix, rep.Message)
	}
	switch rep.Status {
	case trainer.StatusBadSiteData, trainer.StatusBadModel, trainer.StatusTransient:
		f := Classify(rep.Status, rep.Kind)
		f.serve = true
		return f
	}
	return &Failure{Code: 0, Reason: ReasonFailed, Retryable: true, Kind: Classify(1, rep.Kind).Kind, serve: true,
		detail: "its error.json has no status 65, 66 or 75"}
}
