package pipeline

import (
	"fmt"
	"strings"
)

// Kinds of DataSchema.
const (
	// SchemaTable is tabular data: named numeric feature columns and a
	// label column (CSV or parquet site files).
	SchemaTable = "table"
)

// DataSchema is what every site's data must look like for the campaign's
// models to mean the same thing at every site. A site whose data differ is
// dropped from the round by its own worker with an error naming the first
// difference, instead of sending a model of another shape that fails the
// whole round at aggregation. It is typed by Kind so that other kinds of
// data (images, with their shape) can add their fields at the end.
type DataSchema struct {
	// Kind is SchemaTable.
	Kind string `json:"kind"`
	// Features are a table's feature column names, in order (the model's
	// weights are per position, so order matters).
	Features []string `json:"features,omitempty"`
	// Label is the name of a table's label column in the federation the
	// schema was read from. It is recorded, not enforced: a site worker
	// finds its label column by its own --label setting.
	Label string `json:"label,omitempty"`
}

// Validate reports what is wrong with the schema, naming the field.
func (d DataSchema) Validate() error {
	switch d.Kind {
	case SchemaTable:
	default:
		return fmt.Errorf("kind %q: unknown; want %q", d.Kind, SchemaTable)
	}
	if len(d.Features) == 0 {
		return fmt.Errorf("features: at least one feature column is required")
	}
	seen := make(map[string]bool, len(d.Features))
	for i, f := range d.Features {
		if strings.TrimSpace(f) == "" {
			return fmt.Errorf("features[%d]: empty name", i)
		}
		if seen[f] {
			return fmt.Errorf("features[%d] %q: duplicate", i, f)
		}
		if f == d.Label {
			return fmt.Errorf("features[%d] %q: is the label column", i, f)
		}
		seen[f] = true
	}
	return nil
}

// String is a short description for messages: "table of 4 features
// (a,b,c,d) and label y".
func (d DataSchema) String() string {
	s := fmt.Sprintf("%s of %d features (%s)", d.Kind, len(d.Features), strings.Join(d.Features, ","))
	if d.Label != "" {
		s += " and label " + d.Label
	}
	return s
}
