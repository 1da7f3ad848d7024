package search

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

// syntheticTable is a 6 × 8 grid (clusters 0…5 × beta 0…0.7) of 27
// rounds whose validation curve is q·(1 − ½e^(−r/4)) with quality
// q = 0.80 − 0.01(clusters − 3)² − 0.2(beta − 0.4)², and test = 0.98 ×
// validation. The best configuration is clusters 3, beta 0.4 (q = 0.80);
// the next are 0.002 below it. Every round ranks the configurations
// alike, so a strategy that samples the best and promotes by value keeps
// it: the table tests the mechanics, not robustness to crossing curves.
func syntheticTable(t testing.TB) Table {
	var cl, be []any
	for a := range 6 {
		cl = append(cl, a)
	}
	for b := range 8 {
		be = append(be, float64(b)/10)
	}
	space, err := NewSpace([]Dimension{{Name: "clusters", Choice: cl}, {Name: "beta", Choice: be}})
	if err != nil {
		t.Fatal(err)
	}
	tb := Table{Space: space}
	for g := range 48 {
		c, _ := SuggestGrid(space, g)
		a, b := c[0].Value, c[1].Value
		q := 0.80 - 0.01*(a-3)*(a-3) - 0.2*(b-0.4)*(b-0.4)
		row := TableRow{Config: c}
		for r := 1; r <= 27; r++ {
			v := q * (1 - 0.5*math.Exp(-float64(r)/4))
			row.Val = append(row.Val, v)
			row.Test = append(row.Test, 0.98*v)
		}
		tb.Rows = append(tb.Rows, row)
	}
	return tb
}

const gridRounds = 48 * 27

