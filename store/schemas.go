package store

import "github.com/apache/arrow-go/v18/arrow"

// Layout is one of the parquet layouts the store writes: a name, the
// objects that hold it, what a row is, and its columns.
type Layout struct {
	Name    string
	Objects string
	Row     string
	Schema  *arrow.Schema
}

// Layouts lists every parquet layout the store writes, for the reference
// (docs/reference/formats.md): the schemas themselves, so the reference
// cannot drift from what is written.
func Layouts() []Layout {
	return []Layout{
		{"vectors", "campaigns/<campaign>/round-NNNN/{descriptors,models,aggregate,state,control}/*.parquet, clustering.parquet, server-state.parquet, shared-state.parquet",
			"one named vector of one record (kind: " + KindDescriptor + ", " + KindModel + ", " + KindAggregate + "; vector: " +
				VecDescriptor + ", " + VecParams + ", " + VecControlVariate + ", " + VecPersonal + ", persistence pairs), rows sorted by vector name", vectorSchema},
		{"vectors (float32)", "the same keys, for deep models", "as vectors, with float32 values", vector32Schema},
		{"metrics", "campaigns/<campaign>/round-NNNN/metrics/<site>.parquet", "one site's scores in one round", metricsSchema},
		{"export", "`starter export --out FILE`", "one round and site of a campaign (from its manifests)", exportSchema},
		{"sweep results", "sweeps/<sweep>/results.parquet", "one campaign of a sweep; one column per hyper-parameter", schemaOf(resultColumns)},
		{"sweep curves", "sweeps/<sweep>/curves.parquet", "one round of one campaign of a sweep", schemaOf(curveColumns)},
	}
}
