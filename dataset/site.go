package dataset

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// SiteOptions configures LoadSite. The zero value expects a label column
// named DefaultLabelColumn and takes the feature count from the training
// file.
type SiteOptions struct {
	// LabelColumn names the label column; empty means DefaultLabelColumn.
	LabelColumn string
	// NumFeatures, if positive, is the feature count both splits must have.
	NumFeatures int
	// Header says whether the first line of a CSV file is a header. Label
	// columns are found by name, so a CSV file needs one; the default
	// detects it.
	Header HeaderMode
}

// SiteData is one site's training and test split, validated.
type SiteData struct {
	Site      string
	TrainFile string // the paths the splits were read from
	TestFile  string
	Train     *Table
	Test      *Table
}

// NumFeatures is the number of feature columns of both splits.
func (d *SiteData) NumFeatures() int { return len(d.Train.X[0]) }

// SiteDataError is a problem with a site's data that only a person can fix.
// Line is 1-based (a row number counting the header for CSV, a 1-based row
// number for parquet) and 0 when no line applies; Column is the 1-based
// byte column of a CSV cell, 0 when none applies. Msg names the cell or
// column and the kind of problem, never a cell's value: the error reaches
// the workflow history and the round manifest.
type SiteDataError struct {
	Site   string
	File   string
	Line   int
	Column int
	Msg    string
	Err    error
}

// Error returns "site S: file:line:column: message", leaving out the
// parts that are 0.
func (e *SiteDataError) Error() string {
	return fmt.Sprintf("site %s: %s: %s", e.Site, Position(e.File, e.Line, e.Column), e.Msg)
}

// Position is "file:line:column", leaving out a line or column that is 0
// (and the column when the line is).
func Position(file string, line, column int) string {
	switch {
	case line <= 0:
		return file
	case column <= 0:
		return fmt.Sprintf("%s:%d", file, line)
	}
	return fmt.Sprintf("%s:%d:%d", file, line, column)
}

// Unwrap returns the underlying error.
func (e *SiteDataError) Unwrap() error { return e.Err }

// Split names.
const (
	TrainSplit = "train"
	TestSplit  = "test"
)

// SiteFile returns the file holding one split of a site's data. dir is
// either a federation directory, holding "<site>_<split>.csv" or
// "<site>_<split>.parquet" for many sites, or the site's own directory,
// holding "<split>.csv" or "<split>.parquet". The federation names are
// tried first; CSV before parquet. A missing file is a *SiteDataError that
// lists the names tried.
func SiteFile(dir, site, split string) (string, error) {
	var tried []string
	for _, base := range []string{site + "_" + split, split} {
		for _, ext := range []string{".csv", ".parquet"} {
			p := filepath.Join(dir, base+ext)
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				return p, nil
			}
			tried = append(tried, base+ext)
		}
	}
	return "", &SiteDataError{Site: site, File: dir,
		Msg: fmt.Sprintf("no %s split: none of %s exists", split, strings.Join(tried, ", "))}
}

// LoadSite reads and validates a site's training and test splits from dir
// (see SiteFile for the names). Every error a user can cause is a
// *SiteDataError naming the site, the file and, where one applies, the
// line: a missing or empty file, a cell that is not a finite number, a
// missing label column, a label other than 0 or 1, a training split with a
// single class, and a feature count or feature column names (in order)
// that differ between the splits, or a count that differs from
// opt.NumFeatures.
func LoadSite(dir, site string, opt SiteOptions) (*SiteData, error) {
	trainPath, err := SiteFile(dir, site, TrainSplit)
	if err != nil {
		return nil, err
	}
	testPath, err := SiteFile(dir, site, TestSplit)
	if err != nil {
		return nil, err
	}
	train, err := readSplit(site, trainPath, opt)
	if err != nil {
		return nil, err
	}
	test, err := readSplit(site, testPath, opt)
	if err != nil {
		return nil, err
	}
	want := opt.NumFeatures
	if want <= 0 {
		want = len(train.X[0])
	} else if got := len(train.X[0]); got != want {
		return nil, &SiteDataError{Site: site, File: trainPath, Line: train.Lines[0],
			Msg: fmt.Sprintf("%d feature columns, want %d", got, want)}
	}
	if got := len(test.X[0]); got != want {
		return nil, &SiteDataError{Site: site, File: testPath, Line: test.Lines[0],
			Msg: fmt.Sprintf("%d feature columns, the training split %s has %d", got, filepath.Base(trainPath), want)}
	}
	// Equal counts of differently named or ordered columns would train
	// on one meaning of a column and test on another.
	if train.Columns != nil && test.Columns != nil {
		if j := firstDifference(test.Columns, train.Columns); j >= 0 {
			return nil, &SiteDataError{Site: site, File: testPath, Line: headerLine(testPath),
				Msg: fmt.Sprintf("feature column %d is not named %q as in the training split %s (the splits must have the same feature columns in the same order)",
					j+1, train.Columns[j], filepath.Base(trainPath))}
		}
	}
	if err := singleClass(site, trainPath, train); err != nil {
		return nil, err
	}
	return &SiteData{Site: site, TrainFile: trainPath, TestFile: testPath, Train: train, Test: test}, nil
}

