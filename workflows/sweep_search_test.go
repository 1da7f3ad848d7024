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

// bigDims is a grid of 8 × 6 = 48 configurations of β and the number of
// clusters (the size of the benchmark's space).
var bigDims = []search.Dimension{
	{Name: "beta", Choice: []any{0.0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 1.0}},
	{Name: "clusters", Choice: []any{1, 2, 3, 4, 5, 6}},
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

// fakeTest is the fake campaigns' test AUC after a round whose validation
// AUC is val: it falls as val rises, so ranking trials on the test metric
// reverses their validation ranking and takes other decisions than the
// replay (which ranks on validation) at every rung.
func fakeTest(val float64) float64 { return 1.4 - val }

// searchHarness runs SweepWorkflow on a test environment whose campaign
// children train fakeVal curves, honour StopAfterRound and resume from
// State, and record every round they train.
type searchHarness struct {
	env *testsuite.TestWorkflowEnvironment

	mu           sync.Mutex
	trained      map[string][]int // campaign → rounds trained, in order
	starts       []string         // "campaign from→to" per child run, in start order
	results      *pipeline.BuildSweepResultsInput
	records      []pipeline.SearchRecord           // every RecordSearch, in order
	failClusters float64                           // campaigns of trials with this many clusters fail in round 1 (−1: none)
	saved        map[string]pipeline.CampaignState // paused states by key
	signals      map[string][]string               // campaign → pause and resume signals received
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
	h.env.RegisterActivityWithOptions(func(_ context.Context, in pipeline.SearchRecordInput) (pipeline.ArtifactRef, error) {
		h.mu.Lock()
		h.records = append(h.records, in.Record)
		h.mu.Unlock()
		return pipeline.ArtifactRef{Key: artifact.SweepSearchKey(in.Sweep)}, nil
	}, activity.RegisterOptions{Name: pipeline.ActivityRecordSearch})
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
				st.AUCCurve = append(st.AUCCurve, fakeTest(v))
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

// trialConfig reads back the searched values (β and the clusters) from a
// campaign's hyper-parameters.
func trialConfig(spec pipeline.CampaignSpec) []method.ParamValue {
	var out []method.ParamValue
	for _, name := range []string{"beta", "clusters"} {
		p, _ := method.Lookup(name)
		out = append(out, method.ParamValue{Name: name, Value: p.Get(spec.Hyperparameters).Num})
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

// chainRun is what a sweep did over all its runs (runChain).
type chainRun struct {
	out     pipeline.SweepWorkflowOutput
	runs    int
	starts  []string         // child runs, "campaign from→to", sorted
	trained map[string][]int // campaign → rounds trained, in order, across runs
	records int              // RecordSearch calls
	results *pipeline.BuildSweepResultsInput
}

// runChain runs spec to its end, following continue-as-new through fresh
// test environments (S3's paused states outlive every run); setup, when
// given, prepares run k's harness (delayed updates, say) for its input.
func runChain(t *testing.T, spec pipeline.SweepSpec, setup func(k int, in pipeline.SweepWorkflowInput, h *searchHarness)) chainRun {
	t.Helper()
	in := pipeline.SweepWorkflowInput{Spec: spec}
	c := chainRun{trained: map[string][]int{}}
	saved := map[string]pipeline.CampaignState{}
	for {
		c.runs++
		if c.runs > 200 {
			t.Fatal("no end after 200 runs")
		}
		h := newSearchHarness(t)
		h.saved = saved
		if setup != nil {
			setup(c.runs, in, h)
		}
		out, err := h.run(t, in)
		c.starts = append(c.starts, h.starts...)
		for camp, r := range h.trained {
			c.trained[camp] = append(c.trained[camp], r...)
		}
		c.records += len(h.records)
		if err == nil {
			c.out, c.results = out, h.results
			break
		}
		var can *workflow.ContinueAsNewError
		if !errors.As(err, &can) {
			t.Fatalf("run %d: %v", c.runs, err)
		}
		in = pipeline.SweepWorkflowInput{}
		if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &in); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(c.starts)
	return c
}

// replayTable is the fake campaigns' table over dims: for each point, the
// mean over seeds (in campaign-name order, as the sweep sums them) of
// fakeVal and fakeTest after each round; negated when minimising (the
// replay maximises).
func replayTable(t *testing.T, dims []search.Dimension, seeds []uint64, rounds int, minimise bool) search.Table {
	t.Helper()
	space, err := search.NewSpace(dims)
	if err != nil {
		t.Fatal(err)
	}
	names := slices.Clone(seeds)
	slices.SortFunc(names, func(a, b uint64) int { return strings.Compare(fmt.Sprintf("s%d", a), fmt.Sprintf("s%d", b)) })
	table := search.Table{Space: space}
	size, _ := space.GridSize()
	for g := range size {
		c, _ := search.SuggestGrid(space, g)
		row := search.TableRow{Config: c}
		for r := 1; r <= rounds; r++ {
			var v, ts float64
			for _, seed := range names {
				x := fakeVal(c, seed, r, rounds)
				v += x / float64(len(names))
				ts += fakeTest(x) / float64(len(names))
			}
			if minimise {
				v = -v
			}
			row.Val, row.Test = append(row.Val, v), append(row.Test, ts)
		}
		table.Rows = append(table.Rows, row)
	}
	return table
}

// searchCase is one sweep of TestSearchSweepMatchesReplay.
type searchCase struct {
	strategy    search.Strategy
	concurrency int // campaigns at once
	seeds       []uint64
	budget      int // campaign-rounds
	pruner      search.Pruner
	minimise    bool
	warm        int // grid points (the first ones) a warm start seeds
	every       int // continue_as_new_every (0: the default, never here)
	dims        []search.Dimension
}

func (c searchCase) String() string {
	return fmt.Sprintf("%s-c%d-s%d-b%d-p%s-min%v-w%d-e%d", c.strategy, c.concurrency, len(c.seeds), c.budget, c.pruner, c.minimise, c.warm, c.every)
}

// spec returns the case's sweep, with its warm start drawn from table.
func (c searchCase) spec(table search.Table) pipeline.SweepSpec {
	spec := searchSpec(c.strategy, c.seeds, c.budget, c.concurrency)
	spec.ContinueAsNewEvery = c.every
	q := spec.Search
	q.Pruner = c.pruner
	if c.dims != nil {
		q.Dims = c.dims
	}
	if c.minimise {
		q.Mode = pipeline.ModeMin
	}
	if c.warm > 0 {
		q.Warm = &pipeline.SearchWarm{Sweep: "grid"}
		for _, row := range table.Rows[:c.warm] {
			w := pipeline.WarmTrial{Config: row.Config, Val: slices.Clone(row.Val), Test: row.Test, Campaigns: []string{"grid-" + row.Config.String()}}
			if c.minimise {
				for r := range w.Val {
					w.Val[r] = -w.Val[r]
				}
			}
			q.Warm.Trials = append(q.Warm.Trials, w)
		}
	}
	return spec
}

// checkAgainstReplay runs the case and checks that the live sweep takes
// exactly the actions of search.Replay over the same curves at the same
// concurrency (the same actions in the same order at the same virtual
// times, the same child runs), trains no campaign's round twice (a
// promotion resumes from the paused round), spends what the replay spends
// within the budget, and ends with the replay's trials. It returns the
// chain for further checks.
func checkAgainstReplay(t *testing.T, c searchCase, setup func(int, pipeline.SweepWorkflowInput, *searchHarness)) (chainRun, search.ReplayResult) {
	t.Helper()
	dims := c.dims
	if dims == nil {
		dims = searchDims
	}
	table := replayTable(t, dims, c.seeds, 9, c.minimise)
	spec := c.spec(table)
	perTrial := len(c.seeds)
	ch := runChain(t, spec, setup)
	opts := search.ReplayOptions{Budget: c.budget / perTrial, Concurrency: max(1, c.concurrency/perTrial), Pruner: c.pruner}
	for i, row := range table.Rows[:c.warm] {
		opts.Warm = append(opts.Warm, search.Trial{Index: i, Config: row.Config, State: search.Complete, Values: row.Val})
	}
	rep, err := search.Replay(table, c.strategy, opts, 7)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, ev := range rep.Events {
		if ev.Action.Kind.Trains() {
			for _, seed := range c.seeds {
				want = append(want, fmt.Sprintf("ss-fed-ptopofl-%s-s%d %d→%d", pipeline.SearchTrialLabel(ev.Action.Trial), seed, ev.Action.FromRound, ev.Action.ToRound))
			}
		}
	}
	// Children started in one workflow task record their start in no
	// defined order: compare the child runs as sets (each is distinct: a
	// trial trains each stretch of rounds once); the actions themselves
	// in order.
	slices.Sort(want)
	if strings.Join(ch.starts, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s: child runs\n%s\nreplay's actions\n%s", c, strings.Join(ch.starts, "\n"), strings.Join(want, "\n"))
	}
	if ch.out.Search == nil {
		t.Fatalf("%s: no search state in the output", c)
	}
	var got, replayed []string
	for _, ev := range ch.out.Search.Events {
		got = append(got, fmt.Sprintf("%s t%d %d→%d @%d", ev.Kind, ev.Trial, ev.From, ev.To, ev.Start))
	}
	for _, ev := range rep.Events {
		a := ev.Action
		replayed = append(replayed, fmt.Sprintf("%s t%d %d→%d @%d", a.Kind, a.Trial, a.FromRound, a.ToRound, ev.Start))
	}
	if !slices.Equal(got, replayed) {
		t.Errorf("%s: actions\n%s\nreplay's\n%s", c, strings.Join(got, "\n"), strings.Join(replayed, "\n"))
	}
	spent := 0
	for camp, rounds := range ch.trained {
		for k, r := range rounds {
			if r != k+1 {
				t.Errorf("%s: campaign %s trained rounds %v; want 1, 2, … once each", c, camp, rounds)
				break
			}
		}
		spent += len(rounds)
	}
	if spent != rep.Spent*perTrial || spent > c.budget {
		t.Errorf("%s: trained %d campaign-rounds; replay %d × %d, budget %d", c, spent, rep.Spent, perTrial, c.budget)
	}
	if ch.out.Search.Ended != rep.Ended {
		t.Errorf("%s: search ended %q; replay %q", c, ch.out.Search.Ended, rep.Ended)
	}
	if len(ch.out.Search.Trials) != len(rep.Trials) || ch.results == nil || len(ch.results.Outcomes) != (len(rep.Trials)-c.warm)*perTrial {
		t.Fatalf("%s: %d trials, results %v; replay %d trials", c, len(ch.out.Search.Trials), ch.results, len(rep.Trials))
	}
	// The search record stored with the results is the sweep's last: it
	// says the sweep is done, so no reader takes a paused trial for one
	// that may still be promoted.
	if rec := ch.results.Search; rec == nil || rec.State != pipeline.SweepDone {
		t.Errorf("%s: the results' search record %+v, want state %q", c, rec, pipeline.SweepDone)
	}
	for k, o := range ch.results.Outcomes {
		tr := rep.Trials[c.warm+k/perTrial]
		if o.Search == nil || o.Search.Trial != tr.Index || o.Search.Status != string(tr.State) || o.RoundsDone != tr.Rounds() {
			t.Errorf("%s: outcome %d %+v (search %+v); replay's trial %d %s after %d rounds", c, k, o, o.Search, tr.Index, tr.State, tr.Rounds())
		}
		if tr.State == search.Pruned && o.Search.PrunedAtRound != tr.Rounds() {
			t.Errorf("%s: trial %d pruned at %d; want %d", c, tr.Index, o.Search.PrunedAtRound, tr.Rounds())
		}
	}
	return ch, rep
}

// TestSearchSweepMatchesReplay: the live sweep takes exactly the actions
// of search.Replay over a table of the same curves, at one trial at a
// time and at several, under every strategy, the median pruner, a
// minimised objective, a warm start and several campaigns per trial. The
// fakes' test metric ranks trials in the reverse order of their
// validation metric, so a sweep that ranked on test would not match.
func TestSearchSweepMatchesReplay(t *testing.T) {
	one := []uint64{1}
	for i, c := range []searchCase{
		{strategy: search.StrategyASHA, concurrency: 1, seeds: one, budget: 40},
		{strategy: search.StrategyTPEASHA, concurrency: 1, seeds: one, budget: 40},
		{strategy: search.StrategyHyperband, concurrency: 1, seeds: one, budget: 40},
		{strategy: search.StrategyRandom, concurrency: 1, seeds: one, budget: 40},
		{strategy: search.StrategyASHA, concurrency: 3, seeds: one, budget: 40},
		{strategy: search.StrategyTPEASHA, concurrency: 2, seeds: one, budget: 40},
		{strategy: search.StrategyHyperband, concurrency: 4, seeds: one, budget: 40},
		{strategy: search.StrategyTPE, concurrency: 3, seeds: one, budget: 40},
		{strategy: search.StrategyRandom, concurrency: 1, seeds: one, budget: 70, pruner: search.PrunerMedian},
		{strategy: search.StrategyTPE, concurrency: 3, seeds: one, budget: 70, pruner: search.PrunerMedian},
		{strategy: search.StrategyASHA, concurrency: 3, seeds: one, budget: 40, minimise: true},
		{strategy: search.StrategyTPEASHA, concurrency: 2, seeds: one, budget: 40, warm: 6},
		{strategy: search.StrategyRandom, concurrency: 4, seeds: []uint64{1, 2}, budget: 72, pruner: search.PrunerMedian, minimise: true, warm: 5},
	} {
		t.Run(fmt.Sprintf("%d-%s", i, c), func(t *testing.T) {
			ch, _ := checkAgainstReplay(t, c, nil)
			if ch.runs != 1 || ch.records == 0 {
				t.Errorf("%d runs, %d records; want one run writing its record as it goes", ch.runs, ch.records)
			}
			for _, w := range ch.out.Search.Trials[:c.warm] {
				if !w.Warm || w.State != search.Complete || len(w.Campaigns) != 0 {
					t.Errorf("warm trial %d: %+v; want complete, without campaigns", w.Index, w)
				}
			}
			for _, s := range ch.starts {
				for _, w := range ch.out.Search.Trials[:c.warm] {
					if strings.Contains(s, pipeline.SearchTrialLabel(w.Index)) {
						t.Errorf("warm trial %d trained again: %s", w.Index, s)
					}
				}
			}
		})
	}
}

// TestSearchSweepCutsMatchReplay: at three trials at once, a sweep that
// continues as new after every second or third campaign it starts — so
// that every cut falls with trials in flight — and is paused for hours in
// its second run (a run whose campaigns all end while it is paused hands
// the pause on, and the next run is resumed) takes exactly the replay's
// actions, as one run does, across every continue-as-new. (The test
// environment cannot signal mocked children; the campaigns' pause and
// resume signals are tested on a real stack, cmd/starter's
// TestSweepSteering.)
func TestSearchSweepCutsMatchReplay(t *testing.T) {
	for i, c := range []searchCase{
		{strategy: search.StrategyASHA, concurrency: 3, seeds: []uint64{1}, budget: 60, every: 2},
		{strategy: search.StrategyTPEASHA, concurrency: 3, seeds: []uint64{1}, budget: 60, every: 2},
		{strategy: search.StrategyHyperband, concurrency: 3, seeds: []uint64{1}, budget: 60, every: 3},
		{strategy: search.StrategyTPE, concurrency: 3, seeds: []uint64{1}, budget: 70, every: 2, pruner: search.PrunerMedian},
	} {
		t.Run(fmt.Sprintf("%d-%s", i, c), func(t *testing.T) {
			pauses, resumes := 0, 0
			ch, _ := checkAgainstReplay(t, c, func(k int, in pipeline.SweepWorkflowInput, h *searchHarness) {
				update := func(name string, at time.Duration) {
					h.env.RegisterDelayedCallback(func() {
						h.env.UpdateWorkflow(name, name+"-1", &testsuite.TestUpdateCallback{
							OnAccept: func() {}, OnReject: func(err error) { t.Errorf("%s rejected: %v", name, err) }, OnComplete: func(any, error) {},
						}, pipeline.ControlInput{Reason: "maintenance"})
					}, at)
				}
				switch {
				case k == 2:
					pauses++
					update(pipeline.UpdatePause, 2*time.Minute)
					update(pipeline.UpdateResume, 5*time.Hour) // if the run is still there
				case in.State != nil && in.State.Paused:
					resumes++
					update(pipeline.UpdateResume, 3*time.Hour)
				}
			})
			if ch.runs < 4 || pauses != 1 || ch.out.ContinuedAsNew != ch.runs-1 {
				t.Errorf("%d runs (output: %d continued as new), %d paused; want at least 3 continue-as-new, one run paused", ch.runs, ch.out.ContinuedAsNew, pauses)
			}
			t.Logf("%d runs, paused across continue-as-new: %v", ch.runs, resumes > 0)
		})
	}
}

// TestSearchSweepSuggestedCut: when Temporal suggests continuing as new
// (history size), mid-run with three trials in flight, the sweep cuts
// there as at its own run limit, and still takes exactly the replay's
// actions.
func TestSearchSweepSuggestedCut(t *testing.T) {
	for i, c := range []searchCase{
		{strategy: search.StrategyASHA, concurrency: 3, seeds: []uint64{1}, budget: 60},
		{strategy: search.StrategyTPEASHA, concurrency: 3, seeds: []uint64{1, 2}, budget: 72},
	} {
		t.Run(fmt.Sprintf("%d-%s", i, c), func(t *testing.T) {
			ch, _ := checkAgainstReplay(t, c, func(k int, _ pipeline.SweepWorkflowInput, h *searchHarness) {
				if k <= 2 {
					// Runs 1 and 2 are told to continue as new after
					// 20 minutes; the next runs are not.
					h.env.RegisterDelayedCallback(func() { h.env.SetContinueAsNewSuggested(true) }, 20*time.Minute)
				}
			})
			if ch.runs != 3 || ch.out.ContinuedAsNew != 2 {
				t.Errorf("%d runs, %d continued as new; want 3 and 2 (the suggestions)", ch.runs, ch.out.ContinuedAsNew)
			}
		})
	}
}

// TestSearchSweepExhaustsSpace: on the 48-point space, with budget to
// spare, asha and tpe+asha at two trials at once start every
// configuration exactly once (so none twice at the same rung: its later
// rungs are promotions of that one trial) and end because the space is
// exhausted, with rounds unspent, as the replay does.
func TestSearchSweepExhaustsSpace(t *testing.T) {
	for i, c := range []searchCase{
		{strategy: search.StrategyASHA, concurrency: 2, seeds: []uint64{1}, budget: 2000, dims: bigDims},
		{strategy: search.StrategyTPEASHA, concurrency: 2, seeds: []uint64{1}, budget: 2000, dims: bigDims},
	} {
		t.Run(fmt.Sprintf("%d-%s", i, c), func(t *testing.T) {
			ch, rep := checkAgainstReplay(t, c, nil)
			seen := map[string]int{}
			for _, tr := range ch.out.Search.Trials {
				seen[search.Config(tr.Config).String()]++
			}
			spent := 0
			for _, r := range ch.trained {
				spent += len(r)
			}
			for cfg, n := range seen {
				if n > 1 {
					t.Errorf("%s started %d times", cfg, n)
				}
			}
			if len(seen) != 48 || ch.out.Search.Ended != search.WhySpace || spent >= c.budget {
				t.Errorf("%d configurations, ended %q, %d of %d campaign-rounds; want 48, %q, rounds unspent", len(seen), ch.out.Search.Ended, spent, c.budget, search.WhySpace)
			}
			t.Logf("%d trials, %d campaign-rounds (replay %d), ended %q", len(ch.out.Search.Trials), spent, rep.Spent, ch.out.Search.Ended)
		})
	}
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
	if rec := h.results.Search; rec == nil || rec.State != pipeline.SweepStopped {
		t.Errorf("the results' search record %+v, want state %q", rec, pipeline.SweepStopped)
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
