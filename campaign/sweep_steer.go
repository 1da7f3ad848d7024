package campaign

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/search"
	"github.com/ptopofl/ptopofl/searchview"
	"github.com/ptopofl/ptopofl/store"
)

// SweepConflictError is a sweep name already bound to another sweep file:
// nothing was started or attached to. It wraps ErrInput.
type SweepConflictError struct {
	Sweep string
	Diff  []string // "strategy asha → random", in the sweep file's order (pipeline.SweepSpecDiff)
}

func (e *SweepConflictError) Error() string {
	return fmt.Sprintf("sweep %s exists with a different file: %s; run the edited file under another sweep name, or add budget to this one with `starter sweep extend %s --campaign-rounds N`",
		e.Sweep, strings.Join(e.Diff, ", "), e.Sweep)
}

// Unwrap makes the error an input error.
func (e *SweepConflictError) Unwrap() error { return ErrInput }

// CheckSweepSpec refuses spec when its name is bound to another sweep: the
// spec recorded at sweeps/<sweep>/spec.json, or, before that is written,
// the spec the sweep's workflow runs (its "spec" query). A difference is a
// *SweepConflictError naming the fields (pipeline.SweepSpecDiff); a sweep
// that does not exist yet is no conflict.
func (s *Service) CheckSweepSpec(ctx context.Context, spec pipeline.SweepSpec) error {
	stored, ok, err := s.boundSweepSpec(ctx, spec.Sweep)
	if err != nil || !ok {
		return err
	}
	if diff := pipeline.SweepSpecDiff(stored, spec); len(diff) > 0 {
		return &SweepConflictError{Sweep: spec.Sweep, Diff: diff}
	}
	return nil
}

// boundSweepSpec returns the spec sweep's name is bound to (the recorded
// one, or the running workflow's) and whether there is one.
func (s *Service) boundSweepSpec(ctx context.Context, sweep string) (pipeline.SweepSpec, bool, error) {
	var stored pipeline.SweepSpec
	_, err := s.Store.GetJSONKey(ctx, artifact.SweepSpecKey(sweep), &stored)
	switch {
	case err == nil:
		return stored, true, nil
	case !errors.Is(err, store.ErrNotFound):
		return stored, false, fmt.Errorf("sweep %s: read its spec: %w", sweep, err)
	}
	if _, err := s.Client.DescribeWorkflowExecution(ctx, sweep, ""); err != nil {
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			return stored, false, nil
		}
		return stored, false, fmt.Errorf("sweep %s: %w", sweep, err)
	}
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := s.Client.QueryWorkflow(qctx, sweep, "", pipeline.QuerySweepSpec)
	if err == nil {
		err = v.Get(&stored)
	}
	if err != nil {
		return stored, false, fmt.Errorf("sweep %s exists, but its spec is not recorded yet and it did not answer the spec query (is a server worker polling %s?): %w", sweep, pipeline.ServerTaskQueue, err)
	}
	return stored, true, nil
}

