package pipeline

import (
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
)

// TestSweepValidateChecksEachFederation: Krum with f = 1 works on a
// federation of 5 sites and not on one of 4, and the error names the
// federation whose campaigns would fail at round 1's aggregation.
func TestSweepValidateChecksEachFederation(t *testing.T) {
	h := method.Defaults(method.Default) // byzantine 1
	s := SweepSpec{
		Sweep: "krum", Methods: []SweepMethod{{Method: learn.Krum, Hyperparameters: h}},
		Seeds: []uint64{1}, Rounds: 2, Bucket: "ptopofl",
		Federations: []SweepFederation{
			{Name: "big", Sites: []Site{{"a"}, {"b"}, {"c"}, {"d"}, {"e"}}},
			{Name: "small", Sites: []Site{{"a"}, {"b"}, {"c"}, {"d"}}},
		},
	}
	err := s.WithDefaults().Validate()
	if err == nil || !strings.Contains(err.Error(), "federation small") || !strings.Contains(err.Error(), "hyperparameters.byzantine") {
		t.Errorf("error %v does not name federation small and hyperparameters.byzantine", err)
	}
	if err := s.WithDefaults().LegacyValidate(); err != nil {
		t.Errorf("LegacyValidate: %v", err)
	}
	s.Federations = s.Federations[:1]
	if err := s.WithDefaults().Validate(); err != nil {
		t.Errorf("five sites rejected: %v", err)
	}
}

// TestSweepCampaignsCarrySchema: each campaign of a sweep gets its
// federation's schema, so its site workers drop sites whose columns differ.
func TestSweepCampaignsCarrySchema(t *testing.T) {
	schema := &DataSchema{Kind: SchemaTable, Features: []string{"x1", "x2"}, Label: "y"}
	s := SweepSpec{
		Sweep: "schema", Methods: []SweepMethod{{Method: learn.FedAvg, Hyperparameters: method.Defaults(method.Default)}},
		Seeds: []uint64{1}, Rounds: 2, Bucket: "ptopofl",
		Federations: []SweepFederation{
			{Name: "with", Sites: []Site{{"a"}, {"b"}}, Schema: schema},
			{Name: "without", Sites: []Site{{"a"}, {"b"}}},
		},
	}
	cs, err := s.WithDefaults().Campaigns()
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 || cs[0].Spec.Schema == nil || strings.Join(cs[0].Spec.Schema.Features, ",") != "x1,x2" || cs[1].Spec.Schema != nil {
		t.Errorf("campaigns %+v: want the first with schema x1,x2, the second without", cs)
	}
}
