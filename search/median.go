package search

import (
	"fmt"
	"math"
	"sort"
)

// Pruner names how a random or TPE sweep stops trials early, as the sweep
// file's `pruner:` writes it. asha, tpe+asha and hyperband schedule their
// own rungs and take none.
type Pruner string

// The pruners.
const (
	PrunerNone   Pruner = ""       // every trial trains to the max rounds
	PrunerMedian Pruner = "median" // Optuna's MedianPruner (Median)
)

// Validate reports an unknown pruner, or one given with a strategy that
// schedules its own rungs.
func (p Pruner) Validate(s Strategy) error {
	switch p {
	case PrunerNone:
		return nil
	case PrunerMedian:
		if s.sampler() != s || s == StrategyGrid {
			return fmt.Errorf("pruner: median: with strategy random or tpe (asha, tpe+asha and hyperband stop trials at their own rungs, a grid trains every point)")
		}
		return nil
	}
	return fmt.Errorf("pruner: %q: unknown; want median (or none)", string(p))
}

// MedianOptions are a sweep file's `median:` options, Optuna's
// MedianPruner arguments with rounds as steps: step s is round s + 1, so
// that a campaign's rounds are the steps 0, 1, … of Optuna's
// `for step in range(n): trial.report(value, step)`. Zero fields take
// Optuna's defaults; StartupTrials is a pointer since 0 is a value of its
// own there.
type MedianOptions struct {
	// StartupTrials is n_startup_trials: no trial is pruned until this
	// many trials are complete. Default 5.
	StartupTrials *int `json:"startup_trials,omitempty" yaml:"startup_trials,omitempty"`
	// WarmupSteps is n_warmup_steps: no trial is pruned at a step below it
	// (in its first WarmupSteps rounds). Default 0.
	WarmupSteps int `json:"warmup_steps,omitempty" yaml:"warmup_steps,omitempty"`
	// IntervalSteps is interval_steps: a trial is checked at steps
	// WarmupSteps + k·IntervalSteps. Default 1.
	IntervalSteps int `json:"interval_steps,omitempty" yaml:"interval_steps,omitempty"`
	// MinTrials is n_min_trials: the median needs at least this many
	// complete trials that reported the step. Default 1.
	MinTrials int `json:"min_trials,omitempty" yaml:"min_trials,omitempty"`
}

// Optuna's MedianPruner defaults (optuna/pruners/_median.py, release 4.x).
const (
	DefaultMedianStartupTrials = 5
	DefaultMedianWarmupSteps   = 0
	DefaultMedianIntervalSteps = 1
	DefaultMedianMinTrials     = 1
)

// Median is Optuna's MedianPruner (a PercentilePruner at the 50th
// percentile, pruners/_percentile.py) with resolved settings, over
// campaigns of MaxRounds rounds.
type Median struct {
	StartupTrials, WarmupSteps, IntervalSteps, MinTrials, MaxRounds int
}

// NewMedian applies o's defaults for campaigns of maxRounds rounds and
// validates the result.
func NewMedian(o MedianOptions, maxRounds int) (Median, error) {
	m := Median{StartupTrials: DefaultMedianStartupTrials, WarmupSteps: o.WarmupSteps, IntervalSteps: o.IntervalSteps, MinTrials: o.MinTrials, MaxRounds: maxRounds}
	if o.StartupTrials != nil {
		m.StartupTrials = *o.StartupTrials
	}
	if m.IntervalSteps == 0 {
		m.IntervalSteps = DefaultMedianIntervalSteps
	}
	if m.MinTrials == 0 {
		m.MinTrials = DefaultMedianMinTrials
	}
	switch {
	case maxRounds < 1:
		return Median{}, fmt.Errorf("median: max rounds %d: must be ≥ 1", maxRounds)
	case m.StartupTrials < 0:
		return Median{}, fmt.Errorf("median.startup_trials = %d: must be ≥ 0", m.StartupTrials)
	case m.WarmupSteps < 0:
		return Median{}, fmt.Errorf("median.warmup_steps = %d: must be ≥ 0", m.WarmupSteps)
	case m.IntervalSteps < 1:
		return Median{}, fmt.Errorf("median.interval_steps = %d: must be ≥ 1", m.IntervalSteps)
	case m.MinTrials < 1:
		return Median{}, fmt.Errorf("median.min_trials = %d: must be ≥ 1", m.MinTrials)
	}
	return m, nil
}