// ResolveWarmStart turns plan's warm_start (a finished grid sweep's name)
// into the search's warm trials (pipeline.SweepSearch.Warm): one per
// setting of the grid for the search's method, its values of the searched
// dimensions read from the grid campaigns' hyper-parameters, its curves the
// mean over the grid's seeds and federations of the search's objective and
// the matching test metric (as `sweep replay` reads a grid). A grid whose
// campaigns differ from the search's trials with the same configuration in
// anything but their names (the rounds, a federation, a seed, a base
// hyper-parameter) would seed the search with another problem's results:
// it is refused, naming the difference. Errors wrap ErrInput.
func (s *Service) ResolveWarmStart(ctx context.Context, plan *SweepPlan) error {
	grid, q := plan.WarmStart, plan.Spec.Search
	if grid == "" {
		return nil
	}
	if q == nil {
		return inputErrorf("warm_start: only with a search space")
	}
	fail := func(format string, args ...any) error {
		return inputErrorf("warm_start: grid sweep %s: %s", grid, fmt.Sprintf(format, args...))
	}
	if err := artifact.ValidateName(grid); err != nil {
		return inputErrorf("warm_start %v", err)
	}
	var gs pipeline.SweepSpec
	if _, err := s.Store.GetJSONKey(ctx, artifact.SweepSpecKey(grid), &gs); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fail("not found (%s); name a finished grid sweep", artifact.SweepSpecKey(grid))
		}
		return fmt.Errorf("warm_start: grid sweep %s: %w", grid, err)
	}
	if gs.Search != nil {
		return fail("an adaptive sweep; warm_start reads a grid")
	}
	m := plan.Spec.Methods[0].Method
	means, err := s.settingCurves(ctx, grid, string(m), nil, q.Objective)
	if err != nil {
		var ie error
		if errors.Is(err, store.ErrNotFound) {
			ie = fail("no curves.parquet: not finished")
		} else {
			ie = fmt.Errorf("warm_start: %w", err)
		}
		return ie
	}
	gridCampaigns, err := gs.Campaigns()
	if err != nil {
		return fail("%v", err)
	}
	warm := &pipeline.SearchWarm{Sweep: grid}
	for _, st := range gs.WithDefaults().Settings {
		var cs []pipeline.SweepCampaign
		for _, c := range gridCampaigns {
			if c.Setting == st.Label && c.Method == m {
				cs = append(cs, c)
			}
		}
		if len(cs) == 0 {
			continue
		}
		config := make([]method.ParamValue, len(q.Dims))
		for j, d := range q.Dims {
			p, _ := method.Lookup(d.Name)
			v := p.Get(cs[0].Spec.Hyperparameters)
			config[j] = method.ParamValue{Name: d.Name, Value: v.Num, Text: v.Text}
		}
		trial, err := plan.Spec.TrialCampaigns(0, config)
		if err != nil {
			return fail("setting %s: %v", st.Label, err)
		}
		if len(trial) != len(cs) {
			return fail("setting %s has %d campaigns of %s; a trial of this search has %d (federations × seeds)", st.Label, len(cs), m, len(trial))
		}
		for k, c := range cs {
			t := trial[k]
			if c.Federation != t.Federation || c.Seed != t.Seed {
				return fail("setting %s: campaign %s is federation %s seed %d; this search's is federation %s seed %d", st.Label, c.Spec.Campaign, c.Federation, c.Seed, t.Federation, t.Seed)
			}
			if diff := SpecDiff(c.Spec, t.Spec); len(diff) > 0 {
				return fail("setting %s: campaign %s differs from this search's trial %s: %s", st.Label, c.Spec.Campaign, search.Config(config), strings.Join(diff, ", "))
			}
		}
		mc := means[st.Label]
		if mc == nil {
			return fail("setting %s has no committed rounds", st.Label)
		}
		if len(mc.Val) != plan.Spec.Rounds {
			return fail("setting %s has %d rounds committed by every campaign; this search's campaigns run %d", st.Label, len(mc.Val), plan.Spec.Rounds)
		}
		wt := pipeline.WarmTrial{Config: config, Val: mc.Val, Test: mc.Test}
		for _, c := range cs {
			wt.Campaigns = append(wt.Campaigns, pipeline.SweepCampaignWorkflowID(grid, c.Spec.Campaign))
		}
		warm.Trials = append(warm.Trials, wt)
	}
	if len(warm.Trials) == 0 {
		return fail("no setting runs method %s", m)
	}
	plan.Spec.Search.Warm = warm
	if err := plan.Spec.Validate(); err != nil {
		return inputErrorf("sweep file: %v", err)
	}
	return nil
}

// sweepSpec returns the spec the sweep named sweep runs (recorded, or its
// workflow's), an input error when there is no such sweep.
func (s *Service) sweepSpec(ctx context.Context, sweep string) (pipeline.SweepSpec, error) {
	spec, ok, err := s.boundSweepSpec(ctx, sweep)
	if err == nil && !ok {
		err = inputErrorf("sweep %s: not found (no %s, no workflow)", sweep, artifact.SweepSpecKey(sweep))
	}
	return spec, err
}

