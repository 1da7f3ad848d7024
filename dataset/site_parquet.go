package dataset

import (
	"context"
	"fmt"
	"math"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// readParquetTable reads a parquet file of numeric columns (any integer or
// floating-point type, no nulls) into a Table; the column named label
// becomes Y. Lines are 1-based row numbers. Every error is a *ParseError.
func readParquetTable(path, label string) (*Table, error) {
	fail := func(line int, format string, args ...any) (*Table, error) {
		return nil, &ParseError{File: path, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	f, err := os.Open(path)
	if err != nil {
		return fail(0, "cannot open: %v", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fail(0, "cannot stat: %v", err)
	}
	if st.Size() == 0 {
		return fail(1, "empty file: no data rows")
	}
	tbl, err := pqarrow.ReadTable(context.Background(), f, parquet.NewReaderProperties(memory.DefaultAllocator),
		pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return fail(0, "not a readable parquet file: %v", err)
	}
	defer tbl.Release()
	n := int(tbl.NumRows())
	if n == 0 {
		return fail(1, "empty file: no data rows")
	}
	t := &Table{X: make([][]float64, n), Lines: make([]int, n)}
	labelIndex := -1
	for j, fld := range tbl.Schema().Fields() {
		if fld.Name == label {
			labelIndex = j
			t.Label = label
			t.Y = make([]float64, n)
		} else {
			t.Columns = append(t.Columns, fld.Name)
		}
	}
	if len(t.Columns) == 0 {
		return fail(1, "no feature columns: the only column is the label column %q", label)
	}
	for i := range t.X {
		t.X[i] = make([]float64, 0, len(t.Columns))
		t.Lines[i] = i + 1
	}
	for j := 0; j < int(tbl.NumCols()); j++ {
		col := tbl.Column(j)
		name := col.Name()
		row := 0
		for _, chunk := range col.Data().Chunks() {
			for k := 0; k < chunk.Len(); k, row = k+1, row+1 {
				if chunk.IsNull(k) {
					return fail(row+1, "column %q: null, want a number", name)
				}
				v, ok := numericValue(chunk, k)
				if !ok {
					return fail(0, "column %q has type %s, want a numeric column", name, chunk.DataType())
				}
				// The kind of value, not the value: errors reach the
				// workflow history (see SiteDataError).
				if math.IsNaN(v) {
					return fail(row+1, "column %q: NaN, want a finite number", name)
				}
				if math.IsInf(v, 0) {
					return fail(row+1, "column %q: infinite, want a finite number", name)
				}
				if j == labelIndex {
					t.Y[row] = v
				} else {
					t.X[row] = append(t.X[row], v)
				}
			}
		}
	}
	return t, nil
}

func numericValue(a arrow.Array, i int) (float64, bool) {
	switch c := a.(type) {
	case *array.Float64:
		return c.Value(i), true
	case *array.Float32:
		return float64(c.Value(i)), true
	case *array.Int64:
		return float64(c.Value(i)), true
	case *array.Int32:
		return float64(c.Value(i)), true
	case *array.Int16:
		return float64(c.Value(i)), true
	case *array.Int8:
		return float64(c.Value(i)), true
	case *array.Uint64:
		return float64(c.Value(i)), true
	case *array.Uint32:
		return float64(c.Value(i)), true
	case *array.Uint16:
		return float64(c.Value(i)), true
	case *array.Uint8:
		return float64(c.Value(i)), true
	case *array.Boolean:
		if c.Value(i) {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}
