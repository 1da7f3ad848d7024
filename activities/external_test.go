package activities

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestParseTrainer: NAME=COMMAND split into words; relative paths the
// worker can see made absolute (the program runs in its task directory);
// bare names and arguments that are no file here passed as they are; bad
// flags named.
func TestParseTrainer(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"bin/tr", "train.py"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	for i, c := range []struct {
		flag    string
		name    string
		argv    []string
		wantErr string
	}{
		0: {"go=bin/tr --fast", "go", []string{filepath.Join(dir, "bin/tr"), "--fast"}, ""},
		1: {"torch=python3 ./train.py a/b", "torch", []string{"python3", filepath.Join(dir, "train.py"), "a/b"}, ""},
		2: {"abs=/bin/true", "abs", []string{"/bin/true"}, ""},
		3: {"x=bin/missing", "", nil, "program bin/missing"},
		4: {"go", "", nil, "want NAME=COMMAND"},
		5: {"a b=/bin/true", "", nil, "the name must be"},
		6: {"go=  ", "", nil, "empty command"},
	} {
		name, argv, err := ParseTrainer(c.flag)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%d: %q: error %v, want %q", i, c.flag, err, c.wantErr)
			}
			continue
		}
		if err != nil || name != c.name || !slices.Equal(argv, c.argv) {
			t.Errorf("%d: %q: %q %q %v, want %q %q", i, c.flag, name, argv, err, c.name, c.argv)
		}
	}
}
