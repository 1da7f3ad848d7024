package store

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// createdBy is written in every file footer instead of the library's default
// ("parquet-go version <v>"), so upgrading arrow-go does not change the
// bytes, and so the sha256, of artifacts with the same content.
const createdBy = "ptopofl store (arrow-go v18)"

// writerProps fixes everything that shapes the bytes: no dictionary encoding
// (the plain encoding of float64 is the IEEE-754 bits, so values round-trip
// bit for bit), Snappy compression, one row group, a fixed created_by. The
// writer embeds no timestamps, hostnames or random identifiers.
func writerProps() *parquet.WriterProperties {
	return parquet.NewWriterProperties(
		parquet.WithCreatedBy(createdBy),
		parquet.WithDictionaryDefault(false),
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithStats(true),
	)
}

// WriteParquet encodes one record batch, filled by build, as a parquet file
// with the store's deterministic writer settings (no dictionary, Snappy, a
// fixed created_by, no timestamps): the same rows always give the same bytes
// and so the same sha256. Every parquet artifact of the project is written
// through it.
func WriteParquet(schema *arrow.Schema, build func(b *array.RecordBuilder)) ([]byte, error) {
	return writeParquetWith(schema, writerProps(), build)
}

// writeParquetWith is WriteParquet with the parquet writer properties
// props (a column's encoding and compression).
func writeParquetWith(schema *arrow.Schema, props *parquet.WriterProperties, build func(b *array.RecordBuilder)) ([]byte, error) {
	mem := memory.NewGoAllocator()
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	build(b)
	rec := b.NewRecordBatch()
	defer rec.Release()

	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(schema, &buf, props, pqarrow.DefaultWriterProps())
	if err != nil {
		return nil, fmt.Errorf("store: parquet writer: %w", err)
	}
	if err := w.Write(rec); err != nil {
		w.Close()
		return nil, fmt.Errorf("store: write parquet: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("store: close parquet: %w", err)
	}
	return buf.Bytes(), nil
}

// ReadParquet decodes b, checks that its columns are those of want (names
// and types; nullability and list element names may differ between
// writers), and calls each for every record batch.
func ReadParquet(what string, b []byte, want *arrow.Schema, each func(rec arrow.RecordBatch) error) error {
	return readParquet(what, b, func(got *arrow.Schema) error { return sameColumns(got, want) }, each)
}

// readParquet is ReadParquet with the schema check given as a function.
func readParquet(what string, b []byte, check func(*arrow.Schema) error, each func(rec arrow.RecordBatch) error) error {
	mem := memory.NewGoAllocator()
	tbl, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(b), parquet.NewReaderProperties(mem), pqarrow.ArrowReadProperties{}, mem)
	if err != nil {
		return fmt.Errorf("store: read %s parquet: %w", what, err)
	}
	defer tbl.Release()
	if err := check(tbl.Schema()); err != nil {
		return fmt.Errorf("store: read %s parquet: %w", what, err)
	}
	tr := array.NewTableReader(tbl, -1)
	defer tr.Release()
	for tr.Next() {
		if err := each(tr.RecordBatch()); err != nil {
			return fmt.Errorf("store: read %s parquet: %w", what, err)
		}
	}
	return tr.Err()
}

func sameColumns(got, want *arrow.Schema) error {
	describe := func(s *arrow.Schema) string {
		var parts []string
		for _, f := range s.Fields() {
			parts = append(parts, f.Name+" "+typeName(f.Type))
		}
		return strings.Join(parts, ", ")
	}
	ok := got.NumFields() == want.NumFields()
	for i := 0; ok && i < want.NumFields(); i++ {
		g, w := got.Field(i), want.Field(i)
		ok = g.Name == w.Name && typeName(g.Type) == typeName(w.Type)
	}
	if !ok {
		return fmt.Errorf("columns are (%s), expected (%s)", describe(got), describe(want))
	}
	return nil
}

func typeName(t arrow.DataType) string {
	if l, ok := t.(arrow.ListLikeType); ok {
		return "list<" + typeName(l.Elem()) + ">"
	}
	return t.Name()
}

