package search

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sort"
)

// rng is xoshiro256** (D. Blackman and S. Vigna, "Scrambled linear
// pseudorandom number generators", ACM TOMS 47, 2021), seeded through
// splitmix64 as its authors recommend. It is ours rather than math/rand's
// so that a suggestion is the same on every Go version and machine.
type rng struct{ s [4]uint64 }

// splitmix64 advances *x and returns the next output of Vigna's splitmix64.
func splitmix64(x *uint64) uint64 {
	*x += 0x9e3779b97f4a7c15
	z := *x
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// newRNG returns the stream of trial index under sweep seed: it depends on
// (seed, index) only, so the i-th suggestion does not depend on which
// suggestions were made before it or in what order.
func newRNG(seed uint64, index int) *rng {
	x := seed
	h := splitmix64(&x)
	x = h ^ uint64(index)
	var r rng
	for i := range r.s {
		r.s[i] = splitmix64(&x)
	}
	return &r
}

func (r *rng) next() uint64 {
	s := &r.s
	out := bits.RotateLeft64(s[1]*5, 7) * 9
	t := s[1] << 17
	s[2] ^= s[0]
	s[3] ^= s[1]
	s[1] ^= s[2]
	s[0] ^= s[3]
	s[2] ^= t
	s[3] = bits.RotateLeft64(s[3], 45)
	return out
}

// float64 returns a uniform number in [0, 1) with 53 random bits.
func (r *rng) float64() float64 { return float64(r.next()>>11) * 0x1p-53 }

// SuggestRandom returns trial index's configuration under random search
// with sweep seed: one uniform draw per dimension, in the space's order,
// from a stream that depends on (seed, index) only. The draws follow
// Optuna's RandomSampler (samplers/_random.py and _transform.py): uniform
// on [lo, hi) for Uniform; exp of uniform on [log lo, log hi) for
// LogUniform; for IntRange, uniform on [lo − ½, hi + ½) rounded to the
// nearest integer (with Log, on [log(lo − ½), log(hi + ½)) and exp'd
// first); a uniform index for Choice.
func SuggestRandom(space Space, seed uint64, index int) Config {
	r := newRNG(seed, index)
	c := make(Config, len(space.Dims))
	for i, d := range space.Dims {
		c[i] = d.value(d.fromUnit(r.float64()))
	}
	return c
}

// fromUnit maps u in [0, 1) to a value of d (a choice's index for Choice)
// as Optuna's RandomSampler does.
func (d Dim) fromUnit(u float64) float64 {
	switch d.Kind {
	case Uniform:
		return math.Min(d.Lo+u*(d.Hi-d.Lo), math.Nextafter(d.Hi, math.Inf(-1)))
	case LogUniform:
		lo, hi := math.Log(d.Lo), math.Log(d.Hi)
		return clamp(math.Exp(lo+u*(hi-lo)), d.Lo, math.Nextafter(d.Hi, math.Inf(-1)))
	case IntRange:
		if d.Log {
			lo, hi := math.Log(d.Lo-0.5), math.Log(d.Hi+0.5)
			return clamp(math.RoundToEven(math.Exp(lo+u*(hi-lo))), d.Lo, d.Hi)
		}
		x := (d.Lo - 0.5) + u*(d.Hi-d.Lo+1)
		return clamp(math.Floor(x-d.Lo+0.5)+d.Lo, d.Lo, d.Hi)
	}
	return math.Min(math.Floor(u*float64(len(d.Choices))), float64(len(d.Choices)-1))
}

func clamp(x, lo, hi float64) float64 { return math.Max(lo, math.Min(x, hi)) }

// ErrGridExhausted reports a grid trial index past the grid's last point.
var ErrGridExhausted = errors.New("search: grid exhausted")

// SuggestGrid returns the index-th point of the grid of space's Choice
// dimensions: their cartesian product in the space's order, the last
// dimension varying fastest (as nested loops, or Python's
// itertools.product). An index at or past the grid's size wraps
// ErrGridExhausted; a continuous or integer-range dimension is an error.
func SuggestGrid(space Space, index int) (Config, error) {
	n, err := space.GridSize()
	if err != nil {
		return nil, err
	}
	if index < 0 || index >= n {
		return nil, fmt.Errorf("grid trial %d of %d points: %w", index, n, ErrGridExhausted)
	}
	c := make(Config, len(space.Dims))
	for i := len(space.Dims) - 1; i >= 0; i-- {
		d := space.Dims[i]
		c[i] = d.value(float64(index % len(d.Choices)))
		index /= len(d.Choices)
	}
	return c, nil
}

// ErrSpaceExhausted reports that every configuration of a finite space
// (Space.Size) has been tried: a sweep stops there instead of training a
// configuration again (a campaign is deterministic, so a repeat would
// only spend rounds).
var ErrSpaceExhausted = errors.New("search: every configuration of the space has been tried")

// Suggest returns the configuration of trial index under strategy s's
// sampler (grid for grid; TPE with DefaultTPE for tpe and tpe+asha;
// random for random, asha and hyperband), given the sweep's other trials
// (finished, paused, failed and running, in any order) and its seed. It
// is a pure function of its arguments. Apart from TPE with
// TPEOptions.Revisit, it never returns a configuration another trial of
// history has (whatever that trial's state), and it wraps
// ErrSpaceExhausted (ErrGridExhausted for grid) when a finite space has
// none left.
func Suggest(space Space, s Strategy, history []Trial, seed uint64, index int) (Config, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	switch s.sampler() {
	case StrategyGrid:
		return SuggestGrid(space, index)
	case StrategyTPE:
		return SuggestTPE(space, history, seed, index, DefaultTPE())
	}
	return suggestUntried(space, history, seed, index)
}

// freshDraws bounds the draws suggestUntried makes from the trial's
// stream before it picks among the untried points directly.
const freshDraws = 64

// maxDraws bounds the draws from an infinite space (a continuous
// dimension, or more than 2^40 points), where a repeat is a coincidence of
// 53-bit draws: suggestUntried gives up with an error after them.
const maxDraws = 4096

// triedKeys returns the configurations of history's trials other than
// index (every state: a failed configuration is not tried again either,
// since a campaign is deterministic), keyed canonically, and their
// positions in a finite space (sorted).
func triedKeys(space Space, history []Trial, index int) (map[string]bool, []int) {
	tried := map[string]bool{} // membership only, never iterated
	var pos []int
	for _, t := range history {
		if t.Index == index || t.Config == nil || !space.Contains(t.Config) {
			continue
		}
		key := canonical(space, t.Config).key()
		if tried[key] {
			continue
		}
		tried[key] = true
		if i, ok := space.pointIndex(t.Config); ok {
			pos = append(pos, i)
		}
	}
	sort.Ints(pos)
	return tried, pos
}

// suggestUntried is SuggestRandom restricted to the configurations no
// other trial of history has. Its first draw is SuggestRandom's, so a
// history without that point gives the same suggestion; otherwise it
// draws on from the same stream, up to freshDraws times, and then, in a
// finite space (Space.Size), picks uniformly among the untried points by
// their position (a draw u gives the ⌊u·m⌋-th of the m untried points in
// SuggestGrid's order). A finite space whose points have all been tried
// wraps ErrSpaceExhausted.
func suggestUntried(space Space, history []Trial, seed uint64, index int) (Config, error) {
	first := SuggestRandom(space, seed, index)
	tried, pos := triedKeys(space, history, index)
	if len(tried) == 0 || !tried[first.key()] {
		return first, nil
	}
	size, finite := space.Size()
	if finite && len(pos) >= size {
		return nil, fmt.Errorf("trial %d: all %d configurations tried: %w", index, size, ErrSpaceExhausted)
	}
	r := newRNG(seed, index)
	draws := maxDraws
	if finite {
		draws = freshDraws
	}
	for range draws {
		c := make(Config, len(space.Dims))
		for i, d := range space.Dims {
			c[i] = d.value(d.fromUnit(r.float64()))
		}
		if !tried[c.key()] {
			return c, nil
		}
	}
	if !finite {
		return nil, fmt.Errorf("trial %d: %d random draws all repeat a tried configuration", index, maxDraws)
	}
	// The k-th untried point: step over every tried position at or
	// below it (pos is sorted).
	k := min(int(r.float64()*float64(size-len(pos))), size-len(pos)-1)
	for _, p := range pos {
		if p <= k {
			k++
		}
	}
	return space.point(k), nil
}
