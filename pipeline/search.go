package pipeline

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/search"
)

// ActivitySearchNext asks the server what an adaptive sweep trains next
// (SearchNextInput → SearchNextOutput): the sampler and the scheduler of
// package search, run as an activity so that the sweep workflow does no
// float arithmetic and draws no random number.
const ActivitySearchNext = "SearchNext"

// UpdateExtend adds budget to a running adaptive sweep (ExtendInput →
// SweepStatus).
const UpdateExtend = "extend"

// Objectives a sweep may rank trials on: validation metrics only, so that
// a sweep never selects on the test split it reports.
const (
	ObjectiveValAUC = "val_auc"
	ObjectiveValAcc = "val_acc"
)

// Directions of an objective (objective.mode): the search keeps the
// highest values (ModeMax, the default) or the lowest (ModeMin, for a
// loss-like metric, or to find the configurations that hurt a model most).
const (
	ModeMax = "max"
	ModeMin = "min"
)

// ActivityRecordSearch writes an adaptive sweep's record as it goes
// (SearchRecordInput → ArtifactRef): sweeps/<sweep>/search.json after each
// trial reports, so that `starter sweep report` and `sweep status` read
// the trials of a running sweep.
const ActivityRecordSearch = "RecordSearch"

// SearchRecordInput asks the server to write Record as sweep's
// search.json in bucket, and its report (campaigns of MaxRounds rounds).
type SearchRecordInput struct {
	Sweep     string       `json:"sweep"`
	Bucket    string       `json:"bucket"`
	MaxRounds int          `json:"max_rounds"`
	Record    SearchRecord `json:"record"`
}

// SweepSearch is an adaptive sweep's search (the sweep file's `search:`,
// `strategy:`, `budget:`, `objective:`, `asha:`, `tpe:` and `seed:`): a
// trial is one configuration of Dims, run as one campaign per federation
// and seed of the sweep with the sweep's one method; its score after round
// r is the mean of those campaigns' Objective after round r.
type SweepSearch struct {
	Dims     []search.Dimension `json:"dims"`
	Strategy search.Strategy    `json:"strategy"`
	// Budget is the most campaign-rounds to train, over every campaign (a
	// trial trained from round a to b on k campaigns costs k·(b − a));
	// Trials the most trials to start. 0: no limit; a strategy other than
	// grid needs at least one of them.
	Budget    int    `json:"budget,omitempty"`
	Trials    int    `json:"trials,omitempty"`
	Objective string `json:"objective"`
	// Mode is the objective's direction, ModeMax ("" reads as max) or
	// ModeMin: a minimised objective's values are negated before every
	// decision, so the strategies' rules (all maximising) become their
	// minimising mirrors.
	Mode string             `json:"mode,omitempty"`
	ASHA search.ASHAOptions `json:"asha,omitzero"`
	TPE  search.TPEOptions  `json:"tpe,omitzero"`
	// Pruner stops random and TPE trials early (search.PrunerMedian,
	// with Median's options); "" trains every trial to the end.
	Pruner search.Pruner        `json:"pruner,omitempty"`
	Median search.MedianOptions `json:"median,omitzero"`
	Seed   uint64               `json:"seed"`
	// Warm, when set, seeds the search with the configurations a finished
	// grid sweep trained (warm_start: GRID_SWEEP), resolved by the starter
	// from that grid's per-round table: they are the first trials,
	// complete, never trained again, and count as tried.
	Warm *SearchWarm `json:"warm,omitempty"`
}

// SearchWarm is a warm start: the grid sweep it came from and one trial
// per configuration of that grid, in its order.
type SearchWarm struct {
	Sweep  string      `json:"sweep"`
	Trials []WarmTrial `json:"trials"`
}

// WarmTrial is one configuration of the grid a warm start reads: its
// values of the searched dimensions (in Dims' order), the grid's mean
// objective (Val) and matching test metric (Test) after each round over
// its campaigns, and those campaigns.
type WarmTrial struct {
	Config    []method.ParamValue `json:"config"`
	Val       []float64           `json:"val"`
	Test      []float64           `json:"test"`
	Campaigns []string            `json:"campaigns"`
}

