package store

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/ptopofl/ptopofl/method"
)

// SweepResultRow is one row of sweeps/<sweep>/results.parquet: one
// campaign, every setting it ran with as its own column, its outcome read
// from its round manifests, and where its record is. The parquet columns
// are flat (no lists, no structs) and named by the json tags, so pandas,
// pyarrow and DuckDB read them as plain columns.
type SweepResultRow struct {
	Sweep         string `json:"sweep"`
	Campaign      string `json:"campaign"`
	WorkflowID    string `json:"workflow_id"`
	CampaignIndex int    `json:"campaign_index"`
	Federation    string `json:"federation"`
	Method        string `json:"method"`
	Setting       string `json:"setting"`
	Seed          uint64 `json:"seed"`
	Preset        string `json:"preset"`
	Rounds        int    `json:"rounds"`      // planned
	RoundsDone    int    `json:"rounds_done"` // committed
	State         string `json:"state"`       // done, stopped or failed
	Error         string `json:"error"`
	NumSites      int    `json:"n_sites"`
	MinSites      int    `json:"min_sites"`

	// Hyperparameters are the settings the campaign ran with, one column
	// each, named and typed as method.Params declares them.
	method.Hyperparameters

	// Outcome: the last committed round's mean metrics (NaN when no round
	// was committed), the best mean AUC, the convergence round (the first
	// round from which the mean AUC stays within eval.SettlingTolerance of
	// its final value, eval.SettlingRound; 0 when none), the last
	// clustering.
	FinalAUC    float64 `json:"final_auc"`
	FinalAcc    float64 `json:"final_acc"`
	BestAUC     float64 `json:"best_auc"`
	ConvRound   int     `json:"conv_round"`
	NumClusters int     `json:"n_clusters"`
	NumFlagged  int     `json:"n_flagged"`
	Flagged     string  `json:"flagged"` // comma-separated site names
	// Excluded lists, comma-separated, the sites the last round's robust
	// aggregation gave weight 0 (Krum's unselected, FoolsGold's distrusted).
	Excluded     string `json:"excluded"`
	Participants int    `json:"participants"`

	SpecHash           string `json:"spec_hash"`
	SpecKey            string `json:"spec_key"`
	ArtifactsPrefix    string `json:"artifacts_prefix"`
	LastManifestKey    string `json:"last_manifest_key"`
	LastManifestSHA256 string `json:"last_manifest_sha256"`
}

// SweepCurveRow is one row of sweeps/<sweep>/curves.parquet: one round of
// one campaign, from its manifest.
type SweepCurveRow struct {
	Sweep                 string  `json:"sweep"`
	Campaign              string  `json:"campaign"`
	Federation            string  `json:"federation"`
	Method                string  `json:"method"`
	Setting               string  `json:"setting"`
	Seed                  uint64  `json:"seed"`
	Round                 int     `json:"round"`
	Outcome               string  `json:"outcome"`
	AUC                   float64 `json:"auc"`
	Acc                   float64 `json:"acc"`
	SitesEvaluated        int     `json:"sites_evaluated"`
	Participants          int     `json:"participants"`
	Dropped               int     `json:"dropped"`
	NumClusters           int     `json:"n_clusters"`
	NumFlagged            int     `json:"n_flagged"`
	Flagged               string  `json:"flagged"`
	MaxDrift              float64 `json:"max_drift"`
	MeanDrift             float64 `json:"mean_drift"`
	DescriptorsRecomputed bool    `json:"descriptors_recomputed"`
	ManifestKey           string  `json:"manifest_key"`
	ManifestSHA256        string  `json:"manifest_sha256"`
}

// column maps one field of a row type R to one parquet column.
type column[R any] struct {
	name string
	typ  arrow.DataType
	put  func(b array.Builder, r *R)
	get  func(a arrow.Array, i int, r *R)
}

func strCol[R any](name string, f func(*R) *string) column[R] {
	return column[R]{name, arrow.BinaryTypes.String,
		func(b array.Builder, r *R) { b.(*array.StringBuilder).Append(*f(r)) },
		func(a arrow.Array, i int, r *R) { *f(r) = a.(*array.String).Value(i) }}
}

func intCol[R any](name string, f func(*R) *int) column[R] {
	return column[R]{name, arrow.PrimitiveTypes.Int64,
		func(b array.Builder, r *R) { b.(*array.Int64Builder).Append(int64(*f(r))) },
		func(a arrow.Array, i int, r *R) { *f(r) = int(a.(*array.Int64).Value(i)) }}
}

func u64Col[R any](name string, f func(*R) *uint64) column[R] {
	return column[R]{name, arrow.PrimitiveTypes.Uint64,
		func(b array.Builder, r *R) { b.(*array.Uint64Builder).Append(*f(r)) },
		func(a arrow.Array, i int, r *R) { *f(r) = a.(*array.Uint64).Value(i) }}
}

