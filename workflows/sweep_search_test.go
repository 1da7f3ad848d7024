package workflows

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/ptopofl/ptopofl/activities"
	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/search"
)

// searchDims is a grid of 5 × 3 = 15 configurations of β and the number
// of clusters.
var searchDims = []search.Dimension{
	{Name: "beta", Choice: []any{0.0, 0.25, 0.5, 0.75, 1.0}},
	{Name: "clusters", Choice: []any{1, 2, 3}},
}

// fakeVal is the fake campaigns' validation AUC after round r of R: it
// grows with β over the rounds and with the clusters at once, so the
// early rounds and the last rank configurations differently, and it moves
// a little with the seed.
func fakeVal(config []method.ParamValue, seed uint64, r, rounds int) float64 {
	var beta, clusters float64
	for _, pv := range config {
		switch pv.Name {
		case "beta":
			beta = pv.Value
		case "clusters":
			clusters = pv.Value
		}
	}
	return 0.6 + 0.02*clusters*float64(rounds-r)/float64(rounds) + 0.2*beta*float64(r)/float64(rounds) + float64(seed%3)/1000
}

// searchHarness runs SweepWorkflow on a test environment whose campaign
// children train fakeVal curves, honour StopAfterRound and resume from
// State, and record every round they train.
type searchHarness struct {
	env *testsuite.TestWorkflowEnvironment

	mu           sync.Mutex
	trained      map[string][]int // campaign → rounds trained, in order
	starts       []string         // "campaign from→to" per child run, in start order
	results      *pipeline.BuildSweepResultsInput
	failClusters float64                           // campaigns of trials with this many clusters fail in round 1 (−1: none)
	saved        map[string]pipeline.CampaignState // paused states by key
}

func newSearchHarness(t *testing.T) *searchHarness {
	var ts testsuite.WorkflowTestSuite
	h := &searchHarness{env: ts.NewTestWorkflowEnvironment(), trained: map[string][]int{}, saved: map[string]pipeline.CampaignState{}, failClusters: -1}
	RegisterSweep(h.env)
	Register(h.env)
	h.env.RegisterActivityWithOptions(func(context.Context, pipeline.RecordSweepInput) (pipeline.RecordSweepOutput, error) {
		return pipeline.RecordSweepOutput{}, nil
	}, activity.RegisterOptions{Name: pipeline.ActivityRecordSweep})
	h.env.RegisterActivityWithOptions(func(_ context.Context, in pipeline.BuildSweepResultsInput) (pipeline.BuildSweepResultsOutput, error) {
		h.mu.Lock()
		h.results = &in
		h.mu.Unlock()
		return pipeline.BuildSweepResultsOutput{Results: pipeline.ArtifactRef{Key: artifact.SweepResultsKey(in.Spec.Sweep)}}, nil
	}, activity.RegisterOptions{Name: pipeline.ActivityBuildSweepResults})
	h.env.RegisterActivityWithOptions(func(_ context.Context, in pipeline.SearchNextInput) (pipeline.SearchNextOutput, error) {
		return activities.SearchNext(in)
	}, activity.RegisterOptions{Name: pipeline.ActivitySearchNext})
	h.env.OnWorkflow(pipeline.CampaignWorkflowName, mock.Anything, mock.Anything).Return(
		func(ctx workflow.Context, in pipeline.CampaignWorkflowInput) (pipeline.CampaignWorkflowOutput, error) {
			st := pipeline.CampaignState{NextRound: 1}
			if in.ResumeFrom != nil {
				h.mu.Lock()
				saved, ok := h.saved[in.ResumeFrom.Key]
				h.mu.Unlock()
				if !ok {
					return pipeline.CampaignWorkflowOutput{}, fmt.Errorf("no paused state at %s", in.ResumeFrom.Key)
				}
				st = saved
			}
			stop := in.Spec.Rounds
			if in.StopAfterRound > 0 {
				stop = in.StopAfterRound
			}
			config := trialConfig(in.Spec)
			if config[1].Value == h.failClusters {
				return pipeline.CampaignWorkflowOutput{}, temporal.NewNonRetryableApplicationError("invalid campaign spec: clusters", pipeline.ErrTypeInvalidSpec, nil)
			}
			h.mu.Lock()
			h.starts = append(h.starts, fmt.Sprintf("%s %d→%d", in.Spec.Campaign, st.NextRound-1, stop))
			h.mu.Unlock()
			for ; st.NextRound <= stop; st.NextRound++ {
				// Rounds take 1 to 7 minutes, varying by campaign and
				// round: the children finish in an order unlike the
				// virtual time's, which the sweep's decisions must not
				// depend on.
				hs := fnv.New32a()
				fmt.Fprintf(hs, "%s/%d", in.Spec.Campaign, st.NextRound)
				if err := workflow.Sleep(ctx, time.Duration(1+hs.Sum32()%7)*time.Minute); err != nil {
					return pipeline.CampaignWorkflowOutput{}, err
				}
				h.mu.Lock()
				h.trained[in.Spec.Campaign] = append(h.trained[in.Spec.Campaign], st.NextRound)
				h.mu.Unlock()
				v := fakeVal(config, in.Spec.Seed, st.NextRound, in.Spec.Rounds)
				st.ValAUCCurve = append(st.ValAUCCurve, v)
				st.AUCCurve = append(st.AUCCurve, v-0.01)
			}
			out := pipeline.CampaignWorkflowOutput{
				Campaign: in.Spec.Campaign, State: pipeline.StateDone, RoundsDone: st.NextRound - 1,
				AUCCurve: st.AUCCurve, ValAUCCurve: st.ValAUCCurve,
			}
			if stop < in.Spec.Rounds {
				// As CampaignWorkflow saves it: a reference to the state.
				key := artifact.PausedStateKey(in.Spec.Campaign, stop)
				h.mu.Lock()
				h.saved[key] = st
				h.mu.Unlock()
				out.State, out.Resume = pipeline.StatePaused, &pipeline.ArtifactRef{Bucket: in.Spec.Bucket, Key: key}
			}
			return out, nil
		}).Maybe()
	return h
}

