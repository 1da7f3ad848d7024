package search

import (
	"fmt"
	"sort"
)

// Hyperband is Li et al. 2018's Hyperband (Algorithm 1) with rounds as the
// resource: brackets s = SMax, SMax−1, …, 0 with SMax =
// ⌊log_η(MaxRounds/MinRounds)⌋, each a synchronous successive halving of
// n configurations; one pass over the brackets is an iteration, and
// iterations repeat until the budget runs out.
type Hyperband struct {
	MinRounds, Eta, MaxRounds int
}

// NewHyperband applies o's defaults (those of ASHAOptions) for campaigns
// of maxRounds rounds and validates the result; o.Grace must be zero.
func NewHyperband(o ASHAOptions, maxRounds int) (Hyperband, error) {
	if o.Grace != 0 {
		return Hyperband{}, fmt.Errorf("asha.grace = %d: hyperband runs every early-stopping rate in its brackets; remove grace", o.Grace)
	}
	a, err := NewASHA(o, maxRounds)
	if err != nil {
		return Hyperband{}, err
	}
	return Hyperband{MinRounds: a.MinRounds, Eta: a.Eta, MaxRounds: a.MaxRounds}, nil
}

// SMax returns ⌊log_η(MaxRounds/MinRounds)⌋, the largest bracket; there
// are SMax+1 brackets (Optuna's HyperbandPruner n_brackets).
func (h Hyperband) SMax() int {
	if h.Eta < 2 || h.MinRounds < 1 || h.MaxRounds < h.MinRounds {
		// A programmer's error: NewHyperband validates what users give.
		panic(fmt.Sprintf("search: Hyperband not validated: %+v", h))
	}
	s := 0
	for h.MinRounds*pow(h.Eta, s+1) <= h.MaxRounds {
		s++
	}
	return s
}

// Bracket is one bracket of Hyperband: successive halving that starts
// N[0] trials, trains them to Rounds[0], keeps the best N[1] and trains
// them on to Rounds[1], and so on to one or a few trials at MaxRounds.
type Bracket struct {
	S      int   // the bracket's number of halvings, Li et al.'s s
	N      []int // n_i, i = 0 … S
	Rounds []int // r_i in rounds, i = 0 … S; Rounds[S] = MaxRounds
}

// Bracket returns bracket s (0 ≤ s ≤ SMax) as Li et al. 2018's
// Algorithm 1 defines it with B = (SMax+1)·R: n = ⌈(B/R)·η^s/(s+1)⌉
// trials, n_i = ⌊n·η^−i⌋, and r_i = R·η^(i−s) rounds, rounded down (R is
// MaxRounds; with R/MinRounds a power of η every r_i is exact and equals
// the ASHA rung MinRounds·η^(SMax−s+i)).
func (h Hyperband) Bracket(s int) Bracket {
	sMax := h.SMax()
	b := Bracket{S: s, N: make([]int, s+1), Rounds: make([]int, s+1)}
	n := ((sMax+1)*pow(h.Eta, s) + s) / (s + 1) // ⌈(sMax+1)·η^s/(s+1)⌉
	for i := 0; i <= s; i++ {
		b.N[i] = n / pow(h.Eta, i)
		b.Rounds[i] = max(1, h.MaxRounds/pow(h.Eta, s-i))
	}
	return b
}

// BracketOf returns the bracket s of trial index and its iteration: trial
// indices fill the brackets in Algorithm 1's order (SMax first, then
// SMax−1, … 0), each bracket taking its N[0] consecutive indices, and
// start over after the last.
func (h Hyperband) BracketOf(index int) (s, iteration int) {
	sMax := h.SMax()
	total := 0
	for s := sMax; s >= 0; s-- {
		total += h.Bracket(s).N[0]
	}
	iteration, off := index/total, index%total
	for s = sMax; s > 0; s-- {
		if off < h.Bracket(s).N[0] {
			break
		}
		off -= h.Bracket(s).N[0]
	}
	return s, iteration
}

// NextToPromote returns the next promotion of synchronous successive
// halving inside a bracket (Algorithm 1's inner loop, "keep the top
// ⌊n_i/η⌋"): for the bracket runs in trial order, and their rungs from
// the lowest up, once rung i is settled — all N[0] trials of the run
// exist (for rung 0) or every promotion into it was made (for the
// others), and every trial sent to it has trained to r_i or stopped for
// good (failed or pruned) — it promotes the best paused trial of the top
// N[i+1] at r_i not yet promoted. ok is false when nothing is
// promotable; the caller then starts the next trial index in its bracket.
func (h Hyperband) NextToPromote(trials []Trial) (act Action, ok bool) {
	type run struct{ s, it int }
	var runs []run
	members := map[run][]Trial{} // looked up only; runs keeps the order
	for _, t := range sortedByIndex(trials) {
		s, it := h.BracketOf(t.Index)
		key := run{s, it}
		if _, seen := members[key]; !seen {
			runs = append(runs, key)
		}
		members[key] = append(members[key], t)
	}
	for _, key := range runs {
		b, group := h.Bracket(key.s), members[key]
		if len(group) < b.N[0] {
			continue
		}
		for i := 0; i < b.S && b.settled(group, i); i++ {
			r := b.Rounds[i]
			ranked := rankAt(group, r)
			for _, t := range ranked[:min(b.N[i+1], len(ranked))] {
				if t.State == Paused && t.target() <= r {
					return Action{Kind: Promote, Trial: t.Index, Rung: i + 1, Bracket: b.S, FromRound: r, ToRound: b.Rounds[i+1]}, true
				}
			}
		}
	}
	return Action{}, false
}

// settled reports whether every trial of group sent to rung i of b has
// trained to it or stopped for good. The caller checks the rungs from the
// lowest up, so rung i's promotions are all made before rung i+1 is asked.
func (b Bracket) settled(group []Trial, i int) bool {
	for _, t := range group {
		sent := i == 0 || t.target() > b.Rounds[i-1]
		done := t.Rounds() >= b.Rounds[i] || t.State == Failed || t.State == Pruned
		if sent && !done {
			return false
		}
	}
	return true
}

func sortedByIndex(trials []Trial) []Trial {
	out := append([]Trial(nil), trials...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}
