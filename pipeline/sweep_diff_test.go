package pipeline

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/search"
)

// TestSweepSpecDiff: each edit of a sweep file is named by the file's own
// field, with its old and new value; an unchanged spec (defaults applied
// or not, any code version) has none.
func TestSweepSpecDiff(t *testing.T) {
	base := func() SweepSpec {
		h := method.Defaults(method.Default)
		h.ValidationFraction = 0.2
		return SweepSpec{
			Sweep: "s", Rounds: 9, Seeds: []uint64{1},
			Methods:     []SweepMethod{{Method: learn.PTopoFL, Hyperparameters: h}},
			Federations: []SweepFederation{{Name: "hc", Sites: []Site{{Name: "a"}, {Name: "b"}}}},
			Bucket:      "ptopofl",
			Search: &SweepSearch{Dims: []search.Dimension{{Name: "lr", LogUniform: []float64{0.003, 0.3}}, {Name: "clusters", Choice: []any{1.0, 2.0}}},
				Strategy: search.StrategyASHA, Budget: 30, Objective: ObjectiveValAUC, Seed: 3},
		}
	}
	same := base()
	same.CodeVersion = "other"
	if d := SweepSpecDiff(base(), same.WithDefaults()); len(d) > 0 {
		t.Errorf("unchanged: %v", d)
	}
	for i, c := range []struct {
		edit func(*SweepSpec)
		want []string
	}{
		0:  {func(s *SweepSpec) { s.Search.Strategy = search.StrategyRandom }, []string{"strategy asha → random"}},
		1:  {func(s *SweepSpec) { s.Search.Budget = 40 }, []string{"budget.campaign_rounds 30 → 40"}},
		2:  {func(s *SweepSpec) { s.Search.Trials = 5 }, []string{"budget.trials (none) → 5"}},
		3:  {func(s *SweepSpec) { s.Search.Dims[0].LogUniform = []float64{0.001, 0.3} }, []string{"search.lr.log_uniform [0.003,0.3] → [0.001,0.3]"}},
		4:  {func(s *SweepSpec) { s.Methods[0].Hyperparameters.Beta = 0.5 }, []string{"hyperparameters.beta 0.3 → 0.5"}},
		5:  {func(s *SweepSpec) { s.Federations[0].Sites = s.Federations[0].Sites[:1] }, []string{`federations[hc].sites [{"name":"a"},{"name":"b"}] → [{"name":"a"}]`}},
		6:  {func(s *SweepSpec) { s.Rounds, s.Search.Seed = 12, 4 }, []string{"rounds 9 → 12", "seed 3 → 4"}},
		7:  {func(s *SweepSpec) { s.Search.Mode = ModeMin }, []string{"objective.mode (none) → min"}},
		8:  {func(s *SweepSpec) { s.RoundDeadline = 30 * time.Minute }, []string{"round_deadline (none) → 30m0s"}},
		9:  {func(s *SweepSpec) { s.Search.Pruner = search.PrunerMedian }, []string{"pruner (none) → median"}},
		10: {func(s *SweepSpec) { s.Concurrency = 8 }, []string{"concurrency 4 → 8"}},
	} {
		s := base()
		q := *s.Search
		q.Dims = slices.Clone(q.Dims)
		s.Search = &q
		s.Federations = slices.Clone(s.Federations)
		c.edit(&s)
		if got := SweepSpecDiff(base(), s); strings.Join(got, "; ") != strings.Join(c.want, "; ") {
			t.Errorf("case %d: %q; want %q", i, got, c.want)
		}
	}
}
