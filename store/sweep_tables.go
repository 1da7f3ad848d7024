package store

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

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
	// Strategy is how the sweep chose its configurations ("grid", or an
	// adaptive sweep's strategy); Trial the configuration's number (a
	// grid's (method, setting) pairs in order); Rung the last rung its
	// trial trained to (0 in a grid); RoundsTrained the rounds the
	// campaign trained, each once however often it was promoted; Status
	// complete, pruned (stopped by the strategy below the max rounds,
	// at PrunedAtRound), stopped or failed. Tables written before these
	// columns read as empty or zero.
	Strategy      string `json:"strategy" parquet:"optional"`
	Trial         int    `json:"trial" parquet:"optional"`
	Rung          int    `json:"rung" parquet:"optional"`
	RoundsTrained int    `json:"rounds_trained" parquet:"optional"`
	Status        string `json:"status" parquet:"optional"`
	PrunedAtRound int    `json:"pruned_at_round" parquet:"optional"`

	// Hyperparameters are the settings the campaign ran with, one column
	// each, named and typed as method.Params declares them.
	method.Hyperparameters

	// Outcome: the last committed round's mean metrics (NaN when no round
	// was committed), the best mean AUC, the convergence round (the first
	// round from which the mean AUC stays within eval.SettlingTolerance of
	// its final value, eval.SettlingRound; 0 when none), the last
	// clustering.
	FinalAUC float64 `json:"final_auc"`
	FinalAcc float64 `json:"final_acc"`
	// FinalUpdateAcc is, for a deep campaign, the last committed round's
	// mean score of the sites' own updates before the aggregation (the
	// manifest's mean update_accuracy; `starter run`'s final_acc for a
	// deep campaign); NaN for tabular campaigns, which do not record it.
	FinalUpdateAcc float64 `json:"final_update_acc"`
	// FinalValAUC and FinalValAcc are the last committed round's mean
	// validation scores (validation_fraction: the training rows each site
	// held out), on which a configuration is selected; NaN without them.
	FinalValAUC float64 `json:"final_val_auc"`
	FinalValAcc float64 `json:"final_val_acc"`
	// Epsilon is, under dp record, the largest ε any site has spent by
	// the last committed round (its manifest's privacy record); NaN
	// otherwise.
	Epsilon     float64 `json:"epsilon"`
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
	UpdateAcc             float64 `json:"update_acc"` // deep campaigns; NaN otherwise
	ValAUC                float64 `json:"val_auc"`    // validation_fraction; NaN otherwise
	ValAcc                float64 `json:"val_acc"`    // validation_fraction; NaN otherwise
	Epsilon               float64 `json:"epsilon"`    // the largest ε of any site so far (dp record); NaN otherwise
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

// optional reports whether a table written before the column existed may
// lack it: metrics (float64), hyper-parameters and fields tagged
// parquet:"optional" (zero when absent); the others must be there.
func (c column[R]) optional() bool {
	_, hyper := method.Lookup(c.name)
	return optionalColumns[c.name] || hyper || c.typ == arrow.PrimitiveTypes.Float64
}

// optionalColumns are the columns of fields tagged parquet:"optional".
var optionalColumns = func() map[string]bool {
	out := map[string]bool{}
	for _, t := range []reflect.Type{reflect.TypeFor[SweepResultRow](), reflect.TypeFor[SweepCurveRow]()} {
		for i := range t.NumField() {
			if f := t.Field(i); f.Tag.Get("parquet") == "optional" {
				name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
				out[name] = true
			}
		}
	}
	return out
}()

