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
