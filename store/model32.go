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

// EncodeModel32 is EncodeModel for a Float32 record whose parameters are
// float32 already (a deep site's trained network, nn's slab): they are
// written as they are, without the float64 copy ModelRecord.Params needs,
// to the same bytes EncodeModel gives for m.Float32 with those values as
// Params. m.Params and m.Extra must be empty.
func EncodeModel32(m ModelRecord, params []float32) ([]byte, error) {
	switch {
	case m.Kind != KindModel && m.Kind != KindAggregate:
		return nil, fmt.Errorf("store: model kind %q, expected %q or %q", m.Kind, KindModel, KindAggregate)
	case len(params) == 0:
		return nil, fmt.Errorf("store: model of site %s round %d has no parameters", m.Site, m.Round)
	case m.Params != nil || m.Extra != nil:
		return nil, fmt.Errorf("store: EncodeModel32 takes the parameters as float32 only")
	}
	for i, x := range params {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, fmt.Errorf("store: model of site %s round %d (%s): %s[%d] is %v; the model diverged or an input is bad", m.Site, m.Round, m.Method, VecParams, i, x)
		}
	}
	rec := VectorRecord{Campaign: m.Campaign, Round: m.Round, Site: m.Site, Method: m.Method, Kind: m.Kind,
		Vectors: map[string][]float64{VecParams: nil}} // the name; the values come from params
	return writeParquetWith(vector32Schema, writer32Props(), func(b *array.RecordBuilder) {
		appendVectorRows(b, []VectorRecord{rec}, func(elems array.Builder, _ []float64) {
			elems.(*array.Float32Builder).AppendValues(params, nil)
		})
	})
}

// DecodeModelParams32 returns the parameters of the model file b as
// float32: a Float32 model's values as stored, without the float64 copy
// DecodeModel makes; a float64 model's rounded to nearest.
func DecodeModelParams32(b []byte) ([]float32, error) {
	if !isFloat32File(b) {
		m, err := DecodeModel(b)
		if err != nil {
			return nil, err
		}
		return narrow(m.Params), nil
	}
	var out []float32
	err := ReadParquet("model", b, vector32Schema, func(rec arrow.RecordBatch) error {
		kind, vector := rec.Column(4).(*array.String), rec.Column(5).(*array.String)
		values := rec.Column(6).(*array.List)
		f32 := values.ListValues().(*array.Float32).Float32Values()
		for i := 0; i < int(rec.NumRows()); i++ {
			if k := kind.Value(i); k != KindModel && k != KindAggregate {
				return fmt.Errorf("file holds a %q record, expected a model", k)
			}
			if vector.Value(i) == VecParams && out == nil {
				start, end := values.ValueOffsets(i)
				out = append([]float32{}, f32[start:end]...)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, fmt.Errorf("store: model file has no %q vector", VecParams)
	}
	return out, nil
}