// trialConfig reads back the searched values from a campaign's
// hyper-parameters.
func trialConfig(spec pipeline.CampaignSpec) []method.ParamValue {
	var out []method.ParamValue
	for _, d := range searchDims {
		p, _ := method.Lookup(d.Name)
		out = append(out, method.ParamValue{Name: d.Name, Value: p.Get(spec.Hyperparameters).Num})
	}
	return out
}

func searchSpec(strategy search.Strategy, seeds []uint64, budget, concurrency int) pipeline.SweepSpec {
	h := method.Defaults(method.Default)
	h.ValidationFraction = 0.2
	return pipeline.SweepSpec{
		Sweep: "ss", Rounds: 9, Seeds: seeds,
		Methods:     []pipeline.SweepMethod{{Method: learn.PTopoFL, Hyperparameters: h}},
		Federations: []pipeline.SweepFederation{{Name: "fed", Sites: []pipeline.Site{{Name: "c0"}, {Name: "c1"}, {Name: "c2"}, {Name: "c3"}}}},
		Concurrency: concurrency, Bucket: "ptopofl",
		Search: &pipeline.SweepSearch{Dims: searchDims, Strategy: strategy, Budget: budget, Objective: pipeline.ObjectiveValAUC, Seed: 7},
	}
}

func (h *searchHarness) run(t *testing.T, in pipeline.SweepWorkflowInput) (pipeline.SweepWorkflowOutput, error) {
	t.Helper()
	h.env.ExecuteWorkflow(SweepWorkflow, in)
	if !h.env.IsWorkflowCompleted() {
		t.Fatal("sweep did not complete")
	}
	var out pipeline.SweepWorkflowOutput
	err := h.env.GetWorkflowError()
	if err == nil {
		err = h.env.GetWorkflowResult(&out)
	}
	return out, err
}

