package dataset

import (
	"errors"
	"math"
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

// TestSiteErrorsNameNoCellValue: every kind of bad cell is reported with
// its site, file, line (and for CSV its column) and the kind of problem,
// and the message never holds the cell's text. Each bad cell holds a
// marker found nowhere else in the file (the case-mixed NaN and infinity
// spellings are markers too: strconv.ParseFloat accepts any case), and the
// expected positions are counted by hand in each input.
func TestSiteErrorsNameNoCellValue(t *testing.T) {
	const good = "a,b,y\n1,2,0\n3,4,1\n"
	for i, test := range []struct {
		train  string
		marker string
		where  string // ":line:column" after the file name
		kind   string
	}{
		{"a,b,y\n1,2,0\n3,97.31x,1\n", "97.31x", ":3:3", `cell 2 (column "b"): not a number`},               // 0
		{"a,b,y\n1,2,0\n3,nAn,1\n", "nAn", ":3:3", `cell 2 (column "b"): NaN`},                              // 1
		{"a,b,y\n1,2,0\n-InFiNiTy,4,1\n", "InFiNiTy", ":3:1", `cell 1 (column "a"): infinite`},              // 2
		{"a,b,y\n1,2,0\n3,8.125e99999,1\n", "8.125e99999", ":3:3", "out of the float64 range"},              // 3
		{"a,b,y\n1,2,0\n3,,1\n", "", ":3:3", "empty cell"},                                                  // 4
		{"a,b,y\n1,2,0\n3,4,0.4375\n", "0.4375", ":3", `label column "y": not 0 or 1`},                      // 5
		{"a,b,y\n1,2,0\n3,4,1,66.5\n", "66.5", ":3:7", "row has 4 cells, want 3"},                           // 6
		{"a,b,y\n5.5,2,1\n3,4,1\n", "5.5", ":2", `label column "y" holds a single class`},                   // 7
		{"a,b,y\n1,2,0\n3,4\n", "", ":3:4", "row has 2 cells, want 3"},                                      // 8
		{"a,b,y\n1,2,0\n3,\"77.53125\"x,1\n", "77.53125", ":3:", `extraneous or missing " in quoted-field`}, // 9: encoding/csv's own words
		{"a,b,y\n1,2,0\n3,NaN,1\n", "", ":3:3", `cell 2 (column "b"): NaN, want a finite number`},           // 10
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "s1_train.csv"), []byte(test.train), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "s1_test.csv"), []byte(good), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadSite(dir, "s1", SiteOptions{})
		var de *SiteDataError
		if !errors.As(err, &de) {
			t.Errorf("case %d: error %v, want a *SiteDataError", i, err)
			continue
		}
		msg := err.Error()
		if want := "site s1: " + filepath.Join(dir, "s1_train.csv") + test.where; !strings.HasPrefix(msg, want) {
			t.Errorf("case %d: %q does not start with %q", i, msg, want)
		}
		if !strings.Contains(msg, test.kind) {
			t.Errorf("case %d: %q does not say %q", i, msg, test.kind)
		}
		// The message proper, without the path, whose temporary
		// directory's digits may hold a short marker by chance.
		if test.marker != "" && strings.Contains(de.Msg, test.marker) {
			t.Errorf("case %d: %q quotes the cell %q", i, msg, test.marker)
		}
	}
}

// TestSiteParquetErrorsNameNoValue: a non-finite parquet value is named by
// column and row, not by value.
func TestSiteParquetErrorsNameNoValue(t *testing.T) {
	dir := t.TempDir()
	writeParquet(t, filepath.Join(dir, "train.parquet"), []string{"a", "y"}, [][]float64{{1, 0}, {math.Inf(-1), 1}})
	writeParquet(t, filepath.Join(dir, "test.parquet"), []string{"a", "y"}, [][]float64{{1, 0}, {2, 1}})
	_, err := LoadSite(dir, "s1", SiteOptions{})
	want := "site s1: " + filepath.Join(dir, "train.parquet") + `:2: column "a": infinite, want a finite number`
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

// TestLoadSiteColumnNames: the test split must name its feature columns as
// the training split does, in the same order; CheckColumns holds a site's
// columns against the campaign's schema, naming the first position that
// differs and the expected name (never the site's own).
func TestLoadSiteColumnNames(t *testing.T) {
	write := func(dir, name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	write(dir, "s1_train.csv", "a,b,y\n1,2,0\n3,4,1\n")
	write(dir, "s1_test.csv", "b,a,y\n1,2,0\n")
	_, err := LoadSite(dir, "s1", SiteOptions{})
	want := "site s1: " + filepath.Join(dir, "s1_test.csv") + `:1: feature column 1 is not named "a" as in the training split s1_train.csv`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("swapped test columns: %v, want %q...", err, want)
	}

	write(dir, "s1_test.csv", "a,b,y\n1,2,0\n")
	d, err := LoadSite(dir, "s1", SiteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, test := range []struct {
		schema []string
		want   string // "" for no error
	}{
		{[]string{"a", "b"}, ""}, // 0
		{[]string{"a", "b", "c"}, `:1: 2 feature columns, the campaign's schema has 3 (a,b,c)`},         // 1
		{[]string{"a", "c"}, `:1: feature column 2 is not named "c" as in the campaign's schema (a,c)`}, // 2
		{[]string{"b", "a"}, `:1: feature column 1 is not named "b"`},                                   // 3: order matters
	} {
		err := d.CheckColumns(test.schema)
		switch {
		case test.want == "" && err != nil:
			t.Errorf("case %d: %v", i, err)
		case test.want != "" && (err == nil || !strings.HasPrefix(err.Error(), "site s1: "+filepath.Join(dir, "s1_train.csv")+test.want)):
			t.Errorf("case %d: %v, want ...%q", i, err, test.want)
		}
	}
}