// Minimise reports whether the search keeps the lowest objective values.
func (q SweepSearch) Minimise() bool { return q.Mode == ModeMin }

// ScheduleOptions returns the search's strategy settings as package
// search takes them.
func (q SweepSearch) ScheduleOptions() search.ScheduleOptions {
	return search.ScheduleOptions{ASHA: q.ASHA, Pruner: q.Pruner, Median: q.Median}
}

// validate checks the search against the sweep s it belongs to.
func (q SweepSearch) validate(s SweepSpec) error {
	space, err := search.NewSpace(q.Dims)
	if err != nil {
		return err
	}
	if _, err := search.NewSchedule(q.Strategy, q.ScheduleOptions(), s.Rounds); err != nil {
		return err
	}
	switch {
	case q.Objective != ObjectiveValAUC && q.Objective != ObjectiveValAcc:
		return fmt.Errorf("objective.metric = %q: want %s or %s (a sweep selects on the validation split, never on the test split it reports)",
			q.Objective, ObjectiveValAUC, ObjectiveValAcc)
	case q.Mode != "" && q.Mode != ModeMax && q.Mode != ModeMin:
		return fmt.Errorf("objective.mode = %q: want max or min", q.Mode)
	case q.Budget < 0 || q.Trials < 0:
		return fmt.Errorf("budget: campaign_rounds = %d, trials = %d: must be ≥ 0", q.Budget, q.Trials)
	case q.Strategy != search.StrategyGrid && q.Budget == 0 && q.Trials == 0:
		return fmt.Errorf("budget: strategy %s needs budget.campaign_rounds or budget.trials (only a grid ends by itself)", q.Strategy)
	case len(s.Methods) != 1:
		return fmt.Errorf("methods: a search sweep tunes one method; %d given (run one sweep per method)", len(s.Methods))
	case len(s.Settings) > 1 || len(s.Settings) == 1 && s.Settings[0].Label != "base":
		return fmt.Errorf("grid/variants: not with search (strategy grid searches a space of choices)")
	}
	if q.Strategy == search.StrategyGrid {
		if _, err := space.GridSize(); err != nil {
			return err
		}
	}
	for i, f := range s.Federations {
		if f.Rounds != 0 && f.Rounds != s.Rounds {
			return fmt.Errorf("federations[%d].rounds = %d: a search sweep's campaigns all run the sweep's %d rounds (rungs are rounds)", i, f.Rounds, s.Rounds)
		}
	}
	h := s.Methods[0].Hyperparameters
	if h.ValidationFraction <= 0 {
		return fmt.Errorf("hyperparameters.validation_fraction: a search sweep ranks trials on each site's validation split; set it (e.g. 0.2)")
	}
	for _, d := range q.Dims {
		if d.Name == "validation_fraction" || d.Name == "dp" {
			return fmt.Errorf("search.%s: not searchable (it changes what the objective measures)", d.Name)
		}
	}
	if q.Warm != nil {
		return q.Warm.validate(q, space, s.Rounds)
	}
	return nil
}

// validate checks a warm start against the search q over space with
// campaigns of rounds rounds.
func (w SearchWarm) validate(q SweepSearch, space search.Space, rounds int) error {
	switch q.Strategy {
	case search.StrategyGrid, search.StrategyHyperband:
		return fmt.Errorf("warm_start: with strategy %s: a grid would train its points anyway, and hyperband's brackets have fixed sizes; use random, tpe, asha or tpe+asha", q.Strategy)
	}
	if len(w.Trials) == 0 {
		return fmt.Errorf("warm_start: grid sweep %s gave no configurations", w.Sweep)
	}
	seen := map[string]bool{}
	for i, t := range w.Trials {
		c := search.Config(t.Config)
		switch {
		case !space.Contains(c):
			return fmt.Errorf("warm_start: grid sweep %s's configuration %s lies outside the search space", w.Sweep, c)
		case len(t.Val) != rounds || len(t.Test) != rounds:
			return fmt.Errorf("warm_start: grid sweep %s's configuration %s has %d rounds; the search's campaigns run %d", w.Sweep, c, len(t.Val), rounds)
		case seen[c.String()]:
			return fmt.Errorf("warm_start: grid sweep %s gives configuration %s twice (trial %d)", w.Sweep, c, i)
		}
		seen[c.String()] = true
	}
	return nil
}