func nonNull(name string, t arrow.DataType) arrow.Field {
	return arrow.Field{Name: name, Type: t, Nullable: false}
}

var listF64 = arrow.ListOfNonNullable(arrow.PrimitiveTypes.Float64)

// ---- Vector records: descriptors, models, aggregates ----

// Kinds of VectorRecord.
const (
	KindDescriptor = "descriptor" // a site's topological descriptor
	KindModel      = "model"      // a site's locally trained model
	KindAggregate  = "aggregate"  // a model sent back to a cluster or site
)

// Vector names used by the typed helpers.
const (
	VecDescriptor     = "descriptor"      // the 48-number descriptor
	VecH0Birth        = "h0_birth"        // optional persistence pairs, H0
	VecH0Death        = "h0_death"        //
	VecH1Birth        = "h1_birth"        // optional persistence pairs, H1
	VecH1Death        = "h1_death"        //
	VecParams         = "params"          // model parameters
	VecControlVariate = "control_variate" // SCAFFOLD control variate
	VecPersonal       = "personal"        // a personalised model (pFedMe, pTopoFL blend)
)

// VectorRecord is a set of named float64 vectors tagged with the campaign,
// round, site and method they belong to. In parquet it is one row per vector:
//
//	campaign string, round int32, site string, method string, kind string,
//	vector string, values list<float64>
//
// rows sorted by vector name within a record, records in the order given.
type VectorRecord struct {
	Campaign string
	Round    int
	Site     string
	Method   string
	Kind     string
	Vectors  map[string][]float64
}

var vectorSchema = vectorSchemaOf(listF64)

// vectorSchemaOf is the vector layout with values of the list type values
// (list<float64>, or list<float32> for deep models).
func vectorSchemaOf(values arrow.DataType) *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		nonNull("campaign", arrow.BinaryTypes.String),
		nonNull("round", arrow.PrimitiveTypes.Int32),
		nonNull("site", arrow.BinaryTypes.String),
		nonNull("method", arrow.BinaryTypes.String),
		nonNull("kind", arrow.BinaryTypes.String),
		nonNull("vector", arrow.BinaryTypes.String),
		nonNull("values", values),
	}, nil)
}

