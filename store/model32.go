package store

import (
	"bytes"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
)

// A deep model (ModelRecord.Float32) is stored as float32, half the bytes
// of float64 for values that are float32 to begin with (package nn's
// parameters), in the vector layout with a list<float32> values column,
// its floats BYTE_STREAM_SPLIT-encoded (the four bytes of every value in
// four streams, so that the similar exponent bytes sit together) and Zstd
// compressed. DecodeModel reads either layout.

var listF32 = arrow.ListOfNonNullable(arrow.PrimitiveTypes.Float32)

var vector32Schema = vectorSchemaOf(listF32)

// writer32Props are writerProps with Zstd and BYTE_STREAM_SPLIT for the
// values: still no dictionary, a fixed created_by, no timestamps, so equal
// models give equal bytes.
func writer32Props() *parquet.WriterProperties {
	return parquet.NewWriterProperties(
		parquet.WithCreatedBy(createdBy),
		parquet.WithDictionaryDefault(false),
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithCompressionLevel(3),
		parquet.WithEncodingFor("values.list.element", parquet.Encodings.ByteStreamSplit),
		parquet.WithStats(false),
	)
}

// EncodeVectors32 is EncodeVectors storing the values as float32 (the
// deep-model layout above): for vectors whose values are float32 already
// (a deep site's control variate or personal model) nothing is lost and
// the file is about half the size; other values are rounded to nearest.
// Every value must be finite and within float32's range. DecodeVectors
// reads the file back.
func EncodeVectors32(recs []VectorRecord) ([]byte, error) {
	err := checkVectorRecords(recs, func(i int, r VectorRecord, name string, v []float64) error {
		for j, x := range v {
			if math.IsNaN(x) || math.Abs(x) > math.MaxFloat32 {
				return fmt.Errorf("store: record %d (site %s, round %d, %s): %s[%d] is not a finite float32; the model diverged or an input is bad", i, r.Site, r.Round, r.Method, name, j)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return writeParquetWith(vector32Schema, writer32Props(), func(b *array.RecordBuilder) {
		appendVectorRows(b, recs, func(elems array.Builder, v []float64) {
			e := elems.(*array.Float32Builder)
			e.Reserve(len(v))
			for _, x := range v {
				e.UnsafeAppend(float32(x))
			}
		})
	})
}

// RoundFloat32 returns x with every value rounded to the nearest float32,
// as a Float32 model record stores it: what a reader of the record gets.
func RoundFloat32(x []float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(float32(v))
	}
	return out
}

// isFloat32File reports whether the parquet file b holds a values column
// of float32 (a Float32 model) rather than float64. A file it cannot read
// is left for ReadParquet to report.
func isFloat32File(b []byte) bool {
	r, err := file.NewParquetReader(bytes.NewReader(b))
	if err != nil {
		return false
	}
	defer r.Close()
	sc := r.MetaData().Schema
	for i := range sc.NumColumns() {
		c := sc.Column(i)
		if c.Path() == "values.list.element" {
			return c.PhysicalType() == parquet.Types.Float
		}
	}
	return false
}
