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
// number for parquet) and 0 when no line applies.
type SiteDataError struct {
	Site string
	File string
	Line int
	Msg  string
	Err  error
}

// Error returns "site S: file:line: message".
func (e *SiteDataError) Error() string {
	where := e.File
	if e.Line > 0 {
		where = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	return fmt.Sprintf("site %s: %s: %s", e.Site, where, e.Msg)
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
// single class, and a feature count that differs between the splits or
// from opt.NumFeatures.
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
	if err := singleClass(site, trainPath, train); err != nil {
		return nil, err
	}
	return &SiteData{Site: site, TrainFile: trainPath, TestFile: testPath, Train: train, Test: test}, nil
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
			return nil, &SiteDataError{Site: site, File: path, Line: pe.Line, Msg: pe.Msg, Err: err}
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
			return nil, &SiteDataError{Site: site, File: path, Line: t.Lines[i],
				Msg: fmt.Sprintf("label %q is %v, want 0 or 1", t.Label, y)}
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
		Msg: fmt.Sprintf("label %q is %v on every one of the %d rows (lines %d-%d); training needs both classes",
			t.Label, t.Y[0], len(t.Y), t.Lines[0], t.Lines[len(t.Lines)-1])}
}
