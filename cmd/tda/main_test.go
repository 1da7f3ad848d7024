package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// descriptorTol bounds the entropy, amplitude and the other floating-point
// summaries of the descriptor, whose last few ulp depend on summation order
// (see tda's summaryTol); the counts are compared exactly.
const descriptorTol = 1e-12

// runCmd runs the command in-process and returns its exit status and output.
func runCmd(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestDiagramGolden checks that "tda diagram" reproduces the data lines of
// every golden diagram of shared/golden/ph, copied to ../../testdata/ph, byte for
// byte.
func TestDiagramGolden(t *testing.T) {
	csvs, err := filepath.Glob("../../testdata/ph/*.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(csvs) != 18 {
		t.Fatalf("found %d golden clouds, want the 18 of shared/golden/ph", len(csvs))
	}
	for _, csv := range csvs {
		stem := strings.TrimSuffix(filepath.Base(csv), ".csv")
		t.Run(stem, func(t *testing.T) {
			if testing.Short() && strings.Contains(stem, "n1000") {
				t.Skip("n=1000 case skipped with -short")
			}
			raw, err := os.ReadFile(strings.TrimSuffix(csv, ".csv") + ".diag")
			if err != nil {
				t.Fatal(err)
			}
			code, out, errOut := runCmd("diagram", "--dim", "1", csv)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if want := dataLines(string(raw)); out != want {
				t.Errorf("output differs from %s.diag:\n%s", stem, firstDifference(out, want))
			}
		})
	}
}

func TestDiagramDim0(t *testing.T) {
	// Lines 1–4 of the data of square_d2_n4.diag: the H0 bars only.
	code, out, errOut := runCmd("diagram", "../../testdata/ph/square_d2_n4.csv", "--dim", "0")
	if want := "0 0.0 1.0\n0 0.0 1.0\n0 0.0 1.0\n0 0.0 inf\n"; code != 0 || out != want {
		t.Errorf("exit %d, output %q (stderr %q), want %q", code, out, errOut, want)
	}
}

func TestDistance(t *testing.T) {
	sq, grid := "../../testdata/ph/square_d2_n4.diag", "../../testdata/ph/grid_d2_n36.diag"
	for i, test := range []struct {
		args []string
		want string
	}{
		// 0: H1, bottleneck: grid has 25 bars [1,√2), the square one; the 24
		// unmatched go to the diagonal at (√2−1)/2 = 0.20710678118654757
		// (Python: (2**0.5-1)/2).
		{[]string{"--p", "inf", sq, grid}, "0.20710678118654757\n"},
		// 1: H0, W2: 32 extra bars [0,1) at 1/2 each: sqrt(32/4) = sqrt(8)
		// = 2.8284271247461903 (Python: 8**0.5); the infinite bars match at 0.
		{[]string{"--dim", "0", sq, grid}, "2.8284271247461903\n"},
		// 2: H1, W1: 24 × (√2−1)/2 = 4.970562748477142 (Python: 24*((2**0.5-1)/2)).
		{[]string{"--p", "1", sq, grid}, "4.970562748477142\n"},
		// 3: a diagram against itself.
		{[]string{sq, sq}, "0.0\n"},
		// 4: H0 against a single point's diagram: the same infinite bar, 3 bars to the diagonal
		// at 0.5 each: W2 = sqrt(3/4) = 0.8660254037844386 (Python: 0.75**0.5).
		{[]string{"--dim", "0", sq, "../../testdata/ph/point_d2_n1.diag"}, "0.8660254037844386\n"},
	} {
		code, out, errOut := runCmd(append([]string{"distance"}, test.args...)...)
		if code != 0 || out != test.want {
			t.Errorf("case %d: exit %d, output %q (stderr %q), want %q", i, code, out, errOut, test.want)
		}
	}
}

func TestDescriptorGolden(t *testing.T) {
	var ref struct {
		SubsampleIdx       []int        `json:"subsample_idx"`
		DescriptorExact    []float64    `json:"descriptor_exact"`
		DescriptorTriangle []float64    `json:"descriptor_triangle"`
		H0Pairs            [][2]float64 `json:"h0_pairs"`
		H1Exact            [][2]float64 `json:"h1_pairs_exact"`
		H1Triangle         [][2]float64 `json:"h1_pairs_triangle"`
	}
	raw, err := os.ReadFile("testdata/paper/client0.json") // client 0 of shared/golden/paper/healthcare/clients.json
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	rows := make([]string, len(ref.SubsampleIdx))
	for k, i := range ref.SubsampleIdx {
		rows[k] = strconv.Itoa(i)
	}
	for _, v := range []struct {
		variant string
		vector  []float64
		h1      [][2]float64
	}{
		{"exact", ref.DescriptorExact, ref.H1Exact},
		{"triangle", ref.DescriptorTriangle, ref.H1Triangle},
	} {
		code, out, errOut := runCmd("descriptor", "--variant", v.variant, "--rows", strings.Join(rows, ","), "../../testdata/paper/healthcare/client0_train.csv")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", v.variant, code, errOut)
		}
		var got struct {
			Descriptor []float64    `json:"descriptor"`
			H0         [][2]float64 `json:"h0"`
			H1         [][2]float64 `json:"h1"`
		}
		dec := json.NewDecoder(strings.NewReader(out))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("%s: output is not the documented JSON: %v\n%s", v.variant, err, out)
		}
		if len(got.Descriptor) != 48 {
			t.Fatalf("%s: %d descriptor numbers, want 48", v.variant, len(got.Descriptor))
		}
		for k := range got.Descriptor {
			g, w := got.Descriptor[k], v.vector[k]
			if math.Abs(g-w) > descriptorTol*math.Max(1, math.Abs(w)) {
				t.Errorf("%s: descriptor[%d] = %v, want %v", v.variant, k, g, w)
			}
		}
		if !slices.Equal(got.H0, ref.H0Pairs) {
			t.Errorf("%s: h0 differs from the reference h0_pairs", v.variant)
		}
		if !slices.Equal(got.H1, v.h1) {
			t.Errorf("%s: h1 differs from the reference", v.variant)
		}
	}
}

