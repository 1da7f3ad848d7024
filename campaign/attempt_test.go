package campaign

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/ptopofl/ptopofl/learn"
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
	} {
		b := base
		tc.change(&b)
		if got := SpecDiff(base, b); !slices.Equal(got, tc.want) {
			t.Errorf("%d: SpecDiff = %q, want %q", i, got, tc.want)
		}
	}
	err := error(&SpecConflictError{Campaign: "hc", Diff: []string{"beta 0.3 → 0.5", "rounds 15 → 20"}})
	const want = "campaign hc exists with a different spec: beta 0.3 → 0.5, rounds 15 → 20; use --new-campaign (or another --campaign name)"
	if err.Error() != want || !errors.Is(err, ErrInput) {
		t.Errorf("got %q (input error: %v), want %q", err, errors.Is(err, ErrInput), want)
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
