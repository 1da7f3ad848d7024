package dataset

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	// Every expected table is read off the input by hand.
	for i, test := range []struct {
		in   string
		opt  CSVOptions
		want Table
	}{
		{ // 0: no header (a cell parses), no labels.
			in:   "1,2\n3,4\n",
			want: Table{X: [][]float64{{1, 2}, {3, 4}}, Lines: []int{1, 2}},
		},
		{ // 1: header detected, y split off wherever it stands.
			in: "a,y,b\n1,0,2\n3,1,4\n",
			want: Table{Columns: []string{"a", "b"}, X: [][]float64{{1, 2}, {3, 4}},
				Label: "y", Y: []float64{0, 1}, Lines: []int{2, 3}},
		},
		{ // 2: one numeric cell in the first line makes it data.
			in:   "1,2\n",
			opt:  CSVOptions{Header: HeaderAuto},
			want: Table{X: [][]float64{{1, 2}}, Lines: []int{1}},
		},
		{ // 3: forced header on a numeric first line; its cells become names.
			in:   "1,2\n3,4\n",
			opt:  CSVOptions{Header: HeaderPresent},
			want: Table{Columns: []string{"1", "2"}, X: [][]float64{{3, 4}}, Lines: []int{2}},
		},
		{ // 4: custom label column, spaces, blank lines, exponent and a quoted cell.
			in:  "f1, label \n\n 1e-05 , \"7\"\n-2.5,8\n",
			opt: CSVOptions{LabelColumn: "label"},
			want: Table{Columns: []string{"f1"}, X: [][]float64{{1e-5}, {-2.5}},
				Label: "label", Y: []float64{7, 8}, Lines: []int{3, 4}},
		},
		{ // 5: NoLabel keeps y as a feature.
			in:   "x,y\n1,2\n",
			opt:  CSVOptions{NoLabel: true},
			want: Table{Columns: []string{"x", "y"}, X: [][]float64{{1, 2}}, Lines: []int{2}},
		},
		{ // 6: a byte order mark does not hide a numeric first cell, and CRLF ends lines.
			in:   "\ufeff0.5,1\r\n2,3\r\n",
			want: Table{X: [][]float64{{0.5, 1}, {2, 3}}, Lines: []int{1, 2}},
		},
	} {
		got, err := Read(strings.NewReader(test.in), "t.csv", test.opt)
		if err != nil {
			t.Errorf("case %d: %v", i, err)
			continue
		}
		if !reflect.DeepEqual(*got, test.want) {
			t.Errorf("case %d: got %+v, want %+v", i, *got, test.want)
		}
	}
}

func TestReadErrors(t *testing.T) {
	// Lines and columns are counted by hand in each input (1-based bytes).
	for i, test := range []struct {
		in        string
		opt       CSVOptions
		line, col int
		msg       string
	}{
		{"", CSVOptions{}, 1, 1, "empty file"},                                 // 0
		{"a,b\n", CSVOptions{}, 2, 1, "no data rows"},                          // 1
		{"1,2\n3\n", CSVOptions{}, 2, 2, "row has 1 cells, want 2"},            // 2: too few
		{"1,2\n3,4,5\n", CSVOptions{}, 2, 5, "row has 3 cells, want 2"},        // 3: too many
		{"1,2\n3,abc\n", CSVOptions{}, 2, 3, "cell 2: not a number"},           // 4
		{"a,b\n1,NaN\n", CSVOptions{}, 2, 3, "NaN"},                            // 5
		{"a,b\n-inf,1\n", CSVOptions{}, 2, 1, "infinite"},                      // 6
		{"1,1e999\n", CSVOptions{}, 1, 3, "out of the float64 range"},          // 7
		{"1,,2\n", CSVOptions{}, 1, 3, "empty cell"},                           // 8
		{"a,\"b\n1,2\n", CSVOptions{}, 1, 1, "quote"},                          // 9: csv syntax; line and column from encoding/csv
		{"y\n1\n", CSVOptions{}, 1, 1, "no feature columns"},                   // 10
		{"y,a,y\n1,2,3\n", CSVOptions{}, 1, 5, "appears twice"},                // 11
		{"nan,1\n", CSVOptions{}, 1, 1, "NaN"},                                 // 12: nan parses, so this line is data
		{"x,y\n1,2\n", CSVOptions{Header: HeaderAbsent}, 1, 1, "not a number"}, // 13
	} {
		_, err := Read(strings.NewReader(test.in), "bad.csv", test.opt)
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("case %d: error %v, want a *ParseError", i, err)
			continue
		}
		if pe.File != "bad.csv" || (i != 9 && (pe.Line != test.line || pe.Column != test.col)) || !strings.Contains(pe.Msg, test.msg) {
			t.Errorf("case %d: got %q (line %d column %d), want %q at %d:%d", i, pe.Error(), pe.Line, pe.Column, test.msg, test.line, test.col)
		}
		if i != 9 {
			if want := fmt.Sprintf("bad.csv:%d:%d: ", test.line, test.col); !strings.HasPrefix(pe.Error(), want) {
				t.Errorf("case %d: message %q does not start with %q", i, pe.Error(), want)
			}
		}
	}
}

