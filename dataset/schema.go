package dataset

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// FeatureColumns returns the feature column names of a site file (CSV or
// parquet) in order, without the label column, reading only its header
// (a CSV file's first line, a parquet file's schema). ok is false when the
// file names no columns (a CSV file whose first line is data) or none of
// them is label: then which columns are features is the site worker's
// business (its --label), not something the file says.
func FeatureColumns(path, label string) (features []string, ok bool, err error) {
	if label == "" {
		label = DefaultLabelColumn
	}
	var names []string
	if strings.EqualFold(filepath.Ext(path), ".parquet") {
		if names, err = parquetColumns(path); err != nil {
			return nil, false, err
		}
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, false, err
		}
		defer f.Close()
		cr := csv.NewReader(f)
		cr.FieldsPerRecord = -1
		cr.TrimLeadingSpace = true
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("%s: %w", path, err)
		}
		rec[0] = strings.TrimPrefix(rec[0], "\ufeff")
		if !isHeader(rec, HeaderAuto) {
			return nil, false, nil
		}
		for _, c := range rec {
			names = append(names, strings.TrimSpace(c))
		}
	}
	hasLabel := false
	for _, n := range names {
		if n == label {
			hasLabel = true
			continue
		}
		features = append(features, n)
	}
	if !hasLabel {
		return nil, false, nil
	}
	return features, true, nil
}

// parquetColumns is the column names of a parquet file's schema.
func parquetColumns(path string) ([]string, error) {
	r, err := file.OpenParquetFile(path, false)
	if err != nil {
		return nil, fmt.Errorf("%s: not a readable parquet file: %w", path, err)
	}
	defer r.Close()
	sc, err := pqarrow.FromParquet(r.MetaData().Schema, nil, r.MetaData().KeyValueMetadata())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	names := make([]string, 0, sc.NumFields())
	for _, f := range sc.Fields() {
		names = append(names, f.Name)
	}
	return names, nil
}

// FederationColumns are the feature columns a federation's sites agree on.
type FederationColumns struct {
	// Features are the feature column names, in order, that most sites'
	// training files have (ties go to the list of the earliest site in
	// the federation's order); nil when no site's file names its columns.
	Features []string
	// Differ lists the sites whose training file does not show these
	// feature columns beside the label column, in the federation's order:
	// their workers will drop them, unless a worker reads another label
	// column (--label) and the rest are these features.
	Differ []string
}

// Columns reads the header of every site's training file (the originals,
// not the shift directories) and returns the feature columns most sites
// have. A majority rather than the first site's columns: one site with a
// wrong file must not make every other site wrong.
func (f *Federation) Columns(label string) (FederationColumns, error) {
	var lists [][]string
	var count []int
	of := make([]int, len(f.Sites)) // site → index in lists, or -1
	for i, site := range f.Sites {
		p, err := federationFile(f.Dir, site, TrainSplit)
		if err != nil {
			return FederationColumns{}, err
		}
		cols, ok, err := FeatureColumns(p, label)
		if err != nil {
			return FederationColumns{}, fmt.Errorf("site %s: %w", site, err)
		}
		of[i] = -1
		if !ok {
			continue
		}
		j := slices.IndexFunc(lists, func(l []string) bool { return slices.Equal(l, cols) })
		if j < 0 {
			j = len(lists)
			lists, count = append(lists, cols), append(count, 0)
		}
		count[j]++
		of[i] = j
	}
	var out FederationColumns
	best := -1
	for j := range lists {
		if best < 0 || count[j] > count[best] {
			best = j
		}
	}
	if best >= 0 {
		out.Features = lists[best]
	}
	for i, site := range f.Sites {
		if of[i] != best || best < 0 {
			out.Differ = append(out.Differ, site)
		}
	}
	if best < 0 {
		out.Differ = nil
	}
	return out, nil
}
