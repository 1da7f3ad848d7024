package search

import (
	"fmt"
	"math"
	"sort"
)

// TPEOptions are the settings of SuggestTPE. Zero fields take Optuna's
// TPESampler defaults (DefaultTPE).
type TPEOptions struct {
	// StartupTrials is n_startup_trials: while fewer finished (complete,
	// pruned or paused) trials than this exist, suggestions are random.
	StartupTrials int `json:"startup_trials,omitempty" yaml:"startup_trials,omitempty"`
	// Candidates is n_ei_candidates: how many points are drawn from l(x)
	// to maximise l(x)/g(x) over.
	Candidates int `json:"candidates,omitempty" yaml:"candidates,omitempty"`
	// Multivariate fits one joint mixture over all dimensions (a kernel
	// per trial across them, with the univariate bandwidths) instead of
	// one per dimension, as Optuna 5 does by default. The default here is
	// the independent (univariate) TPE, Optuna 4.9's default. (Before
	// 5.0, Optuna's multivariate TPE used one bandwidth
	// 0.2·n^(−1/(d+4))·(high − low) for every kernel instead.)
	Multivariate bool `json:"multivariate,omitempty" yaml:"multivariate,omitempty"`
	// Revisit lets TPE propose a configuration that another trial already
	// has, as Optuna does. By default such a candidate is passed over for
	// the best one that no trial has (failed ones included), and when
	// every candidate is had, for an untried point drawn at random: in a
	// discrete or integer space the constant liar alone does not stop
	// parallel suggestions from coinciding (it only lowers l(x)/g(x)
	// there), and a ptopofl campaign is deterministic, so training a
	// configuration twice wastes its rounds. In a continuous space
	// candidates never coincide and the rule changes nothing. A sweep
	// file cannot set it: a sweep never starts a configuration twice.
	Revisit bool `json:"revisit,omitempty" yaml:"-"`
}

// DefaultTPE returns Optuna's defaults: 10 startup trials, 24 candidates,
// univariate.
func DefaultTPE() TPEOptions { return TPEOptions{StartupTrials: 10, Candidates: 24} }

func (o TPEOptions) withDefaults() TPEOptions {
	d := DefaultTPE()
	if o.StartupTrials <= 0 {
		o.StartupTrials = d.StartupTrials
	}
	if o.Candidates <= 0 {
		o.Candidates = d.Candidates
	}
	return o
}

// tpeGamma is Optuna's default_gamma(n) = min(⌈0.1·n⌉, 25): how many of
// the n finished trials form the good group l(x).
func tpeGamma(n int) int { return min(int(math.Ceil(0.1*float64(n))), 25) }

