package store

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// ---- Campaign export: one row per round and site ----

// ExportRow is one site in one round of a campaign, flattened from the
// round's manifest for analysis in pandas, pyarrow or DuckDB (`starter
// export`). A nil pointer is a null in the file: the manifest says nothing
// about that value for that site in that round (a site dropped before
// evaluation has no AUC; a method without descriptors has no cluster).
type ExportRow struct {
	Campaign         string
	Method           string
	Round            int
	Site             string
	Participated     bool    // completed every phase of the round
	DropPhase        *string // where the site left the round
	DropReason       *string // why (timeout, bad_site_data, error, no_model)
	Cluster          *int
	Trust            *float64
	Flagged          bool
	Drift            *float64
	AUC              *float64
	Acc              *float64
	NumTrain         *int
	NumTest          *int
	ModelSHA256      *string // the site's local model trained in the round
	DescriptorSHA256 *string // the descriptor the round used for the site
	SiteModelSHA256  *string // the model the site holds after aggregation
	ManifestSHA256   string  // sha256 of the round's manifest.json bytes
	// Released is what the site released in the round, "kind:numbers"
	// separated by spaces in the manifest's order ("descriptor:48
	// model:21 metrics:2"); ReleasedNumbers adds up the numbers.
	Released        string
	ReleasedNumbers int
	// EpsilonRound and Epsilon are the site's ε for the round's releases
	// alone and in all (dp record; null otherwise).
	EpsilonRound *float64
	Epsilon      *float64
}

func nullable(name string, t arrow.DataType) arrow.Field {
	return arrow.Field{Name: name, Type: t, Nullable: true}
}

var exportSchema = arrow.NewSchema([]arrow.Field{
	nonNull("campaign", arrow.BinaryTypes.String),           // 0
	nonNull("method", arrow.BinaryTypes.String),             // 1
	nonNull("round", arrow.PrimitiveTypes.Int32),            // 2
	nonNull("site", arrow.BinaryTypes.String),               // 3
	nonNull("participated", arrow.FixedWidthTypes.Boolean),  // 4
	nullable("drop_phase", arrow.BinaryTypes.String),        // 5
	nullable("drop_reason", arrow.BinaryTypes.String),       // 6
	nullable("cluster", arrow.PrimitiveTypes.Int32),         // 7
	nullable("trust", arrow.PrimitiveTypes.Float64),         // 8
	nonNull("flagged", arrow.FixedWidthTypes.Boolean),       // 9
	nullable("drift", arrow.PrimitiveTypes.Float64),         // 10
	nullable("auc", arrow.PrimitiveTypes.Float64),           // 11
	nullable("acc", arrow.PrimitiveTypes.Float64),           // 12
	nullable("n_train", arrow.PrimitiveTypes.Int64),         // 13
	nullable("n_test", arrow.PrimitiveTypes.Int64),          // 14
	nullable("model_sha256", arrow.BinaryTypes.String),      // 15
	nullable("descriptor_sha256", arrow.BinaryTypes.String), // 16
	nullable("site_model_sha256", arrow.BinaryTypes.String), // 17
	nonNull("manifest_sha256", arrow.BinaryTypes.String),    // 18
	nonNull("released", arrow.BinaryTypes.String),           // 19
	nonNull("released_numbers", arrow.PrimitiveTypes.Int64), // 20
	nullable("epsilon_round", arrow.PrimitiveTypes.Float64), // 21
	nullable("epsilon", arrow.PrimitiveTypes.Float64),       // 22
}, nil)