func f64Col[R any](name string, f func(*R) *float64) column[R] {
	return column[R]{name, arrow.PrimitiveTypes.Float64,
		func(b array.Builder, r *R) { b.(*array.Float64Builder).Append(*f(r)) },
		func(a arrow.Array, i int, r *R) { *f(r) = a.(*array.Float64).Value(i) }}
}

func boolCol[R any](name string, f func(*R) *bool) column[R] {
	return column[R]{name, arrow.FixedWidthTypes.Boolean,
		func(b array.Builder, r *R) { b.(*array.BooleanBuilder).Append(*f(r)) },
		func(a arrow.Array, i int, r *R) { *f(r) = a.(*array.Boolean).Value(i) }}
}

type resultRow = SweepResultRow
type curveRow = SweepCurveRow

// resultColumns lists the results table's columns: the campaign's
// identity, then one column per hyper-parameter (hyperparameterColumns),
// then the outcome and the record.
var resultColumns = slices.Concat(resultIdentityColumns, hyperparameterColumns(), resultOutcomeColumns)

var resultIdentityColumns = []column[resultRow]{
	strCol("sweep", func(r *resultRow) *string { return &r.Sweep }),
	strCol("campaign", func(r *resultRow) *string { return &r.Campaign }),
	strCol("workflow_id", func(r *resultRow) *string { return &r.WorkflowID }),
	intCol("campaign_index", func(r *resultRow) *int { return &r.CampaignIndex }),
	strCol("federation", func(r *resultRow) *string { return &r.Federation }),
	strCol("method", func(r *resultRow) *string { return &r.Method }),
	strCol("setting", func(r *resultRow) *string { return &r.Setting }),
	u64Col("seed", func(r *resultRow) *uint64 { return &r.Seed }),
	strCol("preset", func(r *resultRow) *string { return &r.Preset }),
	intCol("rounds", func(r *resultRow) *int { return &r.Rounds }),
	intCol("rounds_done", func(r *resultRow) *int { return &r.RoundsDone }),
	strCol("state", func(r *resultRow) *string { return &r.State }),
	strCol("error", func(r *resultRow) *string { return &r.Error }),
	intCol("n_sites", func(r *resultRow) *int { return &r.NumSites }),
	intCol("min_sites", func(r *resultRow) *int { return &r.MinSites }),
}

var resultOutcomeColumns = []column[resultRow]{
	f64Col("final_auc", func(r *resultRow) *float64 { return &r.FinalAUC }),
	f64Col("final_acc", func(r *resultRow) *float64 { return &r.FinalAcc }),
	f64Col("best_auc", func(r *resultRow) *float64 { return &r.BestAUC }),
	intCol("conv_round", func(r *resultRow) *int { return &r.ConvRound }),
	intCol("n_clusters", func(r *resultRow) *int { return &r.NumClusters }),
	intCol("n_flagged", func(r *resultRow) *int { return &r.NumFlagged }),
	strCol("flagged", func(r *resultRow) *string { return &r.Flagged }),
	strCol("excluded", func(r *resultRow) *string { return &r.Excluded }),
	intCol("participants", func(r *resultRow) *int { return &r.Participants }),
	strCol("spec_hash", func(r *resultRow) *string { return &r.SpecHash }),
	strCol("spec_key", func(r *resultRow) *string { return &r.SpecKey }),
	strCol("artifacts_prefix", func(r *resultRow) *string { return &r.ArtifactsPrefix }),
	strCol("last_manifest_key", func(r *resultRow) *string { return &r.LastManifestKey }),
	strCol("last_manifest_sha256", func(r *resultRow) *string { return &r.LastManifestSHA256 }),
}

// hyperparameterColumns returns one column per method.Params entry, in
// declaration order: Int as int64, Float as float64, Text as string. A
// hyper-parameter declared in package method is a results column without
// any edit here.
func hyperparameterColumns() []column[resultRow] {
	cols := make([]column[resultRow], len(method.Params))
	for i, p := range method.Params {
		switch p.Kind {
		case method.Int:
			cols[i] = column[resultRow]{p.Name, arrow.PrimitiveTypes.Int64,
				func(b array.Builder, r *resultRow) {
					b.(*array.Int64Builder).Append(int64(p.Get(r.Hyperparameters).Num))
				},
				func(a arrow.Array, j int, r *resultRow) {
					_ = p.Set(&r.Hyperparameters, method.Value{Num: float64(a.(*array.Int64).Value(j))})
				}}
		case method.Float:
			cols[i] = column[resultRow]{p.Name, arrow.PrimitiveTypes.Float64,
				func(b array.Builder, r *resultRow) { b.(*array.Float64Builder).Append(p.Get(r.Hyperparameters).Num) },
				func(a arrow.Array, j int, r *resultRow) {
					_ = p.Set(&r.Hyperparameters, method.Value{Num: a.(*array.Float64).Value(j)})
				}}
		case method.Text:
			cols[i] = column[resultRow]{p.Name, arrow.BinaryTypes.String,
				func(b array.Builder, r *resultRow) { b.(*array.StringBuilder).Append(p.Get(r.Hyperparameters).Text) },
				func(a arrow.Array, j int, r *resultRow) {
					if v := a.(*array.String).Value(j); v != "" {
						_ = p.Set(&r.Hyperparameters, method.Value{Text: v})
					}
				}}
		}
	}
	return cols
}

