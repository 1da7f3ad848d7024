package workflows

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/search"
)

// searchSweep is the adaptive part of a sweep's in-memory state.
type searchSweep struct {
	perTrial int    // campaigns per trial: federations × seeds
	idle     bool   // the last SearchNext took no action; ask again once a trial reports or the budget grows
	why      string // its reason (search.WhyBudget, …), recorded as SearchState.Ended
	// cut marks a run under versionSearchVirtualCut: its state carries
	// Waiting and the campaigns' test curves, and it writes its record as
	// it goes.
	cut bool
	// warm is the number of warm trials (the first ones), which have no
	// campaigns of this sweep.
	warm int
}

// runSearch is SweepWorkflow for a sweep with a search (pipeline.SweepSearch):
// instead of a fixed grid it asks the SearchNext activity, whenever it
// has room for one more trial's campaigns, what to train next: a new trial
// (its configuration from the sampler, its campaigns one per federation
// and seed, trained to the first rung) or a promotion of a paused trial
// (its campaigns resumed from their last round, pipeline.CampaignWorkflowInput's
// StopAfterRound and State, to the next rung). Every decision is an
// activity's recorded result and every campaign a child workflow with a
// deterministic ID, so a replay after any crash takes the same decisions
// and finds the same children. When SearchNext has nothing that fits the
// budget, the sweep waits for a running trial to report and asks again,
// and ends when nothing runs. A trial left paused at the end is reported
// pruned at its last round; `starter sweep extend` may still promote it.
//
// Cuts. The sweep's decisions equal search.Replay's at the same
// concurrency however its history is cut: at its run limit (after
// ContinueAsNewEvery campaigns, or when Temporal suggests continuing as
// new) it neither asks nor reports any more, lets the campaigns this run
// started end (their results stay pending: in virtual time those trials
// are still running), and continues as new carrying every trial, in
// flight or not, the virtual clock and why it was waiting; the next run
// goes on exactly where this one stopped. A paused sweep pauses its
// running campaigns and takes no decision until resumed, so a pause
// changes no decision either. A stop reports every trial as its
// campaigns end and builds the results.
func (s *sweep) runSearch(ctx workflow.Context, in pipeline.SweepWorkflowInput) (pipeline.SweepWorkflowOutput, error) {
	if workflow.GetVersion(ctx, versionSearchVirtualCut, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return s.runSearchLegacy(ctx, in)
	}
	return s.runSearchCut(ctx, in)
}

// runSearchLegacy is runSearch as it ran before versionSearchVirtualCut,
// kept so that histories begun then replay: at its run limit it reported
// its running trials before continuing as new.
func (s *sweep) runSearchLegacy(ctx workflow.Context, in pipeline.SweepWorkflowInput) (pipeline.SweepWorkflowOutput, error) {
	spec, q := s.spec, *s.spec.Search
	ss := s.st.Search
	s.campaigns = nil
	for _, t := range ss.Trials {
		if _, err := s.addTrialCampaigns(t); err != nil {
			return pipeline.SweepWorkflowOutput{}, err
		}
	}
	probe, err := spec.TrialCampaigns(0, nil)
	if err != nil {
		return pipeline.SweepWorkflowOutput{}, err
	}
	s.search.perTrial = len(probe)
	// Trials at once: the campaigns Concurrency allows, one trial at least.
	slots := max(1, spec.Concurrency/s.search.perTrial)
	actx := workflow.WithActivityOptions(ctx, serverActivityOptions())

	startedThisRun := 0
	runLimitReached := func() bool {
		return startedThisRun >= spec.ContinueAsNewEvery || workflow.GetInfo(ctx).GetContinueAsNewSuggested()
	}
	for {
		var canAsk, canReport bool
		var due int
		err := workflow.Await(ctx, func() bool {
			running := 0
			due, running = nextDue(ss.Trials)
			canAsk = !s.st.Paused && !s.st.Stopping && !s.search.idle && running < slots && !runLimitReached()
			canReport = due >= 0 && ss.Trials[due].Finished()
			drained := running == 0 && (s.st.Stopping || s.search.idle || runLimitReached())
			return canAsk || canReport || drained
		})
		if err != nil {
			return pipeline.SweepWorkflowOutput{}, err
		}
		switch {
		case canAsk:
			var next pipeline.SearchNextOutput
			err = workflow.ExecuteActivity(actx, pipeline.ActivitySearchNext, pipeline.SearchNextInput{
				Search: q, MaxRounds: spec.Rounds, PerTrial: s.search.perTrial,
				Budget: ss.Budget, Trials: ss.TrialCap, History: historyOf(ss.Trials),
			}).Get(ctx, &next)
			if err != nil {
				return pipeline.SweepWorkflowOutput{}, fmt.Errorf("sweep %s: search: %w", spec.Sweep, err)
			}
			if next.Action == nil {
				s.search.idle, s.search.why = true, next.Reason
				continue
			}
			n, err := s.act(ctx, *next.Action, next.Config)
			if err != nil {
				return pipeline.SweepWorkflowOutput{}, err
			}
			startedThisRun += n
			continue
		case canReport:
			s.report(due)
			continue
		}
		break
	}

	if !s.st.Stopping && !s.search.idle {
		// The run limit, with every child of this run finished.
		if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
			return pipeline.SweepWorkflowOutput{}, err
		}
		return pipeline.SweepWorkflowOutput{}, workflow.NewContinueAsNewError(ctx, SweepWorkflow,
			pipeline.SweepWorkflowInput{Spec: in.Spec, State: &s.st, ColocatedQueue: in.ColocatedQueue})
	}

	if !s.st.Stopping {
		ss.Ended = s.search.why
	}
	return s.finish(ctx, pipeline.BuildSweepResultsInput{Spec: spec, Outcomes: searchOutcomes(ss.Trials), Search: &pipeline.SearchRecord{
		Search: q, PerTrial: s.search.perTrial, Budget: ss.Budget, TrialCap: ss.TrialCap, Trials: historyOf(ss.Trials), Events: ss.Events, Ended: ss.Ended,
	}}, s.st.Stopping)
}

