// Package docs holds the documentation; its test runs the commands the
// documentation marks as runnable and compares what they print with what
// the page shows.
package docs

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// A runnable block is a fenced block whose info string is "console",
// right after a line "<!-- runnable -->". Its lines starting with "$ " are
// commands, run by sh in order from one directory per page (so a page's
// later blocks see what its earlier ones made), with bin/ holding this
// checkout's commands and examples/ its examples; the lines after a command are what it must print on
// standard output (standard error is progress and is not compared). A line
// "..." stands for any number of lines. Before comparing, both sides are
// masked: durations, dates, 127.0.0.1 ports, KiB/MiB sizes, hexadecimal
// hashes of 8 digits or more and the page's directory (shown as "…") may
// differ; every other
// character, every number of a result included, must match.
type block struct {
	line  int // of the opening fence, 1-based
	steps []step
}

type step struct {
	cmd  string
	want []string
}

var runnableMark = "<!-- runnable -->"

// parse returns the runnable blocks of a Markdown page.
func parse(text string) ([]block, error) {
	var blocks []block
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != runnableMark {
			continue
		}
		if i+1 >= len(lines) || strings.TrimSpace(lines[i+1]) != "```console" {
			return nil, fmt.Errorf("line %d: %s must be followed by a ```console fence", i+1, runnableMark)
		}
		b := block{line: i + 2}
		j := i + 2
		for ; j < len(lines) && strings.TrimSpace(lines[j]) != "```"; j++ {
			l := lines[j]
			if cmd, ok := strings.CutPrefix(l, "$ "); ok {
				b.steps = append(b.steps, step{cmd: cmd})
				continue
			}
			if len(b.steps) == 0 {
				return nil, fmt.Errorf("line %d: output before any $ command", j+1)
			}
			s := &b.steps[len(b.steps)-1]
			s.want = append(s.want, l)
		}
		if j == len(lines) {
			return nil, fmt.Errorf("line %d: unclosed runnable block", b.line)
		}
		if len(b.steps) == 0 {
			return nil, fmt.Errorf("line %d: runnable block without a $ command", b.line)
		}
		blocks = append(blocks, b)
		i = j
	}
	return blocks, nil
}

var masks = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`127\.0\.0\.1:\d+`), "127.0.0.1:PORT"},
	{regexp.MustCompile(`\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2})?`), "DATETIME"},
	{regexp.MustCompile(`\b\d+ (KiB|MiB)\b`), "SIZE"}, // a Temporal history's size varies with its timestamps' encodings
	{regexp.MustCompile(`\b(\d+h)?(\d+m)?\d+(\.\d+)?(ns|µs|ms|s|m|h)\b`), "TIME"},
}

// mask replaces what may differ from run to run.
func mask(line, dir string) string {
	if dir != "" {
		line = strings.ReplaceAll(line, dir, "…")
	}
	for _, m := range masks {
		line = m.re.ReplaceAllString(line, m.with)
	}
	return strings.TrimRight(maskHashes(line), " ")
}

var hexRun = regexp.MustCompile(`\b[0-9a-f]{8,}\b`)

// maskHashes replaces hexadecimal runs of 8 digits or more with HASH,
// except the digits of a decimal number (next to a '.'), which must match.
func maskHashes(line string) string {
	var b strings.Builder
	last := 0
	for _, ix := range hexRun.FindAllStringIndex(line, -1) {
		if (ix[0] > 0 && line[ix[0]-1] == '.') || (ix[1] < len(line) && line[ix[1]] == '.') {
			continue
		}
		b.WriteString(line[last:ix[0]])
		b.WriteString("HASH")
		last = ix[1]
	}
	b.WriteString(line[last:])
	return b.String()
}

// match reports whether got matches want, "..." in want standing for any
// number of lines, and the first line of want that does not match.
func match(want, got []string) (bool, int) {
	var rec func(w, g int) bool
	worst := 0
	rec = func(w, g int) bool {
		worst = max(worst, w)
		if w == len(want) {
			return g == len(got)
		}
		if want[w] == "..." {
			for k := g; k <= len(got); k++ {
				if rec(w+1, k) {
					return true
				}
			}
			return false
		}
		return g < len(got) && want[w] == got[g] && rec(w+1, g+1)
	}
	ok := rec(0, 0)
	return ok, worst
}

