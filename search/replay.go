package search

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// TableRow is one configuration of a finished grid sweep with its
// validation metric (the objective) and test metric after each round:
// Val[r-1] and Test[r-1] after round r.
type TableRow struct {
	Config Config    `json:"config"`
	Val    []float64 `json:"val"`
	Test   []float64 `json:"test"`
}

// Table is a finished grid's per-round table: one row per point of Space,
// a space of Choice dimensions, every row with the same number of rounds.
type Table struct {
	Space Space
	Rows  []TableRow
}

// check returns the table's rounds per row and the row of each
// configuration's key, after checking that the table covers its space's
// grid exactly once with complete curves.
func (tb Table) check() (rounds int, rowOf map[string]int, err error) {
	size, err := tb.Space.GridSize()
	if err != nil {
		return 0, nil, fmt.Errorf("replay table: %w", err)
	}
	if len(tb.Rows) == 0 {
		return 0, nil, errors.New("replay table: no rows")
	}
	rounds = len(tb.Rows[0].Val)
	rowOf = make(map[string]int, len(tb.Rows))
	for i, row := range tb.Rows {
		switch {
		case !tb.Space.Contains(row.Config):
			return 0, nil, fmt.Errorf("replay table: row %d (%s): not a point of the search space", i, row.Config)
		case len(row.Val) != rounds || len(row.Test) != rounds || rounds == 0:
			return 0, nil, fmt.Errorf("replay table: row %d (%s): %d validation and %d test values; want %d of each (row 0's), at least 1",
				i, row.Config, len(row.Val), len(row.Test), rounds)
		}
		key := canonical(tb.Space, row.Config).key()
		if j, dup := rowOf[key]; dup {
			return 0, nil, fmt.Errorf("replay table: rows %d and %d: same configuration %s", j, i, row.Config)
		}
		rowOf[key] = i
	}
	if len(tb.Rows) != size {
		for g := range size {
			c, _ := SuggestGrid(tb.Space, g)
			if _, ok := rowOf[c.key()]; !ok {
				return 0, nil, fmt.Errorf("replay table: %d rows for a grid of %d points; missing %s", len(tb.Rows), size, c)
			}
		}
	}
	return rounds, rowOf, nil
}

// canonical returns c with its values in space's order.
func canonical(space Space, c Config) Config {
	out := make(Config, len(space.Dims))
	for j, d := range space.Dims {
		x, _ := d.internal(c)
		out[j] = d.value(x)
	}
	return out
}

// ReplayOptions are the settings of a replay.
type ReplayOptions struct {
	ASHA   ASHAOptions   // asha, tpe+asha and hyperband
	TPE    TPEOptions    // tpe and tpe+asha
	Pruner Pruner        // random and tpe
	Median MedianOptions // under PrunerMedian
	// Warm are trials the replay starts from, as a sweep warm-started
	// from a finished grid does (warm_start): complete trials with every
	// round's value, Warm[i].Index = i, each configuration a row of the
	// table. They count as tried, cost no rounds and no trial of the cap.
	Warm []Trial
	// Budget is the most campaign-rounds to train (0: no limit): the
	// replay starts no action whose cost would take the rounds trained
	// and being trained past it.
	Budget int
	// Trials is the most trials to start (0: no limit); the trials
	// started may still be promoted.
	Trials int
	// Concurrency is how many trials train at once (0: 1). Every round
	// takes one unit of simulated time, so with more than one the
	// sampler sees running trials (the constant liar) and the scheduler
	// promotes only what has finished.
	Concurrency int
}

// ReplayEvent is one action of a replay: what it trained and when, in
// rounds of simulated time.
type ReplayEvent struct {
	Action Action `json:"action"`
	Config Config `json:"config"`
	// Start and End are the simulated times at which it began and ended.
	Start int `json:"start"`
	End   int `json:"end"`
	// Spent is the campaign-rounds trained, over every trial, when it
	// ended.
	Spent int `json:"spent"`
	// Incumbent is the best trial when it ended.
	Incumbent Incumbent `json:"incumbent"`
}

// Incumbent is the best trial so far: among the trials trained to the most
// rounds any trial has reached (the top rung: a metric after 3 rounds is
// not comparable with one after 15), the highest validation metric, ties
// to the lower index.
type Incumbent struct {
	Trial  int     `json:"trial"`
	Config Config  `json:"config"`
	Round  int     `json:"round"` // its last trained round
	Val    float64 `json:"val"`   // validation metric after Round
	Test   float64 `json:"test"`  // test metric after Round
	// TestAtMax is the table's test metric of its configuration at the
	// max rounds, as if it had trained to the end.
	TestAtMax float64 `json:"test_at_max"`
}

