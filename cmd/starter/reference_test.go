package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/internal/reference"
)

// referenceDir is where the generated reference lives, from this package.
const referenceDir = "../../docs/reference"

// TestReferenceIsCurrent regenerates docs/reference/cli.md (every starter
// command's flags, as its own flag set prints them), parameters.md (from
// method.Params), formats.md and console.md (the console's addresses and
// JSON) and fails when the committed files differ: the reference
// cannot drift from the code. `make reference` (PTOPOFL_UPDATE_REFERENCE=1)
// rewrites them.
func TestReferenceIsCurrent(t *testing.T) {
	update := os.Getenv("PTOPOFL_UPDATE_REFERENCE") == "1"
	for _, kv := range os.Environ() { // defaults printed must not depend on this shell
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "PTOPOFL_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	formats, err := reference.Formats("../..")
	if err != nil {
		t.Fatal(err)
	}
	consoleAPI, err := reference.Console("../..")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"cli.md":        cliReference(t),
		"console.md":    consoleAPI,
		"formats.md":    formats,
		"parameters.md": reference.Parameters(),
	}
	for _, name := range mapsKeys(files) {
		path := filepath.Join(referenceDir, name)
		if update {
			if err := os.MkdirAll(referenceDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(files[name]), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run `make reference`)", err)
		}
		if !bytes.Equal(got, []byte(files[name])) {
			t.Errorf("docs/reference/%s is stale: run `make reference` and commit it (first difference at line %d)", name, firstDiffLine(string(got), files[name]))
		}
	}
}

// cliReference runs `starter help` and `starter COMMAND -h` for every
// command, in the order the usage lists them.
func cliReference(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("<!-- Generated from cmd/starter's flag sets by `make reference`; do not edit. -->\n\n")
	b.WriteString("# starter: commands and flags\n\n")
	b.WriteString("Every flag below is printed by the command's own flag set (`starter COMMAND -h`); `make test`\n")
	b.WriteString("fails when this page is stale. Flags that name an environment variable take it when the flag is\n")
	b.WriteString("not given. Exit status: 0 success, 1 failure, 2 bad input (a flag, a file, a name).\n\n")
	code, out, _ := runCLI("help")
	if code != exitOK {
		t.Fatalf("starter help: exit %d", code)
	}
	b.WriteString("```\n" + out + "```\n")
	var listed []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "   ") {
			if _, ok := commands[f[0]]; ok {
				listed = append(listed, f[0])
			}
		}
	}
	if missing := setMinus(mapsKeys(commands), listed); len(missing) > 0 {
		t.Fatalf("commands missing from the usage text: %v", missing)
	}
	for _, name := range listed {
		code, out, errOut := runCLI(name, "-h")
		if code != exitOK {
			t.Fatalf("starter %s -h: exit %d: %s", name, code, errOut)
		}
		fmt.Fprintf(&b, "\n## starter %s\n\n```\n%s```\n", name, strings.TrimLeft(out+errOut, "\n"))
	}
	return b.String()
}

func mapsKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func setMinus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func firstDiffLine(a, b string) int {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(la) && i < len(lb); i++ {
		if la[i] != lb[i] {
			return i + 1
		}
	}
	return min(len(la), len(lb)) + 1
}