// SearchEvent is one action of an adaptive sweep: it started trial
// Trial's campaigns (Kind search.Start) or resumed them (search.Promote) at
// virtual time Start to train rounds From+1 … To, its rung Rung.
type SearchEvent struct {
	Kind  search.ActionKind `json:"kind"`
	Trial int               `json:"trial"`
	Rung  int               `json:"rung"`
	From  int               `json:"from"`
	To    int               `json:"to"`
	Start int               `json:"start"`
}

// SearchRecord is sweeps/<sweep>/search.json, written with the results: an
// adaptive sweep's trials (without resume states), its actions and its
// limits, from which `starter sweep report` draws the best-so-far curve
// and the rung table.
type SearchRecord struct {
	Search   SweepSearch   `json:"search"`
	PerTrial int           `json:"per_trial"`
	Budget   int           `json:"budget"`
	TrialCap int           `json:"trial_cap"`
	Trials   []SearchTrial `json:"trials"`
	Events   []SearchEvent `json:"events"`
	Ended    string        `json:"ended,omitempty"` // SearchState.Ended
	// State is the sweep's state when the record was written (running,
	// paused, stopping while it goes; done or stopped at the end; empty in
	// records written before records were written as the sweep goes), and
	// Now its virtual time.
	State string `json:"state,omitempty"`
	Now   int    `json:"now,omitempty"`
}

// SearchTrialLabel is the setting label of trial i, "t0007": part of its
// campaigns' names.
func SearchTrialLabel(i int) string { return fmt.Sprintf("t%04d", i) }

// SearchState is an adaptive sweep's trials and the budget added to it by
// `starter sweep extend`; carried by continue-as-new and returned in the
// sweep's output so that a finished sweep can be extended. It holds a
// few hundred bytes per campaign (paused states are references), which
// bounds a sweep to some thousands of campaigns under Temporal's 2 MB
// payload limit.
type SearchState struct {
	Trials []SearchTrial `json:"trials"`
	// Now is the sweep's virtual time in rounds: an action that trains
	// rounds a+1 … b from time T ends at T + b − a, and the sweep takes
	// the trials' reports in the order of those ends (ties to the lower
	// trial), whatever order their campaigns really finish in. So its
	// decisions depend on no timing, and equal search.Replay's at the same
	// concurrency.
	Now int `json:"now"`
	// Events are the actions taken, in the order the sweep took them.
	Events []SearchEvent `json:"events,omitempty"`
	// Ended says why the search took no more action: search.WhyBudget,
	// WhyTrials, WhyGrid or WhySpace ("" while running or when stopped).
	Ended string `json:"ended,omitempty"`
	// Waiting is why the last SearchNext took no action (search.WhyBudget,
	// …) while a trial it waits for is in flight: no action is asked for
	// until a trial reports or the budget grows. It travels across
	// continue-as-new with the trials in flight, so a continued run asks
	// exactly when one run would have.
	Waiting string `json:"waiting,omitempty"`
	// Budget and TrialCap are the sweep's limits (SweepSearch's Budget
	// and Trials, 0: none) as extended since.
	Budget   int `json:"budget,omitempty"`
	TrialCap int `json:"trial_cap,omitempty"`
}

