package trainerrun

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/ptopofl/ptopofl/trainer"
)

// SweepOrphans kills the process groups of programs whose runner died with
// them still running (a worker killed with -9: the kernel kills each
// group's leader, not what the leader started) and removes their
// directories: per-task programs' task directories ("task-…") and
// serve-mode programs' own ("serve-…"). Call it once at start, before any
// Run over the same root. The programs of another runner that is still
// alive (a second worker over the same root) are left alone: a
// directory's name carries its runner's pid. Only processes that are
// still in the recorded group and still carry that directory's
// PTOPOFL_TASK or PTOPOFL_SERVE_DIR in their environment are killed, so a
// process group id the system has since given to someone else is left
// alone. It returns how many processes it killed.
func SweepOrphans(root string) (int, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return 0, fmt.Errorf("trainer: %w", err)
	}
	n := 0
	for _, e := range entries {
		name := e.Name()
		if owner := runnerOf(name); owner > 0 && owner != os.Getpid() && alive(owner) {
			continue // another live runner's program
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
		if e.IsDir() && (strings.HasPrefix(name, "task-") || strings.HasPrefix(name, "serve-")) {
			os.RemoveAll(filepath.Join(root, name))
		}
	}
	return n, nil
}

// runnerOf returns the pid of the runner that made the directory (or its
// pgid mark) called name, "task-<pid>-<random>" or "serve-<pid>-<random>",
// or 0.
func runnerOf(name string) int {
	rest, ok := strings.CutPrefix(name, "task-")
	if !ok {
		if rest, ok = strings.CutPrefix(name, "serve-"); !ok {
			return 0
		}
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
// names dir (its task.json as PTOPOFL_TASK, or dir as PTOPOFL_SERVE_DIR),
// and returns how many it killed. It reads /proc (Linux).
func killGroupOf(pgid int, dir string) int {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	want := map[string]bool{
		trainer.EnvTask + "=" + filepath.Join(dir, trainer.TaskFile): true,
		trainer.EnvServeDir + "=" + dir:                              true,
	}
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
			if want[kv] {
				if syscall.Kill(pid, syscall.SIGKILL) == nil {
					n++
				}
				break
			}
		}
	}
	return n
}