// firstDifference is the first index at which got differs from want, or
// -1 when they are equal (callers compare slices of equal length).
func firstDifference(got, want []string) int {
	for j := range want {
		if j >= len(got) || got[j] != want[j] {
			return j
		}
	}
	return -1
}

// headerLine is the line of a file's column names for an error about
// them: 1 for a CSV file, 0 (none) for parquet, whose names live in its
// schema.
func headerLine(path string) int {
	if strings.EqualFold(filepath.Ext(path), ".parquet") {
		return 0
	}
	return 1
}

// CheckColumns reports, as a *SiteDataError about the training file, a
// site whose feature columns are not the campaign's: a different number of
// them, or a column at some position with another name (order matters: the
// model's weights are per position). want is the campaign's feature
// columns in order, without the label. The message names the position and
// the expected name, never the site's own text. A site whose files have no
// header (no column names) is checked by count only.
func (d *SiteData) CheckColumns(want []string) error {
	got := d.Train.Columns
	if n := d.NumFeatures(); n != len(want) {
		return &SiteDataError{Site: d.Site, File: d.TrainFile, Line: headerLine(d.TrainFile),
			Msg: fmt.Sprintf("%d feature columns, the campaign's schema has %d (%s)", n, len(want), strings.Join(want, ","))}
	}
	if got == nil {
		return nil
	}
	if j := firstDifference(got, want); j >= 0 {
		return &SiteDataError{Site: d.Site, File: d.TrainFile, Line: headerLine(d.TrainFile),
			Msg: fmt.Sprintf("feature column %d is not named %q as in the campaign's schema (%s); the columns must be the same, in the same order",
				j+1, want[j], strings.Join(want, ","))}
	}
	return nil
}

// readSplit reads one file and checks what holds for either split: a label
// column exists and holds only 0 and 1.
func readSplit(site, path string, opt SiteOptions) (*Table, error) {
	label := opt.LabelColumn
	if label == "" {
		label = DefaultLabelColumn
	}
	var (
		t   *Table
		err error
	)
	if strings.EqualFold(filepath.Ext(path), ".parquet") {
		t, err = readParquetTable(path, label)
	} else {
		t, err = ReadCSV(path, CSVOptions{Header: opt.Header, LabelColumn: label})
	}
	if err != nil {
		var pe *ParseError
		if errors.As(err, &pe) {
			return nil, &SiteDataError{Site: site, File: path, Line: pe.Line, Column: pe.Column, Msg: pe.Msg, Err: err}
		}
		return nil, &SiteDataError{Site: site, File: path, Msg: err.Error(), Err: err}
	}
	if t.Y == nil {
		msg := fmt.Sprintf("no label column %q", label)
		if t.Columns == nil {
			msg += " (the file has no header line naming its columns)"
		} else {
			msg += fmt.Sprintf(" among the columns %s", strings.Join(t.Columns, ","))
		}
		return nil, &SiteDataError{Site: site, File: path, Line: 1, Msg: msg}
	}
	for i, y := range t.Y {
		if y != 0 && y != 1 {
			// The value itself is site data: the message names the
			// column and the rule, not what the cell holds.
			return nil, &SiteDataError{Site: site, File: path, Line: t.Lines[i],
				Msg: fmt.Sprintf("label column %q: not 0 or 1 (labels must be 0 or 1)", t.Label)}
		}
	}
	return t, nil
}

// singleClass rejects a training split whose labels are all equal: no
// classifier can be fitted to it. The line is the first data row's.
func singleClass(site, path string, t *Table) error {
	for _, y := range t.Y[1:] {
		if y != t.Y[0] {
			return nil
		}
	}
	return &SiteDataError{Site: site, File: path, Line: t.Lines[0],
		Msg: fmt.Sprintf("label column %q holds a single class on every one of the %d rows (lines %d-%d); training needs both classes",
			t.Label, len(t.Y), t.Lines[0], t.Lines[len(t.Lines)-1])}
}

// ReadSplit reads and validates one split file of site (CSV, or parquet by
// its extension) as LoadSite reads each of the two: a site's own training
// program (model "external") gets the paths of both and may read them the
// same way.
func ReadSplit(site, path string, opt SiteOptions) (*Table, error) {
	return readSplit(site, path, opt)
}