// fieldColumns returns one column per field of the struct R that is not
// embedded, in declaration order, named by its json tag: string, int (as
// int64), uint64, float64 and bool fields. The row types declare their
// columns once, as fields.
func fieldColumns[R any]() []column[R] {
	t := reflect.TypeFor[R]()
	var cols []column[R]
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		field := func(r *R) reflect.Value { return reflect.ValueOf(r).Elem().Field(i) }
		var c column[R]
		switch f.Type.Kind() {
		case reflect.String:
			c = column[R]{name, arrow.BinaryTypes.String,
				func(b array.Builder, r *R) { b.(*array.StringBuilder).Append(field(r).String()) },
				func(a arrow.Array, j int, r *R) { field(r).SetString(a.(*array.String).Value(j)) }}
		case reflect.Int:
			c = column[R]{name, arrow.PrimitiveTypes.Int64,
				func(b array.Builder, r *R) { b.(*array.Int64Builder).Append(field(r).Int()) },
				func(a arrow.Array, j int, r *R) { field(r).SetInt(a.(*array.Int64).Value(j)) }}
		case reflect.Uint64:
			c = column[R]{name, arrow.PrimitiveTypes.Uint64,
				func(b array.Builder, r *R) { b.(*array.Uint64Builder).Append(field(r).Uint()) },
				func(a arrow.Array, j int, r *R) { field(r).SetUint(a.(*array.Uint64).Value(j)) }}
		case reflect.Float64:
			c = column[R]{name, arrow.PrimitiveTypes.Float64,
				func(b array.Builder, r *R) { b.(*array.Float64Builder).Append(field(r).Float()) },
				func(a arrow.Array, j int, r *R) { field(r).SetFloat(a.(*array.Float64).Value(j)) }}
		case reflect.Bool:
			c = column[R]{name, arrow.FixedWidthTypes.Boolean,
				func(b array.Builder, r *R) { b.(*array.BooleanBuilder).Append(field(r).Bool()) },
				func(a arrow.Array, j int, r *R) { field(r).SetBool(a.(*array.Boolean).Value(j)) }}
		default:
			panic(fmt.Sprintf("store: %s.%s: no parquet column for %s", t.Name(), f.Name, f.Type)) // a programming error, caught by every test
		}
		cols = append(cols, c)
	}
	return cols
}

type resultRow = SweepResultRow
type curveRow = SweepCurveRow

// resultColumns lists the results table's columns: the campaign's
// identity, then one column per hyper-parameter (hyperparameterColumns),
// then the outcome and the record.
var resultColumns = resultColumnsOf()

// resultColumnsOf lists the results table's columns: the fields of
// SweepResultRow in order, with the embedded hyper-parameters (one column
// each, hyperparameterColumns) where they stand.
func resultColumnsOf() []column[resultRow] {
	fields := fieldColumns[resultRow]()
	f, _ := reflect.TypeFor[resultRow]().FieldByName("Hyperparameters")
	at := f.Index[0] // the fields before it are all columns
	return slices.Concat(fields[:at], hyperparameterColumns(), fields[at:])
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

var curveColumns = fieldColumns[curveRow]()

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

// decodeTable reads a table by column name, so that a table written before
// an optional column existed still reads: the missing column's field is
// NaN for a float64 (a metric not recorded) and zero otherwise; a column
// no longer known is ignored. A missing required column, or a known column
// of another type, is an error.
func decodeTable[R any](what string, cols []column[R], b []byte) ([]R, error) {
	var out []R
	at := make([]int, len(cols)) // file column of each of cols, -1 if absent
	check := func(got *arrow.Schema) error {
		for j, c := range cols {
			at[j] = -1
			if idx := got.FieldIndices(c.name); len(idx) > 0 {
				if g := got.Field(idx[0]).Type; typeName(g) != typeName(c.typ) {
					return fmt.Errorf("column %s is %s, expected %s", c.name, typeName(g), typeName(c.typ))
				}
				at[j] = idx[0]
			} else if !c.optional() {
				return fmt.Errorf("no column %s", c.name)
			}
		}
		return nil
	}
	err := readParquet("sweep "+what, b, check, func(rec arrow.RecordBatch) error {
		for i := 0; i < int(rec.NumRows()); i++ {
			var r R
			for j, c := range cols {
				switch {
				case at[j] >= 0:
					c.get(rec.Column(at[j]), i, &r)
				case c.typ == arrow.PrimitiveTypes.Float64:
					c.get(nanArray, 0, &r)
				}
			}
			out = append(out, r)
		}
		return nil
	})
	return out, err
}

// nanArray is a one-value float64 array holding NaN: what a float64 column
// missing from an older table reads as.
var nanArray = func() arrow.Array {
	b := array.NewFloat64Builder(memory.NewGoAllocator())
	b.Append(math.NaN())
	return b.NewArray()
}()

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
		FinalAUC       *float64 `json:"final_auc"`
		FinalAcc       *float64 `json:"final_acc"`
		FinalUpdateAcc *float64 `json:"final_update_acc"`
		FinalValAUC    *float64 `json:"final_val_auc"`
		FinalValAcc    *float64 `json:"final_val_acc"`
		Epsilon        *float64 `json:"epsilon"`
		BestAUC        *float64 `json:"best_auc"`
	}{plain(r), nullable(r.FinalAUC), nullable(r.FinalAcc), nullable(r.FinalUpdateAcc), nullable(r.FinalValAUC), nullable(r.FinalValAcc), nullable(r.Epsilon), nullable(r.BestAUC)})
}