// EncodeExport encodes export rows in the order given (round, then spec
// order of the sites, as `starter export` builds them).
func EncodeExport(rows []ExportRow) ([]byte, error) {
	for i, r := range rows {
		if r.Round < 0 || r.Round > math.MaxInt32 {
			return nil, fmt.Errorf("store: export row %d (site %s): round %d out of range", i, r.Site, r.Round)
		}
		if r.Cluster != nil && (*r.Cluster < math.MinInt32 || *r.Cluster > math.MaxInt32) {
			return nil, fmt.Errorf("store: export row %d (site %s, round %d): cluster %d out of range", i, r.Site, r.Round, *r.Cluster)
		}
	}
	return WriteParquet(exportSchema, func(b *array.RecordBuilder) {
		str := func(col int, v *string) {
			sb := b.Field(col).(*array.StringBuilder)
			if v == nil {
				sb.AppendNull()
			} else {
				sb.Append(*v)
			}
		}
		f64 := func(col int, v *float64) {
			fb := b.Field(col).(*array.Float64Builder)
			if v == nil {
				fb.AppendNull()
			} else {
				fb.Append(*v)
			}
		}
		i64 := func(col int, v *int) {
			ib := b.Field(col).(*array.Int64Builder)
			if v == nil {
				ib.AppendNull()
			} else {
				ib.Append(int64(*v))
			}
		}
		for _, r := range rows {
			b.Field(0).(*array.StringBuilder).Append(r.Campaign)
			b.Field(1).(*array.StringBuilder).Append(r.Method)
			b.Field(2).(*array.Int32Builder).Append(int32(r.Round))
			b.Field(3).(*array.StringBuilder).Append(r.Site)
			b.Field(4).(*array.BooleanBuilder).Append(r.Participated)
			str(5, r.DropPhase)
			str(6, r.DropReason)
			if cb := b.Field(7).(*array.Int32Builder); r.Cluster == nil {
				cb.AppendNull()
			} else {
				cb.Append(int32(*r.Cluster))
			}
			f64(8, r.Trust)
			b.Field(9).(*array.BooleanBuilder).Append(r.Flagged)
			f64(10, r.Drift)
			f64(11, r.AUC)
			f64(12, r.Acc)
			i64(13, r.NumTrain)
			i64(14, r.NumTest)
			str(15, r.ModelSHA256)
			str(16, r.DescriptorSHA256)
			str(17, r.SiteModelSHA256)
			b.Field(18).(*array.StringBuilder).Append(r.ManifestSHA256)
			b.Field(19).(*array.StringBuilder).Append(r.Released)
			b.Field(20).(*array.Int64Builder).Append(int64(r.ReleasedNumbers))
			f64(21, r.EpsilonRound)
			f64(22, r.Epsilon)
		}
	})
}

// DecodeExport decodes what EncodeExport wrote.
func DecodeExport(b []byte) ([]ExportRow, error) {
	var out []ExportRow
	err := ReadParquet("export", b, exportSchema, func(rec arrow.RecordBatch) error {
		str := func(col, i int) *string {
			c := rec.Column(col).(*array.String)
			if c.IsNull(i) {
				return nil
			}
			v := c.Value(i)
			return &v
		}
		f64 := func(col, i int) *float64 {
			c := rec.Column(col).(*array.Float64)
			if c.IsNull(i) {
				return nil
			}
			v := c.Value(i)
			return &v
		}
		i64 := func(col, i int) *int {
			c := rec.Column(col).(*array.Int64)
			if c.IsNull(i) {
				return nil
			}
			v := int(c.Value(i))
			return &v
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			r := ExportRow{
				Campaign:         rec.Column(0).(*array.String).Value(i),
				Method:           rec.Column(1).(*array.String).Value(i),
				Round:            int(rec.Column(2).(*array.Int32).Value(i)),
				Site:             rec.Column(3).(*array.String).Value(i),
				Participated:     rec.Column(4).(*array.Boolean).Value(i),
				DropPhase:        str(5, i),
				DropReason:       str(6, i),
				Trust:            f64(8, i),
				Flagged:          rec.Column(9).(*array.Boolean).Value(i),
				Drift:            f64(10, i),
				AUC:              f64(11, i),
				Acc:              f64(12, i),
				NumTrain:         i64(13, i),
				NumTest:          i64(14, i),
				ModelSHA256:      str(15, i),
				DescriptorSHA256: str(16, i),
				SiteModelSHA256:  str(17, i),
				ManifestSHA256:   rec.Column(18).(*array.String).Value(i),
				Released:         rec.Column(19).(*array.String).Value(i),
				ReleasedNumbers:  int(rec.Column(20).(*array.Int64).Value(i)),
				EpsilonRound:     f64(21, i),
				Epsilon:          f64(22, i),
			}
			if c := rec.Column(7).(*array.Int32); !c.IsNull(i) {
				v := int(c.Value(i))
				r.Cluster = &v
			}
			out = append(out, r)
		}
		return nil
	})
	return out, err
}