// SearchTrial is one trial of an adaptive sweep and where it stands.
type SearchTrial struct {
	Index  int                 `json:"index"`
	Config []method.ParamValue `json:"config"`
	State  search.State        `json:"state"`
	// Warm marks a trial seeded by a warm start (SweepSearch.Warm, trial
	// Index of it): complete, without campaigns of this sweep.
	Warm bool `json:"warm,omitempty"`
	// Rung and Bracket are those of its last action; FromRound and
	// Target the rounds that action trains (FromRound+1 … Target), and
	// Start the sweep's virtual time when it began (SearchState.Now).
	Rung      int `json:"rung"`
	Bracket   int `json:"bracket"`
	FromRound int `json:"from_round"`
	Target    int `json:"target"`
	Start     int `json:"start"`
	// Campaigns, one per federation and seed, in the order of
	// SweepSpec.TrialCampaigns.
	Campaigns []SearchCampaign `json:"campaigns"`
}

// SearchCampaign is one campaign of a trial: its last outcome, its
// objective after each round trained, and, while the trial is paused at
// a rung, the saved state the campaign resumes from when promoted.
type SearchCampaign struct {
	Campaign string          `json:"campaign"`
	Outcome  CampaignOutcome `json:"outcome"`
	Values   []float64       `json:"values,omitempty"`
	// Test is the campaign's test metric matching the objective (AUC for
	// val_auc, accuracy for val_acc) after each round, for the report
	// written as the sweep goes; empty in states begun before it.
	Test   []float64    `json:"test,omitempty"`
	Resume *ArtifactRef `json:"resume,omitempty"`
	// Running says the campaign's child run for the trial's action is
	// under way or its result not yet reported; Pending holds that result
	// from the child's end until the trial reports (SearchTrial.End), when
	// it becomes Outcome, Values and Resume.
	Running bool          `json:"running,omitempty"`
	Pending *SearchResult `json:"pending,omitempty"`
}

// SearchResult is a campaign's result for one action of its trial.
type SearchResult struct {
	Outcome CampaignOutcome `json:"outcome"`
	Values  []float64       `json:"values,omitempty"`
	Test    []float64       `json:"test,omitempty"`
	Resume  *ArtifactRef    `json:"resume,omitempty"`
}

// ExtendInput is the argument of UpdateExtend: campaign-rounds and trials
// to add to the sweep's budget.
type ExtendInput struct {
	Budget int `json:"budget,omitempty"`
	Trials int `json:"trials,omitempty"`
}

// SearchNextInput asks what to train next, given the trials so far (their
// Resume states left out) and the budget with any extension.
type SearchNextInput struct {
	Search    SweepSearch   `json:"search"`
	MaxRounds int           `json:"max_rounds"`
	PerTrial  int           `json:"per_trial"` // campaigns per trial
	Budget    int           `json:"budget"`
	Trials    int           `json:"trials"`
	History   []SearchTrial `json:"history"`
}

// SearchNextOutput is the next action (nil when nothing fits the budget,
// the trial cap or what is left of a grid: wait for a running trial, or
// end) with the new trial's configuration for a start, and why none.
type SearchNextOutput struct {
	Action *search.Action      `json:"action,omitempty"`
	Config []method.ParamValue `json:"config,omitempty"`
	Reason string              `json:"reason,omitempty"`
}

// TrialCampaigns returns the campaigns of trial i with configuration
// config: one per federation and seed, named as a grid's
// ("<sweep>-<federation>-<method>-t0007-s<seed>"), with index j (their
// position in this list).
func (s SweepSpec) TrialCampaigns(i int, config []method.ParamValue) ([]SweepCampaign, error) {
	t := s.WithDefaults()
	t.Settings = []SweepSetting{{Label: SearchTrialLabel(i), Set: config}}
	return t.Campaigns()
}

// SearchCampaigns returns every campaign of the sweep's trials, in trial
// order, with Index their position in the list, which
// BuildSweepResultsInput's outcomes of a search sweep refer to. Warm
// trials have none (their campaigns are the grid's).
func (s SweepSpec) SearchCampaigns(trials []SearchTrial) ([]SweepCampaign, error) {
	var out []SweepCampaign
	for _, tr := range trials {
		if tr.Warm {
			continue
		}
		cs, err := s.TrialCampaigns(tr.Index, tr.Config)
		if err != nil {
			return nil, fmt.Errorf("trial %d: %w", tr.Index, err)
		}
		for _, c := range cs {
			c.Index = len(out)
			out = append(out, c)
		}
	}
	return out, nil
}

