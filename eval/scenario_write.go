package eval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/ptopofl/ptopofl/tda"
)

// ManifestFile is the name of the manifest WriteFederation writes beside the
// site files.
const ManifestFile = "federation.json"

// FederationManifest is the content of federation.json: what was generated,
// from which seed, and the shape of every site.
type FederationManifest struct {
	Generator string         `json:"generator"`
	Seed      uint64         `json:"seed"`
	Features  int            `json:"features"`
	Sites     []SiteManifest `json:"sites"`
	// Shift lists the sites with post-shift files, if any.
	Shift []ShiftManifest `json:"shift,omitempty"`
}

// SiteManifest describes one site's files in a FederationManifest.
type SiteManifest struct {
	Name          string `json:"name"`
	NTrain        int    `json:"n_train"`
	NTest         int    `json:"n_test"`
	IsAdversarial bool   `json:"is_adversarial"`
	// Flipped is the number of rows, train and test together, whose label
	// the generator flipped.
	Flipped      int     `json:"flipped"`
	PositiveRate float64 `json:"positive_rate"`
}

// ShiftManifest names a site whose rows change after AfterRound, and the
// files holding its post-shift rows.
type ShiftManifest struct {
	Name       string `json:"name"`
	AfterRound int    `json:"after_round"`
	TrainFile  string `json:"train_file"`
	TestFile   string `json:"test_file"`
}

// Manifest returns the manifest describing f.
func (f Federation) Manifest() FederationManifest {
	m := FederationManifest{Generator: f.Generator, Seed: f.Seed, Features: f.Features}
	for _, s := range f.Sites {
		m.Sites = append(m.Sites, SiteManifest{
			Name:          s.Name,
			NTrain:        len(s.YTrain),
			NTest:         len(s.YTest),
			IsAdversarial: s.IsAdversarial,
			Flipped:       countDiffering(s.YTrain, s.CleanYTrain) + countDiffering(s.YTest, s.CleanYTest),
			PositiveRate:  s.PositiveRate,
		})
	}
	for _, s := range f.Shifted {
		m.Shift = append(m.Shift, ShiftManifest{
			Name:       s.Name,
			AfterRound: s.AfterRound,
			TrainFile:  s.Name + "_shifted_train.csv",
			TestFile:   s.Name + "_shifted_test.csv",
		})
	}
	return m
}

// countDiffering counts the positions where a and clean differ; a nil clean
// means no flips.
func countDiffering(a, clean []int) int {
	n := 0
	for i := range clean {
		if a[i] != clean[i] {
			n++
		}
	}
	return n
}

// WriteFederation writes f into dir (created if missing): for every site
// `<site>_train.csv` and `<site>_test.csv` in the golden data's format
// (EncodeSiteCSV), `<site>_shifted_train.csv`/`_test.csv` for shifted
// sites, and the manifest federation.json. The bytes depend only on f, so
// a generator seed always yields the same directory. Existing files of the
// same names are overwritten.
//
// This is the one file-writing entry point of the package, kept here so
// the generator and its on-disk format live together; the encoders it uses
// write to any io.Writer.
func WriteFederation(dir string, f Federation) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write federation: %w", err)
	}
	for _, s := range f.Sites {
		if err := writeSiteFile(dir, s.Name+"_train.csv", s.XTrain, s.YTrain); err != nil {
			return err
		}
		if err := writeSiteFile(dir, s.Name+"_test.csv", s.XTest, s.YTest); err != nil {
			return err
		}
	}
	for _, s := range f.Shifted {
		base := f.Sites[s.Site]
		if err := writeSiteFile(dir, s.Name+"_shifted_train.csv", s.XTrain, base.YTrain); err != nil {
			return err
		}
		if err := writeSiteFile(dir, s.Name+"_shifted_test.csv", s.XTest, base.YTest); err != nil {
			return err
		}
	}
	var buf bytes.Buffer
	if err := EncodeManifest(&buf, f.Manifest()); err != nil {
		return fmt.Errorf("write federation: %w", err)
	}
	path := filepath.Join(dir, ManifestFile)
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write federation: %w", err)
	}
	return nil
}

func writeSiteFile(dir, name string, X [][]float64, y []int) error {
	path := filepath.Join(dir, name)
	var buf bytes.Buffer
	if err := EncodeSiteCSV(&buf, X, y); err != nil {
		return fmt.Errorf("write federation: %s: %w", name, err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write federation: %w", err)
	}
	return nil
}

// EncodeManifest writes m as indented JSON followed by a newline.
func EncodeManifest(w io.Writer, m FederationManifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encode manifest: %w", err)
	}
	b = append(b, '\n')
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("encode manifest: %w", err)
	}
	return nil
}

// EncodeSiteCSV writes rows X with labels y as CSV with the header
// x0,…,x{d−1},y, every line ending in "\r\n" (RFC 4180, and what
// Python's csv module writes), features formatted as
// Python's repr formats a float (tda.FormatFloat, shortest round-trip
// digits) and labels as integers.
// This is the format of golden/paper/*/client{k}_*.csv. Rows must all have
// the same length, equal to the first row's, and len(X) must equal len(y).
func EncodeSiteCSV(w io.Writer, X [][]float64, y []int) error {
	if len(X) != len(y) {
		return fmt.Errorf("encode site csv: %d rows but %d labels", len(X), len(y))
	}
	d := 0
	if len(X) > 0 {
		d = len(X[0])
	}
	bw := bufio.NewWriter(w)
	for j := 0; j < d; j++ {
		bw.WriteString("x" + strconv.Itoa(j) + ",")
	}
	bw.WriteString("y\r\n")
	line := make([]byte, 0, 32*(d+1))
	for i, row := range X {
		if len(row) != d {
			return fmt.Errorf("encode site csv: row %d has %d features, want %d", i, len(row), d)
		}
		line = line[:0]
		for _, v := range row {
			line = append(line, tda.FormatFloat(v)...)
			line = append(line, ',')
		}
		line = strconv.AppendInt(line, int64(y[i]), 10)
		line = append(line, '\r', '\n')
		bw.Write(line)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("encode site csv: %w", err)
	}
	return nil
}