// TestSearchSweepMatchesReplay: one campaign per trial, one at a time,
// the live sweep takes exactly the actions of search.Replay over a table
// of the same curves (the same starts, promotions and rounds), trains no
// campaign's round twice (a promotion resumes from the paused round),
// spends what it reports and keeps within the budget.
func TestSearchSweepMatchesReplay(t *testing.T) {
	for i, c := range []struct {
		strategy    search.Strategy
		concurrency int
	}{
		{search.StrategyASHA, 1}, {search.StrategyTPEASHA, 1}, {search.StrategyHyperband, 1}, {search.StrategyRandom, 1},
		{search.StrategyASHA, 3}, {search.StrategyTPEASHA, 2}, {search.StrategyHyperband, 4}, {search.StrategyTPE, 3},
	} {
		strategy := c.strategy
		t.Run(fmt.Sprintf("%s-%d", strategy, c.concurrency), func(t *testing.T) {
			const budget = 40
			h := newSearchHarness(t)
			spec := searchSpec(strategy, []uint64{1}, budget, c.concurrency)
			out, err := h.run(t, pipeline.SweepWorkflowInput{Spec: spec})
			if err != nil {
				t.Fatalf("case %d: %v", i, err)
			}
			space, err := search.NewSpace(searchDims)
			if err != nil {
				t.Fatal(err)
			}
			table := search.Table{Space: space}
			size, _ := space.GridSize()
			for g := range size {
				c, _ := search.SuggestGrid(space, g)
				row := search.TableRow{Config: c}
				for r := 1; r <= spec.Rounds; r++ {
					v := fakeVal(c, 1, r, spec.Rounds)
					row.Val, row.Test = append(row.Val, v), append(row.Test, v-0.01)
				}
				table.Rows = append(table.Rows, row)
			}
			rep, err := search.Replay(table, strategy, search.ReplayOptions{Budget: budget, Concurrency: c.concurrency}, 7)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, ev := range rep.Events {
				want = append(want, fmt.Sprintf("ss-fed-ptopofl-%s-s1 %d→%d", pipeline.SearchTrialLabel(ev.Action.Trial), ev.Action.FromRound, ev.Action.ToRound))
			}
			// Children started in one workflow task record their start in
			// no defined order: compare the actions as sets (each is
			// distinct: a trial trains each stretch of rounds once).
			slices.Sort(want)
			slices.Sort(h.starts)
			if strings.Join(h.starts, "\n") != strings.Join(want, "\n") {
				t.Errorf("case %d: child runs\n%s\nreplay's actions\n%s", i, strings.Join(h.starts, "\n"), strings.Join(want, "\n"))
			}
			spent := 0
			for c, rounds := range h.trained {
				for k, r := range rounds {
					if r != k+1 {
						t.Errorf("case %d: campaign %s trained rounds %v; want 1, 2, … once each", i, c, rounds)
						break
					}
				}
				spent += len(rounds)
			}
			if spent != rep.Spent || spent > budget {
				t.Errorf("case %d: trained %d campaign-rounds; replay %d, budget %d", i, spent, rep.Spent, budget)
			}
			if out.Search == nil || out.Search.Ended != search.WhyBudget && out.Search.Ended != search.WhyGrid {
				t.Errorf("case %d: search ended %+v; want the budget's or the grid's end", i, out.Search)
			}
			if h.results == nil || len(h.results.Outcomes) != len(rep.Trials) || out.Search == nil || len(out.Search.Trials) != len(rep.Trials) {
				t.Fatalf("case %d: results %v, output trials %v; want %d trials", i, h.results, out.Search, len(rep.Trials))
			}
			for k, o := range h.results.Outcomes {
				tr := rep.Trials[k]
				if o.Search == nil || o.Search.Trial != tr.Index || o.Search.Status != string(tr.State) || o.RoundsDone != tr.Rounds() {
					t.Errorf("case %d: outcome %d %+v (search %+v); replay's trial %d %s after %d rounds", i, k, o, o.Search, tr.Index, tr.State, tr.Rounds())
				}
				if tr.State == search.Pruned && o.Search.PrunedAtRound != tr.Rounds() {
					t.Errorf("case %d: trial %d pruned at %d; want %d", i, tr.Index, o.Search.PrunedAtRound, tr.Rounds())
				}
			}
		})
	}
}

