package search

import (
	"fmt"
	"math"
	"sort"
)

// Strategy names how a sweep proposes configurations and spends rounds,
// as the sweep file's `strategy:` writes it.
type Strategy string

// The strategies. The sampler proposes a new trial's configuration; the
// scheduler decides how many rounds a trial trains and which paused trial
// resumes.
const (
	StrategyGrid      Strategy = "grid"      // every point of a choice grid, in order, each to max rounds
	StrategyRandom    Strategy = "random"    // random points, each to max rounds
	StrategyTPE       Strategy = "tpe"       // TPE points, each to max rounds
	StrategyASHA      Strategy = "asha"      // random points under ASHA with paused-trial promotion
	StrategyTPEASHA   Strategy = "tpe+asha"  // TPE points under ASHA
	StrategyHyperband Strategy = "hyperband" // random points under Hyperband's brackets
)

// Strategies lists the strategies in the order the sweep file's
// documentation gives them.
var Strategies = []Strategy{StrategyGrid, StrategyRandom, StrategyASHA, StrategyTPE, StrategyTPEASHA, StrategyHyperband}

// Validate reports an unknown strategy.
func (s Strategy) Validate() error {
	for _, x := range Strategies {
		if s == x {
			return nil
		}
	}
	return fmt.Errorf("strategy %q: unknown; want one of %v", string(s), Strategies)
}

// sampler returns the strategy's sampler: Grid, Random or TPE.
func (s Strategy) sampler() Strategy {
	switch s {
	case StrategyASHA, StrategyHyperband:
		return StrategyRandom
	case StrategyTPEASHA:
		return StrategyTPE
	}
	return s
}

// State is where a trial stands.
type State string

// The states of a trial.
const (
	// Running: it is training towards Trial.Target.
	Running State = "running"
	// Paused: it stopped at a rung below the max rounds and may be
	// promoted (resumed from its last round) later.
	Paused State = "paused"
	// Complete: it trained to the max rounds.
	Complete State = "complete"
	// Pruned: it stopped below the max rounds for good.
	Pruned State = "pruned"
	// Failed: its campaign failed; TPE ignores it and no scheduler
	// resumes it.
	Failed State = "failed"
)

// Trial is one configuration of a sweep and what it has trained so far.
type Trial struct {
	// Index is the trial's number in the sweep, from 0: the order in which
	// trials were started.
	Index  int    `json:"index"`
	Config Config `json:"config"`
	State  State  `json:"state"`
	// Values holds the objective after each trained round: Values[r-1]
	// after round r, so len(Values) is the number of rounds trained. A
	// NaN counts as the worst value.
	Values []float64 `json:"values,omitempty"`
	// Target is the round the trial was last sent to train to (an
	// Action's ToRound); for a trial that is not running it equals
	// len(Values) unless the trial failed. Zero is read as len(Values).
	Target int `json:"target_round,omitempty"`
}

// Rounds returns the number of rounds t has trained.
func (t Trial) Rounds() int { return len(t.Values) }

// target returns the round t was last sent to.
func (t Trial) target() int {
	if t.Target > len(t.Values) {
		return t.Target
	}
	return len(t.Values)
}

// valueAt returns t's objective after round r (1-based), NaN read as -Inf,
// and whether t has trained that far.
func (t Trial) valueAt(r int) (float64, bool) {
	if r < 1 || r > len(t.Values) {
		return 0, false
	}
	return orWorst(t.Values[r-1]), true
}

func orWorst(x float64) float64 {
	if math.IsNaN(x) {
		return math.Inf(-1)
	}
	return x
}

// ActionKind says whether an Action starts a new trial, resumes one, or
// (under a pruner) settles a paused one without training.
type ActionKind string

// The kinds of action.
const (
	Start   ActionKind = "start"
	Promote ActionKind = "promote"
	// Prune stops a paused trial for good at its last round (the median
	// pruner's decision); it trains nothing.
	Prune ActionKind = "prune"
	// Finish marks a paused trial that has trained every round complete
	// once the median pruner has let it pass its last check; it trains
	// nothing.
	Finish ActionKind = "finish"
)

// Trains reports whether the action trains rounds (a start or a
// promotion), as against settling a trial (prune, finish).
func (k ActionKind) Trains() bool { return k == Start || k == Promote }

// Action is what a sweep does next: start trial Trial (the next unused
// index; its configuration comes from Suggest) or promote the paused trial
// Trial, resuming it from round FromRound; either way it trains rounds
// FromRound+1 … ToRound, costing ToRound − FromRound campaign-rounds. A
// Prune or Finish action settles the paused trial Trial at its round
// (FromRound = ToRound) and costs nothing.
type Action struct {
	Kind  ActionKind `json:"kind"`
	Trial int        `json:"trial"`
	// Rung is the rung the trial trains to (0 for the first), within its
	// bracket under Hyperband; without a scheduler every trial has the
	// one rung 0 at the max rounds.
	Rung int `json:"rung"`
	// Bracket is the trial's Hyperband bracket s (Li et al. 2018); 0
	// under the other strategies.
	Bracket   int `json:"bracket"`
	FromRound int `json:"from_round"`
	ToRound   int `json:"to_round"`
}

