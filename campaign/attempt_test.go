package campaign

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
)

// TestSpecDiff: the differences are named field by field, as the user
// reads them; the campaign name, the code version and defaults given
// explicitly are no difference. Expected strings written out by hand.
func TestSpecDiff(t *testing.T) {
	base := pipeline.CampaignSpec{
		Campaign: "hc", Method: learn.PTopoFL, Rounds: 15, Seed: 42, Bucket: "ptopofl",
		Sites: []pipeline.Site{{Name: "s0"}, {Name: "s1"}, {Name: "s2"}},
	}.WithDefaults()
	for i, tc := range []struct {
		change func(*pipeline.CampaignSpec)
		want   []string
	}{
		{func(s *pipeline.CampaignSpec) { s.CodeVersion = "abc123+dirty" }, nil},                  // 0
		{func(s *pipeline.CampaignSpec) { s.Campaign = "other" }, nil},                            // 1: the name is the key, not a setting
		{func(s *pipeline.CampaignSpec) { s.RoundDeadline = pipeline.DefaultRoundDeadline }, nil}, // 2: the default, given
		{func(s *pipeline.CampaignSpec) { s.Rounds = 20 }, []string{"rounds 15 → 20"}},            // 3
		{ // 4: a hyper-parameter and a spec field, the spec's fields first
			func(s *pipeline.CampaignSpec) { s.Hyperparameters.Beta = 0.5; s.Rounds = 20 },
			[]string{"rounds 15 → 20", "beta " + fmtNum(base.Hyperparameters.Beta) + " → 0.5"},
		},
		{func(s *pipeline.CampaignSpec) { s.RoundDeadline = 90 * time.Second }, []string{"round_deadline 30m0s → 1m30s"}},                               // 5
		{func(s *pipeline.CampaignSpec) { s.Sites = s.Sites[:2]; s.MinSites = 2 }, []string{`sites ["s0","s1","s2"] → ["s0","s1"]`, "min_sites 3 → 2"}}, // 6
		{func(s *pipeline.CampaignSpec) { s.DescriptorRows = map[string][]int{"s0": {1}} }, []string{`descriptor_rows (none) → {"s0":[1]}`}},            // 7
		{func(s *pipeline.CampaignSpec) { s.KeepSiteModels = 3 }, []string{"keep_site_models 0 → 3"}},                                                   // 8: the retention policy
	} {
		b := base
		tc.change(&b)
		if got := SpecDiff(base, b); !slices.Equal(got, tc.want) {
			t.Errorf("%d: SpecDiff = %q, want %q", i, got, tc.want)
		}
	}
	// The schema: compared when both specs have one; a spec stored before
	// schemas existed, or a starter that cannot see the data, has none
	// (see specFields).
	x12, x13 := schema("x1", "x2"), schema("x1", "x3")
	for i, tc := range []struct {
		a, b *pipeline.DataSchema
		want []string
	}{
		{nil, x12, nil},                // 0: stored before schemas existed
		{x12, nil, nil},                // 1: a starter without the federation's files
		{x12, schema("x1", "x2"), nil}, // 2
		{x12, x13, []string{`schema {"kind":"table","features":["x1","x2"],"label":"y"} → {"kind":"table","features":["x1","x3"],"label":"y"}`}}, // 3: another data set
	} {
		a, b := base, base
		a.Schema, b.Schema = tc.a, tc.b
		if got := SpecDiff(a, b); !slices.Equal(got, tc.want) {
			t.Errorf("schema %d: SpecDiff = %q, want %q", i, got, tc.want)
		}
	}
	err := error(&SpecConflictError{Campaign: "hc", Diff: []string{"beta 0.3 → 0.5", "rounds 15 → 20"}})
	const want = "campaign hc exists with a different spec: beta 0.3 → 0.5, rounds 15 → 20; use --new-campaign (or another --campaign name)"
	if err.Error() != want || !errors.Is(err, ErrInput) {
		t.Errorf("got %q (input error: %v), want %q", err, errors.Is(err, ErrInput), want)
	}
}

// schema is a table schema of the given feature columns, label "y".
func schema(features ...string) *pipeline.DataSchema {
	return &pipeline.DataSchema{Kind: pipeline.SchemaTable, Features: features, Label: "y"}
}

// TestSpecDiffCoversSpec: every field of a campaign spec is compared by
// SpecDiff (by its JSON name, the hyper-parameters one by one) except the
// two that are not the campaign's identity, so that a field added to
// pipeline.CampaignSpec is not silently ignored when a re-run meets the
// stored spec.
func TestSpecDiffCoversSpec(t *testing.T) {
	notCompared := map[string]bool{"campaign": true, "code_version": true, "hyperparameters": true}
	listed := map[string]bool{}
	for _, f := range specFields(pipeline.CampaignSpec{}) {
		listed[f.name] = true
	}
	typ := reflect.TypeFor[pipeline.CampaignSpec]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if !notCompared[name] && !listed[name] {
			t.Errorf("field %s (json %q) of pipeline.CampaignSpec is not compared by SpecDiff", typ.Field(i).Name, name)
		}
	}
	hyper := reflect.TypeFor[method.Hyperparameters]()
	for i := range hyper.NumField() {
		name, _, _ := strings.Cut(hyper.Field(i).Tag.Get("json"), ",")
		if !listed[name] {
			t.Errorf("hyper-parameter %s (json %q) is not compared by SpecDiff", hyper.Field(i).Name, name)
		}
	}
}

// fmtNum is a float64 as JSON writes it.
func fmtNum(v float64) string {
	return specField{value: v}.text()
}

// TestSummaryReportsAttempts: a campaign restarted says across how many
// attempts it was verified and how many manifests were superseded; one
// never restarted reads as before.
func TestSummaryReportsAttempts(t *testing.T) {
	for i, tc := range []struct {
		rep  VerifyReport
		want string
	}{
		{VerifyReport{Rounds: 3, Artifacts: 14, Attempts: 1}, "verified 3 rounds, 14 artifacts"},                                                              // 0
		{VerifyReport{Rounds: 3, Artifacts: 14, Attempts: 2, Superseded: 1}, "verified 3 rounds, 14 artifacts, across 2 attempts (1 superseded manifest)"},    // 1
		{VerifyReport{Rounds: 30, Artifacts: 99, Attempts: 3, Superseded: 0}, "verified 30 rounds, 99 artifacts, across 3 attempts (0 superseded manifests)"}, // 2: stopped twice
	} {
		if got := tc.rep.Summary(); got != tc.want {
			t.Errorf("%d: %q, want %q", i, got, tc.want)
		}
	}
}
