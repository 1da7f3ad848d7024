package search

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// nanPercentile against numpy.nanpercentile(x, 50) (numpy 1.24.2, default
// linear method), printed with repr: the first case is where numpy's
// _lerp, taken from the upper value, differs in the last bit from
// a + (b − a)/2 (0.4).
func TestNanPercentileNumpy(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		x    []float64
		want float64
	}{
		0: {[]float64{0.1, 0.7}, 0.39999999999999997},
		1: {[]float64{0.3, 0.1, nan, 0.7, 0.2}, 0.25},
		2: {[]float64{0.83, 0.81, 0.86, 0.79}, 0.8200000000000001},
		3: {[]float64{0.2}, 0.2},
		4: {[]float64{nan}, nan},
	}
	for i, c := range cases {
		got := nanPercentile(c.x, 50)
		if got != c.want && !(math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("case %d: nanpercentile(%v, 50) = %v, want %v", i, c.x, got, c.want)
		}
	}
}

// medianTrial is a trial whose Optuna intermediate values are steps (step
// → value, steps 0-based); a step it did not report is NaN, which our
// pruner reads as Optuna reads a missing step. minimize negates the
// values, as a sweep does for objective.mode min.
func medianTrial(index int, state State, minimize bool, steps map[int]float64) Trial {
	last := -1
	for s := range steps {
		last = max(last, s)
	}
	v := make([]float64, last+1)
	for s := range v {
		x, ok := steps[s]
		switch {
		case !ok:
			v[s] = math.NaN()
		case minimize:
			v[s] = -x
		default:
			v[s] = x
		}
	}
	return Trial{Index: index, State: state, Values: v}
}

func intp(i int) *int { return &i }

// ShouldPrune against Optuna's own tests of MedianPruner
// (tests/pruners_tests/test_median.py, optuna/optuna at commit 0032d795):
// each case is one of its assertions, with the trials that precede it
// (Optuna's default direction is minimize; "step" is Optuna's step, our
// round step + 1).
func TestMedianPrunerOptunaCases(t *testing.T) {
	type tr = map[int]float64
	cases := []struct {
		name     string
		o        MedianOptions
		minimize bool
		done     []map[int]float64 // complete trials, in order
		self     map[int]float64   // the trial asked about
		step     int
		want     bool
	}{
		{"one trial: not activated at a first trial", MedianOptions{StartupTrials: intp(0)}, true, nil, tr{1: 1}, 1, false},
		{"intermediate values, minimize 2 vs 1", MedianOptions{StartupTrials: intp(0)}, true, []map[int]float64{{1: 1}}, tr{1: 2}, 1, true},
		{"intermediate values, maximize 0.5 vs 1", MedianOptions{StartupTrials: intp(0)}, false, []map[int]float64{{1: 1}}, tr{1: 0.5}, 1, true},
		{"nan: no previous trials", MedianOptions{StartupTrials: intp(0)}, true, nil, tr{1: math.NaN()}, 1, false},
		{"nan: best intermediate value NaN", MedianOptions{StartupTrials: intp(0)}, true, []map[int]float64{{1: math.NaN()}}, tr{1: math.NaN()}, 1, true},
		{"nan: median NaN", MedianOptions{StartupTrials: intp(0)}, true, []map[int]float64{{1: math.NaN()}, {1: math.NaN()}}, tr{1: 1}, 1, false},
		{"startup: during startup trials", MedianOptions{StartupTrials: intp(2)}, true, []map[int]float64{{1: 1}}, tr{1: 2}, 1, false},
		{"startup: after startup trials", MedianOptions{StartupTrials: intp(2)}, true, []map[int]float64{{1: 1}, {1: 2}}, tr{1: 3}, 1, true},
		{"warmup: during warm-up steps", MedianOptions{StartupTrials: intp(0), WarmupSteps: 1}, true, []map[int]float64{{0: 1, 1: 1}}, tr{0: 2}, 0, false},
		{"warmup: after warm-up steps", MedianOptions{StartupTrials: intp(0), WarmupSteps: 1}, true, []map[int]float64{{0: 1, 1: 1}}, tr{0: 2, 1: 2}, 1, true},
		{"min trials: step 2 seen once", MedianOptions{StartupTrials: intp(2), MinTrials: 2}, true, []map[int]float64{{1: 4, 2: 2}, {1: 3}}, tr{1: 4, 2: 3}, 2, false},
		{"min trials: step 2 seen twice (median 2.5 < 3)", MedianOptions{StartupTrials: intp(2), MinTrials: 2}, true, []map[int]float64{{1: 4, 2: 2}, {1: 3}, {1: 4, 2: 3}}, tr{1: 4, 2: 3}, 2, true},
	}
	for i, c := range cases {
		m, err := NewMedian(c.o, 50)
		if err != nil {
			t.Fatal(err)
		}
		var trials []Trial
		for j, d := range c.done {
			trials = append(trials, medianTrial(j, Complete, c.minimize, d))
		}
		self := medianTrial(len(trials), Paused, c.minimize, c.self)
		trials = append(trials, self)
		if got := m.ShouldPrune(trials, self.Index, c.step+1); got != c.want {
			t.Errorf("case %d (%s): prune %v, want %v", i, c.name, got, c.want)
		}
	}
}

