// Package secretfile reads and writes the files that hold a secret (a
// private key, a password, S3 credentials, a database URL with its
// password). Such a file is written with mode 0600, and read only while
// neither its group nor others may read or write it: a secret that a
// careless copy left open to every local account is refused, with the
// command that fixes it, as ssh refuses such a private key, rather than
// used as if nothing had happened. The checks are on the file's own mode
// bits; what an ACL or a shared account grants is not seen.
package secretfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Mode is the mode every secret file is written with.
const Mode os.FileMode = 0o600

// open is the access others must not have: read, write or execute by the
// group or by anyone.
const open os.FileMode = 0o077

// Check returns an error when path cannot be stat'ed or when its group or
// others have any access to it, naming the file, its mode and the fix.
func Check(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	return checkMode(path, fi)
}

func checkMode(path string, fi os.FileInfo) error {
	if fi.Mode().Perm()&open != 0 {
		return fmt.Errorf("%s has mode %04o: others may read it; make it readable by its owner only (chmod 600 %s)", path, fi.Mode().Perm(), path)
	}
	return nil
}

// Read returns the contents of the secret file path after Check has
// passed on the opened file (so a file swapped between the check and the
// read cannot slip through).
func Read(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if err := checkMode(path, fi); err != nil {
		return nil, err
	}
	return io.ReadAll(f)
}

// Write writes data to path with mode 0600, through a temporary file in
// the same directory and a rename: a reader (or a kill -9 mid-write) never
// sees half a file, and the secret is never in a file of a wider mode, not
// even for a moment.
func Write(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	// CreateTemp makes the file with mode 0600 already; Chmod says so
	// whatever the umask and keeps it so if that ever changes.
	err = errors.Join(tmp.Chmod(Mode), write(tmp, data), tmp.Sync())
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func write(f *os.File, data []byte) error {
	_, err := f.Write(data)
	return err
}