// OutcomeSearch is where a search sweep's campaign stood when the sweep
// ended: its trial, the trial's last rung, and its status (search.Complete,
// search.Pruned, search.Failed) with the round it stopped at when pruned.
type OutcomeSearch struct {
	Trial         int    `json:"trial"`
	Rung          int    `json:"rung"`
	Status        string `json:"status"`
	PrunedAtRound int    `json:"pruned_at_round,omitempty"`
}

// ValidateExtend checks an extension of an adaptive sweep's budget: each
// amount ≥ 0, at least one > 0, and only limits the sweep has (one it
// does not have is no limit, so adding to it means nothing).
func ValidateExtend(sweep string, st *SearchState, in ExtendInput) error {
	switch {
	case st == nil:
		return fmt.Errorf("sweep %s is a grid: there is no budget to extend", sweep)
	case in.Budget < 0 || in.Trials < 0:
		return fmt.Errorf("extend sweep %s: campaign-rounds %d, trials %d: must be ≥ 0", sweep, in.Budget, in.Trials)
	case in.Budget == 0 && in.Trials == 0:
		return fmt.Errorf("extend sweep %s: give --campaign-rounds N or --trials N", sweep)
	case in.Budget > 0 && st.Budget == 0:
		return fmt.Errorf("extend sweep %s: it has no campaign-rounds budget (trials cap %d); extend --trials", sweep, st.TrialCap)
	case in.Trials > 0 && st.TrialCap == 0:
		return fmt.Errorf("extend sweep %s: it has no trials cap (campaign-rounds budget %d); extend --campaign-rounds", sweep, st.Budget)
	}
	return nil
}

// End is the virtual time at which t's current action ends.
func (t SearchTrial) End() int { return t.Start + t.Target - t.FromRound }

// Finished reports whether every campaign of t's current action has
// ended (its result pending until the trial reports).
func (t SearchTrial) Finished() bool {
	for _, c := range t.Campaigns {
		if c.Running && c.Pending == nil {
			return false
		}
	}
	return true
}

// TrialCurves returns trial t's objective (val) and matching test metric
// (test) after each round every one of its campaigns has trained: the
// means over its campaigns, summed v/k in campaign-name order as `sweep
// replay` sums a grid's curves (so a trial scores bit for bit what the
// same configuration scores in a replay over a grid), NaN when any value
// is NaN. test is nil when a campaign has no test values (a state begun
// before they were kept). A warm trial's curves are its grid's
// (q.Warm.Trials[t.Index]). The values are the metric's own: a minimised
// objective is not negated here.
func (q SweepSearch) TrialCurves(t SearchTrial) (val, test []float64) {
	if t.Warm {
		if q.Warm == nil || t.Index < 0 || t.Index >= len(q.Warm.Trials) {
			return nil, nil
		}
		w := q.Warm.Trials[t.Index]
		return w.Val, w.Test
	}
	if len(t.Campaigns) == 0 {
		return nil, nil
	}
	n, nt := math.MaxInt, math.MaxInt
	for _, c := range t.Campaigns {
		n = min(n, len(c.Values))
		nt = min(nt, len(c.Test))
	}
	cs := slices.SortedFunc(slices.Values(t.Campaigns), func(a, b SearchCampaign) int { return strings.Compare(a.Campaign, b.Campaign) })
	k := float64(len(cs))
	val = make([]float64, n)
	for r := range n {
		for _, c := range cs {
			val[r] += c.Values[r] / k
		}
	}
	if nt >= n && n > 0 {
		test = make([]float64, n)
		for r := range n {
			for _, c := range cs {
				test[r] += c.Test[r] / k
			}
		}
	}
	return val, test
}

// Better reports whether objective value a beats b in q's direction (a
// NaN never beats anything, and anything beats a NaN).
func (q SweepSearch) Better(a, b float64) bool {
	switch {
	case math.IsNaN(a):
		return false
	case math.IsNaN(b):
		return true
	case q.Minimise():
		return a < b
	}
	return a > b
}
