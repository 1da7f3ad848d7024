package searchview

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/search"
)

// statusState is a sweep of three trials of two campaigns (s1, s2), whose
// test metric ranks them opposite to their validation metric: trial 0
// complete at 3 rounds (validation 0.70 and 0.74, test 0.90 and 0.92),
// trial 1 complete (validation 0.80 and 0.82, test 0.60 and 0.62), trial
// 2 running from round 1 to 3 after a first rung (validation 0.5).
func statusState() pipeline.SearchState {
	camp := func(name string, rounds int, val, test []float64, running bool) pipeline.SearchCampaign {
		return pipeline.SearchCampaign{Campaign: name, Outcome: pipeline.CampaignOutcome{RoundsDone: rounds}, Values: val, Test: test, Running: running}
	}
	return pipeline.SearchState{
		Budget: 30,
		Trials: []pipeline.SearchTrial{
			{Index: 0, Config: []method.ParamValue{{Name: "beta", Value: 0.1}}, State: search.Complete, Target: 3, Campaigns: []pipeline.SearchCampaign{
				camp("a-t0000-s1", 3, []float64{0.5, 0.6, 0.70}, []float64{0.8, 0.85, 0.90}, false),
				camp("a-t0000-s2", 3, []float64{0.5, 0.6, 0.74}, []float64{0.8, 0.85, 0.92}, false)}},
			{Index: 1, Config: []method.ParamValue{{Name: "beta", Value: 0.9}}, State: search.Complete, Target: 3, Campaigns: []pipeline.SearchCampaign{
				camp("a-t0001-s1", 3, []float64{0.6, 0.7, 0.80}, []float64{0.7, 0.65, 0.60}, false),
				camp("a-t0001-s2", 3, []float64{0.6, 0.7, 0.82}, []float64{0.7, 0.65, 0.62}, false)}},
			{Index: 2, Config: []method.ParamValue{{Name: "beta", Value: 0.5}}, State: search.Running, Rung: 1, FromRound: 1, Target: 3, Campaigns: []pipeline.SearchCampaign{
				camp("a-t0002-s1", 1, []float64{0.5}, []float64{0.5}, true),
				camp("a-t0002-s2", 1, []float64{0.5}, []float64{0.5}, true)}},
		},
		Events: []pipeline.SearchEvent{
			{Kind: search.Start, Trial: 0, To: 3}, {Kind: search.Start, Trial: 1, To: 3},
			{Kind: search.Start, Trial: 2, To: 1, Start: 3}, {Kind: search.Promote, Trial: 2, Rung: 1, From: 1, To: 3, Start: 4},
		},
	}
}

// TestStatus: the incumbent is the best validation among the trials
// trained furthest — trial 1 (mean 0.81), although trial 0 tests better —
// or, minimising, trial 0 (0.72); the rounds spent are the campaigns'
// (3+3+3+3+1+1 = 14), the running ones will add 2 × 2; rung 3 has two
// trials and one on its way, rung 1 one; the JSON has no NaN.
func TestStatus(t *testing.T) {
	for i, c := range []struct {
		mode      string
		incumbent int
		value     float64
		best3     float64
	}{
		0: {"", 1, 0.81, 0.81},
		1: {pipeline.ModeMin, 0, 0.72, 0.72},
	} {
		st := Build(Input{Sweep: "a", Search: pipeline.SweepSearch{Strategy: search.StrategyASHA, Objective: pipeline.ObjectiveValAUC, Mode: c.mode},
			MaxRounds: 3, PerTrial: 2, State: statusState(), Status: pipeline.SweepStatus{State: pipeline.SweepRunning, Running: []string{"a-t0002-s1", "a-t0002-s2"}}})
		const tol = 1e-12
		if st.Incumbent == nil || st.Incumbent.Trial != c.incumbent || math.Abs(st.Incumbent.Value-c.value) > tol || st.Incumbent.Round != 3 {
			t.Errorf("case %d: incumbent %+v; want trial %d at round 3 with %v", i, st.Incumbent, c.incumbent, c.value)
		}
		if st.RoundsSpent != 14 || st.RoundsRunning != 4 || st.TrialsStarted != 3 || st.Budget != 30 {
			t.Errorf("case %d: spent %d, running %d, started %d, budget %d; want 14, 4, 3, 30", i, st.RoundsSpent, st.RoundsRunning, st.TrialsStarted, st.Budget)
		}
		if len(st.Rungs) != 2 || st.Rungs[0].Round != 1 || st.Rungs[0].Reached != 1 || st.Rungs[1].Round != 3 || st.Rungs[1].Reached != 2 || st.Rungs[1].Running != 1 ||
			st.Rungs[1].Best == nil || math.Abs(*st.Rungs[1].Best-c.best3) > tol {
			t.Errorf("case %d: rungs %+v", i, st.Rungs)
		}
		if tr := st.Trials[2]; tr.State != "running" || tr.Rounds != 1 || tr.Target != 3 || tr.Value == nil || *tr.Value != 0.5 {
			t.Errorf("case %d: running trial %+v", i, tr)
		}
		b, err := json.Marshal(st)
		if err != nil || strings.Contains(string(b), "NaN") {
			t.Errorf("case %d: json %s, %v", i, b, err)
		}
	}
}
