package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/eval"
)

func TestRunWritesFederation(t *testing.T) {
	for i, test := range []struct {
		args  []string
		files int
		fed   func() (eval.Federation, error)
	}{
		{ // 0: paper healthcare, 8 sites × 2 files + manifest
			args:  []string{"healthcare", "--seed", "3"},
			files: 17,
			fed:   func() (eval.Federation, error) { return eval.Healthcare(eval.DefaultHealthcareOptions(3)) },
		},
		{ // 1: benchmark with 4 sites
			args:  []string{"benchmark", "--seed", "5", "--sites", "4"},
			files: 9,
			fed: func() (eval.Federation, error) {
				o := eval.DefaultBenchmarkOptions(5)
				o.Sites = 4
				return eval.Benchmark(o)
			},
		},
		{ // 2: healthcare with 4 sites and one adversarial
			args:  []string{"healthcare", "--seed", "1", "--sites", "4", "--adversarial", "2"},
			files: 9,
			fed: func() (eval.Federation, error) {
				o := eval.DefaultHealthcareOptions(1)
				o.Sites, o.Adversarial = 4, []int{2}
				return eval.Healthcare(o)
			},
		},
	} {
		dir, want := t.TempDir(), t.TempDir()
		var stdout, stderr bytes.Buffer
		if code := run(append(test.args, "--out", dir), &stdout, &stderr); code != exitOK {
			t.Fatalf("case %d: exit %d, stderr %s", i, code, stderr.String())
		}
		fed, err := test.fed()
		if err != nil {
			t.Fatal(err)
		}
		if err := dataset.WriteFederation(want, fed); err != nil {
			t.Fatal(err)
		}
		entries, err := os.ReadDir(want)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != test.files {
			t.Errorf("case %d: %d files, want %d", i, len(entries), test.files)
		}
		for _, e := range entries {
			a, errA := os.ReadFile(filepath.Join(dir, e.Name()))
			b, errB := os.ReadFile(filepath.Join(want, e.Name()))
			if errA != nil || errB != nil || !bytes.Equal(a, b) {
				t.Errorf("case %d: %s differs from dataset.WriteFederation's output (%v, %v)", i, e.Name(), errA, errB)
			}
		}
	}
}

func TestRunErrors(t *testing.T) {
	for i, test := range []struct {
		args []string
		want string
	}{
		{nil, "usage"}, // 0
		{[]string{"federate"}, `unknown command "federate"`},                                      // 1
		{[]string{"healthcare"}, "--out DIR is required"},                                         // 2
		{[]string{"benchmark", "--out", "x", "--sites", "-1"}, "--sites -1"},                      // 3
		{[]string{"healthcare", "--out", "x", "--sites", "4"}, "pass --adversarial"},              // 4
		{[]string{"healthcare", "--out", "x", "--adversarial", "one"}, `"one" is not an integer`}, // 5
		{[]string{"benchmark", "--out", "x", "--seed", "-3"}, "invalid value"},                    // 6
		{[]string{"benchmark", "--out", "x", "extra"}, `unexpected argument "extra"`},             // 7
		{[]string{"clouds"}, "--out DIR is required"},                                             // 8
		{[]string{"clouds", "--out", "x", "--n", "10,zero"}, `"zero" is not an integer`},          // 9
		{[]string{"clouds", "--out", "x", "--d", "0"}, "D = 0"},                                   // 10
		{[]string{"clouds", "--out", "x", "--n", "-5"}, `-5 is not a positive number`},            // 11
	} {
		var stdout, stderr bytes.Buffer
		if code := run(test.args, &stdout, &stderr); code != exitInput {
			t.Errorf("case %d: exit %d, want %d", i, code, exitInput)
		}
		if !strings.Contains(stderr.String(), test.want) {
			t.Errorf("case %d: stderr %q, want it to contain %q", i, stderr.String(), test.want)
		}
	}
}

// TestCloudsReproduceTestdata: `gendata clouds` writes testdata/ph's blob
// clouds (made by the Python generator it replaces) byte for byte, so the
// clouds `make bench-tda` generates are the ones its table was measured on.
func TestCloudsReproduceTestdata(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"clouds", "--seed", "1", "--n", "80,500,1000", "--out", dir}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, stderr.String())
	}
	for i, name := range []string{"blobs_d20_n80_s1.csv", "blobs_d20_n500_s1.csv", "blobs_d20_n1000_s1.csv"} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		want, err := os.ReadFile(filepath.Join("..", "..", "testdata", "ph", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%d: %s differs from testdata/ph/%s", i, name, name)
		}
		if !strings.Contains(stdout.String(), filepath.Join(dir, name)) {
			t.Errorf("%d: stdout %q does not name %s", i, stdout.String(), name)
		}
	}
}
