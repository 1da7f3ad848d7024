package dataset

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"strconv"
	"strings"
)

// HeaderMode says whether the first line of a CSV file is a header.
type HeaderMode int

const (
	// HeaderAuto treats the first line as a header iff none of its cells
	// parses as a number.
	HeaderAuto HeaderMode = iota
	// HeaderPresent always treats the first line as a header.
	HeaderPresent
	// HeaderAbsent treats the first line as data.
	HeaderAbsent
)

// DefaultLabelColumn is the name of the label column when
// CSVOptions.LabelColumn is empty.
const DefaultLabelColumn = "y"

// CSVOptions configures ReadCSV and Read. The zero value detects the header
// and splits off a column named "y".
type CSVOptions struct {
	// Header says whether the first line is a header; the default detects it.
	Header HeaderMode
	// LabelColumn names the header column holding the labels; empty means
	// DefaultLabelColumn. It is matched after trimming spaces, and only when
	// the file has a header.
	LabelColumn string
	// NoLabel keeps every column as a feature, even one named LabelColumn.
	NoLabel bool
}

// Table is a numeric matrix read from a CSV file.
type Table struct {
	// Columns holds the feature column names in file order, or nil if the
	// file has no header.
	Columns []string
	// X holds one row per data line and one finite value per feature column.
	X [][]float64
	// Label is the name of the label column, or "" if there is none.
	Label string
	// Y holds the label of each row, or nil if there is no label column.
	Y []float64
	// Lines holds the 1-based line number of each row of X in the file.
	Lines []int
}

// ParseError reports a problem with a CSV file. Line and Column are 1-based
// and 0 when they do not apply (for example when the file cannot be opened);
// Column counts bytes. Err is the underlying error, if any, for errors.Is.
//
// Msg says where in the row and what kind of problem it is ("cell 3
// (column "x3"): not a number"), never the cell's text: a site's errors
// travel to the workflow history and the round manifest, which must hold
// no raw data.
type ParseError struct {
	File         string
	Line, Column int
	Msg          string
	Err          error
}

// Error returns "file:line:column: message", leaving out the parts that are 0.
func (e *ParseError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, ":%d", e.Column)
		}
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns the underlying error.
func (e *ParseError) Unwrap() error { return e.Err }

// ReadCSV reads the numeric CSV file at path; see Read.
func ReadCSV(path string, opt CSVOptions) (*Table, error) {
	f, err := os.Open(path)
	if err != nil {
		reason := err
		var pathErr *fs.PathError
		if errors.As(err, &pathErr) {
			reason = pathErr.Err // the path is already in the message
		}
		return nil, &ParseError{File: path, Msg: fmt.Sprintf("cannot open: %v", reason), Err: err}
	}
	defer f.Close()
	return Read(f, path, opt)
}

