package campaign

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/report"
	"github.com/ptopofl/ptopofl/search"
	"github.com/ptopofl/ptopofl/store"
)

// SweepReport builds sweep's report.SearchInput from what it left in S3
// (search.json and curves.parquet); with grid not empty, the grid sweep's
// curve too, read as `sweep replay` reads it (its settings' mean curves
// over the same metric).
func (s *Service) SweepReport(ctx context.Context, sweep, grid string) (report.SearchInput, error) {
	var rec pipeline.SearchRecord
	if _, err := s.Store.GetJSONKey(ctx, artifact.SweepSearchKey(sweep), &rec); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return report.SearchInput{}, inputErrorf("sweep %s: no search record (%s): a grid sweep, or one not finished; `starter sweep replay` compares strategies on a grid", sweep, artifact.SweepSearchKey(sweep))
		}
		return report.SearchInput{}, fmt.Errorf("sweep %s: %w", sweep, err)
	}
	var spec pipeline.SweepSpec
	if _, err := s.Store.GetJSONKey(ctx, artifact.SweepSpecKey(sweep), &spec); err != nil {
		return report.SearchInput{}, fmt.Errorf("sweep %s: %w", sweep, err)
	}
	if len(spec.Methods) != 1 {
		return report.SearchInput{}, fmt.Errorf("sweep %s: %d methods in its spec; a search sweep has one", sweep, len(spec.Methods))
	}
	means, err := s.settingCurves(ctx, sweep, string(spec.Methods[0].Method), nil, rec.Search.Objective)
	if err != nil {
		return report.SearchInput{}, err
	}
	rep := buildSearchReport(sweep, spec.Rounds, rec, means)
	if grid != "" {
		table, err := s.ReplayTable(ctx, grid, ReplayTableOptions{Metric: rec.Search.Objective, Method: string(spec.Methods[0].Method)})
		if err != nil {
			return rep, err
		}
		gc := &report.GridCurve{Sweep: grid}
		best := search.Incumbent{Trial: -1}
		spent := 0
		for i, row := range table.Rows {
			r := len(row.Val)
			spent += r * rep.PerTrial
			if v := row.Val[r-1]; best.Trial < 0 || v > best.Val {
				best = search.Incumbent{Trial: i, Round: r, Val: v, Test: row.Test[r-1]}
			}
			gc.Points = append(gc.Points, report.SearchPoint{Spent: spent, Trial: best.Trial, Round: best.Round, Val: best.Val, Test: best.Test})
		}
		rep.Grid = gc
	}
	return rep, nil
}

// buildSearchReport replays rec's events in the order the sweep took their
// results (their end in virtual time, the lower trial first on ties) over
// the trials' mean curves, means[trial label].
func buildSearchReport(sweep string, maxRounds int, rec pipeline.SearchRecord, means map[string]*meanCurve) report.SearchInput {
	rep := report.SearchInput{
		Sweep: sweep, Strategy: string(rec.Search.Strategy), Objective: rec.Search.Objective,
		Budget: rec.Budget, TrialCap: rec.TrialCap, PerTrial: rec.PerTrial, MaxRounds: maxRounds,
	}
	curve := func(trial int) *meanCurve {
		if mc := means[pipeline.SearchTrialLabel(trial)]; mc != nil {
			return mc
		}
		return &meanCurve{}
	}
	valAt := func(trial, round int) (float64, float64) {
		mc := curve(trial)
		if round < 1 || round > len(mc.Val) {
			return math.NaN(), math.NaN()
		}
		return mc.Val[round-1], mc.Test[round-1]
	}
	events := append([]pipeline.SearchEvent(nil), rec.Events...)
	sort.SliceStable(events, func(i, j int) bool {
		ei, ej := events[i].Start+events[i].To-events[i].From, events[j].Start+events[j].To-events[j].From
		if ei != ej {
			return ei < ej
		}
		return events[i].Trial < events[j].Trial
	})
	trained := map[int]int{}
	var order []int // trials in index order as they appear
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
			if p.Trial < 0 || v > p.Val {
				p = report.SearchPoint{Spent: rep.Spent, Trial: t, Round: top, Val: v, Test: ts}
			}
		}
		rep.Curve = append(rep.Curve, p)
	}
	for _, t := range rec.Trials {
		rt := report.SearchTrial{Trial: t.Index, Config: search.Config(t.Config).String(), Status: string(t.State)}
		for _, ev := range rec.Events {
			if ev.Trial == t.Index {
				v, _ := valAt(t.Index, ev.To)
				rt.Rungs = append(rt.Rungs, report.SearchRung{Rung: ev.Rung, Round: ev.To, Val: v})
			}
		}
		last := 0
		if n := len(rt.Rungs); n > 0 {
			last = rt.Rungs[n-1].Round
		}
		switch t.State {
		case search.Complete:
			rt.Why = fmt.Sprintf("trained to the last round (%d)", maxRounds)
		case search.Paused, search.Running:
			rt.Status = string(search.Pruned)
			rt.Why = fmt.Sprintf("paused at round %d; not among the rung's best before the budget was spent", last)
		case search.Pruned:
			rt.Why = fmt.Sprintf("stopped at round %d by the sweep's stop", last)
		case search.Failed:
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