// EncodeVectors encodes records as parquet. Equal records give equal bytes.
// It rejects NaN anywhere (a NaN is a bug upstream, and would make equal
// results compare unequal), an empty vector name, and a round outside
// [0, MaxInt32].
func EncodeVectors(recs []VectorRecord) ([]byte, error) {
	err := checkVectorRecords(recs, func(i int, r VectorRecord, name string, v []float64) error {
		if j := slices.IndexFunc(v, math.IsNaN); j >= 0 {
			return fmt.Errorf("store: record %d (site %s, round %d): vector %q has NaN at index %d", i, r.Site, r.Round, name, j)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return WriteParquet(vectorSchema, func(b *array.RecordBuilder) {
		appendVectorRows(b, recs, func(elems array.Builder, v []float64) {
			elems.(*array.Float64Builder).AppendValues(v, nil)
		})
	})
}

// checkVectorRecords rejects a round outside [0, MaxInt32] and an empty
// vector name, then asks values about each vector's values.
func checkVectorRecords(recs []VectorRecord, values func(i int, r VectorRecord, name string, v []float64) error) error {
	for i, r := range recs {
		if r.Round < 0 || r.Round > math.MaxInt32 {
			return fmt.Errorf("store: record %d (site %s): round %d out of range", i, r.Site, r.Round)
		}
		for name, v := range r.Vectors {
			if name == "" {
				return fmt.Errorf("store: record %d (site %s): empty vector name", i, r.Site)
			}
			if err := values(i, r, name, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// appendVectorRows appends a row per record and vector, in sorted vector
// name order (map order is random; the bytes must not be), to a builder
// of vectorSchema's columns or vector32Schema's; put appends a vector's
// values to the element builder of the values column.
func appendVectorRows(b *array.RecordBuilder, recs []VectorRecord, put func(elems array.Builder, v []float64)) {
	campaign := b.Field(0).(*array.StringBuilder)
	round := b.Field(1).(*array.Int32Builder)
	site := b.Field(2).(*array.StringBuilder)
	method := b.Field(3).(*array.StringBuilder)
	kind := b.Field(4).(*array.StringBuilder)
	vector := b.Field(5).(*array.StringBuilder)
	values := b.Field(6).(*array.ListBuilder)
	elems := values.ValueBuilder()
	for _, r := range recs {
		for _, n := range slices.Sorted(maps.Keys(r.Vectors)) {
			campaign.Append(r.Campaign)
			round.Append(int32(r.Round))
			site.Append(r.Site)
			method.Append(r.Method)
			kind.Append(r.Kind)
			vector.Append(n)
			values.Append(true)
			put(elems, r.Vectors[n])
		}
	}
}

// DecodeVectors decodes what EncodeVectors wrote. Consecutive rows with the
// same campaign, round, site, method and kind form one record. An empty
// vector decodes as an empty, non-nil slice.
func DecodeVectors(b []byte) ([]VectorRecord, error) {
	var out []VectorRecord
	want := vectorSchema
	if isFloat32File(b) {
		want = vector32Schema
	}
	err := ReadParquet("vector", b, want, func(rec arrow.RecordBatch) error {
		campaign := rec.Column(0).(*array.String)
		round := rec.Column(1).(*array.Int32)
		site := rec.Column(2).(*array.String)
		method := rec.Column(3).(*array.String)
		kind := rec.Column(4).(*array.String)
		vector := rec.Column(5).(*array.String)
		values := rec.Column(6).(*array.List)
		var f64 []float64
		var f32 []float32
		switch e := values.ListValues().(type) {
		case *array.Float64:
			f64 = e.Float64Values()
		case *array.Float32:
			f32 = e.Float32Values()
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			r := VectorRecord{
				Campaign: campaign.Value(i), Round: int(round.Value(i)), Site: site.Value(i),
				Method: method.Value(i), Kind: kind.Value(i),
			}
			n := len(out)
			if n == 0 || !sameRecord(out[n-1], r) {
				r.Vectors = map[string][]float64{}
				out = append(out, r)
				n++
			}
			if values.IsNull(i) {
				return fmt.Errorf("row %d: values is null", i)
			}
			start, end := values.ValueOffsets(i)
			v := make([]float64, end-start)
			if f32 != nil {
				for k, x := range f32[start:end] {
					v[k] = float64(x)
				}
			} else {
				copy(v, f64[start:end])
			}
			name := vector.Value(i)
			if _, dup := out[n-1].Vectors[name]; dup {
				return fmt.Errorf("row %d: vector %q appears twice for site %s round %d", i, name, r.Site, r.Round)
			}
			out[n-1].Vectors[name] = v
		}
		return nil
	})
	return out, err
}

func sameRecord(a, b VectorRecord) bool {
	return a.Campaign == b.Campaign && a.Round == b.Round && a.Site == b.Site && a.Method == b.Method && a.Kind == b.Kind
}

func decodeOne(what string, b []byte) (VectorRecord, error) {
	recs, err := DecodeVectors(b)
	if err != nil {
		return VectorRecord{}, err
	}
	if len(recs) != 1 {
		return VectorRecord{}, fmt.Errorf("store: %s file holds %d records, expected 1", what, len(recs))
	}
	return recs[0], nil
}

// DescriptorRecord is one site's descriptor in one round, with its
// persistence pairs when the caller keeps them (nil H0/H1 are not written).
type DescriptorRecord struct {
	Campaign   string
	Round      int
	Site       string
	Method     string
	Descriptor []float64
	H0, H1     []Pair
}

// Pair is one persistence pair. Death may be +Inf for an essential class.
type Pair struct{ Birth, Death float64 }

// EncodeDescriptor encodes d as a one-record vector file of kind descriptor.
func EncodeDescriptor(d DescriptorRecord) ([]byte, error) {
	if len(d.Descriptor) == 0 {
		return nil, fmt.Errorf("store: descriptor of site %s round %d is empty", d.Site, d.Round)
	}
	vecs := map[string][]float64{VecDescriptor: d.Descriptor}
	if d.H0 != nil {
		vecs[VecH0Birth], vecs[VecH0Death] = splitPairs(d.H0)
	}
	if d.H1 != nil {
		vecs[VecH1Birth], vecs[VecH1Death] = splitPairs(d.H1)
	}
	return EncodeVectors([]VectorRecord{{Campaign: d.Campaign, Round: d.Round, Site: d.Site, Method: d.Method, Kind: KindDescriptor, Vectors: vecs}})
}

// DecodeDescriptor decodes what EncodeDescriptor wrote.
func DecodeDescriptor(b []byte) (DescriptorRecord, error) {
	r, err := decodeOne("descriptor", b)
	if err != nil {
		return DescriptorRecord{}, err
	}
	if r.Kind != KindDescriptor {
		return DescriptorRecord{}, fmt.Errorf("store: file holds a %q record, expected %q", r.Kind, KindDescriptor)
	}
	d := DescriptorRecord{Campaign: r.Campaign, Round: r.Round, Site: r.Site, Method: r.Method, Descriptor: r.Vectors[VecDescriptor]}
	if d.Descriptor == nil {
		return DescriptorRecord{}, fmt.Errorf("store: descriptor record of site %s has no %q vector", r.Site, VecDescriptor)
	}
	if d.H0, err = joinPairs(r, VecH0Birth, VecH0Death); err != nil {
		return DescriptorRecord{}, err
	}
	if d.H1, err = joinPairs(r, VecH1Birth, VecH1Death); err != nil {
		return DescriptorRecord{}, err
	}
	return d, nil
}

func splitPairs(ps []Pair) (births, deaths []float64) {
	births, deaths = make([]float64, len(ps)), make([]float64, len(ps))
	for i, p := range ps {
		births[i], deaths[i] = p.Birth, p.Death
	}
	return births, deaths
}

func joinPairs(r VectorRecord, bName, dName string) ([]Pair, error) {
	births, okB := r.Vectors[bName]
	deaths, okD := r.Vectors[dName]
	if !okB && !okD {
		return nil, nil
	}
	if okB != okD || len(births) != len(deaths) {
		return nil, fmt.Errorf("store: site %s: %s and %s do not pair up (%d and %d values)", r.Site, bName, dName, len(births), len(deaths))
	}
	ps := make([]Pair, len(births))
	for i := range ps {
		ps[i] = Pair{births[i], deaths[i]}
	}
	return ps, nil
}

// ModelRecord is a model: a site's local model (Kind KindModel) or an
// aggregate sent back to a cluster or site (Kind KindAggregate; Site then
// names the target). Extra holds further vectors such as VecControlVariate or
// VecPersonal.
type ModelRecord struct {
	Campaign string
	Round    int
	Site     string
	Method   string
	Kind     string
	Params   []float64
	Extra    map[string][]float64
	// Float32 stores every vector as float32 (a deep model: package nn's
	// parameters are float32, so nothing is lost, and the file is half the
	// size), Zstd-compressed; values that are not float32 already (an
	// average of float32 models) are rounded to nearest. Decoding gives
	// the float64 values of the stored float32 ones.
	Float32 bool
}

// EncodeModel encodes m. It rejects NaN and ±Inf anywhere in the model, with
// an error naming the site, vector and index: a diverged model must fail the
// activity, not travel on.
func EncodeModel(m ModelRecord) ([]byte, error) {
	if m.Kind != KindModel && m.Kind != KindAggregate {
		return nil, fmt.Errorf("store: model kind %q, expected %q or %q", m.Kind, KindModel, KindAggregate)
	}
	if len(m.Params) == 0 {
		return nil, fmt.Errorf("store: model of site %s round %d has no parameters", m.Site, m.Round)
	}
	vecs := map[string][]float64{VecParams: m.Params}
	for name, v := range m.Extra {
		if name == VecParams {
			return nil, fmt.Errorf("store: model extra vector may not be named %q", VecParams)
		}
		vecs[name] = v
	}
	for name, v := range vecs {
		for i, x := range v {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("store: model of site %s round %d (%s): %s[%d] is %v; the model diverged or an input is bad", m.Site, m.Round, m.Method, name, i, x)
			}
		}
	}
	if m.Float32 {
		return EncodeVectors32([]VectorRecord{{Campaign: m.Campaign, Round: m.Round, Site: m.Site, Method: m.Method, Kind: m.Kind, Vectors: vecs}})
	}
	return EncodeVectors([]VectorRecord{{Campaign: m.Campaign, Round: m.Round, Site: m.Site, Method: m.Method, Kind: m.Kind, Vectors: vecs}})
}

// DecodeModel decodes what EncodeModel wrote. Extra is nil when the model has
// no extra vectors.
func DecodeModel(b []byte) (ModelRecord, error) {
	r, err := decodeOne("model", b)
	if err != nil {
		return ModelRecord{}, err
	}
	if r.Kind != KindModel && r.Kind != KindAggregate {
		return ModelRecord{}, fmt.Errorf("store: file holds a %q record, expected a model", r.Kind)
	}
	m := ModelRecord{Campaign: r.Campaign, Round: r.Round, Site: r.Site, Method: r.Method, Kind: r.Kind, Params: r.Vectors[VecParams]}
	if m.Params == nil {
		return ModelRecord{}, fmt.Errorf("store: model record of site %s has no %q vector", r.Site, VecParams)
	}
	for name, v := range r.Vectors {
		if name == VecParams {
			continue
		}
		if m.Extra == nil {
			m.Extra = map[string][]float64{}
		}
		m.Extra[name] = v
	}
	return m, nil
}

// ---- Metrics ----

// MetricsRecord is one site's evaluation in one round. AUC is NaN when it is
// undefined (a test set with a single class); N is the number of test rows.
type MetricsRecord struct {
	Campaign string
	Round    int
	Site     string
	Method   string
	AUC      float64
	Acc      float64
	N        int
}

var metricsSchema = arrow.NewSchema([]arrow.Field{
	nonNull("campaign", arrow.BinaryTypes.String),
	nonNull("round", arrow.PrimitiveTypes.Int32),
	nonNull("site", arrow.BinaryTypes.String),
	nonNull("method", arrow.BinaryTypes.String),
	nonNull("auc", arrow.PrimitiveTypes.Float64),
	nonNull("acc", arrow.PrimitiveTypes.Float64),
	nonNull("n", arrow.PrimitiveTypes.Int64),
}, nil)

// EncodeMetrics encodes metrics rows in the order given.
func EncodeMetrics(rows []MetricsRecord) ([]byte, error) {
	for i, r := range rows {
		if r.Round < 0 || r.Round > math.MaxInt32 {
			return nil, fmt.Errorf("store: metrics row %d (site %s): round %d out of range", i, r.Site, r.Round)
		}
	}
	return WriteParquet(metricsSchema, func(b *array.RecordBuilder) {
		for _, r := range rows {
			b.Field(0).(*array.StringBuilder).Append(r.Campaign)
			b.Field(1).(*array.Int32Builder).Append(int32(r.Round))
			b.Field(2).(*array.StringBuilder).Append(r.Site)
			b.Field(3).(*array.StringBuilder).Append(r.Method)
			b.Field(4).(*array.Float64Builder).Append(r.AUC)
			b.Field(5).(*array.Float64Builder).Append(r.Acc)
			b.Field(6).(*array.Int64Builder).Append(int64(r.N))
		}
	})
}

// DecodeMetrics decodes what EncodeMetrics wrote.
func DecodeMetrics(b []byte) ([]MetricsRecord, error) {
	var out []MetricsRecord
	err := ReadParquet("metrics", b, metricsSchema, func(rec arrow.RecordBatch) error {
		for i := 0; i < int(rec.NumRows()); i++ {
			out = append(out, MetricsRecord{
				Campaign: rec.Column(0).(*array.String).Value(i),
				Round:    int(rec.Column(1).(*array.Int32).Value(i)),
				Site:     rec.Column(2).(*array.String).Value(i),
				Method:   rec.Column(3).(*array.String).Value(i),
				AUC:      rec.Column(4).(*array.Float64).Value(i),
				Acc:      rec.Column(5).(*array.Float64).Value(i),
				N:        int(rec.Column(6).(*array.Int64).Value(i)),
			})
		}
		return nil
	})
	return out, err
}
