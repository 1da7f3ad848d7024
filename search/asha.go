package search

import (
	"fmt"
	"math"
	"sort"
)

// ASHAOptions are a sweep file's `asha:` options, shared by asha,
// tpe+asha and hyperband. Zero fields take their defaults.
type ASHAOptions struct {
	// MinRounds is r, the rounds of the lowest rung. Default:
	// max(1, ⌊R/η³⌋), R/27 at the default η (the research note's
	// default; four rungs when R = 27r).
	MinRounds int `json:"min_rounds,omitempty" yaml:"min_rounds,omitempty"`
	// Eta is η, the reduction factor (≥ 2): a rung promotes its top 1/η.
	// Default 3, as in Hyperband (Li et al. 2018), Optuna's
	// HyperbandPruner and W&B's hyperband; Optuna's
	// SuccessiveHalvingPruner and Ray's ASHA default to 4, which on the
	// tens of rounds of a campaign leaves one rung fewer.
	Eta int `json:"eta,omitempty" yaml:"eta,omitempty"`
	// Grace is s, the minimum early-stopping rate (Optuna's
	// min_early_stopping_rate, Li et al. 2020): the first rung sits at
	// r·η^s, so no trial stops before it. Default 0. Hyperband takes none
	// (its brackets run every s).
	Grace int `json:"grace,omitempty" yaml:"grace,omitempty"`
}

// DefaultEta is η when ASHAOptions.Eta is zero.
const DefaultEta = 3

// ASHA is asynchronous successive halving (Li et al. 2020) with rounds as
// the resource and resolved settings: rungs at MinRounds·Eta^(Grace+k)
// rounds, k = 0, 1, …, while below MaxRounds, then MaxRounds itself.
type ASHA struct {
	MinRounds, Eta, Grace, MaxRounds int
}

// NewASHA applies o's defaults for campaigns of maxRounds rounds and
// validates the result.
func NewASHA(o ASHAOptions, maxRounds int) (ASHA, error) {
	a := ASHA{MinRounds: o.MinRounds, Eta: o.Eta, Grace: o.Grace, MaxRounds: maxRounds}
	if a.Eta == 0 {
		a.Eta = DefaultEta
	}
	if a.MinRounds == 0 && a.Eta >= 2 {
		a.MinRounds = max(1, maxRounds/pow(a.Eta, 3))
	}
	return a, a.Validate()
}

// Validate names the first bad setting.
func (a ASHA) Validate() error {
	switch {
	case a.MaxRounds < 1:
		return fmt.Errorf("asha: max rounds %d: must be ≥ 1", a.MaxRounds)
	case a.Eta < 2:
		return fmt.Errorf("asha.eta = %d: must be ≥ 2", a.Eta)
	case a.MinRounds < 1 || a.MinRounds > a.MaxRounds:
		return fmt.Errorf("asha.min_rounds = %d: must be in [1, %d] (the campaign's rounds)", a.MinRounds, a.MaxRounds)
	case a.Grace < 0:
		return fmt.Errorf("asha.grace = %d: must be ≥ 0", a.Grace)
	}
	return nil
}

// pow returns b^e, saturating at MaxInt32.
func pow(b, e int) int {
	p := 1
	for range e {
		if p > math.MaxInt32/b {
			return math.MaxInt32
		}
		p *= b
	}
	return p
}

// Rungs returns the rounds at which rungs sit: MinRounds·Eta^(Grace+k)
// while below MaxRounds, then MaxRounds (Optuna's
// rung_promotion_step = min_resource·η^(s+rung); a trial that passes the
// last such rung trains on to MaxRounds). Its last element is MaxRounds.
func (a ASHA) Rungs() []int {
	if a.Validate() != nil {
		// A programmer's error: NewASHA validates what users give.
		panic("search: ASHA not validated: " + a.Validate().Error())
	}
	var r []int
	for x := a.MinRounds * pow(a.Eta, a.Grace); x < a.MaxRounds; x *= a.Eta {
		r = append(r, x)
		if x > math.MaxInt32/a.Eta {
			break
		}
	}
	return append(r, a.MaxRounds)
}

// Promotable is Optuna's _is_trial_promotable_to_next_rung
// (pruners/_successive_halving.py), maximising: a trial with value at a
// rung continues if value is at least the ⌊n/η⌋-th best of competing (the
// values of every trial that reached the rung, this one included, n of
// them); while n < η it continues only if it is the best (ties continue).
// NaN is the worst value; a trial with NaN never continues.
func Promotable(value float64, competing []float64, eta int) bool {
	if math.IsNaN(value) || len(competing) == 0 {
		return false
	}
	idx := max(len(competing)/eta-1, 0)
	v := make([]float64, len(competing))
	for i, x := range competing {
		v[i] = orWorst(x)
	}
	sort.Float64s(v)
	return value >= v[len(v)-1-idx]
}

// PromoteOnReport decides, as Optuna's SuccessiveHalvingPruner.prune
// does, whether trial index, which has just trained to one of a's rungs
// below MaxRounds, continues to the next rung (true) or stops there
// (false). The competitors are every trial in trials that has trained to
// that rung, whatever its state. This is the stop-or-continue variant of
// ASHA, decided when a trial reports; Schedule uses NextToPromote instead,
// since a ptopofl campaign can pause and resume.
func (a ASHA) PromoteOnReport(trials []Trial, index int) (bool, error) {
	pos := -1
	for i, t := range trials {
		if t.Index == index {
			pos = i
		}
	}
	if pos < 0 {
		return false, fmt.Errorf("asha: trial %d not among the %d trials", index, len(trials))
	}
	r := trials[pos].Rounds()
	rungs := a.Rungs()
	k := sort.SearchInts(rungs, r)
	if k == len(rungs)-1 || k == len(rungs) || rungs[k] != r {
		return false, fmt.Errorf("asha: trial %d has trained %d rounds, not to a rung below %d (rungs %v)", index, r, a.MaxRounds, rungs)
	}
	var competing []float64
	for _, t := range trials {
		if v, ok := t.valueAt(r); ok {
			competing = append(competing, v)
		}
	}
	return Promotable(trials[pos].Values[r-1], competing, a.Eta), nil
}

// NextToPromote is ASHA's get_job (Li et al. 2020, Algorithm 2) for
// trials that pause at rungs: from the highest rung below MaxRounds down
// to the lowest, it looks among the top ⌊n_k/η⌋ of the n_k trials that
// have trained to rung k (ranked by their value there, ties to the lower
// index) for a paused trial not yet promoted past k, and returns the best
// such as a Promote action from rung k to rung k+1. ok is false when no
// trial is promotable; the caller then starts a new trial at rung 0.
func (a ASHA) NextToPromote(trials []Trial) (act Action, ok bool) {
	rungs := a.Rungs()
	for k := len(rungs) - 2; k >= 0; k-- {
		ranked := rankAt(trials, rungs[k])
		for _, t := range ranked[:len(ranked)/a.Eta] {
			if t.State == Paused && t.target() <= rungs[k] {
				return Action{Kind: Promote, Trial: t.Index, Rung: k + 1, FromRound: rungs[k], ToRound: rungs[k+1]}, true
			}
		}
	}
	return Action{}, false
}
