package dataset

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/ptopofl/ptopofl/eval"
	"github.com/ptopofl/ptopofl/tda"
)

// ManifestFile is the name of the manifest WriteFederation writes beside the
// site files, and whose site order DiscoverFederation follows.
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
// files holding its post-shift rows, relative to the federation directory
// with "/" separators ("from-round-0006/site3_train.csv", see ShiftDir).
type ShiftManifest struct {
	Name       string `json:"name"`
	AfterRound int    `json:"after_round"`
	TrainFile  string `json:"train_file"`
	TestFile   string `json:"test_file"`
}

// NewManifest returns the manifest WriteFederation writes for f.
func NewManifest(f eval.Federation) FederationManifest {
	m := FederationManifest{Generator: f.Generator, Seed: f.Seed, Features: f.Features}
	for _, s := range f.Sites {
		m.Sites = append(m.Sites, SiteManifest{
			Name:          s.Name,
			NTrain:        len(s.YTrain),
			NTest:         len(s.YTest),
			IsAdversarial: s.IsAdversarial,
			Flipped:       s.Flipped(),
			PositiveRate:  s.PositiveRate,
		})
	}
	for _, s := range f.Shifted {
		m.Shift = append(m.Shift, ShiftManifest{
			Name:       s.Name,
			AfterRound: s.AfterRound,
			TrainFile:  shiftFile(s.AfterRound, s.Name, TrainSplit),
			TestFile:   shiftFile(s.AfterRound, s.Name, TestSplit),
		})
	}
	return m
}

// shiftFile is the path, relative to the federation directory, of a
// shifted site's split: the data replace the originals from the round after
// the last one that sees them.
func shiftFile(afterRound int, site, split string) string {
	return fmt.Sprintf("%s%04d/%s_%s.csv", ShiftDirPrefix, afterRound+1, site, split)
}

// WriteFederation writes the generated federation f into dir (created if
// missing) in the layout the site workers read: for every site
// "<site>_train.csv" and "<site>_test.csv" in the golden data's format
// (EncodeSiteCSV); for a site hit by a continual shift, its post-shift rows
// (with the site's labels) as "from-round-NNNN/<site>_train.csv" and
// "_test.csv", NNNN the first round that sees them (ShiftDir); and the
// manifest federation.json. The bytes depend only on f, so a generator seed
// always yields the same directory. Existing files of the same names are
// overwritten.
func WriteFederation(dir string, f eval.Federation) error {
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
		if s.Site < 0 || s.Site >= len(f.Sites) {
			return fmt.Errorf("write federation: shifted site %s: index %d, want one of the %d sites", s.Name, s.Site, len(f.Sites))
		}
		base := f.Sites[s.Site]
		if err := os.MkdirAll(ShiftDir(dir, s.AfterRound+1), 0o755); err != nil {
			return fmt.Errorf("write federation: %w", err)
		}
		if err := writeSiteFile(dir, shiftFile(s.AfterRound, s.Name, TrainSplit), s.XTrain, base.YTrain); err != nil {
			return err
		}
		if err := writeSiteFile(dir, shiftFile(s.AfterRound, s.Name, TestSplit), s.XTest, base.YTest); err != nil {
			return err
		}
	}
	var buf bytes.Buffer
	if err := EncodeManifest(&buf, NewManifest(f)); err != nil {
		return fmt.Errorf("write federation: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write federation: %w", err)
	}
	return nil
}

// writeSiteFile writes one split; name is relative to dir, "/"-separated.
func writeSiteFile(dir, name string, X [][]float64, y []int) error {
	var buf bytes.Buffer
	if err := EncodeSiteCSV(&buf, X, y); err != nil {
		return fmt.Errorf("write federation: %s: %w", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(name)), buf.Bytes(), 0o644); err != nil {
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

// EncodePointsCSV writes a point cloud as CSV without a header, one point
// per line ending in "\n", coordinates separated by "," and formatted as
// Python's repr formats a float (tda.FormatFloat): the format of
// testdata/ph's clouds, which ReadCSV, `tda diagram` and Ripser's
// point-cloud reader all take. Points must all have the first point's
// length.
func EncodePointsCSV(w io.Writer, pts [][]float64) error {
	bw := bufio.NewWriter(w)
	var line []byte
	for i, p := range pts {
		if len(p) != len(pts[0]) {
			return fmt.Errorf("encode points csv: point %d has %d coordinates, want %d", i, len(p), len(pts[0]))
		}
		line = line[:0]
		for j, v := range p {
			if j > 0 {
				line = append(line, ',')
			}
			line = append(line, tda.FormatFloat(v)...)
		}
		line = append(line, '\n')
		bw.Write(line)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("encode points csv: %w", err)
	}
	return nil
}