// ReplayResult is what a replay did.
type ReplayResult struct {
	// Trials are the trials in index order; a trial left paused at the
	// end is Pruned, stopped at its last round.
	Trials []Trial `json:"trials"`
	// Events are the actions in the order they started: starts and the
	// rung promotions.
	Events []ReplayEvent `json:"events"`
	// Spent is the campaign-rounds trained in all.
	Spent     int       `json:"spent"`
	Incumbent Incumbent `json:"incumbent"`
	// Ended is why the replay took no more action: WhyBudget, WhyTrials,
	// WhyGrid or WhySpace.
	Ended string `json:"ended"`
}

// Replay runs strategy s against table at no training cost: a trial
// "trains" from round a to round b by reading the rows of its
// configuration, and a promoted trial resumes, so going from rung r1 to r2
// costs r2 − r1 campaign-rounds. Configurations come from Suggest (TPE
// with opts.TPE) over table.Space, so every proposal is a grid point;
// actions come from the Schedule of s with opts.ASHA and the table's
// rounds as the max rounds. An action that does not fit opts.Budget, a
// start past opts.Trials or past a grid's end is not taken; the replay
// ends when nothing is running and the next action is such a one. A
// random or TPE strategy needs a budget or a trial cap. With
// opts.Concurrency k, up to k actions run at once; a finished action
// frees its worker at the end of its simulated time, the lower trial
// index first on ties, so the replay is deterministic.
func Replay(table Table, s Strategy, opts ReplayOptions, seed uint64) (ReplayResult, error) {
	maxRounds, rowOf, err := table.check()
	if err != nil {
		return ReplayResult{}, err
	}
	sc, err := NewSchedule(s, ScheduleOptions{ASHA: opts.ASHA, Pruner: opts.Pruner, Median: opts.Median}, maxRounds)
	if err != nil {
		return ReplayResult{}, err
	}
	if s != StrategyGrid && opts.Budget <= 0 && opts.Trials <= 0 {
		return ReplayResult{}, fmt.Errorf("replay %s: give a budget or a trial cap; only a grid ends by itself", s)
	}
	workers := max(opts.Concurrency, 1)

	type job struct {
		ev  int // index in res.Events
		row int
	}
	var (
		res       ReplayResult
		trials    []Trial // trials[i].Index == i
		rows      []int   // rows[i]: trial i's table row
		running   []job
		committed int // rounds of the running jobs
		now       int
	)
	for i, w := range opts.Warm {
		row, ok := rowOf[canonical(table.Space, w.Config).key()]
		switch {
		case w.Index != i || !table.Space.Contains(w.Config) || !ok:
			return ReplayResult{}, fmt.Errorf("replay %s: warm trial %d (index %d, %s): want index %d and a configuration of the table", s, i, w.Index, w.Config, i)
		case w.State != Complete || len(w.Values) != maxRounds:
			return ReplayResult{}, fmt.Errorf("replay %s: warm trial %d: %s with %d values; want complete with %d", s, i, w.State, len(w.Values), maxRounds)
		}
		trials = append(trials, Trial{Index: i, Config: w.Config, State: Complete, Values: append([]float64(nil), w.Values...)})
		rows = append(rows, row)
	}
	for {
		// Start actions while a worker is free and the next action fits.
		// One that does not fit (the budget, the trial cap, the grid's
		// end) waits: a running trial's report may make a promotion the
		// next action. With nothing running, nothing can change: the
		// replay ends.
		for len(running) < workers {
			a, c, why, err := sc.Decide(table.Space, trials, seed, opts.TPE,
				Limits{Budget: opts.Budget, Trials: opts.Trials, Spent: res.Spent, Committed: committed, Warm: len(opts.Warm)})
			if err != nil {
				return ReplayResult{}, fmt.Errorf("replay %s: trial %d: %w", s, a.Trial, err)
			}
			res.Ended = why
			if why != "" {
				break
			}
			if !a.Kind.Trains() {
				// A pruner's decision on a paused trial: no worker.
				t := &trials[a.Trial]
				t.State = Pruned
				if a.Kind == Finish {
					t.State = Complete
				}
				res.Events = append(res.Events, ReplayEvent{Action: a, Config: t.Config, Start: now, End: now, Spent: res.Spent, Incumbent: incumbent(table, trials, rows)})
				continue
			}
			if a.Kind == Start {
				row, ok := rowOf[canonical(table.Space, c).key()]
				if !ok {
					return ReplayResult{}, fmt.Errorf("replay %s: trial %d: %s is not in the table", s, a.Trial, c)
				}
				trials = append(trials, Trial{Index: a.Trial, Config: c})
				rows = append(rows, row)
			}
			t := &trials[a.Trial]
			t.State, t.Target = Running, a.ToRound
			committed += a.Cost()
			res.Events = append(res.Events, ReplayEvent{Action: a, Config: t.Config, Start: now, End: now + a.Cost()})
			running = append(running, job{ev: len(res.Events) - 1, row: rows[a.Trial]})
		}
		if len(running) == 0 {
			break
		}
		sort.SliceStable(running, func(i, j int) bool {
			ei, ej := res.Events[running[i].ev], res.Events[running[j].ev]
			if ei.End != ej.End {
				return ei.End < ej.End
			}
			return ei.Action.Trial < ej.Action.Trial
		})
		j := running[0]
		running = running[1:]
		ev := &res.Events[j.ev]
		a := ev.Action
		t := &trials[a.Trial]
		t.Values = append(t.Values, table.Rows[j.row].Val[a.FromRound:a.ToRound]...)
		t.State = Paused
		if a.ToRound == maxRounds && sc.Pruner != PrunerMedian {
			// Under the median pruner a trial at the last round waits
			// for its last check (a Finish or Prune action).
			t.State = Complete
		}
		now = ev.End
		committed -= a.Cost()
		res.Spent += a.Cost()
		ev.Spent = res.Spent
		ev.Incumbent = incumbent(table, trials, rows)
	}
	for i := range trials {
		if trials[i].State == Paused {
			trials[i].State = Pruned
		}
	}
	res.Trials = trials
	res.Incumbent = incumbent(table, trials, rows)
	return res, nil
}