// Read reads a numeric CSV matrix from r; name is the file name its errors
// report. Fields are separated by commas and may be quoted; blank lines are
// skipped and spaces around a cell are ignored. Every data row must have
// as many cells as the first line, and every cell must parse with
// strconv.ParseFloat to a finite number. Errors name the cell by its
// position and column name, never by its text (see ParseError). A label column (see CSVOptions) is
// split off into Table.Y and the remaining columns, of which there must be at
// least one, form Table.X. A file without data rows is an error.
//
// Every error is a *ParseError.
func Read(r io.Reader, name string, opt CSVOptions) (*Table, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1    // ragged rows are reported here, with a column
	cr.TrimLeadingSpace = true // so that `1, "2"` is a quoted field
	fail := func(line, col int, format string, args ...any) (*Table, error) {
		return nil, &ParseError{File: name, Line: line, Column: col, Msg: fmt.Sprintf(format, args...)}
	}

	var (
		t          = &Table{}
		width      = -1
		labelIndex = -1
		lastLine   = 0
	)
	for first := true; ; first = false {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, &ParseError{File: name, Line: pe.Line, Column: pe.Column, Msg: pe.Err.Error(), Err: err}
			}
			return nil, &ParseError{File: name, Line: lastLine + 1, Msg: fmt.Sprintf("read: %v", err), Err: err}
		}
		line, _ := cr.FieldPos(0)
		lastLine = line
		if first {
			rec[0] = strings.TrimPrefix(rec[0], "\ufeff") // a UTF-8 byte order mark
			width = len(rec)
			if isHeader(rec, opt.Header) {
				t.Columns = make([]string, 0, len(rec))
				label := opt.LabelColumn
				if label == "" {
					label = DefaultLabelColumn
				}
				for j, cell := range rec {
					cell = strings.TrimSpace(cell)
					if !opt.NoLabel && cell == label {
						if labelIndex >= 0 {
							_, col := cr.FieldPos(j)
							return fail(line, col, "label column %q appears twice", label)
						}
						labelIndex = j
						t.Label = label
						continue
					}
					t.Columns = append(t.Columns, cell)
				}
				if len(t.Columns) == 0 {
					return fail(line, 1, "no feature columns: the only column is the label column %q", label)
				}
				continue
			}
		}
		if len(rec) != width {
			l, col := cr.FieldPos(len(rec) - 1)
			col += len(rec[len(rec)-1])
			if len(rec) > width {
				l, col = cr.FieldPos(width)
			}
			return fail(l, col, "row has %d cells, want %d as on the first line", len(rec), width)
		}
		row := make([]float64, 0, width)
		for j, cell := range rec {
			l, col := cr.FieldPos(j)
			v, problem := parseCell(cell)
			if problem != "" {
				return fail(l, col, "%s: %s", t.cellName(j, labelIndex), problem)
			}
			if j == labelIndex {
				t.Y = append(t.Y, v)
				continue
			}
			row = append(row, v)
		}
		t.X = append(t.X, row)
		t.Lines = append(t.Lines, line)
	}
	if len(t.X) == 0 {
		if lastLine == 0 {
			return fail(1, 1, "empty file: no data rows")
		}
		return fail(lastLine+1, 1, "no data rows after the header")
	}
	return t, nil
}

// isHeader applies mode to the first record.
func isHeader(rec []string, mode HeaderMode) bool {
	switch mode {
	case HeaderPresent:
		return true
	case HeaderAbsent:
		return false
	}
	for _, cell := range rec {
		if _, err := strconv.ParseFloat(strings.TrimSpace(cell), 64); err == nil || errors.Is(err, strconv.ErrRange) {
			return false
		}
	}
	return true
}

// cellName names the j-th (0-based) cell of a row for an error message:
// "cell 3 (column \"x3\")" when the file has a header, else "cell 3".
// labelIndex is the label column's position in the row, or -1.
func (t *Table) cellName(j, labelIndex int) string {
	name := fmt.Sprintf("cell %d", j+1)
	switch {
	case t.Columns == nil:
	case j == labelIndex:
		name += fmt.Sprintf(" (label column %q)", t.Label)
	default:
		k := j
		if labelIndex >= 0 && j > labelIndex {
			k--
		}
		if k < len(t.Columns) {
			name += fmt.Sprintf(" (column %q)", t.Columns[k])
		}
	}
	return name
}

// parseCell parses one data cell as a finite float64. problem is "" on
// success, else the kind of problem ("not a number", "NaN, want a finite
// number", ...): it never quotes the cell, whose text is site data.
func parseCell(cell string) (v float64, problem string) {
	s := strings.TrimSpace(cell)
	if s == "" {
		return 0, "empty cell, want a number"
	}
	v, err := strconv.ParseFloat(s, 64)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return 0, "out of the float64 range"
	case err != nil:
		return 0, "not a number"
	case math.IsNaN(v):
		return 0, "NaN, want a finite number"
	case math.IsInf(v, 0):
		return 0, "infinite, want a finite number"
	}
	return v, ""
}