func TestReplayGrid(t *testing.T) {
	tb := syntheticTable(t)
	res, err := Replay(tb, StrategyGrid, ReplayOptions{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	best := GridBest(tb)
	if best.Config.String() != "clusters=3 beta=0.4" || best.Trial != 3*8+4 {
		t.Errorf("grid best %s (row %d), want clusters=3 beta=0.4 (row 28)", best.Config, best.Trial)
	}
	if len(res.Trials) != 48 || res.Spent != gridRounds || res.Incumbent.Config.String() != best.Config.String() || res.Incumbent.Round != 27 {
		t.Errorf("grid replay: %d trials, %d rounds, incumbent %s at round %d; want 48, %d, %s at 27",
			len(res.Trials), res.Spent, res.Incumbent.Config, res.Incumbent.Round, gridRounds, best.Config)
	}
	if res.Incumbent.Test != best.Test || res.Incumbent.TestAtMax != best.Test {
		t.Errorf("incumbent test %v (at max %v), want %v", res.Incumbent.Test, res.Incumbent.TestAtMax, best.Test)
	}
}

// ASHA (random configurations, η = 3, rungs at 1, 3, 9, 27 rounds) with a
// third of the grid's campaign-rounds finds the best configuration. Over
// sweep seeds 1…10 it picks exactly clusters 3, beta 0.4 in at least 8
// (the acceptance bar) and is within 0.005 test of it in all;
// tpe+asha finds it exactly in all 10. Random search at that budget (16
// full trials of 48 points) finds it in fewer than 8.
func TestReplayFindsBest(t *testing.T) {
	tb := syntheticTable(t)
	best := GridBest(tb)
	for _, test := range []struct {
		s            Strategy
		exact, close int // at least, of 10
	}{
		{StrategyASHA, 8, 10},
		{StrategyTPEASHA, 10, 10},
		{StrategyRandom, 0, 0},
	} {
		exact, close := 0, 0
		for seed := uint64(1); seed <= 10; seed++ {
			res, err := Replay(tb, test.s, ReplayOptions{Budget: gridRounds / 3}, seed)
			if err != nil {
				t.Fatal(err)
			}
			if res.Spent > gridRounds/3 {
				t.Errorf("%s seed %d: spent %d rounds, budget %d", test.s, seed, res.Spent, gridRounds/3)
			}
			if res.Incumbent.Config.String() == best.Config.String() {
				exact++
			}
			if res.Incumbent.TestAtMax >= best.Test-0.005 {
				close++
			}
		}
		t.Logf("%s: exact %d of 10, within 0.005 %d of 10", test.s, exact, close)
		if test.s == StrategyRandom && exact >= 8 {
			t.Errorf("random search found the best in %d of 10 seeds with 16 trials of 48; the table is too easy", exact)
		}
		if exact < test.exact || close < test.close {
			t.Errorf("%s: best found in %d of 10 seeds (within 0.005 in %d); want at least %d (%d)", test.s, exact, close, test.exact, test.close)
		}
	}
}

// Every strategy's replay counts rounds exactly: the rounds spent are the
// sum of its actions' costs and within the budget; a promoted trial
// resumes from its last round (its values are the table's, in order,
// without a restart); a trial ends complete exactly when it trained the
// max rounds, and none is left paused or running. A replay that stops
// with rounds to spare has tried every point of the space.
func TestReplayAccounting(t *testing.T) {
	tb := syntheticTable(t)
	for _, s := range Strategies[1:] {
		for _, conc := range []int{1, 3} {
			opts := ReplayOptions{Budget: 500, Concurrency: conc}
			res, err := Replay(tb, s, opts, 11)
			if err != nil {
				t.Fatalf("%s ×%d: %v", s, conc, err)
			}
			where := fmt.Sprintf("%s ×%d", s, conc)
			sum := 0
			last := map[int]int{} // trial → its last event's ToRound
			for i, ev := range res.Events {
				a := ev.Action
				sum += a.Cost()
				if from, ok := last[a.Trial]; (a.Kind == Start) == ok || a.FromRound != from {
					t.Errorf("%s: event %d %+v after trial %d reached round %d (seen %v)", where, i, a, a.Trial, from, ok)
				}
				last[a.Trial] = a.ToRound
				if ev.End-ev.Start != a.Cost() || ev.Spent > res.Spent {
					t.Errorf("%s: event %d: times %d…%d for cost %d, spent %d", where, i, ev.Start, ev.End, a.Cost(), ev.Spent)
				}
			}
			if sum != res.Spent || res.Spent > opts.Budget {
				t.Errorf("%s: spent %d, actions cost %d, budget %d", where, res.Spent, sum, opts.Budget)
			}
			switch {
			case res.Ended == WhySpace && len(res.Trials) != len(tb.Rows):
				t.Errorf("%s: ended %q after %d trials of a %d-point space", where, res.Ended, len(res.Trials), len(tb.Rows))
			case res.Ended != WhySpace && opts.Budget-res.Spent >= 27:
				t.Errorf("%s: stopped (%q) with %d of %d rounds left, enough for any action", where, res.Ended, opts.Budget-res.Spent, opts.Budget)
			}
			for _, tr := range res.Trials {
				row := tb.Rows[rowIndex(t, tb, tr.Config)]
				if !reflectEqual(tr.Values, row.Val[:len(tr.Values)]) || last[tr.Index] != len(tr.Values) {
					t.Errorf("%s: trial %d values are not its row's first %d", where, tr.Index, len(tr.Values))
				}
				if want := map[bool]State{true: Complete, false: Pruned}[len(tr.Values) == 27]; tr.State != want {
					t.Errorf("%s: trial %d at round %d is %s, want %s", where, tr.Index, len(tr.Values), tr.State, want)
				}
			}
		}
	}
}

func rowIndex(t *testing.T, tb Table, c Config) int {
	for i, row := range tb.Rows {
		if row.Config.String() == c.String() {
			return i
		}
	}
	t.Fatalf("%s not in the table", c)
	return -1
}

func reflectEqual(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The same replay twice gives the same trials, events and incumbent, with
// one worker or several.
func TestReplayDeterministic(t *testing.T) {
	tb := syntheticTable(t)
	for _, s := range []Strategy{StrategyTPEASHA, StrategyHyperband} {
		for _, conc := range []int{1, 3} {
			opts := ReplayOptions{Budget: 400, Concurrency: conc}
			a, err := Replay(tb, s, opts, 5)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := Replay(tb, s, opts, 5)
			if !reflect.DeepEqual(a, b) {
				t.Errorf("%s ×%d: two replays differ", s, conc)
			}
			c, _ := Replay(tb, s, opts, 6)
			if reflect.DeepEqual(a.Trials, c.Trials) {
				t.Errorf("%s ×%d: seeds 5 and 6 gave the same trials", s, conc)
			}
		}
	}
}

// Hyperband's first bracket (R = 27, η = 3, s = 3) in a sequential
// replay: trials 0…26 to round 1, the best 9 resumed to 3, the best 3 to
// 9, the best to 27, then trial 27 starts bracket 2 at round 3. With
// resumption the bracket costs 27·1 + 9·(3−1) + 3·(9−3) + 1·(27−9) = 81
// rounds, by hand.
func TestReplayHyperbandBracket(t *testing.T) {
	tb := syntheticTable(t)
	res, err := Replay(tb, StrategyHyperband, ReplayOptions{Budget: 200}, 3)
	if err != nil {
		t.Fatal(err)
	}
	ev := res.Events
	for i := range 27 {
		if a := ev[i].Action; a.Kind != Start || a.Trial != i || a.Bracket != 3 || a.ToRound != 1 {
			t.Fatalf("event %d: %+v, want trial %d started to round 1 in bracket 3", i, a, i)
		}
	}
	for i, want := range []struct{ n, from, to int }{{9, 1, 3}, {3, 3, 9}, {1, 9, 27}} {
		start := 27 + []int{0, 9, 12}[i]
		prev := math.Inf(1)
		for k := start; k < start+want.n; k++ {
			a := ev[k].Action
			if a.Kind != Promote || a.FromRound != want.from || a.ToRound != want.to {
				t.Fatalf("event %d: %+v, want a promotion %d → %d", k, a, want.from, want.to)
			}
			// Promotions go best first.
			v := res.Trials[a.Trial].Values[want.from-1]
			if v > prev {
				t.Errorf("event %d: trial %d (%.4f at round %d) promoted after a worse one", k, a.Trial, v, want.from)
			}
			prev = v
		}
	}
	if a := ev[40].Action; a.Kind != Start || a.Trial != 27 || a.Bracket != 2 || a.ToRound != 3 || ev[39].Spent != 81 {
		t.Errorf("event 40: %+v after %d rounds; want trial 27 started to round 3 in bracket 2 after 81", a, ev[39].Spent)
	}
}

func TestReplayErrors(t *testing.T) {
	for i, test := range []struct {
		edit func(*Table)
		s    Strategy
		opts ReplayOptions
		want string
	}{
		{func(tb *Table) { tb.Rows = append(tb.Rows[:5], tb.Rows[6:]...) }, StrategyGrid, ReplayOptions{},
			"replay table: 47 rows for a grid of 48 points; missing clusters=0 beta=0.5"}, // 0
		{func(tb *Table) { tb.Rows[5].Config = tb.Rows[4].Config }, StrategyGrid, ReplayOptions{},
			"replay table: rows 4 and 5: same configuration clusters=0 beta=0.4"}, // 1
		{func(tb *Table) { tb.Rows[3].Val = tb.Rows[3].Val[:26] }, StrategyGrid, ReplayOptions{},
			"replay table: row 3 (clusters=0 beta=0.3): 26 validation and 27 test values; want 27 of each"}, // 2
		{func(tb *Table) { tb.Rows[3].Config = Config{{Name: "clusters", Value: 9}, {Name: "beta", Value: 0.3}} }, StrategyGrid, ReplayOptions{},
			"replay table: row 3 (clusters=9 beta=0.3): not a point of the search space"}, // 3
		{func(*Table) {}, StrategyRandom, ReplayOptions{},
			"replay random: give a budget or a trial cap"}, // 4
		{func(tb *Table) { tb.Space.Dims[1] = Dim{Name: "beta", Kind: Uniform, Lo: 0, Hi: 1} }, StrategyGrid, ReplayOptions{},
			"replay table: search.beta: uniform is not a grid"}, // 5
		{func(*Table) {}, StrategyASHA, ReplayOptions{Budget: 10, ASHA: ASHAOptions{Eta: 1}},
			"asha.eta = 1: must be ≥ 2"}, // 6
		{func(*Table) {}, "bohb", ReplayOptions{Budget: 10},
			`strategy "bohb": unknown`}, // 7
	} {
		tb := syntheticTable(t)
		test.edit(&tb)
		_, err := Replay(tb, test.s, test.opts, 1)
		if err == nil || !strings.HasPrefix(err.Error(), test.want) {
			t.Errorf("case %d: error %v, want %q", i, err, test.want)
		}
	}
}

// A trial cap alone ends a random replay.
func TestReplayTrialCap(t *testing.T) {
	res, err := Replay(syntheticTable(t), StrategyRandom, ReplayOptions{Trials: 5}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Trials) != 5 || res.Spent != 5*27 {
		t.Errorf("%d trials, %d rounds; want 5 and 135", len(res.Trials), res.Spent)
	}
}

// BenchmarkReplay times a tpe+asha replay of the synthetic 48-point grid
// at a third of its rounds.
func BenchmarkReplay(b *testing.B) {
	tb := syntheticTable(b)
	for b.Loop() {
		if _, err := Replay(tb, StrategyTPEASHA, ReplayOptions{Budget: gridRounds / 3}, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// On the 48-point synthetic space with budget to spare, no strategy
// starts a configuration twice (so none twice at the same rung: a
// trial's rungs after its start are promotions of that one trial), every
// point is started once, and the sweep ends because the space is
// exhausted, with rounds unspent; over search seeds 1–5 and one or three
// workers, under every sampler and scheduler and the median pruner.
func TestFiniteSpaceEnds(t *testing.T) {
	tb := syntheticTable(t)
	const budget = 100000
	type variant struct {
		s    Strategy
		opts ReplayOptions
	}
	var variants []variant
	for _, s := range Strategies[1:] {
		variants = append(variants, variant{s, ReplayOptions{Budget: budget}})
	}
	variants = append(variants,
		variant{StrategyRandom, ReplayOptions{Budget: budget, Pruner: PrunerMedian}},
		variant{StrategyTPE, ReplayOptions{Budget: budget, Pruner: PrunerMedian}})
	for _, v := range variants {
		for _, conc := range []int{1, 3} {
			for seed := uint64(1); seed <= 5; seed++ {
				opts := v.opts
				opts.Concurrency = conc
				where := fmt.Sprintf("%s pruner %q ×%d seed %d", v.s, opts.Pruner, conc, seed)
				res, err := Replay(tb, v.s, opts, seed)
				if err != nil {
					t.Fatalf("%s: %v", where, err)
				}
				started := map[string]int{}
				for _, ev := range res.Events {
					if ev.Action.Kind == Start {
						started[ev.Config.key()]++
						if n := started[ev.Config.key()]; n > 1 {
							t.Errorf("%s: %s started %d times", where, ev.Config, n)
						}
					}
				}
				if len(started) != 48 || len(res.Trials) != 48 || res.Ended != WhySpace || res.Spent >= budget {
					t.Errorf("%s: %d configurations in %d trials, ended %q after %d of %d rounds; want 48, 48, %q, rounds unspent",
						where, len(started), len(res.Trials), res.Ended, res.Spent, budget, WhySpace)
				}
			}
		}
	}
}

// suggestUntried picks among the untried points uniformly once its draws
// keep repeating: with every point but one of a 6 × 8 space tried, it
// returns that one; with all tried it reports the space exhausted; over
// an integer range too.
func TestSuggestUntried(t *testing.T) {
	tb := syntheticTable(t)
	for missing := range 48 {
		var h []Trial
		for g := range 48 {
			if g != missing {
				c, _ := SuggestGrid(tb.Space, g)
				h = append(h, Trial{Index: len(h), Config: c, State: Failed})
			}
		}
		c, err := suggestUntried(tb.Space, h, 9, len(h))
		want, _ := SuggestGrid(tb.Space, missing)
		if err != nil || c.String() != want.String() {
			t.Errorf("missing %d: got %s, %v; want %s", missing, c, err, want)
		}
		h = append(h, Trial{Index: len(h), Config: want, State: Running})
		if _, err := suggestUntried(tb.Space, h, 9, len(h)); !errors.Is(err, ErrSpaceExhausted) {
			t.Errorf("missing %d, then tried: %v, want ErrSpaceExhausted", missing, err)
		}
	}
	ints, err := NewSpace([]Dimension{{Name: "clusters", Int: []float64{1, 4}}, {Name: "n_sub", Int: []float64{20, 22}}})
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := ints.Size(); !ok || n != 12 {
		t.Fatalf("size %d %v, want 12", n, ok)
	}
	var h []Trial
	for i := range 12 {
		c, err := suggestUntried(ints, h, 4, i)
		if err != nil {
			t.Fatalf("trial %d: %v", i, err)
		}
		h = append(h, Trial{Index: i, Config: c, State: Complete})
	}
	seen := map[string]bool{}
	for _, tr := range h {
		seen[tr.Config.key()] = true
	}
	if len(seen) != 12 {
		t.Errorf("12 suggestions over 12 points gave %d distinct", len(seen))
	}
	if _, err := suggestUntried(ints, h, 4, 12); !errors.Is(err, ErrSpaceExhausted) {
		t.Errorf("13th suggestion: %v, want ErrSpaceExhausted", err)
	}
}