// runSearchCut is runSearch under versionSearchVirtualCut (see runSearch).
func (s *sweep) runSearchCut(ctx workflow.Context, in pipeline.SweepWorkflowInput) (pipeline.SweepWorkflowOutput, error) {
	spec, q := s.spec, *s.spec.Search
	ss := s.st.Search
	s.search.cut = true
	if q.Warm != nil && len(ss.Trials) == 0 && len(ss.Events) == 0 {
		// A warm start: the grid's configurations are the first trials,
		// complete, with no campaign of this sweep.
		for i, w := range q.Warm.Trials {
			ss.Trials = append(ss.Trials, pipeline.SearchTrial{Index: i, Config: w.Config, State: search.Complete, Warm: true, Target: spec.Rounds, FromRound: spec.Rounds})
		}
	}
	s.campaigns = nil
	for _, t := range ss.Trials {
		if t.Warm {
			s.search.warm++
			continue
		}
		if _, err := s.addTrialCampaigns(t); err != nil {
			return pipeline.SweepWorkflowOutput{}, err
		}
	}
	probe, err := spec.TrialCampaigns(0, nil)
	if err != nil {
		return pipeline.SweepWorkflowOutput{}, err
	}
	s.search.perTrial = len(probe)
	s.search.idle, s.search.why = ss.Waiting != "", ss.Waiting
	// Trials at once: the campaigns Concurrency allows, one trial at least.
	slots := max(1, spec.Concurrency/s.search.perTrial)
	actx := workflow.WithActivityOptions(ctx, serverActivityOptions())

	startedThisRun := 0
	runLimitReached := func() bool {
		return startedThisRun >= spec.ContinueAsNewEvery || workflow.GetInfo(ctx).GetContinueAsNewSuggested()
	}
	for {
		var canAsk, canReport bool
		var due int
		err := workflow.Await(ctx, func() bool {
			running := 0
			due, running = nextDue(ss.Trials)
			frozen := s.st.Paused && !s.st.Stopping
			cut := !s.st.Stopping && runLimitReached()
			canAsk = !frozen && !cut && !s.st.Stopping && !s.search.idle && running < slots
			canReport = !frozen && !cut && due >= 0 && ss.Trials[due].Finished()
			ended := running == 0 && (s.st.Stopping || s.search.idle)
			// At the cut, this run's campaigns must end before it closes
			// (a child does not outlive the run that started it).
			return canAsk || canReport || ended || cut && len(s.running) == 0
		})
		if err != nil {
			return pipeline.SweepWorkflowOutput{}, err
		}
		switch {
		case canAsk:
			var next pipeline.SearchNextOutput
			err = workflow.ExecuteActivity(actx, pipeline.ActivitySearchNext, pipeline.SearchNextInput{
				Search: q, MaxRounds: spec.Rounds, PerTrial: s.search.perTrial,
				Budget: ss.Budget, Trials: ss.TrialCap, History: historyOf(ss.Trials),
			}).Get(ctx, &next)
			if err != nil {
				return pipeline.SweepWorkflowOutput{}, fmt.Errorf("sweep %s: search: %w", spec.Sweep, err)
			}
			if next.Action == nil {
				s.search.idle, s.search.why = true, next.Reason
				ss.Waiting = next.Reason
				continue
			}
			n, err := s.act(ctx, *next.Action, next.Config)
			if err != nil {
				return pipeline.SweepWorkflowOutput{}, err
			}
			startedThisRun += n
			continue
		case canReport:
			s.report(due)
			ss.Waiting = ""
			if err := s.recordSearch(actx); err != nil {
				return pipeline.SweepWorkflowOutput{}, err
			}
			continue
		}
		break
	}

	if _, running := nextDue(ss.Trials); !s.st.Stopping && !(running == 0 && s.search.idle) {
		// The cut: every child of this run has ended; the trials still
		// running in virtual time carry their pending results over.
		if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
			return pipeline.SweepWorkflowOutput{}, err
		}
		s.st.ContinuedAsNew++
		return pipeline.SweepWorkflowOutput{}, workflow.NewContinueAsNewError(ctx, SweepWorkflow,
			pipeline.SweepWorkflowInput{Spec: in.Spec, State: &s.st, ColocatedQueue: in.ColocatedQueue})
	}
	ss.Waiting = ""
	if !s.st.Stopping {
		ss.Ended = s.search.why
	}
	// The record BuildSweepResults stores as search.json is the sweep's
	// last: it says the sweep ended (done or stopped), not the running
	// state it was written in, so readers of search.json (sweep report,
	// status, the console) know no paused trial will be promoted. Only the
	// activity's input changes, which replay does not compare.
	final := s.searchRecord()
	if s.search.cut {
		final.State = pipeline.SweepDone
		if s.st.Stopping {
			final.State = pipeline.SweepStopped
		}
	}
	return s.finish(ctx, pipeline.BuildSweepResultsInput{Spec: spec, Outcomes: searchOutcomes(ss.Trials), Search: final}, s.st.Stopping)
}