// TestMatch: the comparison's rules on hand-made cases.
func TestMatch(t *testing.T) {
	cases := []struct {
		want, got []string
		ok        bool
	}{
		0: {[]string{"a", "b"}, []string{"a", "b"}, true},
		1: {[]string{"a", "b"}, []string{"a", "c"}, false},
		2: {[]string{"a", "...", "d"}, []string{"a", "b", "c", "d"}, true},
		3: {[]string{"a", "..."}, []string{"a"}, true},
		4: {[]string{"a"}, []string{"a", "b"}, false},
		5: {[]string{"...", "x"}, []string{"a", "b"}, false},
	}
	for i, c := range cases {
		if ok, _ := match(c.want, c.got); ok != c.ok {
			t.Errorf("case %d: match %v, want %v", i, ok, c.ok)
		}
	}
	for i, c := range []struct{ in, want string }{
		0: {"campaign first: done after 5 rounds in 0.8s", "campaign first: done after 5 rounds in TIME"},
		1: {"Temporal 127.0.0.1:27155, manifest eedab1ff", "Temporal 127.0.0.1:PORT, manifest HASH"},
		2: {"final AUC  0.8406", "final AUC  0.8406"},
		3: {"elapsed 1m7.9s  eta 14ms", "elapsed TIME  eta TIME"},
		4: {"on disk /tmp/x/demo/local/", "on disk …/demo/local/"},
		5: {"final_auc 0.8206642679576681, 12345678901", "final_auc 0.8206642679576681, HASH"},
	} {
		if got := mask(c.in, "/tmp/x"); got != c.want {
			t.Errorf("mask case %d: %q, want %q", i, got, c.want)
		}
	}
}

// TestParse: a runnable block's commands and outputs, and malformed ones.
func TestParse(t *testing.T) {
	page := "text\n" + runnableMark + "\n```console\n$ echo a\na\n$ true\n```\n```console\n$ not runnable\n```\n"
	blocks, err := parse(page)
	if err != nil || len(blocks) != 1 || len(blocks[0].steps) != 2 || blocks[0].steps[0].cmd != "echo a" || strings.Join(blocks[0].steps[0].want, "|") != "a" {
		t.Fatalf("parse: %+v, %v", blocks, err)
	}
	for i, bad := range []string{
		0: runnableMark + "\n```\n$ x\n```\n",
		1: runnableMark + "\n```console\nout\n```\n",
		2: runnableMark + "\n```console\n$ x\n",
	} {
		if _, err := parse(bad); err == nil {
			t.Errorf("bad case %d parsed", i)
		}
	}
}

// TestRunnableDocs runs every runnable block of README.md and docs/ (see
// block) and fails on a command that exits non-zero or prints other than
// the page shows.
func TestRunnableDocs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real campaigns")
	}
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob("*/*.md")
	pages = append([]string{"../README.md"}, append(pages, more...)...)
	bin := buildCommands(t)
	examples, err := filepath.Abs("../examples")
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range pages {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := parse(string(text))
		if err != nil {
			t.Errorf("%s: %v", page, err)
			continue
		}
		if len(blocks) == 0 {
			continue
		}
		t.Run(strings.TrimPrefix(page, "../"), func(t *testing.T) {
			dir := t.TempDir()
			for name, target := range map[string]string{"bin": bin, "examples": examples} {
				if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
					t.Fatal(err)
				}
			}
			for _, b := range blocks {
				for _, s := range b.steps {
					got, err := runStep(dir, s.cmd)
					if err != nil {
						t.Fatalf("%s:%d: $ %s: %v", page, b.line, s.cmd, err)
					}
					want := make([]string, len(s.want))
					for i, w := range s.want {
						want[i] = mask(w, "")
					}
					for i := range got {
						got[i] = mask(got[i], dir)
					}
					if ok, at := match(want, got); !ok {
						t.Errorf("%s:%d: $ %s: output differs from the page (from its line %d)\n--- page (masked)\n%s\n--- printed (masked)\n%s",
							page, b.line, s.cmd, at+1, strings.Join(want, "\n"), strings.Join(got, "\n"))
					}
				}
			}
		})
	}
}

// runStep runs cmd with sh in dir and returns its standard output's lines.
func runStep(dir, cmd string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, "sh", "-c", cmd)
	c.Dir = dir
	c.Env = cleanEnv()
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		return nil, fmt.Errorf("%w\n%s", err, lastLines(errb.String(), 15))
	}
	var lines []string
	sc := bufio.NewScanner(&out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines, sc.Err()
}

// cleanEnv is this process's environment without PTOPOFL_ variables, as a
// newcomer's shell would be.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PTOPOFL_") {
			env = append(env, kv)
		}
	}
	return env
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// binDir is where buildCommands puts this checkout's commands, once per
// test binary; TestMain removes it.
var binDir struct {
	once sync.Once
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir.dir != "" {
		os.RemoveAll(filepath.Dir(binDir.dir))
	}
	os.Exit(code)
}

