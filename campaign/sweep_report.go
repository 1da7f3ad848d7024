package campaign

import (
	"context"
	"errors"
	"fmt"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/report"
	"github.com/ptopofl/ptopofl/search"
	"github.com/ptopofl/ptopofl/searchview"
	"github.com/ptopofl/ptopofl/store"
)

// SweepReport builds sweep's report.SearchInput (searchview.Report) from
// what it left in S3: search.json, written after every trial's report, so
// that a running sweep has a report too; the trials' curves come from the
// record itself, or, for a record written before it kept the campaigns'
// test metric, from curves.parquet. With grid not empty, the grid sweep's
// curve too, read as `sweep replay` reads it (its settings' mean curves
// over the same metric).
func (s *Service) SweepReport(ctx context.Context, sweep, grid string) (report.SearchInput, error) {
	var rec pipeline.SearchRecord
	if _, err := s.Store.GetJSONKey(ctx, artifact.SweepSearchKey(sweep), &rec); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return report.SearchInput{}, inputErrorf("sweep %s: no search record (%s): a grid sweep, or one whose first trial has not reported yet; `starter sweep replay` compares strategies on a grid", sweep, artifact.SweepSearchKey(sweep))
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
	curves, ok := searchview.RecordCurves(rec)
	if !ok {
		means, err := s.settingCurves(ctx, sweep, string(spec.Methods[0].Method), nil, rec.Search.Objective)
		if err != nil {
			return report.SearchInput{}, err
		}
		curves = func(trial int) ([]float64, []float64) {
			if mc := means[pipeline.SearchTrialLabel(trial)]; mc != nil {
				return mc.Val, mc.Test
			}
			return nil, nil
		}
	}
	rep := searchview.Report(sweep, spec.Rounds, rec, curves)
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
			if v := row.Val[r-1]; best.Trial < 0 || rec.Search.Better(v, best.Val) {
				best = search.Incumbent{Trial: i, Round: r, Val: v, Test: row.Test[r-1]}
			}
			gc.Points = append(gc.Points, report.SearchPoint{Spent: spent, Trial: best.Trial, Round: best.Round, Val: best.Val, Test: best.Test})
		}
		rep.Grid = gc
	}
	return rep, nil
}
