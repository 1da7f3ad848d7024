package dataset

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

func writeParquet(t *testing.T, path string, cols []string, rows [][]float64) {
	t.Helper()
	fields := make([]arrow.Field, len(cols))
	for j, c := range cols {
		fields[j] = arrow.Field{Name: c, Type: arrow.PrimitiveTypes.Float64}
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
	defer b.Release()
	for _, r := range rows {
		for j, v := range r {
			b.Field(j).(*array.Float64Builder).Append(v)
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(rec.Schema(), f, nil, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestLoadSiteParquetMatchesCSV: a per-site directory of parquet files
// (label column "target", not first) loads to the same matrices as the
// same data in a federation directory of CSV files.
func TestLoadSiteParquetMatchesCSV(t *testing.T) {
	train := [][]float64{{1, 0.1, 2.5}, {0, -0.3, 1e-9}, {1, 7, -2}}
	test := [][]float64{{0, 1, 2}, {1, 3, 4}}
	pq := t.TempDir()
	writeParquet(t, filepath.Join(pq, "train.parquet"), []string{"target", "a", "b"}, train)
	writeParquet(t, filepath.Join(pq, "test.parquet"), []string{"target", "a", "b"}, test)
	csvDir := t.TempDir()
	csv := func(rows [][]float64) string {
		var sb strings.Builder
		sb.WriteString("target,a,b\n")
		for _, r := range rows {
			for j, v := range r {
				if j > 0 {
					sb.WriteByte(',')
				}
				sb.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
			}
			sb.WriteByte('\n')
		}
		return sb.String()
	}
	for name, rows := range map[string][][]float64{"s1_train.csv": train, "s1_test.csv": test} {
		if err := os.WriteFile(filepath.Join(csvDir, name), []byte(csv(rows)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opt := SiteOptions{LabelColumn: "target", NumFeatures: 2}
	a, err := LoadSite(pq, "s1", opt)
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadSite(csvDir, "s1", opt)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a.Train.X, b.Train.X) || !reflect.DeepEqual(a.Train.Y, b.Train.Y) ||
		!reflect.DeepEqual(a.Test.X, b.Test.X) || !reflect.DeepEqual(a.Test.Y, b.Test.Y) {
		t.Errorf("parquet %v %v, csv %v %v", a.Train.X, a.Train.Y, b.Train.X, b.Train.Y)
	}
	if _, err := LoadSite(pq, "s1", SiteOptions{LabelColumn: "target", NumFeatures: 3}); err == nil ||
		!strings.Contains(err.Error(), "site s1: "+filepath.Join(pq, "train.parquet")+":1: 2 feature columns, want 3") {
		t.Errorf("expected-count error: %v", err)
	}
	if _, err := LoadSite(t.TempDir(), "s1", SiteOptions{}); err == nil || !strings.Contains(err.Error(), "no train split") {
		t.Errorf("missing files: %v", err)
	}
}
