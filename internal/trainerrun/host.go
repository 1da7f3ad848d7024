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
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/trainer"
)

// Program is one of a site's own training programs.
type Program struct {
	// Argv is its command line, split into words (no shell), with paths
	// made absolute (ParseProgram).
	Argv []string
	// Serve runs it in serve mode (one process per site serving many
	// tasks) instead of one process per task.
	Serve bool
}

// Host runs a worker's training programs for its sites: the programs by
// name (worker --trainer NAME=COMMAND, --trainer-serve NAME=COMMAND), the
// variables they get besides the sealed environment (--trainer-env), and
// how many of their tasks run at once across all the worker's sites
// (--trainer-slots, default 1): a GPU runs one training at a time well.
// One Host serves every site of a process; Close stops its serve-mode
// processes.
type Host struct {
	Programs map[string]Program
	// Env is what the site adds to the sealed environment (ParseEnv).
	Env []string
	// Slots bounds the tasks that run at once; 0 means 1.
	Slots int
	// Grace is how long a group has between SIGTERM and SIGKILL; 0 means
	// DefaultGrace.
	Grace time.Duration

	once    sync.Once
	sem     chan struct{}
	mu      sync.Mutex
	servers map[string]*Server // by root and program name
	closed  bool
}

// Has reports whether the host has a program called name.
func (h *Host) Has(name string) bool {
	if h == nil {
		return false
	}
	_, ok := h.Programs[name]
	return ok
}

// slots is the semaphore of the host's slots.
func (h *Host) slots() chan struct{} {
	h.once.Do(func() {
		n := h.Slots
		if n < 1 {
			n = 1
		}
		h.sem = make(chan struct{}, n)
	})
	return h.sem
}

// Call is one task for a site's program.
type Call struct {
	// Site is the site's name; Root its task root (it must exist); Log
	// receives the program's output.
	Site, Root string
	Log        io.Writer
	// Program is the program's name.
	Program string
	Task    trainer.Task
	// Stage writes the task's input files into its directory; Collect
	// reads its outputs once the result is read; Progress receives its
	// progress lines. Each may be nil.
	Stage    func(dir string) error
	Collect  func(dir string, res trainer.Result) error
	Progress func(json.RawMessage)
}

// Run does c's task with its program, once a slot is free: per task, or
// through the site's serve-mode process. The error is a *Failure for
// anything the program did (or ctx ending while the task waited for a
// slot), or a plain error for the runner's own trouble.
func (h *Host) Run(ctx context.Context, c Call) (trainer.Result, error) {
	prog, ok := h.Programs[c.Program]
	if !ok {
		return trainer.Result{}, fmt.Errorf("trainer: no program named %q", c.Program)
	}
	sem := h.slots()
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		why := ReasonCanceled
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			why = ReasonTimeout
		}
		return trainer.Result{}, &Failure{Code: -1, Reason: why, Retryable: true, detail: "waiting for a free trainer slot"}
	}
	defer func() { <-sem }()
	if !prog.Serve {
		r := Runner{Root: c.Root, Log: c.Log, Grace: h.Grace, Env: h.Env, Progress: c.Progress}
		return r.Run(ctx, prog.Argv, c.Task, c.Stage, c.Collect)
	}
	s, err := h.server(c, prog)
	if err != nil {
		return trainer.Result{}, err
	}
	return s.Run(ctx, c.Task, c.Stage, c.Collect, c.Progress)
}

// server returns the serve-mode server of c's site and program.
func (h *Host) server(c Call, prog Program) (*Server, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errors.New("trainer: the worker is stopping")
	}
	key := c.Root + "\x00" + c.Program
	s := h.servers[key]
	if s == nil {
		s = &Server{Argv: prog.Argv, Root: c.Root, Site: c.Site, Name: c.Program, Log: c.Log, Grace: h.Grace, Env: h.Env}
		if h.servers == nil {
			h.servers = map[string]*Server{}
		}
		h.servers[key] = s
	}
	return s, nil
}

// Close stops every serve-mode process (Server.Close); tasks still in
// flight fail. A nil Host does nothing.
func (h *Host) Close() {
	if h == nil {
		return
	}
	h.mu.Lock()
	h.closed = true
	servers := h.servers
	h.servers = nil
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		go func() { defer wg.Done(); s.Close() }()
	}
	wg.Wait()
}

