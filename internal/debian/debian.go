// Package debian installs a Debian package that a command needs and the
// machine lacks (a data set such as dataset-fashion-mnist), saying so
// before it does: the only network traffic it causes is apt's, and only
// when the package is missing and the user has not asked for no installs.
// It is used by commands (cmd/), never by the core packages.
package debian

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
)

// Installer installs missing packages with apt-get. The zero value runs
// apt-get from PATH as the current user.
type Installer struct {
	// Log receives one line before anything is installed and apt-get's
	// own output; nil discards both.
	Log io.Writer
	// Disabled refuses to install (the user's --no-install): Ensure then
	// fails with the command to run by hand.
	Disabled bool
	// AptGet is the apt-get to run; "" finds it on PATH.
	AptGet string
	// IsRoot reports whether apt-get may install; nil asks the process's
	// effective user ID.
	IsRoot func() bool
}

// Ensure makes sure that present reports true, installing pkg when it does
// not: it runs `apt-get update` and `apt-get install -y pkg`, then asks
// present again. why says what needs the package, for the messages. When
// the installer is disabled, the process is not root or apt-get is missing,
// the error gives the command to run instead.
func (in Installer) Ensure(ctx context.Context, pkg, why string, present func() bool) error {
	if present() {
		return nil
	}
	manual := fmt.Sprintf("install it with `apt-get update && apt-get install -y %s` (as root)", pkg)
	apt := in.AptGet
	if apt == "" {
		apt = "apt-get"
	}
	isRoot := in.IsRoot
	if isRoot == nil {
		isRoot = func() bool { return os.Geteuid() == 0 }
	}
	switch {
	case in.Disabled:
		return fmt.Errorf("%s needs Debian's %s, which is not installed, and installing was turned off: %s", why, pkg, manual)
	case !isRoot():
		return fmt.Errorf("%s needs Debian's %s, which is not installed, and only root may install it: %s", why, pkg, manual)
	}
	if _, err := exec.LookPath(apt); err != nil {
		return fmt.Errorf("%s needs Debian's %s, which is not installed, and %s is not on this machine: %s", why, pkg, apt, manual)
	}
	log := in.Log
	if log == nil {
		log = io.Discard
	}
	fmt.Fprintf(log, "%s needs Debian's %s, which is not installed: installing it now (apt-get update && apt-get install -y %s)\n", why, pkg, pkg)
	for _, args := range [][]string{{"update"}, {"install", "-y", pkg}} {
		cmd := exec.CommandContext(ctx, apt, args...)
		cmd.Stdout, cmd.Stderr = log, log
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("install Debian's %s for %s: apt-get %s: %w; %s", pkg, why, args[0], err, manual)
		}
	}
	if !present() {
		return fmt.Errorf("installed Debian's %s (apt-get install -y %s), but %s still does not find what it needs", pkg, pkg, why)
	}
	return nil
}
