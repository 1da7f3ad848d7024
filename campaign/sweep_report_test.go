package campaign

import (
	"fmt"
	"testing"

	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/search"
)

// TestBuildSearchReport: two trials started at once, trial 1 promoted
// from round 1 to 3; the expected curve and rung table are worked out by
// hand from the incumbent rule (the best validation among the trials
// trained furthest) in the order the actions end.
func TestBuildSearchReport(t *testing.T) {
	rec := pipeline.SearchRecord{
		Search:   pipeline.SweepSearch{Strategy: search.StrategyASHA, Objective: pipeline.ObjectiveValAUC},
		PerTrial: 2, Budget: 8,
		Trials: []pipeline.SearchTrial{
			{Index: 0, Config: []method.ParamValue{{Name: "beta", Value: 0.1}}, State: search.Paused},
			{Index: 1, Config: []method.ParamValue{{Name: "beta", Value: 0.9}}, State: search.Complete},
		},
		Events: []pipeline.SearchEvent{
			{Kind: search.Start, Trial: 0, From: 0, To: 1, Start: 0},
			{Kind: search.Start, Trial: 1, From: 0, To: 1, Start: 0},
			{Kind: search.Promote, Trial: 1, Rung: 1, From: 1, To: 3, Start: 1},
		},
	}
	means := map[string]*meanCurve{
		"t0000": {Val: []float64{0.6}, Test: []float64{0.7}},
		"t0001": {Val: []float64{0.65, 0.7, 0.8}, Test: []float64{0.75, 0.76, 0.77}},
	}
	rep := buildSearchReport("s", 3, rec, means)
	// Spent: 2 campaigns × 1 round, then × 1, then × 2.
	want := []string{"2 t0 r1 0.6 0.7", "4 t1 r1 0.65 0.75", "8 t1 r3 0.8 0.77"}
	if len(rep.Curve) != len(want) {
		t.Fatalf("curve %+v; want %v", rep.Curve, want)
	}
	for i, p := range rep.Curve {
		if got := fmt.Sprintf("%d t%d r%d %v %v", p.Spent, p.Trial, p.Round, p.Val, p.Test); got != want[i] {
			t.Errorf("point %d: %s; want %s", i, got, want[i])
		}
	}
	if rep.Spent != 8 || len(rep.Trials) != 2 {
		t.Fatalf("spent %d, %d trials", rep.Spent, len(rep.Trials))
	}
	for i, c := range []struct{ status, rungs, why string }{
		0: {"pruned", "[{0 1 0.6}]", "paused at round 1; not among the rung's best before the budget was spent"},
		1: {"complete", "[{0 1 0.65} {1 3 0.8}]", "trained to the last round (3)"},
	} {
		tr := rep.Trials[i]
		if tr.Status != c.status || fmt.Sprint(tr.Rungs) != c.rungs || tr.Why != c.why {
			t.Errorf("trial %d: %s %v %q; want %s %s %q", i, tr.Status, tr.Rungs, tr.Why, c.status, c.rungs, c.why)
		}
	}
}