// ParseProgram reads one --trainer or --trainer-serve flag, NAME=COMMAND:
// COMMAND is split into words at white space, with no shell and no
// quoting (a command that needs either is a script). The program runs in
// a directory of its own, so what names a file is made absolute first: a
// bare program name ("python3") is looked up in the worker's PATH, a
// relative path to the program ("bin/trainer") is made absolute against
// the worker's working directory, and so is every argument that names a
// file or directory that exists there ("train.py",
// "examples/trainers/pytorch/tabular.py"); other arguments pass as they
// are.
func ParseProgram(flagName, flag string) (name string, argv []string, err error) {
	name, command, ok := strings.Cut(flag, "=")
	if !ok {
		return "", nil, fmt.Errorf("--%s %q: want NAME=COMMAND", flagName, flag)
	}
	if !method.ValidTrainerName(name) {
		return "", nil, fmt.Errorf("--%s %q: the name must be letters, digits, '.', '_' and '-' (at most 64), starting with a letter or digit", flagName, name)
	}
	argv = strings.Fields(command)
	if len(argv) == 0 {
		return "", nil, fmt.Errorf("--%s %s: empty command", flagName, name)
	}
	if !strings.Contains(argv[0], "/") {
		p, err := exec.LookPath(argv[0])
		if err != nil {
			return "", nil, fmt.Errorf("--%s %s: program %s is not in PATH", flagName, name, argv[0])
		}
		if argv[0], err = filepath.Abs(p); err != nil {
			return "", nil, fmt.Errorf("--%s %s: %w", flagName, name, err)
		}
	}
	for i, a := range argv {
		if filepath.IsAbs(a) {
			continue
		}
		if _, err := os.Stat(a); err != nil {
			if i == 0 {
				return "", nil, fmt.Errorf("--%s %s: program %s: %w", flagName, name, a, err)
			}
			continue // not a file here: passed as it is
		}
		if argv[i], err = filepath.Abs(a); err != nil {
			return "", nil, fmt.Errorf("--%s %s: %w", flagName, name, err)
		}
	}
	return name, argv, nil
}

// NewHost builds a Host from a worker's or starter's flags: perTask and
// serve are the NAME=COMMAND values of --trainer and --trainer-serve (a
// name may be given once across both), env the --trainer-env entries
// (ParseEnv), slots --trainer-slots (at least 1). It returns nil, and no
// error, when no program is given and env is empty. A process that gets a
// Host hides its environment from its programs (HideEnvironment).
func NewHost(perTask, serve, env []string, slots int) (*Host, error) {
	if slots < 1 {
		return nil, fmt.Errorf("--trainer-slots %d: want at least 1", slots)
	}
	env, err := ParseEnv(env)
	if err != nil {
		return nil, err
	}
	if len(perTask)+len(serve) == 0 {
		if len(env) > 0 {
			return nil, errors.New("--trainer-env: no --trainer or --trainer-serve program to give it to")
		}
		return nil, nil
	}
	if err := HideEnvironment(); err != nil {
		return nil, err
	}
	h := &Host{Programs: map[string]Program{}, Env: env, Slots: slots}
	for _, set := range []struct {
		flag  string
		vals  []string
		serve bool
	}{{"trainer", perTask, false}, {"trainer-serve", serve, true}} {
		for _, v := range set.vals {
			name, argv, err := ParseProgram(set.flag, v)
			if err != nil {
				return nil, err
			}
			if _, dup := h.Programs[name]; dup {
				return nil, fmt.Errorf("--%s %s: a program of that name is given twice", set.flag, name)
			}
			h.Programs[name] = Program{Argv: argv, Serve: set.serve}
		}
	}
	return h, nil
}

// HideEnvironment makes this process non-dumpable (prctl
// PR_SET_DUMPABLE 0): its /proc/<pid>/environ and memory can no longer be
// read by the other processes of its user, its training programs
// included, which would otherwise find there the S3 credentials and
// payload keys the sealed environment keeps from them. It does not stop
// root, nor a program reading the files the worker's user can read. Linux
// only; the error says when the kernel refused.
func HideEnvironment() error {
	const prSetDumpable = 4
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetDumpable, 0, 0, 0, 0, 0); errno != 0 {
		return fmt.Errorf("prctl(PR_SET_DUMPABLE, 0): %w", errno)
	}
	return nil
}