// searchRecord is the sweep's search.json as it stands.
func (s *sweep) searchRecord() *pipeline.SearchRecord {
	ss := s.st.Search
	rec := &pipeline.SearchRecord{
		Search: *s.spec.Search, PerTrial: s.search.perTrial, Budget: ss.Budget, TrialCap: ss.TrialCap,
		Trials: historyOf(ss.Trials), Events: ss.Events, Ended: ss.Ended,
	}
	if s.search.cut {
		rec.State, rec.Now = controlState(s.finished, s.st.Stopping, s.st.Paused), ss.Now
	}
	return rec
}

// recordSearch writes the sweep's search.json as it stands, after a
// trial's report, for `sweep report` and `sweep status` to read while the
// sweep runs.
func (s *sweep) recordSearch(actx workflow.Context) error {
	err := workflow.ExecuteActivity(actx, pipeline.ActivityRecordSearch, pipeline.SearchRecordInput{
		Sweep: s.spec.Sweep, Bucket: s.spec.Bucket, MaxRounds: s.spec.Rounds, Record: *s.searchRecord(),
	}).Get(actx, nil)
	if err != nil {
		return fmt.Errorf("sweep %s: record its trials: %w", s.spec.Sweep, err)
	}
	return nil
}

// addTrialCampaigns appends trial t's campaigns to s.campaigns, indexed by
// their position there, and returns their indices.
func (s *sweep) addTrialCampaigns(t pipeline.SearchTrial) ([]int, error) {
	cs, err := s.spec.TrialCampaigns(t.Index, t.Config)
	if err != nil {
		return nil, fmt.Errorf("sweep %s: trial %d: %w", s.spec.Sweep, t.Index, err)
	}
	if len(t.Campaigns) != 0 && len(t.Campaigns) != len(cs) {
		return nil, fmt.Errorf("sweep %s: trial %d: %d campaigns recorded, %d expected", s.spec.Sweep, t.Index, len(t.Campaigns), len(cs))
	}
	var idx []int
	for _, c := range cs {
		c.Index = len(s.campaigns)
		s.campaigns = append(s.campaigns, c)
		idx = append(idx, c.Index)
	}
	return idx, nil
}