func suggestWith(space Space, s Strategy, history []Trial, seed uint64, index int, tpe TPEOptions) (Config, error) {
	if s.sampler() == StrategyTPE {
		return SuggestTPE(space, history, seed, index, tpe)
	}
	return Suggest(space, s, history, seed, index)
}

// Limits bound what Schedule.Decide may start: Budget campaign-rounds in
// all (0: none), of which Spent are trained and Committed being trained,
// and Trials trials (0: none) besides the Warm trials a warm start seeded
// (the first Warm indices). A trial runs PerTrial campaigns (0: 1), so an
// action costs PerTrial·Action.Cost() campaign-rounds.
type Limits struct {
	Budget, Trials, Spent, Committed, PerTrial, Warm int
}

// Why Schedule.Decide takes no action.
const (
	WhyBudget = "budget"          // the next action does not fit the budget
	WhyTrials = "trials"          // the trial cap is reached
	WhyGrid   = "grid exhausted"  // every grid point has been started
	WhySpace  = "space exhausted" // every configuration of a finite space has been tried
)

// Decide returns the action to take next given trials (Next), with the
// new trial's configuration for a start (Suggest, TPE with tpe, over
// space from the sweep's seed), or a reason (WhyBudget, WhyTrials,
// WhyGrid, WhySpace) to take none now: a running trial's report may make
// a promotion fit later. A start never repeats the configuration of
// another trial (TPEOptions.Revisit aside). It is a pure function of its
// arguments: a sweep runs it as an activity, and a replay in a loop.
func (sc Schedule) Decide(space Space, trials []Trial, seed uint64, tpe TPEOptions, lim Limits) (Action, Config, string, error) {
	a := sc.Next(trials)
	if lim.Budget > 0 && lim.Spent+lim.Committed+max(lim.PerTrial, 1)*a.Cost() > lim.Budget {
		return a, nil, WhyBudget, nil
	}
	if a.Kind != Start {
		return a, nil, "", nil
	}
	if lim.Trials > 0 && len(trials)-lim.Warm >= lim.Trials {
		return a, nil, WhyTrials, nil
	}
	c, err := suggestWith(space, sc.Strategy, trials, seed, a.Trial, tpe)
	switch {
	case errors.Is(err, ErrGridExhausted):
		return a, nil, WhyGrid, nil
	case errors.Is(err, ErrSpaceExhausted):
		return a, nil, WhySpace, nil
	}
	return a, c, "", err
}

// incumbent returns the best of trials (Incumbent's order); Trial is −1
// when none has trained.
func incumbent(table Table, trials []Trial, rows []int) Incumbent {
	best := Incumbent{Trial: -1, Val: math.Inf(-1)}
	top := 0
	for _, t := range trials {
		top = max(top, t.Rounds())
	}
	for i, t := range trials {
		r := t.Rounds()
		if r == 0 || r < top {
			continue
		}
		v := orWorst(t.Values[r-1])
		if best.Trial >= 0 && v <= best.Val {
			continue
		}
		row := table.Rows[rows[i]]
		best = Incumbent{Trial: t.Index, Config: t.Config, Round: r, Val: v, Test: row.Test[r-1], TestAtMax: row.Test[len(row.Test)-1]}
	}
	return best
}

// GridBest returns the table's best configuration as a grid selects it:
// the highest validation metric at the max rounds, ties to the earlier
// row; Trial is its row.
func GridBest(table Table) Incumbent {
	best := Incumbent{Trial: -1, Val: math.Inf(-1)}
	for i, row := range table.Rows {
		r := len(row.Val)
		if r == 0 {
			continue
		}
		if v := orWorst(row.Val[r-1]); best.Trial < 0 || v > best.Val {
			best = Incumbent{Trial: i, Config: row.Config, Round: r, Val: v, Test: row.Test[r-1], TestAtMax: row.Test[r-1]}
		}
	}
	return best
}
