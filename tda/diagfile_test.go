package tda

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFormatFloat(t *testing.T) {
	// Every want is the output of Python 3's repr() on the same float64
	// (python3 -c 'print(repr(x))').
	for i, test := range []struct {
		x    float64
		want string
	}{
		{0, "0.0"},                                    // 0
		{math.Copysign(0, -1), "-0.0"},                // 1
		{5, "5.0"},                                    // 2
		{math.Sqrt2, "1.4142135623730951"},            // 3
		{1e-4, "0.0001"},                              // 4: smallest decimal form
		{1e-5, "1e-05"},                               // 5: two-digit exponent
		{0.00012345, "0.00012345"},                    // 6
		{1e16, "1e+16"},                               // 7: first exponent form
		{9999999999999998, "9999999999999998.0"},      // 8: largest decimal form
		{1.5e16, "1.5e+16"},                           // 9
		{1e22, "1e+22"},                               // 10
		{123456789, "123456789.0"},                    // 11
		{5e-324, "5e-324"},                            // 12: smallest subnormal
		{math.MaxFloat64, "1.7976931348623157e+308"},  // 13
		{-2.5e-7, "-2.5e-07"},                         // 14
		{0.1, "0.1"},                                  // 15
		{100, "100.0"},                                // 16: trailing zeros filled in
		{1e15, "1000000000000000.0"},                  // 17
		{12345678901234567, "1.2345678901234568e+16"}, // 18
		{-1e100, "-1e+100"},                           // 19: three-digit exponent
		{math.Inf(1), "inf"},                          // 20
		{math.Inf(-1), "-inf"},                        // 21
		{math.NaN(), "nan"},                           // 22
		{3.2592963341289756, "3.2592963341289756"},    // 23: from blobs_d20_n80_s1.diag
	} {
		if got := FormatFloat(test.x); got != test.want {
			t.Errorf("case %d: FormatFloat(%v) = %q, want %q", i, test.x, got, test.want)
		}
	}
}

func TestReadDiagram(t *testing.T) {
	in := "# comment\n\n1 1.0 1.4142135623730951\n0 0.0 inf\n0\t0.0   1e-05\n  # indented comment\n0 0.0 1.0\r\n"
	got, err := ReadDiagram(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	// Hand-sorted from the lines above.
	want := Diagram{
		H0: []Pair{{0, 1e-5}, {0, 1}, {0, math.Inf(1)}},
		H1: []Pair{{1, math.Sqrt2}},
	}
	if !sameDiagram(got, want) {
		t.Errorf("ReadDiagram = %v, want %v", got, want)
	}
	var buf bytes.Buffer
	if err := WriteDiagram(&buf, got); err != nil {
		t.Fatal(err)
	}
	if w := "0 0.0 1e-05\n0 0.0 1.0\n0 0.0 inf\n1 1.0 1.4142135623730951\n"; buf.String() != w {
		t.Errorf("WriteDiagram wrote %q, want %q", buf.String(), w)
	}
}

func TestReadDiagramErrors(t *testing.T) {
	for i, test := range []struct {
		in         string
		line, col  int
		msgContain string
	}{
		{"0 0.0\n", 1, 1, "3 fields"},                        // 0
		{"# c\n0 0.0 1.0 2.0\n", 2, 1, "3 fields"},           // 1
		{"2 0.0 1.0\n", 1, 1, "dimension"},                   // 2
		{"0 x 1.0\n", 1, 3, "birth"},                         // 3
		{"0 inf inf\n", 1, 3, "birth"},                       // 4
		{"0 0.0 nan\n", 1, 7, "death"},                       // 5
		{"0  2.0  1.0\n", 1, 9, "less than birth"},           // 6
		{"0 0.0 1e400\n", 1, 7, "out of range"},              // 7
		{"0 0.0 1.0\n1 0.5 -inf\n", 2, 7, "less than birth"}, // 8
		{"-1 0 1\n", 1, 1, "dimension"},                      // 9
	} {
		_, err := ReadDiagram(strings.NewReader(test.in))
		var se *DiagramSyntaxError
		if !errors.As(err, &se) {
			t.Errorf("case %d: error %v, want a *DiagramSyntaxError", i, err)
			continue
		}
		if se.Line != test.line || se.Column != test.col || !strings.Contains(se.Msg, test.msgContain) {
			t.Errorf("case %d: error %q at %d:%d, want %q at %d:%d", i, se.Msg, se.Line, se.Column, test.msgContain, test.line, test.col)
		}
	}
}

// TestDiagramGoldenRoundTrip reads every golden diagram and checks that
// WriteDiagram reproduces its non-comment lines byte for byte.
func TestDiagramGoldenRoundTrip(t *testing.T) {
	files, err := filepath.Glob("testdata/diag_*.diag")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/diag_*.diag files")
	}
	for _, name := range files {
		raw, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		d, err := ReadDiagram(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var buf bytes.Buffer
		if err := WriteDiagram(&buf, d); err != nil {
			t.Fatal(err)
		}
		if want := dataLines(string(raw)); buf.String() != want {
			t.Errorf("%s: WriteDiagram output differs from the file's data lines", name)
		}
	}
}

func FuzzReadDiagram(f *testing.F) {
	f.Add([]byte("0 0.0 1.0\n0 0.0 inf\n1 1.0 1.4142135623730951\n"))
	f.Add([]byte("# c\n0 -0.0 0.0\n0 0.0 -0.0\n1 1e-05 2e+16\n"))
	f.Add([]byte("0 0x1p-3 1_0\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		d, err := ReadDiagram(bytes.NewReader(in))
		if err != nil {
			return
		}
		var first bytes.Buffer
		if err := WriteDiagram(&first, d); err != nil {
			t.Fatalf("WriteDiagram of a read diagram: %v", err)
		}
		d2, err := ReadDiagram(bytes.NewReader(first.Bytes()))
		if err != nil {
			t.Fatalf("ReadDiagram of %q: %v", first.String(), err)
		}
		if !sameDiagram(d, d2) {
			t.Fatalf("round trip changed %v into %v", d, d2)
		}
		var second bytes.Buffer
		if err := WriteDiagram(&second, d2); err != nil {
			t.Fatal(err)
		}
		if first.String() != second.String() {
			t.Fatalf("write∘read is not idempotent: %q then %q", first.String(), second.String())
		}
	})
}

// sameDiagram compares bit patterns, so −0 differs from +0.
func sameDiagram(a, b Diagram) bool {
	same := func(x, y []Pair) bool {
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if math.Float64bits(x[i].Birth) != math.Float64bits(y[i].Birth) ||
				math.Float64bits(x[i].Death) != math.Float64bits(y[i].Death) {
				return false
			}
		}
		return true
	}
	return same(a.H0, b.H0) && same(a.H1, b.H1)
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