// Cost returns the campaign-rounds the action trains.
func (a Action) Cost() int { return a.ToRound - a.FromRound }

// Schedule is a strategy with its resolved settings: it decides, from the
// trials so far, what to train next.
type Schedule struct {
	Strategy  Strategy
	MaxRounds int
	ASHA      ASHA      // asha and tpe+asha
	Hyperband Hyperband // hyperband
	Pruner    Pruner    // random and tpe: PrunerNone or PrunerMedian
	Median    Median    // under PrunerMedian
}

// ScheduleOptions are a strategy's settings as a sweep file gives them:
// `asha:` for asha, tpe+asha and hyperband, `pruner:` and `median:` for
// random and tpe.
type ScheduleOptions struct {
	ASHA   ASHAOptions
	Pruner Pruner
	Median MedianOptions
}

// NewSchedule resolves strategy s with options o (zero fields take their
// defaults, see ASHAOptions and MedianOptions) for campaigns of maxRounds
// rounds.
func NewSchedule(s Strategy, o ScheduleOptions, maxRounds int) (Schedule, error) {
	if err := s.Validate(); err != nil {
		return Schedule{}, err
	}
	if maxRounds < 1 {
		return Schedule{}, fmt.Errorf("search: max rounds %d: must be ≥ 1", maxRounds)
	}
	if err := o.Pruner.Validate(s); err != nil {
		return Schedule{}, err
	}
	if o.Pruner != PrunerMedian && o.Median != (MedianOptions{}) {
		return Schedule{}, fmt.Errorf("median: options given without pruner: median; remove them or set the pruner")
	}
	sc := Schedule{Strategy: s, MaxRounds: maxRounds, Pruner: o.Pruner}
	var err error
	switch s {
	case StrategyASHA, StrategyTPEASHA:
		sc.ASHA, err = NewASHA(o.ASHA, maxRounds)
	case StrategyHyperband:
		sc.Hyperband, err = NewHyperband(o.ASHA, maxRounds)
	default:
		if o.ASHA != (ASHAOptions{}) {
			err = fmt.Errorf("asha: options given, but strategy %s has no rungs; remove them or use asha, tpe+asha or hyperband", s)
		}
	}
	if err == nil && o.Pruner == PrunerMedian {
		sc.Median, err = NewMedian(o.Median, maxRounds)
	}
	if err != nil {
		return Schedule{}, err
	}
	return sc, nil
}

// Next returns the action to take given trials (any order): under asha
// and tpe+asha, ASHA.NextToPromote's promotion if there is one; under
// hyperband, Hyperband.NextToPromote's; under the median pruner, its
// decision on a paused trial (nextMedian); otherwise a new trial with the
// next unused index, trained to the first rung (the max rounds without a
// scheduler, the first check round under the median pruner). It never waits: a new trial can always start; the caller
// stops on its budget.
func (sc Schedule) Next(trials []Trial) Action {
	if sc.Pruner == PrunerMedian {
		return sc.nextMedian(trials)
	}
	switch sc.Strategy {
	case StrategyASHA, StrategyTPEASHA:
		if a, ok := sc.ASHA.NextToPromote(trials); ok {
			return a
		}
		return Action{Kind: Start, Trial: nextIndex(trials), ToRound: sc.ASHA.Rungs()[0]}
	case StrategyHyperband:
		if a, ok := sc.Hyperband.NextToPromote(trials); ok {
			return a
		}
		i := nextIndex(trials)
		s, _ := sc.Hyperband.BracketOf(i)
		return Action{Kind: Start, Trial: i, Bracket: s, ToRound: sc.Hyperband.Bracket(s).Rounds[0]}
	}
	return Action{Kind: Start, Trial: nextIndex(trials), ToRound: sc.MaxRounds}
}

func nextIndex(trials []Trial) int {
	n := 0
	for _, t := range trials {
		if t.Index >= n {
			n = t.Index + 1
		}
	}
	return n
}

// rankAt returns the trials that have trained to round r, best value at r
// first, ties by lower index (so the order never depends on the input's).
func rankAt(trials []Trial, r int) []Trial {
	var out []Trial
	for _, t := range trials {
		if _, ok := t.valueAt(r); ok {
			out = append(out, t)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		vi, _ := out[i].valueAt(r)
		vj, _ := out[j].valueAt(r)
		if vi != vj {
			return vi > vj
		}
		return out[i].Index < out[j].Index
	})
	return out
}
