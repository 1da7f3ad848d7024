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
			{Name: "big", Sites: []Site{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}, {Name: "e"}}},
			{Name: "small", Sites: []Site{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}}},
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
			{Name: "with", Sites: []Site{{Name: "a"}, {Name: "b"}}, Schema: schema},
			{Name: "without", Sites: []Site{{Name: "a"}, {Name: "b"}}},
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

// TestSweepFederationOverrides: a federation's preset, rounds and
// hyper-parameter overrides reach its campaigns only, the overrides before
// the setting's (a setting that sets the same parameter wins), and a
// negative rounds override is refused.
func TestSweepFederationOverrides(t *testing.T) {
	base := method.Defaults(method.DeepSmall)
	s := SweepSpec{
		Sweep: "deep", Preset: method.DeepSmall, Rounds: 20, Seeds: []uint64{1}, Bucket: "ptopofl",
		Methods:  []SweepMethod{{Method: learn.FedAvg, Hyperparameters: base}},
		Settings: []SweepSetting{{Label: "base"}, {Label: "lr0.1", Set: []method.ParamValue{{Name: "lr", Value: 0.1}}}},
		Federations: []SweepFederation{
			{Name: "c", Sites: []Site{{Name: "c0"}, {Name: "c1"}}},
			{Name: "d", Sites: []Site{{Name: "d0"}, {Name: "d1"}}, Preset: method.DeepDSmall, Rounds: 5,
				Set: []method.ParamValue{{Name: "local_epochs", Value: 3}, {Name: "lr", Value: 0.2}}},
		},
	}.WithDefaults()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	cs, err := s.Campaigns()
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct { // campaigns in grid order: c base, c lr0.1, d base, d lr0.1
		preset string
		rounds int
		epochs int
		lr     float64
	}{
		{method.DeepSmall, 20, 1, base.LR}, // 0: the sweep's own
		{method.DeepSmall, 20, 1, 0.1},     // 1
		{method.DeepDSmall, 5, 3, 0.2},     // 2: the federation's
		{method.DeepDSmall, 5, 3, 0.1},     // 3: the setting applies after the federation
	} {
		sp := cs[i].Spec
		if sp.Preset != want.preset || sp.Rounds != want.rounds || sp.Hyperparameters.LocalEpochs != want.epochs || sp.Hyperparameters.LR != want.lr {
			t.Errorf("campaign %d (%s): preset %s, %d rounds, %d epochs, lr %v; want %s, %d, %d, %v",
				i, sp.Campaign, sp.Preset, sp.Rounds, sp.Hyperparameters.LocalEpochs, sp.Hyperparameters.LR, want.preset, want.rounds, want.epochs, want.lr)
		}
	}
	s.Federations[1].Rounds = -1
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "federations[1].rounds") {
		t.Errorf("rounds -1: error %v, want one naming federations[1].rounds", err)
	}
	s.Federations[1].Rounds = 0
	s.Federations[1].Set = []method.ParamValue{{Name: "bogus", Value: 1}}
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "federations[d].set") {
		t.Errorf("unknown parameter: error %v, want one naming federations[d].set", err)
	}
}

// TestCampaignName: the names a command accepts for a campaign: its own,
// or a sweep's campaign as `starter ls` prints it (SweepCampaignWorkflowID);
// a sweep part the campaign does not belong to, or a bad name on either
// side, is refused.
func TestCampaignName(t *testing.T) {
	cases := []struct {
		arg, want string
		ok        bool
	}{
		{"demo-ptopofl", "demo-ptopofl", true},
		{SweepCampaignWorkflowID("table1-c1ccc0f2eb", "table1-c1ccc0f2eb-bm-s1-scaffold-base-s1"), "table1-c1ccc0f2eb-bm-s1-scaffold-base-s1", true},
		{"other/table1-c1ccc0f2eb-bm-s1-scaffold-base-s1", "", false},
		{"table1/table1", "", false},
		{"table1/", "", false},
		{"/table1-x", "", false},
		{"a/a-b/c", "", false},
		{"Bad Name", "", false},
		{"", "", false},
	}
	for i, c := range cases {
		got, err := CampaignName(c.arg)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("case %d (%q): %q, %v; want %q, ok %v", i, c.arg, got, err, c.want, c.ok)
		}
	}
}
