package pipeline

import (
	"strings"
	"testing"
)

// TestDataSchemaValidate: each bad schema is rejected naming the field.
func TestDataSchemaValidate(t *testing.T) {
	for i, test := range []struct {
		schema DataSchema
		want   string // "" for valid
	}{
		{DataSchema{Kind: SchemaTable, Features: []string{"a", "b"}, Label: "y"}, ""}, // 0
		{DataSchema{Kind: "image", Features: []string{"a"}}, `kind "image": unknown`}, // 1
		{DataSchema{Kind: SchemaTable}, "features: at least one"},                     // 2
		{DataSchema{Kind: SchemaTable, Features: []string{"a", " "}}, "features[1]: empty name"},
		{DataSchema{Kind: SchemaTable, Features: []string{"a", "a"}}, `features[1] "a": duplicate`},
		{DataSchema{Kind: SchemaTable, Features: []string{"a", "y"}, Label: "y"}, `features[1] "y": is the label column`}, // 5
	} {
		err := test.schema.Validate()
		if (err == nil) != (test.want == "") || (err != nil && !strings.HasPrefix(err.Error(), test.want)) {
			t.Errorf("case %d: %v, want %q", i, err, test.want)
		}
	}
	spec := CampaignSpec{Campaign: "c", Method: "fedavg", Rounds: 1, Sites: []Site{{Name: "s"}}, Bucket: "b",
		Schema: &DataSchema{Kind: SchemaTable}}.WithDefaults()
	if err := spec.Validate(); err == nil || !strings.HasPrefix(err.Error(), "schema.features") {
		t.Errorf("spec with a bad schema: %v, want a schema.features error", err)
	}
}