// SweepStatus returns where sweep stands (searchview.Status): a running
// sweep answers its status query; a sweep that ended is read from its
// result; an adaptive sweep that does neither (no worker polls, or its
// last run failed) is read from the search.json it wrote at its last
// report.
func (s *Service) SweepStatus(ctx context.Context, sweep string) (searchview.Status, error) {
	spec, err := s.sweepSpec(ctx, sweep)
	if err != nil {
		return searchview.Status{}, err
	}
	var pst pipeline.SweepStatus
	var state *pipeline.SearchState
	source := ""
	desc, derr := s.Client.DescribeWorkflowExecution(ctx, sweep, "")
	switch {
	case derr != nil:
	case desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		v, err := s.Client.QueryWorkflow(qctx, sweep, "", pipeline.QueryStatus)
		cancel()
		if err == nil && v.Get(&pst) == nil {
			state, source = pst.Search, "query"
		}
	default:
		var out pipeline.SweepWorkflowOutput
		if err := s.Client.GetWorkflow(ctx, sweep, "").Get(ctx, &out); err == nil {
			pst = pipeline.SweepStatus{Sweep: sweep, State: out.State, CampaignsDone: out.CampaignsDone, CampaignsTotal: out.CampaignsTotal, Failed: out.Failed, StopReason: out.StopReason,
				ContinuedAsNew: out.ContinuedAsNew}
			state, source = out.Search, "result"
		}
	}
	if spec.Search != nil && state == nil {
		var rec pipeline.SearchRecord
		if _, err := s.Store.GetJSONKey(ctx, artifact.SweepSearchKey(sweep), &rec); err != nil {
			if derr != nil {
				return searchview.Status{}, fmt.Errorf("sweep %s: %w", sweep, derr)
			}
			return searchview.Status{}, fmt.Errorf("sweep %s did not answer its status query and has no record yet: %w", sweep, err)
		}
		state, source = &pipeline.SearchState{Trials: rec.Trials, Now: rec.Now, Events: rec.Events, Ended: rec.Ended, Budget: rec.Budget, TrialCap: rec.TrialCap}, "record"
		pst = pipeline.SweepStatus{Sweep: sweep, State: rec.State}
		if pst.State == "" {
			pst.State = pipeline.SweepDone
		}
		for _, t := range rec.Trials {
			for _, c := range t.Campaigns {
				pst.CampaignsTotal++
				if !c.Running {
					pst.CampaignsDone++
				}
				if c.Outcome.State == pipeline.StateFailed {
					pst.Failed++
				}
			}
		}
	}
	if source == "" {
		if derr != nil {
			return searchview.Status{}, fmt.Errorf("sweep %s: %w", sweep, derr)
		}
		return searchview.Status{}, fmt.Errorf("sweep %s is running but did not answer the status query (is a server worker polling %s?)", sweep, pipeline.ServerTaskQueue)
	}
	if spec.Search == nil {
		running := pst.Running
		if running == nil {
			running = []string{}
		}
		return searchview.Status{
			Sweep: sweep, State: pst.State, Source: source, Strategy: string(search.StrategyGrid),
			CampaignsDone: pst.CampaignsDone, CampaignsTotal: pst.CampaignsTotal, Failed: pst.Failed,
			MaxRounds: spec.Rounds, Running: running, Trials: []searchview.Trial{}, Rungs: []searchview.Rung{}, ContinuedAsNew: pst.ContinuedAsNew,
			PauseReason: pst.PauseReason, StopReason: pst.StopReason,
		}, nil
	}
	probe, err := spec.TrialCampaigns(0, nil)
	if err != nil {
		return searchview.Status{}, fmt.Errorf("sweep %s: %w", sweep, err)
	}
	st := searchview.Build(searchview.Input{Sweep: sweep, Search: *spec.Search, MaxRounds: spec.Rounds, PerTrial: len(probe), State: *state, Status: pst})
	st.Source = source
	return st, nil
}

// SweepControl sends update (pipeline.UpdatePause, UpdateResume or
// UpdateStop) to the sweep named sweep, with the campaigns' semantics: a
// pause holds every running campaign after its running round and starts
// nothing new, a resume lets them and the sweep go on, a stop ends the
// running campaigns after their running round (at once when paused) and
// builds the results. A refusal wraps ErrRejected.
func (s *Service) SweepControl(ctx context.Context, sweep, update, reason string) (pipeline.SweepStatus, error) {
	var st pipeline.SweepStatus
	h, err := s.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: sweep, UpdateName: update, Args: []any{pipeline.ControlInput{Reason: reason}},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		if desc, derr := s.Client.DescribeWorkflowExecution(ctx, sweep, ""); derr == nil && desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			// As a campaign that is over refuses it.
			return st, &rejection{update: update, campaign: "sweep " + sweep, err: fmt.Errorf("sweep %s has ended (%s)", sweep,
				strings.ToLower(strings.TrimPrefix(desc.GetWorkflowExecutionInfo().GetStatus().String(), "WORKFLOW_EXECUTION_STATUS_")))}
		}
		return st, fmt.Errorf("%s sweep %s: %w", update, sweep, err)
	}
	if err := h.Get(ctx, &st); err != nil {
		return st, &rejection{update: update, campaign: "sweep " + sweep, err: err}
	}
	return st, nil
}
