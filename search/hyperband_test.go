package search

import (
	"reflect"
	"testing"
)

// Brackets of Li et al. 2018, Algorithm 1: n = ⌈(s_max+1)·η^s/(s+1)⌉,
// n_i = ⌊n·η^−i⌋, r_i = R·η^(i−s). R = 81, η = 3 is the paper's Table 1; R = 27, η = 3 by hand from the same formulas:
// ⌈4·27/4⌉ = 27, ⌈4·9/3⌉ = 12, ⌈4·3/2⌉ = 6, ⌈4·1/1⌉ = 4.
func TestHyperbandBrackets(t *testing.T) {
	for i, test := range []struct {
		h    Hyperband
		want []Bracket // s = SMax … 0
	}{
		{Hyperband{MinRounds: 1, Eta: 3, MaxRounds: 27}, []Bracket{ // 0
			{S: 3, N: []int{27, 9, 3, 1}, Rounds: []int{1, 3, 9, 27}},
			{S: 2, N: []int{12, 4, 1}, Rounds: []int{3, 9, 27}},
			{S: 1, N: []int{6, 2}, Rounds: []int{9, 27}},
			{S: 0, N: []int{4}, Rounds: []int{27}},
		}},
		{Hyperband{MinRounds: 1, Eta: 3, MaxRounds: 81}, []Bracket{ // 1: Table 1
			{S: 4, N: []int{81, 27, 9, 3, 1}, Rounds: []int{1, 3, 9, 27, 81}},
			{S: 3, N: []int{34, 11, 3, 1}, Rounds: []int{3, 9, 27, 81}},
			{S: 2, N: []int{15, 5, 1}, Rounds: []int{9, 27, 81}},
			{S: 1, N: []int{8, 2}, Rounds: []int{27, 81}},
			{S: 0, N: []int{5}, Rounds: []int{81}},
		}},
		{Hyperband{MinRounds: 1, Eta: 3, MaxRounds: 30}, []Bracket{ // 2: R/r not a power of η: r_i = ⌊30·3^(i−s)⌋
			{S: 3, N: []int{27, 9, 3, 1}, Rounds: []int{1, 3, 10, 30}},
			{S: 2, N: []int{12, 4, 1}, Rounds: []int{3, 10, 30}},
			{S: 1, N: []int{6, 2}, Rounds: []int{10, 30}},
			{S: 0, N: []int{4}, Rounds: []int{30}},
		}},
		{Hyperband{MinRounds: 2, Eta: 2, MaxRounds: 8}, []Bracket{ // 3: s_max = log2(8/2) = 2; n = ⌈3·4/3⌉, ⌈3·2/2⌉, ⌈3/1⌉
			{S: 2, N: []int{4, 2, 1}, Rounds: []int{2, 4, 8}},
			{S: 1, N: []int{3, 1}, Rounds: []int{4, 8}},
			{S: 0, N: []int{3}, Rounds: []int{8}},
		}},
	} {
		if got := test.h.SMax(); got != len(test.want)-1 {
			t.Errorf("case %d: SMax %d, want %d", i, got, len(test.want)-1)
		}
		for _, w := range test.want {
			if got := test.h.Bracket(w.S); !reflect.DeepEqual(got, w) {
				t.Errorf("case %d: bracket %d = %+v, want %+v", i, w.S, got, w)
			}
		}
	}
}

// Trial indices fill brackets s = 3, 2, 1, 0 with 27, 12, 6, 4 trials
// (R = 27, η = 3), then start over.
func TestHyperbandBracketOf(t *testing.T) {
	h := Hyperband{MinRounds: 1, Eta: 3, MaxRounds: 27}
	for i, test := range []struct{ index, s, it int }{
		{0, 3, 0}, {26, 3, 0}, {27, 2, 0}, {38, 2, 0}, {39, 1, 0}, {44, 1, 0}, {45, 0, 0}, {48, 0, 0}, {49, 3, 1}, {49 + 27, 2, 1},
	} {
		if s, it := h.BracketOf(test.index); s != test.s || it != test.it {
			t.Errorf("case %d: trial %d in bracket %d of iteration %d, want %d of %d", i, test.index, s, it, test.s, test.it)
		}
	}
}

// Synchronous successive halving within a bracket: R = 9, η = 3, so
// bracket 2 runs 9 trials to round 1, keeps 3 to round 3 and 1 to 9.
func TestHyperbandNextToPromote(t *testing.T) {
	h := Hyperband{MinRounds: 1, Eta: 3, MaxRounds: 9}
	var trials []Trial
	for i := range 8 {
		trials = append(trials, paused(i, float64(i)/10))
	}
	if a, ok := h.NextToPromote(trials); ok {
		t.Errorf("8 of 9 trials at rung 0: promoted %+v, want none until the 9th reports", a)
	}
	trials = append(trials, Trial{Index: 8, State: Running, Target: 1})
	if a, ok := h.NextToPromote(trials); ok {
		t.Errorf("the 9th running: promoted %+v, want none", a)
	}
	trials[8] = paused(8, 0.35)
	var order []int
	for range 3 {
		a, ok := h.NextToPromote(trials)
		if !ok || a.Kind != Promote || a.FromRound != 1 || a.ToRound != 3 || a.Bracket != 2 || a.Rung != 1 {
			t.Fatalf("after %v: %+v, %v; want a promotion from round 1 to 3", order, a, ok)
		}
		order = append(order, a.Trial)
		trials[a.Trial].State, trials[a.Trial].Target = Running, 3
	}
	if want := []int{7, 6, 5}; !reflect.DeepEqual(order, want) {
		t.Errorf("promoted %v, want the top 3 by value %v", order, want)
	}
	if a, ok := h.NextToPromote(trials); ok {
		t.Errorf("top 3 running: promoted %+v, want none", a)
	}
	// They report at round 3; the best (trial 6 now) goes on to 9.
	trials[7] = paused(7, 0.7, 0.7, 0.71)
	trials[6] = paused(6, 0.6, 0.6, 0.9)
	trials[5] = Trial{Index: 5, State: Failed, Values: []float64{0.5}, Target: 3}
	a, ok := h.NextToPromote(trials)
	if want := (Action{Kind: Promote, Trial: 6, Rung: 2, Bracket: 2, FromRound: 3, ToRound: 9}); !ok || a != want {
		t.Errorf("rung 1 settled (one failed): %+v, %v; want %+v", a, ok, want)
	}
	// Schedule.Next promotes it, then starts trial 9 in bracket 1 (5 trials
	// to round 3).
	sc, err := NewSchedule(StrategyHyperband, ScheduleOptions{ASHA: ASHAOptions{MinRounds: 1}}, 9)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sc.Next(trials), (Action{Kind: Promote, Trial: 6, Rung: 2, Bracket: 2, FromRound: 3, ToRound: 9}); got != want {
		t.Errorf("Next: %+v, want %+v", got, want)
	}
	trials[6].State = Running
	if got, want := sc.Next(trials), (Action{Kind: Start, Trial: 9, Bracket: 1, ToRound: 3}); got != want {
		t.Errorf("Next with nothing to promote: %+v, want %+v", got, want)
	}
}