// buildCommands builds this checkout's commands into a temporary bin
// directory (from Go's build cache after make build), once.
func buildCommands(t *testing.T) string {
	t.Helper()
	binDir.once.Do(func() {
		tmp, err := os.MkdirTemp("", "docs-bin-")
		if err != nil {
			binDir.err = err
			return
		}
		binDir.dir = filepath.Join(tmp, "bin")
		cmd := exec.Command("go", "build", "-o", binDir.dir+string(filepath.Separator), "./cmd/starter", "./cmd/gendata", "./cmd/devstack", "./cmd/worker", "./cmd/tda", "./cmd/nn")
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			binDir.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binDir.err != nil {
		t.Fatal(binDir.err)
	}
	return binDir.dir
}

var (
	linkRe    = regexp.MustCompile(`\]\(([^)\s]*)\)`)
	headingRe = regexp.MustCompile(`^#+ (.*)`)
	anchorDel = regexp.MustCompile(`[^\p{L}\p{N}_\- ]`)
)

// anchors returns the GitHub anchors of a page's headings (outside code
// blocks): lower case, punctuation dropped, spaces as hyphens.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	fence := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "```") {
			fence = !fence
			continue
		}
		if m := headingRe.FindStringSubmatch(l); m != nil && !fence {
			a := anchorDel.ReplaceAllString(strings.ToLower(strings.TrimSpace(m[1])), "")
			out[strings.ReplaceAll(a, " ", "-")] = true
		}
	}
	return out
}

// TestLinks: every relative link of README.md and docs/ names a file that
// exists and, with a #fragment, a heading of that file.
func TestLinks(t *testing.T) {
	pages, _ := filepath.Glob("*.md")
	more, _ := filepath.Glob("*/*.md")
	pages = append([]string{"../README.md"}, append(pages, more...)...)
	for _, page := range pages {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range linkRe.FindAllStringSubmatch(string(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
			}
			body, err := os.ReadFile(path)
			if err != nil {
				if info, serr := os.Stat(path); serr == nil && info.IsDir() {
					continue
				}
				t.Errorf("%s: link %q: %v", page, target, err)
				continue
			}
			if frag != "" && !anchors(string(body))[frag] {
				t.Errorf("%s: link %q: no heading with that anchor in %s", page, target, path)
			}
		}
	}
}

// helpCommands are the commands besides starter (docs/reference/cli.md)
// whose flags docs/reference/commands.md lists, each as its -h prints it.
var helpCommands = [][]string{
	{"worker"},
	{"devstack"}, {"devstack", "certs"}, {"devstack", "postgres"},
	{"gendata"}, {"gendata", "healthcare"}, {"gendata", "benchmark"}, {"gendata", "clouds"}, {"gendata", "fashion-mnist"},
	{"tda"}, {"tda", "diagram"}, {"tda", "descriptor"}, {"tda", "distance"}, {"tda", "dp-measure"},
	{"nn"}, {"nn", "bench"}, {"nn", "train"}, {"nn", "eval"},
}

// TestCommandsReference regenerates docs/reference/commands.md (the flags
// of worker, devstack, gendata, tda and nn, as each prints them with -h)
// and fails when the committed page differs; PTOPOFL_UPDATE_REFERENCE=1
// (make reference) rewrites it. Defaults that depend on the user's home
// directory are printed for HOME=/home/you.
func TestCommandsReference(t *testing.T) {
	bin := buildCommands(t)
	var b strings.Builder
	b.WriteString("<!-- Generated from the commands' own flag sets by `make reference`; do not edit. -->\n\n")
	b.WriteString("# worker, devstack, gendata, tda and nn: flags\n\n")
	b.WriteString("Each block is what the command prints for `-h` (defaults that depend on the home directory\n")
	b.WriteString("are shown for `HOME=/home/you`). `starter` is in [cli.md](cli.md). `make test` fails when this\n")
	b.WriteString("page is stale.\n")
	for _, c := range helpCommands {
		cmd := exec.Command(filepath.Join(bin, c[0]), append(c[1:], "-h")...)
		cmd.Env = []string{"HOME=/home/you", "PATH=/usr/bin:/bin", "TMPDIR=/tmp"}
		out, _ := cmd.CombinedOutput() // -h exits 0 or 2 depending on the command
		if len(bytes.TrimSpace(out)) == 0 {
			t.Fatalf("%s -h printed nothing", strings.Join(c, " "))
		}
		fmt.Fprintf(&b, "\n## %s\n\n```\n%s```\n", strings.Join(c, " "), strings.TrimLeft(string(out), "\n"))
	}
	path := filepath.Join("reference", "commands.md")
	if os.Getenv("PTOPOFL_UPDATE_REFERENCE") == "1" {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run make reference)", err)
	}
	if string(got) != b.String() {
		t.Errorf("docs/reference/commands.md is stale: run make reference and commit it")
	}
}