// act carries out action a: it starts a new trial with configuration
// config, or promotes a paused one, launching its campaigns. It returns
// how many campaigns it launched.
func (s *sweep) act(ctx workflow.Context, a search.Action, config []method.ParamValue) (int, error) {
	ss := s.st.Search
	var ti int
	switch a.Kind {
	case search.Start:
		if a.Trial != len(ss.Trials) {
			return 0, fmt.Errorf("sweep %s: search started trial %d; %d trials exist", s.spec.Sweep, a.Trial, len(ss.Trials))
		}
		t := pipeline.SearchTrial{Index: a.Trial, Config: config}
		// Its campaigns' specs are recorded before they start, as a
		// grid's are before the first.
		actx := workflow.WithActivityOptions(ctx, serverActivityOptions())
		if err := workflow.ExecuteActivity(actx, pipeline.ActivityRecordSweep,
			pipeline.RecordSweepInput{Spec: s.spec, Trials: []pipeline.SearchTrial{t}}).Get(ctx, nil); err != nil {
			return 0, fmt.Errorf("sweep %s: trial %d: record specs: %w", s.spec.Sweep, a.Trial, err)
		}
		idx, err := s.addTrialCampaigns(t)
		if err != nil {
			return 0, err
		}
		for _, i := range idx {
			t.Campaigns = append(t.Campaigns, pipeline.SearchCampaign{Campaign: s.campaigns[i].Spec.Campaign})
		}
		ss.Trials = append(ss.Trials, t)
		ti = len(ss.Trials) - 1
	case search.Promote:
		if a.Trial < 0 || a.Trial >= len(ss.Trials) || ss.Trials[a.Trial].State != search.Paused {
			return 0, fmt.Errorf("sweep %s: search promoted trial %d, which is not paused", s.spec.Sweep, a.Trial)
		}
		ti = a.Trial
	case search.Prune, search.Finish:
		// The median pruner's decision on a paused trial: nothing trains.
		if a.Trial < 0 || a.Trial >= len(ss.Trials) || ss.Trials[a.Trial].State != search.Paused {
			return 0, fmt.Errorf("sweep %s: search settled trial %d (%s), which is not paused", s.spec.Sweep, a.Trial, a.Kind)
		}
		t := &ss.Trials[a.Trial]
		t.State = search.Pruned
		if a.Kind == search.Finish {
			t.State = search.Complete
		}
		ss.Events = append(ss.Events, pipeline.SearchEvent{Kind: a.Kind, Trial: a.Trial, Rung: t.Rung, From: a.FromRound, To: a.ToRound, Start: ss.Now})
		return 0, nil
	default:
		return 0, fmt.Errorf("sweep %s: search action %q: unknown", s.spec.Sweep, a.Kind)
	}
	t := &ss.Trials[ti]
	t.State, t.Rung, t.Bracket, t.FromRound, t.Target, t.Start = search.Running, a.Rung, a.Bracket, a.FromRound, a.ToRound, ss.Now
	ss.Events = append(ss.Events, pipeline.SearchEvent{Kind: a.Kind, Trial: a.Trial, Rung: a.Rung, From: a.FromRound, To: a.ToRound, Start: ss.Now})
	stopAfter := a.ToRound
	if stopAfter >= s.spec.Rounds {
		stopAfter = 0
	}
	first := (ti - s.search.warm) * s.search.perTrial // trials' campaigns sit in trial order, warm trials have none
	for j := range t.Campaigns {
		c := s.campaigns[first+j]
		sc := &t.Campaigns[j]
		in := pipeline.CampaignWorkflowInput{Spec: c.Spec, ColocatedQueue: s.colocatedQueue, StopAfterRound: stopAfter, ResumeFrom: sc.Resume}
		sc.Resume, sc.Running = nil, true
		j := j
		s.launch(ctx, c, in, func(o pipeline.CampaignOutcome, out pipeline.CampaignWorkflowOutput) {
			s.campaignDone(ti, j, o, out)
		})
	}
	return len(t.Campaigns), nil
}

