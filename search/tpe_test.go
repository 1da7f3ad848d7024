package search

import (
	"fmt"
	"math"
	"reflect"
	"testing"
)

// idSpace has one integer dimension whose value, in these tests, is the
// trial's index, so that splitTrials' rows name the trials.
func idSpace(t *testing.T) Space {
	t.Helper()
	s, err := NewSpace([]Dimension{{Name: "clusters", Int: []float64{0, 100}}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func idTrial(i int, st State, values ...float64) Trial {
	return Trial{Index: i, Config: Config{{Name: "clusters", Value: float64(i)}}, State: st, Values: values}
}

func ids(rows [][]float64) []int {
	out := []int{}
	for _, r := range rows {
		out = append(out, int(r[0]))
	}
	return out
}

// The good/bad split of TPESampler._split_trials, cases by hand.
func TestSplitTrials(t *testing.T) {
	var a []Trial
	for i := range 10 { // complete, value i/10
		a = append(a, idTrial(i, Complete, 0.5, float64(i)/10))
	}
	a = append(a,
		idTrial(13, Paused, 0.95), // pruned: counted in n, after the complete ones
		idTrial(12, Failed, 0.99), // ignored
		idTrial(11, Running),      // the liar: bad
		idTrial(10, Running),
	)
	var b []Trial
	b = append(b, idTrial(0, Complete, 0.1))
	for i := 1; i < 20; i++ {
		b = append(b, idTrial(i, Paused, 0.99)) // one round, value 0.99
	}
	b[5] = idTrial(5, Paused, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.2) // nine rounds, 0.2
	b[6] = idTrial(6, Pruned, 0.9, 0.95, 0.99)                             // three rounds
	for i, test := range []struct {
		trials      []Trial
		index       int
		below       []int
		above       []int
		n           int
		description string
	}{
		{a, 99, []int{8, 9}, []int{0, 1, 2, 3, 4, 5, 6, 7, 10, 11, 13}, 11,
			"n = 10 complete + 1 paused = 11, gamma 2: the two best complete; the paused trial's 0.95 does not count against complete ones; running trials bad; failed ignored"},
		{a[:10], 99, []int{9}, []int{0, 1, 2, 3, 4, 5, 6, 7, 8}, 10, "gamma(10) = 1"},
		{a[:10], 9, []int{8}, []int{0, 1, 2, 3, 4, 5, 6, 7}, 9, "the trial being sampled is left out"},
		{b, 99, []int{0, 5}, []int{1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}, 20,
			"gamma(20) = 2: the one complete trial, then the pruned trial that trained furthest (9 rounds, 0.2) before better values at fewer rounds"},
		{[]Trial{idTrial(0, Complete, math.NaN()), idTrial(1, Complete), idTrial(2, Complete, 0.3)}, 99, []int{2}, []int{}, 1,
			"a NaN or missing final value is Optuna's FAIL: ignored"},
	} {
		below, above, n := splitTrials(idSpace(t), test.trials, test.index)
		if got := ids(below); !reflect.DeepEqual(got, test.below) {
			t.Errorf("case %d (%s): below %v, want %v", i, test.description, got, test.below)
		}
		if got := ids(above); !reflect.DeepEqual(got, test.above) {
			t.Errorf("case %d (%s): above %v, want %v", i, test.description, got, test.above)
		}
		if n != test.n {
			t.Errorf("case %d (%s): n = %d, want %d", i, test.description, n, test.n)
		}
	}
}

// betaHistory returns n complete trials drawn at random on beta in
// [0, 1] with objective 1 − |beta − 0.8|.
func betaHistory(t *testing.T, n int) (Space, []Trial) {
	t.Helper()
	s, err := NewSpace([]Dimension{{Name: "beta", Uniform: []float64{0, 1}}})
	if err != nil {
		t.Fatal(err)
	}
	var h []Trial
	for i := range n {
		c := SuggestRandom(s, 5, i)
		h = append(h, Trial{Index: i, Config: c, State: Complete, Values: []float64{1 - math.Abs(c[0].Value-0.8)}})
	}
	return s, h
}

// Fewer than 10 finished trials: TPE is random search (running trials do
// not count towards n_startup_trials).
func TestTPEStartup(t *testing.T) {
	s, h := betaHistory(t, 9)
	h = append(h, Trial{Index: 9, Config: Config{{Name: "beta", Value: 0.5}}, State: Running},
		Trial{Index: 10, Config: Config{{Name: "beta", Value: 0.6}}, State: Running})
	got, err := SuggestTPE(s, h, 5, 11, DefaultTPE())
	if err != nil {
		t.Fatal(err)
	}
	if want := SuggestRandom(s, 5, 11); !reflect.DeepEqual(got, want) {
		t.Errorf("9 finished trials: %s, want the random suggestion %s", got, want)
	}
}

// Same inputs, same output: the history's order does not matter, nor do
// other calls made before.
func TestTPEDeterministic(t *testing.T) {
	s, h := betaHistory(t, 30)
	first, _ := SuggestTPE(s, h, 1, 30, DefaultTPE())
	SuggestTPE(s, h, 1, 31, DefaultTPE())
	rev := make([]Trial, len(h))
	for i := range h {
		rev[len(h)-1-i] = h[i]
	}
	again, _ := SuggestTPE(s, rev, 1, 30, DefaultTPE())
	if !reflect.DeepEqual(first, again) {
		t.Errorf("reversed history: %s, want %s", again, first)
	}
	if other, _ := SuggestTPE(s, h, 2, 30, DefaultTPE()); reflect.DeepEqual(first, other) {
		t.Errorf("seeds 1 and 2 gave the same %s", first)
	}
}

// TPE learns: after 30 trials of 1 − |beta − 0.8|, its next 50
// suggestions lie closer to 0.8 on average than 50 random ones (about
// 0.26 from 0.8 for uniform draws; the bound 0.15 leaves room).
func TestTPEConcentrates(t *testing.T) {
	s, h := betaHistory(t, 30)
	var dist float64
	for i := 30; i < 80; i++ {
		c, _ := SuggestTPE(s, h, 1, i, DefaultTPE())
		dist += math.Abs(c[0].Value-0.8) / 50
	}
	if dist > 0.15 {
		t.Errorf("mean distance of TPE's suggestions to the optimum %.3f, want < 0.15", dist)
	}
}

// The constant liar: running trials join the bad group, so three running
// trials at the point TPE would suggest push the suggestion elsewhere. On
// a continuous dimension candidates never coincide with a trial, so the
// change is the liar's (g grows there), not the Revisit rule's.
func TestTPEConstantLiar(t *testing.T) {
	s, h := betaHistory(t, 20)
	opts := DefaultTPE()
	opts.Revisit = true // Optuna exactly
	without, _ := SuggestTPE(s, h, 3, 23, opts)
	for i := 20; i < 23; i++ {
		h = append(h, Trial{Index: i, Config: without, State: Running, Target: 1})
	}
	with, _ := SuggestTPE(s, h, 3, 23, opts)
	if with[0].Value == without[0].Value {
		t.Errorf("running trials at %s did not change the suggestion", without)
	}
	// g at that point is higher with the liars.
	below, above, _ := splitTrials(s, h, 23)
	_, aboveNo, _ := splitTrials(s, h[:20], 23)
	x := [][]float64{{without[0].Value}}
	gWith, gWithout := newParzen(s.Dims, above).logPDF(x)[0], newParzen(s.Dims, aboveNo).logPDF(x)[0]
	if !(gWith > gWithout) || len(below) != 2 {
		t.Errorf("log g at %s: %v with liars, %v without; want higher with (below %d, want 2)", without, gWith, gWithout, len(below))
	}
}

// Parallel suggestions in a 4 × 4 grid: k = 3 suggestions made in turn,
// each seeing the earlier ones as running, never coincide (over 200
// sweep seeds), whereas without the running trials in the history they
// coincide often. With Revisit (Optuna exactly) the liar alone makes
// duplicates rarer but does not rule them out: 146 against 384 when this
// test was last changed.
func TestTPEParallelNoDuplicates(t *testing.T) {
	s, err := NewSpace([]Dimension{{Name: "clusters", Choice: []any{1, 2, 3, 4}}, {Name: "beta", Choice: []any{0.1, 0.3, 0.5, 0.7}}})
	if err != nil {
		t.Fatal(err)
	}
	dups := func(opts TPEOptions, liar bool) int {
		d := 0
		for seed := uint64(0); seed < 200; seed++ {
			var h []Trial
			for i := range 10 {
				c := SuggestRandom(s, seed, i)
				v := 1 - 0.1*math.Pow(c[0].Value-2, 2) - math.Pow(c[1].Value-0.3, 2)
				h = append(h, Trial{Index: i, Config: c, State: Complete, Values: []float64{v}})
			}
			seen := map[string]bool{}
			for k := range 3 {
				c, err := SuggestTPE(s, h, seed, 10+k, opts)
				if err != nil {
					t.Fatal(err)
				}
				if seen[c.key()] {
					d++
				}
				seen[c.key()] = true
				if liar {
					h = append(h, Trial{Index: 10 + k, Config: c, State: Running, Target: 1})
				}
			}
		}
		return d
	}
	optuna := DefaultTPE()
	optuna.Revisit = true
	liar, none, optunaLiar, optunaNone := dups(DefaultTPE(), true), dups(DefaultTPE(), false), dups(optuna, true), dups(optuna, false)
	if liar != 0 {
		t.Errorf("%d duplicates among 200 × 3 parallel suggestions with running liars, want 0", liar)
	}
	if !(optunaLiar < optunaNone) || none == 0 {
		t.Errorf("duplicates: Optuna's liar %d, Optuna without %d, ours without liars %d; want the liar to reduce them", optunaLiar, optunaNone, none)
	}
	t.Logf("duplicates over 200 seeds: with liars %d (Optuna exactly: %d), without %d (Optuna: %d)", liar, optunaLiar, none, optunaNone)
}

// Multivariate TPE runs and, with candidates from a joint mixture,
// returns a point of the space.
func TestTPEMultivariate(t *testing.T) {
	s := mixedSpace(t)
	var h []Trial
	for i := range 15 {
		c := SuggestRandom(s, 9, i)
		h = append(h, Trial{Index: i, Config: c, State: Complete, Values: []float64{c[0].Value - c[2].Value/10}})
	}
	for _, mv := range []bool{false, true} {
		c, err := SuggestTPE(s, h, 9, 15, TPEOptions{Multivariate: mv})
		if err != nil || !s.Contains(c) {
			t.Errorf("multivariate %v: %s, %v", mv, c, err)
		}
	}
}

// BenchmarkSuggestTPE times one suggestion over the mixed five-dimension
// space with n finished trials.
func BenchmarkSuggestTPE(b *testing.B) {
	s, err := NewSpace([]Dimension{
		{Name: "beta", Uniform: []float64{0, 1}},
		{Name: "lr", LogUniform: []float64{0.001, 0.1}},
		{Name: "clusters", Int: []float64{1, 4}},
		{Name: "n_sub", Int: []float64{20, 320}, Log: true},
		{Name: "descriptor", Choice: []any{"exact", "triangle"}},
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{100, 1000} {
		var h []Trial
		for i := range n {
			c := SuggestRandom(s, 1, i)
			h = append(h, Trial{Index: i, Config: c, State: Complete, Values: []float64{c[0].Value}})
		}
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if _, err := SuggestTPE(s, h, 1, n+i, DefaultTPE()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
