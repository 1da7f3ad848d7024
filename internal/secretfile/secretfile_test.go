package secretfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestModes: a file written by Write has mode 0600 and reads back; every
// mode that lets the group or others in is refused, naming the file, its
// mode and chmod 600; owner-only modes are accepted.
func TestModes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "secret")
	if err := Write(path, []byte("s3cr3t\n")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("written with mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	if b, err := Read(path); err != nil || string(b) != "s3cr3t\n" {
		t.Fatalf("read back %q, %v", b, err)
	}
	for i, c := range []struct {
		mode os.FileMode
		ok   bool
	}{
		0: {0o600, true},
		1: {0o400, true},
		2: {0o700, true},
		3: {0o640, false},
		4: {0o604, false},
		5: {0o644, false},
		6: {0o620, false}, // the group may write it: it may swap the secret
		7: {0o601, false},
	} {
		if err := os.Chmod(path, c.mode); err != nil {
			t.Fatal(err)
		}
		_, rerr := Read(path)
		cerr := Check(path)
		if c.ok != (rerr == nil) || c.ok != (cerr == nil) {
			t.Errorf("case %d (mode %04o): Read %v, Check %v; want ok %v", i, c.mode, rerr, cerr, c.ok)
			continue
		}
		if !c.ok && (!strings.Contains(rerr.Error(), path) || !strings.Contains(rerr.Error(), "chmod 600")) {
			t.Errorf("case %d: %v does not name the file and the fix", i, rerr)
		}
	}
	if _, err := Read(dir); err == nil {
		t.Error("a directory was read as a secret file")
	}
	if _, err := Read(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Errorf("missing file: %v", err)
	}
}

// TestWriteReplaces: Write replaces an existing file, even one of a wider
// mode, with a 0600 one, and leaves no temporary file behind.
func TestWriteReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "secret")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if b, err := Read(path); err != nil || string(b) != "new" {
		t.Fatalf("%q, %v", b, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%d entries in the directory, want 1", len(entries))
	}
}