// checked reports whether the pruner looks at a trial after round r: step
// r − 1 is at least WarmupSteps and the first of its interval
// (_is_first_in_interval_step for a trial that reports every step).
func (m Median) checked(r int) bool {
	s := r - 1
	return s >= m.WarmupSteps && (s-m.WarmupSteps)%m.IntervalSteps == 0
}

// NextCheck returns the first round after r at which the pruner looks at a
// trial, or MaxRounds when none comes before it: the round a trial at
// round r trains to next.
func (m Median) NextCheck(r int) int {
	for x := r + 1; x < m.MaxRounds; x++ {
		if m.checked(x) {
			return x
		}
	}
	return m.MaxRounds
}

// ShouldPrune is Optuna's PercentilePruner.prune at the 50th percentile,
// maximising, for trial index after round: with n the complete trials
// other than it (State Complete), it keeps the trial (false) when n is 0
// or below StartupTrials, when the round's step is not checked, or when
// fewer than MinTrials of those trials have a value at the step or all of
// theirs are NaN; it prunes (true) when every value the trial has so far
// is NaN; otherwise it prunes when the best of the trial's values so far
// (nanmax) is below the median of the complete trials' values at the
// step (numpy.nanpercentile, linear interpolation). A trial not among
// trials, or without that many rounds, is never pruned.
func (m Median) ShouldPrune(trials []Trial, index, round int) bool {
	var self *Trial
	var completed []Trial
	for i, t := range trials {
		switch {
		case t.Index == index:
			self = &trials[i]
		case t.State == Complete:
			completed = append(completed, t)
		}
	}
	n := len(completed)
	if self == nil || round < 1 || round > self.Rounds() || n == 0 || n < m.StartupTrials || !m.checked(round) {
		return false
	}
	best := math.NaN()
	for _, v := range self.Values[:round] {
		if !math.IsNaN(v) && (math.IsNaN(best) || v > best) {
			best = v
		}
	}
	if math.IsNaN(best) {
		return true
	}
	var at []float64
	for _, t := range completed {
		if round <= len(t.Values) {
			at = append(at, t.Values[round-1])
		}
	}
	if len(at) < m.MinTrials {
		return false
	}
	p := nanPercentile(at, 50)
	if math.IsNaN(p) {
		return false
	}
	return best < p
}

// nanPercentile is numpy.nanpercentile(x, q) with the default linear
// method: NaNs dropped, the sorted values v_0 ≤ … ≤ v_{n−1}, position
// h = (n − 1)·q/100, and v_⌊h⌋ + t·(v_⌊h⌋+1 − v_⌊h⌋) with t = h − ⌊h⌋,
// computed as numpy's _lerp does (from the upper value when t ≥ ½, so
// that the result is numpy's to the last bit). NaN when every value is.
func nanPercentile(x []float64, q float64) float64 {
	v := make([]float64, 0, len(x))
	for _, a := range x {
		if !math.IsNaN(a) {
			v = append(v, a)
		}
	}
	if len(v) == 0 {
		return math.NaN()
	}
	sort.Float64s(v)
	h := float64(len(v)-1) * q / 100
	lo := int(math.Floor(h))
	if lo >= len(v)-1 {
		return v[len(v)-1]
	}
	t := h - float64(lo)
	a, b := v[lo], v[lo+1]
	d := b - a
	if t >= 0.5 {
		return b - d*(1-t)
	}
	return a + d*t
}

// nextMedian is Schedule.Next under the median pruner. A paused trial
// has just reported a check round or the last round: the pruner prunes it
// there (a Prune action, cost 0), or completes it when it has trained
// every round (a Finish action, cost 0), or else promotes it to the next
// check round. The cost-free decisions come first, lowest trial first, so
// that a promotion waiting for budget holds up no other trial; with no
// trial paused, a new trial trains to the first check round.
func (sc Schedule) nextMedian(trials []Trial) Action {
	promote := Action{Trial: -1}
	for _, t := range sortedByIndex(trials) {
		if t.State != Paused {
			continue
		}
		r := t.Rounds()
		switch {
		case sc.Median.ShouldPrune(trials, t.Index, r):
			return Action{Kind: Prune, Trial: t.Index, FromRound: r, ToRound: r}
		case r >= sc.MaxRounds:
			return Action{Kind: Finish, Trial: t.Index, FromRound: r, ToRound: r}
		case promote.Trial < 0:
			promote = Action{Kind: Promote, Trial: t.Index, FromRound: r, ToRound: sc.Median.NextCheck(r)}
		}
	}
	if promote.Trial >= 0 {
		return promote
	}
	return Action{Kind: Start, Trial: nextIndex(trials), ToRound: sc.Median.NextCheck(0)}
}