var curveColumns = []column[curveRow]{
	strCol("sweep", func(r *curveRow) *string { return &r.Sweep }),
	strCol("campaign", func(r *curveRow) *string { return &r.Campaign }),
	strCol("federation", func(r *curveRow) *string { return &r.Federation }),
	strCol("method", func(r *curveRow) *string { return &r.Method }),
	strCol("setting", func(r *curveRow) *string { return &r.Setting }),
	u64Col("seed", func(r *curveRow) *uint64 { return &r.Seed }),
	intCol("round", func(r *curveRow) *int { return &r.Round }),
	strCol("outcome", func(r *curveRow) *string { return &r.Outcome }),
	f64Col("auc", func(r *curveRow) *float64 { return &r.AUC }),
	f64Col("acc", func(r *curveRow) *float64 { return &r.Acc }),
	intCol("sites_evaluated", func(r *curveRow) *int { return &r.SitesEvaluated }),
	intCol("participants", func(r *curveRow) *int { return &r.Participants }),
	intCol("dropped", func(r *curveRow) *int { return &r.Dropped }),
	intCol("n_clusters", func(r *curveRow) *int { return &r.NumClusters }),
	intCol("n_flagged", func(r *curveRow) *int { return &r.NumFlagged }),
	strCol("flagged", func(r *curveRow) *string { return &r.Flagged }),
	f64Col("max_drift", func(r *curveRow) *float64 { return &r.MaxDrift }),
	f64Col("mean_drift", func(r *curveRow) *float64 { return &r.MeanDrift }),
	boolCol("descriptors_recomputed", func(r *curveRow) *bool { return &r.DescriptorsRecomputed }),
	strCol("manifest_key", func(r *curveRow) *string { return &r.ManifestKey }),
	strCol("manifest_sha256", func(r *curveRow) *string { return &r.ManifestSHA256 }),
}

// SweepResultColumns lists the column names of results.parquet in order.
func SweepResultColumns() []string {
	names := make([]string, len(resultColumns))
	for i, c := range resultColumns {
		names[i] = c.name
	}
	return names
}

// EncodeSweepResults writes rows as results.parquet, in the order given.
func EncodeSweepResults(rows []SweepResultRow) ([]byte, error) {
	return encodeTable(resultColumns, rows)
}

// DecodeSweepResults reads what EncodeSweepResults wrote.
func DecodeSweepResults(b []byte) ([]SweepResultRow, error) {
	return decodeTable("results", resultColumns, b)
}

// EncodeSweepCurves writes rows as curves.parquet, in the order given.
func EncodeSweepCurves(rows []SweepCurveRow) ([]byte, error) { return encodeTable(curveColumns, rows) }

// DecodeSweepCurves reads what EncodeSweepCurves wrote.
func DecodeSweepCurves(b []byte) ([]SweepCurveRow, error) {
	return decodeTable("curves", curveColumns, b)
}

func schemaOf[R any](cols []column[R]) *arrow.Schema {
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = arrow.Field{Name: c.name, Type: c.typ, Nullable: false}
	}
	return arrow.NewSchema(fields, nil)
}

// encodeTable writes rows through store.WriteParquet (deterministic bytes).
func encodeTable[R any](cols []column[R], rows []R) ([]byte, error) {
	b, err := WriteParquet(schemaOf(cols), func(b *array.RecordBuilder) {
		for i := range rows {
			for j, c := range cols {
				c.put(b.Field(j), &rows[i])
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("sweep table: %w", err)
	}
	return b, nil
}

func decodeTable[R any](what string, cols []column[R], b []byte) ([]R, error) {
	var out []R
	err := ReadParquet("sweep "+what, b, schemaOf(cols), func(rec arrow.RecordBatch) error {
		for i := 0; i < int(rec.NumRows()); i++ {
			var r R
			for j, c := range cols {
				c.get(rec.Column(j), i, &r)
			}
			out = append(out, r)
		}
		return nil
	})
	return out, err
}

// MarshalJSON writes NaN metrics (a campaign without a committed round) as
// null: JSON has no NaN.
func (r SweepResultRow) MarshalJSON() ([]byte, error) {
	type plain SweepResultRow
	nullable := func(v float64) *float64 {
		if v != v {
			return nil
		}
		return &v
	}
	return json.Marshal(struct {
		plain
		FinalAUC *float64 `json:"final_auc"`
		FinalAcc *float64 `json:"final_acc"`
		BestAUC  *float64 `json:"best_auc"`
	}{plain(r), nullable(r.FinalAUC), nullable(r.FinalAcc), nullable(r.BestAUC)})
}