// SuggestTPE returns trial index's configuration under Optuna's
// TPESampler (samplers/_tpe/sampler.py; the definitions of release 4.9.0,
// unchanged in 5.0's) with the constant liar on (Optuna 5's default), given the
// sweep's other trials in any order (a trial with the same index is
// ignored, as Optuna ignores the trial being sampled) and its seed.
//
// Trials whose config does not fit space, failed trials and complete
// trials without a final value (or a NaN one, which Optuna records as
// FAIL) are ignored. Paused and pruned trials are Optuna's PRUNED: their
// value is their last one. While fewer than StartupTrials complete,
// paused or pruned trials exist, it returns a random point that no trial
// has had (suggestUntried). Otherwise
// (_sample, _split_trials) the n finished trials split into a good group
// of tpeGamma(n): the best complete trials by final value, then if
// needed the pruned ones that trained furthest, best last value first;
// every other finished trial and every running one (the constant liar:
// running trials count as bad whatever they will score) forms the bad
// group. Each group, in trial order and weighted by defaultWeights, gives
// a parzen mixture, l(x) and g(x); Candidates points drawn from l are
// scored by log l(x) − log g(x) and the first best returned. Univariate
// (the default) does this for each dimension on its own, in the space's
// order, from one random stream. Unless opts.Revisit, a point that
// another trial already has is passed over for the best that none has,
// or failing that for a random untried point (see TPEOptions.Revisit);
// this is the one departure from Optuna. A finite space whose points
// have all been tried wraps ErrSpaceExhausted (unless opts.Revisit).
//
// The maximised objective is the trials' Values. The random stream
// depends on (seed, index) only.
func SuggestTPE(space Space, history []Trial, seed uint64, index int, opts TPEOptions) (Config, error) {
	opts = opts.withDefaults()
	below, above, n := splitTrials(space, history, index)
	if n < opts.StartupTrials {
		if opts.Revisit {
			return SuggestRandom(space, seed, index), nil
		}
		return suggestUntried(space, history, seed, index)
	}
	// taken holds the configurations of the other trials (membership
	// only, never iterated).
	taken := map[string]bool{}
	if !opts.Revisit {
		taken, _ = triedKeys(space, history, index)
		if size, finite := space.Size(); finite && len(taken) >= size {
			return nil, fmt.Errorf("trial %d: all %d configurations tried: %w", index, size, ErrSpaceExhausted)
		}
	}
	r := newRNG(seed, index)
	var pick func(map[string]bool) ([]float64, bool)
	if opts.Multivariate {
		cs := scoreCandidates(space.Dims, below, above, r, opts.Candidates)
		pick = func(avoid map[string]bool) ([]float64, bool) { return pickJoint(space, cs, avoid) }
	} else {
		per := make([][]candidate, len(space.Dims))
		for j, d := range space.Dims {
			per[j] = distinct(scoreCandidates([]Dim{d}, column(below, j), column(above, j), r, opts.Candidates))
		}
		pick = func(avoid map[string]bool) ([]float64, bool) { return pickProduct(space, per, avoid) }
	}
	x, ok := pick(taken)
	if !ok && !opts.Revisit {
		// Every candidate is had: an untried point at random.
		return suggestUntried(space, history, seed, index)
	}
	return configOf(space, x), nil
}

func configOf(space Space, x []float64) Config {
	c := make(Config, len(space.Dims))
	for j, d := range space.Dims {
		c[j] = d.value(x[j])
	}
	return c
}

// candidate is a point drawn from l(x) with its acquisition
// log l(x) − log g(x).
type candidate struct {
	x   []float64
	acq float64
}

// scoreCandidates fits l and g over dims, draws candidates points from l
// and scores them, best first; ties keep the drawing order, so the first
// is numpy.argmax's (TPESampler._compare).
func scoreCandidates(dims []Dim, below, above [][]float64, r *rng, candidates int) []candidate {
	l, g := newParzen(dims, below), newParzen(dims, above)
	xs := l.sample(r, candidates)
	ll, lg := l.logPDF(xs), g.logPDF(xs)
	out := make([]candidate, len(xs))
	for i := range xs {
		out[i] = candidate{x: xs[i], acq: ll[i] - lg[i]}
		if math.IsNaN(out[i].acq) {
			out[i].acq = math.Inf(-1)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].acq > out[j].acq })
	return out
}

// distinct drops the candidates that repeat an earlier one's value.
func distinct(cs []candidate) []candidate {
	var out []candidate
	for _, c := range cs {
		dup := false
		for _, o := range out {
			dup = dup || o.x[0] == c.x[0]
		}
		if !dup {
			out = append(out, c)
		}
	}
	return out
}

// pickJoint returns the best candidate whose configuration avoid does
// not hold, or the best one and false if it holds them all.
func pickJoint(space Space, cs []candidate, avoid map[string]bool) ([]float64, bool) {
	for _, c := range cs {
		if !avoid[configOf(space, c.x).key()] {
			return c.x, true
		}
	}
	return cs[0].x, false
}