func TestDescriptorSubsample(t *testing.T) {
	// The same seed gives the same output; client0_train.csv has 130 rows,
	// so --n-sub 10 draws 10 of them and h0 has 9 pairs.
	code1, out1, err1 := runCmd("descriptor", "--n-sub", "10", "--seed", "7", "../../testdata/paper/healthcare/client0_train.csv")
	code2, out2, _ := runCmd("descriptor", "../../testdata/paper/healthcare/client0_train.csv", "--seed", "7", "--n-sub", "10")
	if code1 != 0 || code2 != 0 || out1 != out2 {
		t.Fatalf("exit %d/%d (%s); outputs equal: %v", code1, code2, err1, out1 == out2)
	}
	var got struct{ H0 [][2]float64 }
	if err := json.Unmarshal([]byte(out1), &got); err != nil || len(got.H0) != 9 {
		t.Errorf("h0 has %d pairs (err %v), want 9", len(got.H0), err)
	}
}

// TestBadInput checks every class of bad input: exit status 2, nothing on
// stdout and a message naming the file and, where it applies, the line and
// column (counted by hand in each file).
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	empty := write("empty.csv", "")
	ragged := write("ragged.csv", "1,2\n3,4\n5\n")
	word := write("word.csv", "a,b\n1,2\n3,x4\n")
	nan := write("nan.csv", "1,2\n3,NaN\n")
	inf := write("inf.csv", "1,2\n3,4\n-Inf,0\n")
	header := write("header.csv", "x0,x1,y\n")
	missing := filepath.Join(dir, "missing.csv")
	good := "../../testdata/ph/square_d2_n4.csv"
	badDiag := write("bad.diag", "0 0.0 1.0\n0 0.0 oops\n")
	emptyDiag := write("empty.diag", "# only a comment\n")
	diag := "../../testdata/ph/square_d2_n4.diag"
	for i, test := range []struct {
		args []string
		want string // a regular expression the stderr message must match
	}{
		{[]string{"diagram", missing}, regexp.QuoteMeta(missing) + `: cannot open`},                        // 0
		{[]string{"diagram", empty}, regexp.QuoteMeta(empty) + `:1:1: empty file`},                         // 1
		{[]string{"diagram", header}, regexp.QuoteMeta(header) + `:2:1: no data rows`},                     // 2
		{[]string{"diagram", ragged}, regexp.QuoteMeta(ragged) + `:3:2: row has 1 cells`},                  // 3
		{[]string{"diagram", word}, regexp.QuoteMeta(word) + `:3:3: cell 2 \(column "b"\): not a number`},  // 4
		{[]string{"diagram", nan}, regexp.QuoteMeta(nan) + `:2:3: cell 2: NaN, want a finite number`},      // 5
		{[]string{"diagram", inf}, regexp.QuoteMeta(inf) + `:3:1: cell 1: infinite, want a finite number`}, // 6
		{[]string{"descriptor", ragged}, regexp.QuoteMeta(ragged) + `:3:2: `},                              // 7
		{[]string{"descriptor", word}, regexp.QuoteMeta(word) + `:3:3: `},                                  // 8
		{[]string{"descriptor", nan}, regexp.QuoteMeta(nan) + `:2:3: `},                                    // 9
		{[]string{"descriptor", empty}, regexp.QuoteMeta(empty) + `:1:1: `},                                // 10
		{[]string{"distance", badDiag, diag}, regexp.QuoteMeta(badDiag) + `:2:7: death "oops"`},            // 11
		{[]string{"distance", diag, emptyDiag}, regexp.QuoteMeta(emptyDiag) + `:1:1: empty diagram`},       // 12
		{[]string{"distance", diag, missing}, regexp.QuoteMeta(missing) + `: cannot open`},                 // 13
		// Bad flags and arguments.
		{[]string{"diagram", "--dim", "2", good}, `--dim 2: want 0 or 1`},                        // 14
		{[]string{"diagram", "--dim", "x", good}, `bad flags`},                                   // 15
		{[]string{"diagram"}, `want one FILE.csv`},                                               // 16
		{[]string{"diagram", good, good}, `want one FILE.csv`},                                   // 17
		{[]string{"distance", "--p", "0.5", diag, diag}, `--p "0.5": want a number ≥ 1 or inf`},  // 18
		{[]string{"distance", "--p", "nan", diag, diag}, `--p "nan"`},                            // 19
		{[]string{"distance", diag}, `want two diagram files`},                                   // 20
		{[]string{"descriptor", "--rows", "1,2", "--seed", "3", good}, `--rows excludes`},        // 21
		{[]string{"descriptor", "--rows", "1,x", good}, `--rows: entry 2 "x" is not an integer`}, // 22
		{[]string{"descriptor", "--rows", "0,4", good}, `row 4 is out of range: the file has 4`}, // 23
		{[]string{"descriptor", "--rows", "1,1", good}, `row 1 already given`},                   // 24
		{[]string{"descriptor", "--rows", "", good}, `--rows: empty list`},                       // 25
		{[]string{"descriptor", "--variant", "fast", good}, `--variant "fast"`},                  // 26
		{[]string{"descriptor", "--n-sub", "0", good}, `--n-sub 0: want at least 1`},             // 27
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},                                 // 28
		{nil, `usage:`}, // 29
	} {
		code, out, errOut := runCmd(test.args...)
		if code != 2 {
			t.Errorf("case %d: exit %d, want 2 (stderr %q)", i, code, errOut)
		}
		if out != "" {
			t.Errorf("case %d: wrote %q to stdout", i, out)
		}
		if !regexp.MustCompile(test.want).MatchString(errOut) {
			t.Errorf("case %d: stderr %q does not match %q", i, errOut, test.want)
		}
	}
}

func TestHelp(t *testing.T) {
	code, out, errOut := runCmd("diagram", "-h")
	if code != 0 || out != "" || !strings.Contains(errOut, "usage: tda diagram") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// dataLines drops the comment lines of a diagram file.
func dataLines(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			b.WriteString(l)
		}
	}
	return b.String()
}

// firstDifference describes the first line where got and want differ.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return "line " + strconv.Itoa(i+1) + ": got " + strconv.Quote(gl) + ", want " + strconv.Quote(wl)
		}
	}
	return "no difference"
}