// TestSearchSweepContinuesAsNew: a sweep that continues as new after every
// few campaigns carries its trials and paused campaigns' states across
// runs and ends with the same trials as one run.
func TestSearchSweepContinuesAsNew(t *testing.T) {
	one := newSearchHarness(t)
	spec := searchSpec(search.StrategyASHA, []uint64{1, 2}, 60, 4)
	whole, err := one.run(t, pipeline.SweepWorkflowInput{Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	spec.ContinueAsNewEvery = 3
	in := pipeline.SweepWorkflowInput{Spec: spec}
	var starts []string
	trained := map[string][]int{}
	saved := map[string]pipeline.CampaignState{}
	var out pipeline.SweepWorkflowOutput
	for runs := 1; ; runs++ {
		if runs > 100 {
			t.Fatal("no end after 100 runs")
		}
		h := newSearchHarness(t)
		h.saved = saved // S3 outlives every run
		out, err = h.run(t, in)
		starts = append(starts, h.starts...)
		for c, r := range h.trained {
			trained[c] = append(trained[c], r...)
		}
		var can *workflow.ContinueAsNewError
		if err == nil {
			break
		}
		if !errors.As(err, &can) {
			t.Fatal(err)
		}
		in = pipeline.SweepWorkflowInput{}
		if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &in); err != nil {
			t.Fatal(err)
		}
	}
	// The mocks of one wave record their starts in no defined order.
	slices.Sort(starts)
	slices.Sort(one.starts)
	if !slices.Equal(starts, one.starts) {
		t.Errorf("continued runs' child runs\n%s\none run's\n%s", strings.Join(starts, "\n"), strings.Join(one.starts, "\n"))
	}
	for c, rounds := range trained {
		for k, r := range rounds {
			if r != k+1 {
				t.Errorf("campaign %s trained rounds %v across runs; want each once, in order", c, rounds)
				break
			}
		}
	}
	if fmt.Sprint(trialsSummary(out.Search)) != fmt.Sprint(trialsSummary(whole.Search)) {
		t.Errorf("continued runs' trials\n%v\none run's\n%v", trialsSummary(out.Search), trialsSummary(whole.Search))
	}
}

func trialsSummary(st *pipeline.SearchState) []string {
	if st == nil {
		return nil
	}
	var out []string
	for _, t := range st.Trials {
		out = append(out, fmt.Sprintf("%d %v %s rung %d → %d", t.Index, search.Config(t.Config), t.State, t.Rung, t.Target))
	}
	return out
}

// TestValidateExtend pins the extension rules (amounts hand-picked).
func TestValidateExtend(t *testing.T) {
	cases := []struct {
		st   *pipeline.SearchState
		in   pipeline.ExtendInput
		want string // "" for accepted
	}{
		0: {&pipeline.SearchState{Budget: 10}, pipeline.ExtendInput{Budget: 5}, ""},
		1: {&pipeline.SearchState{TrialCap: 3}, pipeline.ExtendInput{Trials: 2}, ""},
		2: {&pipeline.SearchState{Budget: 10, TrialCap: 3}, pipeline.ExtendInput{Budget: 5, Trials: 1}, ""},
		3: {nil, pipeline.ExtendInput{Budget: 5}, "is a grid"},
		4: {&pipeline.SearchState{Budget: 10}, pipeline.ExtendInput{}, "give --campaign-rounds"},
		5: {&pipeline.SearchState{Budget: 10}, pipeline.ExtendInput{Budget: -1}, "must be ≥ 0"},
		6: {&pipeline.SearchState{Budget: 10}, pipeline.ExtendInput{Trials: 2}, "no trials cap"},
		7: {&pipeline.SearchState{TrialCap: 3}, pipeline.ExtendInput{Budget: 2}, "no campaign-rounds budget"},
	}
	for i, c := range cases {
		err := pipeline.ValidateExtend("sw", c.st, c.in)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("case %d: %v", i, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("case %d: error %v; want one containing %q", i, err, c.want)
		}
	}
}

// TestSearchSweepFailedTrialAndStop: a trial whose campaigns fail is
// recorded failed (status failed in the results) and the search goes on
// without it; a stop update starts no new trial, stops the running
// campaigns and builds the results from what ran, state stopped.
func TestSearchSweepFailedTrialAndStop(t *testing.T) {
	h := newSearchHarness(t)
	h.failClusters = 1
	spec := searchSpec(search.StrategyRandom, []uint64{1}, 200, 2)
	h.env.RegisterDelayedCallback(func() {
		h.env.UpdateWorkflow(pipeline.UpdateStop, "stop-1", &testsuite.TestUpdateCallback{
			OnAccept: func() {}, OnReject: func(err error) { t.Errorf("stop rejected: %v", err) }, OnComplete: func(any, error) {},
		}, pipeline.ControlInput{Reason: "enough"})
	}, 150*time.Minute)
	out, err := h.run(t, pipeline.SweepWorkflowInput{Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	if out.State != pipeline.SweepStopped || h.results == nil {
		t.Fatalf("state %s, results %v; want stopped with results", out.State, h.results)
	}
	failed, pruned := 0, 0
	for _, o := range h.results.Outcomes {
		switch {
		case o.Search == nil:
			t.Fatalf("outcome %s without search info", o.Campaign)
		case o.Search.Status == string(search.Failed):
			failed++
			if o.State != pipeline.StateFailed {
				t.Errorf("%s: status failed, state %s", o.Campaign, o.State)
			}
		case o.Search.Status == string(search.Pruned):
			pruned++
		}
	}
	spent := 0
	for _, r := range h.trained {
		spent += len(r)
	}
	if failed == 0 || spent >= 200 || len(h.results.Outcomes) < 3 {
		t.Errorf("%d failed, %d pruned of %d trials, %d rounds trained: want a failed trial and a stop before the budget", failed, pruned, len(h.results.Outcomes), spent)
	}
	t.Logf("stopped after %d trials (%d failed, %d pruned), %d campaign-rounds", len(h.results.Outcomes), failed, pruned, spent)
}