// The steps at which the pruner looks, against the cases of Optuna's
// test_median_pruner_interval_steps whose trial reports every step
// (report_steps 1): one complete trial reporting 0 at every step, the
// trial reporting 2 at every step, minimising, n_startup_trials 0.
func TestMedianPrunerIntervalSteps(t *testing.T) {
	cases := []struct {
		warmup, interval int
		want             []int // the steps at which it prunes
	}{
		0: {0, 1, []int{0, 1, 2, 3, 4, 5}},
		1: {1, 1, []int{1, 2, 3, 4, 5}},
		2: {1, 2, []int{1, 3, 5}},
	}
	for i, c := range cases {
		last := slices.Max(c.want) + 1
		m, err := NewMedian(MedianOptions{StartupTrials: intp(0), WarmupSteps: c.warmup, IntervalSteps: c.interval}, 50)
		if err != nil {
			t.Fatal(err)
		}
		done, self := map[int]float64{}, map[int]float64{}
		for s := range last {
			done[s], self[s] = 0, 2
		}
		trials := []Trial{medianTrial(0, Complete, true, done), medianTrial(1, Paused, true, self)}
		var pruned []int
		for s := range last {
			if m.ShouldPrune(trials, 1, s+1) {
				pruned = append(pruned, s)
			}
		}
		if !slices.Equal(pruned, c.want) {
			t.Errorf("case %d: pruned at steps %v, want %v", i, pruned, c.want)
		}
	}
}

// NewMedian takes Optuna's defaults (n_startup_trials 5, n_warmup_steps
// 0, interval_steps 1, n_min_trials 1) and names a bad setting; NextCheck
// walks the checked rounds (steps w + k·i, round = step + 1) up to the
// last round.
func TestMedianDefaultsAndChecks(t *testing.T) {
	m, err := NewMedian(MedianOptions{}, 10)
	if err != nil || m != (Median{StartupTrials: 5, WarmupSteps: 0, IntervalSteps: 1, MinTrials: 1, MaxRounds: 10}) {
		t.Errorf("defaults %+v, %v", m, err)
	}
	m, _ = NewMedian(MedianOptions{WarmupSteps: 2, IntervalSteps: 3}, 12)
	var rounds []int
	for r := 0; r < m.MaxRounds; r = m.NextCheck(r) {
		rounds = append(rounds, m.NextCheck(r))
	}
	// Steps 2, 5, 8 (rounds 3, 6, 9), then the last round 12.
	if !slices.Equal(rounds, []int{3, 6, 9, 12}) {
		t.Errorf("check rounds %v, want [3 6 9 12]", rounds)
	}
	for i, c := range []struct {
		o    MedianOptions
		want string
	}{
		0: {MedianOptions{StartupTrials: intp(-1)}, "median.startup_trials = -1"},
		1: {MedianOptions{WarmupSteps: -1}, "median.warmup_steps = -1"},
		2: {MedianOptions{IntervalSteps: -2}, "median.interval_steps = -2"},
		3: {MedianOptions{MinTrials: -1}, "median.min_trials = -1"},
	} {
		if _, err := NewMedian(c.o, 10); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("case %d: %v, want %q", i, err, c.want)
		}
	}
	for i, c := range []struct {
		s    Strategy
		p    Pruner
		want string
	}{
		0: {StrategyASHA, PrunerMedian, "with strategy random or tpe"},
		1: {StrategyGrid, PrunerMedian, "with strategy random or tpe"},
		2: {StrategyRandom, "patient", `pruner: "patient": unknown`},
	} {
		if err := c.p.Validate(c.s); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("pruner case %d: %v, want %q", i, err, c.want)
		}
	}
}

// A random search under the median pruner (Optuna's defaults), replayed
// one trial at a time on the synthetic table: every decision on a paused
// trial equals the rule recomputed independently (a plain median by
// sorting over the trials completed before the decision, compared with
// the trial's best value so far; nothing pruned before five are
// complete), every round is a check, a pruned trial stops at its round
// and a complete one trains all 27.
func TestMedianReplay(t *testing.T) {
	tb := syntheticTable(t)
	res, err := Replay(tb, StrategyRandom, ReplayOptions{Budget: 400, Pruner: PrunerMedian}, 3)
	if err != nil {
		t.Fatal(err)
	}
	median := func(x []float64) float64 {
		v := slices.Clone(x)
		slices.Sort(v)
		if n := len(v); n%2 == 1 {
			return v[n/2]
		}
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	completed := map[int]bool{}
	var decided, pruned int
	for k, ev := range res.Events {
		a := ev.Action
		if a.Kind == Start {
			if a.ToRound != 1 {
				t.Errorf("event %d: start to round %d, want 1 (every round is checked)", k, a.ToRound)
			}
			continue
		}
		r, self := a.FromRound, res.Trials[a.Trial]
		var at []float64
		for i := range completed {
			at = append(at, res.Trials[i].Values[r-1])
		}
		want := len(completed) >= 5 && slices.Max(self.Values[:r]) < median(at)
		decided++
		switch {
		case a.Kind == Prune:
			pruned++
			if !want || self.State != Pruned || self.Rounds() != r {
				t.Errorf("event %d: trial %d pruned at round %d (%s after %d rounds); rule says prune %v", k, a.Trial, r, self.State, self.Rounds(), want)
			}
		case want:
			t.Errorf("event %d: %s of trial %d at round %d; rule says prune", k, a.Kind, a.Trial, r)
		case a.Kind == Finish:
			completed[a.Trial] = true
			if r != 27 || self.State != Complete {
				t.Errorf("event %d: trial %d finished at round %d as %s", k, a.Trial, r, self.State)
			}
		case a.Kind == Promote && a.ToRound != r+1:
			t.Errorf("event %d: promotion %d → %d, want one round", k, r, a.ToRound)
		}
	}
	if pruned == 0 || len(completed) < 5 || res.Spent > 400 {
		t.Errorf("%d complete, %d pruned, %d rounds; want pruning within the budget", len(completed), pruned, res.Spent)
	}
	t.Logf("median: %d trials, %d decisions, %d complete, %d pruned, %d rounds, ended %q", len(res.Trials), decided, len(completed), pruned, res.Spent, res.Ended)
}
