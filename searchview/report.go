package searchview

import (
	"fmt"
	"math"
	"sort"

	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/report"
	"github.com/ptopofl/ptopofl/search"
)

// Curves gives a trial's mean objective (val) and matching test metric
// (test) after each round it trained, by trial index; nil when none.
type Curves func(trial int) (val, test []float64)

// RecordCurves returns the curves rec itself holds (its campaigns' values
// and test values, the warm trials' grid curves) and true when every
// trial that trained has its test values; records written before the
// campaigns' test values were kept need the sweep's curves.parquet.
func RecordCurves(rec pipeline.SearchRecord) (Curves, bool) {
	byIndex := map[int]pipeline.SearchTrial{}
	for _, t := range rec.Trials {
		byIndex[t.Index] = t
		val, test := rec.Search.TrialCurves(t)
		if len(val) > 0 && len(test) != len(val) {
			return nil, false
		}
	}
	return func(trial int) ([]float64, []float64) {
		t, ok := byIndex[trial]
		if !ok {
			return nil, nil
		}
		return rec.Search.TrialCurves(t)
	}, true
}

// Report builds the report of an adaptive sweep from its record: it
// replays rec's training actions in the order the sweep took their results
// (their end in virtual time, the lower trial first on ties; an action
// still under way in a running sweep is left out), and after each gives
// the incumbent over the trials' curves; then each trial's rungs with its
// objective there, its status and why it stopped. Warm trials count from
// the start, at every round their grid trained.
func Report(sweep string, maxRounds int, rec pipeline.SearchRecord, curves Curves) report.SearchInput {
	q := rec.Search
	objective := q.Objective
	if q.Minimise() {
		objective += " (minimised)"
	}
	strategy := string(q.Strategy)
	if q.Pruner != search.PrunerNone {
		strategy += " with the " + string(q.Pruner) + " pruner"
	}
	rep := report.SearchInput{
		Sweep: sweep, Strategy: strategy, Objective: objective,
		Budget: rec.Budget, TrialCap: rec.TrialCap, PerTrial: rec.PerTrial, MaxRounds: maxRounds,
	}
	valAt := func(trial, round int) (float64, float64) {
		val, test := curves(trial)
		if round < 1 || round > len(val) {
			return math.NaN(), math.NaN()
		}
		t := math.NaN()
		if round <= len(test) {
			t = test[round-1]
		}
		return val[round-1], t
	}
	state := map[int]search.State{}
	lastEvent := map[int]int{}
	for i, ev := range rec.Events {
		lastEvent[ev.Trial] = i
	}
	trained := map[int]int{}
	var order []int // trials in index order as they appear
	for _, t := range rec.Trials {
		state[t.Index] = t.State
		if t.Warm {
			trained[t.Index] = maxRounds
			order = append(order, t.Index)
		}
	}
	var events []pipeline.SearchEvent
	for i, ev := range rec.Events {
		if !ev.Kind.Trains() || state[ev.Trial] == search.Running && lastEvent[ev.Trial] == i {
			continue
		}
		events = append(events, ev)
	}
	sort.SliceStable(events, func(i, j int) bool {
		ei, ej := events[i].Start+events[i].To-events[i].From, events[j].Start+events[j].To-events[j].From
		if ei != ej {
			return ei < ej
		}
		return events[i].Trial < events[j].Trial
	})
	for _, ev := range events {
		if _, ok := trained[ev.Trial]; !ok {
			order = append(order, ev.Trial)
		}
		trained[ev.Trial] = ev.To
		rep.Spent += (ev.To - ev.From) * rec.PerTrial
		sort.Ints(order)
		top := 0
		for _, t := range order {
			top = max(top, trained[t])
		}
		p := report.SearchPoint{Spent: rep.Spent, Trial: -1, Val: math.NaN(), Test: math.NaN()}
		for _, t := range order {
			if trained[t] != top {
				continue
			}
			v, ts := valAt(t, top)
			if math.IsNaN(v) {
				continue
			}
			if p.Trial < 0 || q.Better(v, p.Val) {
				p = report.SearchPoint{Spent: rep.Spent, Trial: t, Round: top, Val: v, Test: ts}
			}
		}
		rep.Curve = append(rep.Curve, p)
	}
	for _, t := range rec.Trials {
		rt := report.SearchTrial{Trial: t.Index, Config: search.Config(t.Config).String(), Status: string(t.State)}
		if t.Warm {
			v, _ := valAt(t.Index, maxRounds)
			rt.Rungs = append(rt.Rungs, report.SearchRung{Rung: 0, Round: maxRounds, Val: v})
		}
		pruned := false
		for i, ev := range rec.Events {
			switch {
			case ev.Trial != t.Index:
			case ev.Kind == search.Prune:
				pruned = true
			case ev.Kind.Trains() && !(t.State == search.Running && lastEvent[t.Index] == i):
				v, _ := valAt(t.Index, ev.To)
				rt.Rungs = append(rt.Rungs, report.SearchRung{Rung: ev.Rung, Round: ev.To, Val: v})
			}
		}
		last := 0
		if n := len(rt.Rungs); n > 0 {
			last = rt.Rungs[n-1].Round
		}
		running := rec.State != "" && rec.State != pipeline.SweepDone && rec.State != pipeline.SweepStopped
		switch {
		case t.Warm:
			rt.Why = fmt.Sprintf("trained by grid sweep %s (warm start)", warmSweep(q))
		case t.State == search.Complete:
			rt.Why = fmt.Sprintf("trained to the last round (%d)", maxRounds)
		case t.State == search.Running:
			rt.Why = fmt.Sprintf("training to round %d", t.Target)
		case t.State == search.Paused && running:
			rt.Why = fmt.Sprintf("paused at round %d, waiting for its rung's decision", last)
		case t.State == search.Paused:
			rt.Status = string(search.Pruned)
			rt.Why = fmt.Sprintf("paused at round %d; not among the rung's best before the budget was spent", last)
		case t.State == search.Pruned && pruned:
			rt.Why = fmt.Sprintf("pruned at round %d: its best %s so far was below the median of the complete trials there", last, q.Objective)
			if q.Minimise() {
				rt.Why = fmt.Sprintf("pruned at round %d: its best %s so far was above the median of the complete trials there", last, q.Objective)
			}
		case t.State == search.Pruned:
			rt.Why = fmt.Sprintf("stopped at round %d by the sweep's stop", last)
		case t.State == search.Failed:
			rt.Why = "a campaign failed"
			for _, c := range t.Campaigns {
				if c.Outcome.Error != "" {
					rt.Why += ": " + c.Outcome.Error
					break
				}
			}
		}
		rep.Trials = append(rep.Trials, rt)
	}
	return rep
}

func warmSweep(q pipeline.SweepSearch) string {
	if q.Warm == nil {
		return "?"
	}
	return q.Warm.Sweep
}