// pickProduct returns, among the points whose value in dimension j is one
// of the candidates per[j], the one with the largest summed acquisition
// (the joint acquisition of independent dimensions) whose configuration
// avoid does not hold; with nothing to avoid that is every dimension's
// best candidate, Optuna's independent sampling. It searches best first,
// so it looks at no more than len(avoid)+1 points; if avoid holds all of
// those, it returns every dimension's best and false.
func pickProduct(space Space, per [][]candidate, avoid map[string]bool) ([]float64, bool) {
	type node struct {
		ranks []int
		score float64
	}
	point := func(ranks []int) []float64 {
		x := make([]float64, len(ranks))
		for j, k := range ranks {
			x[j] = per[j][k].x[0]
		}
		return x
	}
	less := func(a, b node) bool { // a is better than b
		if a.score != b.score {
			return a.score > b.score
		}
		for j := range a.ranks {
			if a.ranks[j] != b.ranks[j] {
				return a.ranks[j] < b.ranks[j]
			}
		}
		return false
	}
	first := node{ranks: make([]int, len(per))}
	for j := range per {
		first.score += per[j][0].acq
	}
	frontier := []node{first}
	seen := map[string]bool{fmt.Sprint(first.ranks): true}
	for pops := 0; len(frontier) > 0 && pops <= len(avoid); pops++ {
		bi := 0
		for i := range frontier {
			if less(frontier[i], frontier[bi]) {
				bi = i
			}
		}
		nd := frontier[bi]
		frontier = append(frontier[:bi], frontier[bi+1:]...)
		x := point(nd.ranks)
		if !avoid[configOf(space, x).key()] {
			return x, true
		}
		for j := range nd.ranks {
			if nd.ranks[j]+1 >= len(per[j]) {
				continue
			}
			next := node{ranks: append([]int(nil), nd.ranks...)}
			next.ranks[j]++
			if seen[fmt.Sprint(next.ranks)] {
				continue
			}
			seen[fmt.Sprint(next.ranks)] = true
			for i, k := range next.ranks {
				next.score += per[i][k].acq
			}
			frontier = append(frontier, next)
		}
	}
	return point(first.ranks), false
}

func column(rows [][]float64, j int) [][]float64 {
	out := make([][]float64, len(rows))
	for i, row := range rows {
		out[i] = []float64{row[j]}
	}
	return out
}

// splitTrials returns the good and bad groups' observations (a row per
// trial in index order, a value per dimension) and the number n of
// finished trials, as TPESampler._sample and _split_trials define them.
func splitTrials(space Space, history []Trial, index int) (below, above [][]float64, n int) {
	type obs struct {
		t Trial
		x []float64
	}
	var complete, pruned, running []obs
	for _, t := range history {
		if t.Index == index {
			continue
		}
		x := make([]float64, len(space.Dims))
		fits := true
		for j, d := range space.Dims {
			if x[j], fits = d.internal(t.Config); !fits {
				break
			}
		}
		if !fits {
			continue
		}
		switch t.State {
		case Running:
			running = append(running, obs{t, x})
		case Complete:
			if len(t.Values) > 0 && !math.IsNaN(t.Values[len(t.Values)-1]) {
				complete = append(complete, obs{t, x})
			}
		case Paused, Pruned:
			pruned = append(pruned, obs{t, x})
		}
	}
	byIndex := func(s []obs) {
		sort.SliceStable(s, func(i, j int) bool { return s[i].t.Index < s[j].t.Index })
	}
	byIndex(complete)
	byIndex(pruned)
	n = len(complete) + len(pruned)
	nBelow := tpeGamma(n)

	// _split_complete_trials_single_objective: best final value first
	// (maximising), stable on trial order.
	sort.SliceStable(complete, func(i, j int) bool {
		return complete[i].t.Values[len(complete[i].t.Values)-1] > complete[j].t.Values[len(complete[j].t.Values)-1]
	})
	// _get_pruned_trial_score: (−last step, −last value), NaN last; a
	// trial without values scores (1, 0), after every other.
	score := func(t Trial) (float64, float64) {
		if len(t.Values) == 0 {
			return 1, 0
		}
		v := t.Values[len(t.Values)-1]
		if math.IsNaN(v) {
			return -float64(len(t.Values)), math.Inf(1)
		}
		return -float64(len(t.Values)), -v
	}
	sort.SliceStable(pruned, func(i, j int) bool {
		si, vi := score(pruned[i].t)
		sj, vj := score(pruned[j].t)
		if si != sj {
			return si < sj
		}
		return vi < vj
	})
	kc := min(nBelow, len(complete))
	kp := min(max(0, nBelow-kc), len(pruned))
	good := append(append([]obs{}, complete[:kc]...), pruned[:kp]...)
	bad := append(append(append([]obs{}, complete[kc:]...), pruned[kp:]...), running...)
	byIndex(good)
	byIndex(bad)
	for _, o := range good {
		below = append(below, o.x)
	}
	for _, o := range bad {
		above = append(above, o.x)
	}
	return below, above, n
}