// campaignDone keeps campaign j of trial ti's result until the trial
// reports (report).
func (s *sweep) campaignDone(ti, j int, o pipeline.CampaignOutcome, out pipeline.CampaignWorkflowOutput) {
	c := &s.st.Search.Trials[ti].Campaigns[j]
	if o.State == pipeline.StateFailed {
		// A failure may say nothing of the rounds it had committed.
		o.RoundsDone = max(o.RoundsDone, c.Outcome.RoundsDone)
	}
	r := &pipeline.SearchResult{Outcome: o, Resume: out.Resume}
	if o.State != pipeline.StateFailed {
		r.Values = out.ValAUCCurve
		if s.spec.Search.Objective == pipeline.ObjectiveValAcc {
			r.Values = out.ValAccCurve
		}
		if s.search.cut {
			r.Test = out.AUCCurve
			if s.spec.Search.Objective == pipeline.ObjectiveValAcc {
				r.Test = out.AccCurve
			}
		}
	}
	c.Pending = r
}

// nextDue returns the running trial whose action ends first in virtual
// time (the lower index on ties; −1 when none runs) and how many run.
func nextDue(trials []pipeline.SearchTrial) (due, running int) {
	due = -1
	for i, t := range trials {
		if t.State != search.Running {
			continue
		}
		running++
		if due < 0 || t.End() < trials[due].End() {
			due = i
		}
	}
	return due, running
}

// report takes trial ti's finished action's results: the sweep's virtual
// time moves to the action's end, each campaign's pending result becomes
// its outcome, and the trial becomes failed (a campaign failed), pruned
// (the sweep stopped it), paused at its rung, or complete.
func (s *sweep) report(ti int) {
	ss := s.st.Search
	t := &ss.Trials[ti]
	ss.Now = max(ss.Now, t.End())
	var failed, stopped, paused bool
	for j := range t.Campaigns {
		c := &t.Campaigns[j]
		if r := c.Pending; r != nil {
			c.Outcome, c.Resume, c.Pending, c.Running = r.Outcome, r.Resume, nil, false
			if r.Outcome.State != pipeline.StateFailed {
				c.Values = r.Values
				if s.search.cut {
					c.Test = r.Test
				}
			}
		}
		switch {
		case c.Outcome.State == pipeline.StateFailed:
			failed = true
		case c.Outcome.State == pipeline.StatePaused && c.Resume != nil:
			paused = true
		case c.Outcome.State != pipeline.StateDone:
			stopped = true // stopped by the sweep (or paused without a state to resume from)
		}
	}
	switch {
	case failed:
		t.State = search.Failed
	case stopped:
		t.State = search.Pruned
	case paused:
		t.State = search.Paused
	case s.spec.Search.Pruner == search.PrunerMedian:
		// Trained to the last round: the median pruner still checks it
		// there (a Finish or Prune action).
		t.State = search.Paused
	default:
		t.State = search.Complete
	}
	s.search.idle = false
}

// historyOf returns trials without their resume states, which SearchNext
// and the results do not need.
func historyOf(trials []pipeline.SearchTrial) []pipeline.SearchTrial {
	out := make([]pipeline.SearchTrial, len(trials))
	for i, t := range trials {
		t.Campaigns = append([]pipeline.SearchCampaign(nil), t.Campaigns...)
		for j := range t.Campaigns {
			// A result not yet reported stays hidden: the campaign
			// still counts as running, with its outcome before.
			t.Campaigns[j].Resume, t.Campaigns[j].Pending = nil, nil
		}
		out[i] = t
	}
	return out
}

// searchOutcomes returns the last outcome of every campaign of trials, in
// trial order, each with its index among them and its trial, rung and
// status (a trial still paused counts as pruned at its last round).
func searchOutcomes(trials []pipeline.SearchTrial) []pipeline.CampaignOutcome {
	var out []pipeline.CampaignOutcome
	for _, t := range trials {
		status := t.State
		if status == search.Paused || status == search.Running {
			status = search.Pruned
		}
		for _, c := range t.Campaigns {
			o := c.Outcome
			o.Index = len(out)
			o.Search = &pipeline.OutcomeSearch{Trial: t.Index, Rung: t.Rung, Status: string(status)}
			if status == search.Pruned {
				o.Search.PrunedAtRound = o.RoundsDone
			}
			out = append(out, o)
		}
	}
	return out
}
