package searchview

import (
	"fmt"
	"testing"

	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/search"
)

// curvesOf serves fixed curves by trial.
func curvesOf(m map[int][2][]float64) Curves {
	return func(trial int) ([]float64, []float64) {
		c := m[trial]
		return c[0], c[1]
	}
}

// twoTrials is a record of two trials started at once, trial 1 promoted
// from round 1 to 3 (trial 0 left paused), at 2 campaigns each.
func twoTrials(q pipeline.SweepSearch) pipeline.SearchRecord {
	return pipeline.SearchRecord{
		Search: q, PerTrial: 2, Budget: 8,
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
}

// TestReport: the expected curve and rung table are worked out by hand
// from the incumbent rule (the best validation among the trials trained
// furthest) in the order the actions end; minimised, the first point's
// incumbent is the lower of the two at round 1.
func TestReport(t *testing.T) {
	curves := curvesOf(map[int][2][]float64{
		0: {{0.6}, {0.7}},
		1: {{0.65, 0.7, 0.8}, {0.75, 0.76, 0.77}},
	})
	for i, c := range []struct {
		mode string
		want []string
	}{
		// Spent: 2 campaigns × 1 round, then × 1, then × 2.
		0: {"", []string{"2 t0 r1 0.6 0.7", "4 t1 r1 0.65 0.75", "8 t1 r3 0.8 0.77"}},
		1: {pipeline.ModeMin, []string{"2 t0 r1 0.6 0.7", "4 t0 r1 0.6 0.7", "8 t1 r3 0.8 0.77"}},
	} {
		rep := Report("s", 3, twoTrials(pipeline.SweepSearch{Strategy: search.StrategyASHA, Objective: pipeline.ObjectiveValAUC, Mode: c.mode}), curves)
		if len(rep.Curve) != len(c.want) {
			t.Fatalf("case %d: curve %+v; want %v", i, rep.Curve, c.want)
		}
		for k, p := range rep.Curve {
			if got := fmt.Sprintf("%d t%d r%d %v %v", p.Spent, p.Trial, p.Round, p.Val, p.Test); got != c.want[k] {
				t.Errorf("case %d point %d: %s; want %s", i, k, got, c.want[k])
			}
		}
		if rep.Spent != 8 || len(rep.Trials) != 2 {
			t.Fatalf("case %d: spent %d, %d trials", i, rep.Spent, len(rep.Trials))
		}
		for k, w := range []struct{ status, rungs, why string }{
			0: {"pruned", "[{0 1 0.6}]", "paused at round 1; not among the rung's best before the budget was spent"},
			1: {"complete", "[{0 1 0.65} {1 3 0.8}]", "trained to the last round (3)"},
		} {
			tr := rep.Trials[k]
			if tr.Status != w.status || fmt.Sprint(tr.Rungs) != w.rungs || tr.Why != w.why {
				t.Errorf("case %d trial %d: %s %v %q; want %s %s %q", i, k, tr.Status, tr.Rungs, tr.Why, w.status, w.rungs, w.why)
			}
		}
	}
}

// TestReportRunning: in a record written while the sweep runs, an action
// under way is not on the curve and its trial says where it trains to; a
// paused trial waits for its rung's decision; a trial the median pruner
// stopped says so.
func TestReportRunning(t *testing.T) {
	rec := twoTrials(pipeline.SweepSearch{Strategy: search.StrategyRandom, Pruner: search.PrunerMedian, Objective: pipeline.ObjectiveValAUC})
	rec.State = pipeline.SweepRunning
	rec.Trials[1].State, rec.Trials[1].Target = search.Running, 3
	rec.Trials = append(rec.Trials, pipeline.SearchTrial{Index: 2, State: search.Pruned})
	rec.Events = append(rec.Events, pipeline.SearchEvent{Kind: search.Start, Trial: 2, To: 1, Start: 1}, pipeline.SearchEvent{Kind: search.Prune, Trial: 2, From: 1, To: 1, Start: 2})
	curves := curvesOf(map[int][2][]float64{0: {{0.6}, {0.7}}, 1: {{0.65}, {0.75}}, 2: {{0.5}, {0.6}}})
	rep := Report("s", 3, rec, curves)
	if n := len(rep.Curve); n != 3 || rep.Spent != 6 {
		t.Errorf("curve %+v, spent %d; want 3 points (the promotion under way left out), 6", rep.Curve, rep.Spent)
	}
	for k, want := range []string{
		"paused at round 1, waiting for its rung's decision",
		"training to round 3",
		"pruned at round 1: its best val_auc so far was below the median of the complete trials there",
	} {
		if rep.Trials[k].Why != want {
			t.Errorf("trial %d: %q; want %q", k, rep.Trials[k].Why, want)
		}
	}
}