func TestReadCSVFiles(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.csv")
	_, err := ReadCSV(missing, CSVOptions{})
	var pe *ParseError
	if !errors.As(err, &pe) || pe.File != missing || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: error %v, want a *ParseError wrapping fs.ErrNotExist", err)
	}

	path := filepath.Join(dir, "ok.csv")
	if err := os.WriteFile(path, []byte("a,b,y\n1,2,0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tab, err := ReadCSV(path, CSVOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tab.X, [][]float64{{1, 2}}) || !reflect.DeepEqual(tab.Y, []float64{0}) {
		t.Errorf("ReadCSV = %+v", tab)
	}

	empty := filepath.Join(dir, "empty.csv")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadCSV(empty, CSVOptions{}); err == nil || !strings.HasPrefix(err.Error(), empty+":1:1: ") {
		t.Errorf("empty file: error %v", err)
	}
}

func FuzzReadCSV(f *testing.F) {
	f.Add("a,b,y\n1,2,0\n3,4,1\n", uint8(0))
	f.Add("1,2\n3\n", uint8(0))
	f.Add("\"1\",\" 2 \"\r\n\n3,4", uint8(2))
	f.Add("y\n1\n", uint8(1))
	f.Fuzz(func(t *testing.T, in string, mode uint8) {
		tab, err := Read(strings.NewReader(in), "f.csv", CSVOptions{Header: HeaderMode(mode % 3)})
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *ParseError", err)
			}
			return
		}
		if len(tab.X) == 0 || len(tab.X[0]) == 0 {
			t.Fatalf("success with an empty matrix: %+v", tab)
		}
		if tab.Columns != nil && len(tab.Columns) != len(tab.X[0]) {
			t.Fatalf("%d column names for %d features", len(tab.Columns), len(tab.X[0]))
		}
		if tab.Y != nil && len(tab.Y) != len(tab.X) {
			t.Fatalf("%d labels for %d rows", len(tab.Y), len(tab.X))
		}
		for _, row := range tab.X {
			if len(row) != len(tab.X[0]) {
				t.Fatalf("ragged result %v", tab.X)
			}
			for _, v := range row {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("non-finite value %v", v)
				}
			}
		}
	})
}

func ExampleRead() {
	in := "x1,x2,y\n0.5,1.5,0\n2,3,1\n"
	tab, err := Read(strings.NewReader(in), "site.csv", CSVOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(tab.Columns, tab.X, tab.Label, tab.Y)

	_, err = Read(strings.NewReader("x1,x2\n1,oops\n"), "site.csv", CSVOptions{})
	fmt.Println(err)
	// Output:
	// [x1 x2] [[0.5 1.5] [2 3]] y [0 1]
	// site.csv:2:3: cell 2 (column "x2"): not a number
}
