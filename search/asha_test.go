package search

import (
	"reflect"
	"strings"
	"testing"
)

// Rung positions MinRounds·η^(Grace+k) below MaxRounds, then MaxRounds
// (Optuna's rung_promotion_step), by hand.
func TestASHARungs(t *testing.T) {
	for i, test := range []struct {
		o    ASHAOptions
		R    int
		want []int
	}{
		{ASHAOptions{MinRounds: 1, Eta: 3}, 27, []int{1, 3, 9, 27}},        // 0
		{ASHAOptions{MinRounds: 1, Eta: 3}, 30, []int{1, 3, 9, 27, 30}},    // 1: capped at R
		{ASHAOptions{MinRounds: 1, Eta: 3, Grace: 1}, 27, []int{3, 9, 27}}, // 2: s = 1 skips rung 1
		{ASHAOptions{MinRounds: 2, Eta: 4}, 50, []int{2, 8, 32, 50}},       // 3
		{ASHAOptions{MinRounds: 27, Eta: 3}, 27, []int{27}},                // 4: no early stopping
		{ASHAOptions{MinRounds: 1, Eta: 3, Grace: 5}, 27, []int{27}},       // 5: 3^5 > 27
		{ASHAOptions{}, 27, []int{1, 3, 9, 27}},                            // 6: defaults η = 3, r = max(1, 27/27)
		{ASHAOptions{}, 100, []int{3, 9, 27, 81, 100}},                     // 7: r = ⌊100/27⌋ = 3
		{ASHAOptions{}, 10, []int{1, 3, 9, 10}},                            // 8: r = max(1, ⌊10/27⌋)
		{ASHAOptions{Eta: 4}, 200, []int{3, 12, 48, 192, 200}},             // 9: r = ⌊200/64⌋ = 3
		{ASHAOptions{}, 1, []int{1}},                                       // 10
	} {
		a, err := NewASHA(test.o, test.R)
		if err != nil {
			t.Errorf("case %d: %v", i, err)
			continue
		}
		if got := a.Rungs(); !reflect.DeepEqual(got, test.want) {
			t.Errorf("case %d: rungs %v, want %v", i, got, test.want)
		}
	}
}

func TestASHAOptionErrors(t *testing.T) {
	for i, test := range []struct {
		o    ASHAOptions
		R    int
		want string
	}{
		{ASHAOptions{Eta: 1}, 27, "asha.eta = 1: must be ≥ 2"},                       // 0
		{ASHAOptions{MinRounds: 40}, 27, "asha.min_rounds = 40: must be in [1, 27]"}, // 1
		{ASHAOptions{MinRounds: -1}, 27, "asha.min_rounds = -1"},                     // 2
		{ASHAOptions{Grace: -1}, 27, "asha.grace = -1: must be ≥ 0"},                 // 3
		{ASHAOptions{}, 0, "asha: max rounds 0"},                                     // 4
	} {
		_, err := NewASHA(test.o, test.R)
		if err == nil || !strings.HasPrefix(err.Error(), test.want) {
			t.Errorf("case %d: error %v, want %q", i, err, test.want)
		}
	}
	if _, err := NewHyperband(ASHAOptions{Grace: 1}, 27); err == nil || !strings.Contains(err.Error(), "remove grace") {
		t.Errorf("hyperband with grace: %v", err)
	}
	if _, err := NewSchedule(StrategyRandom, ScheduleOptions{ASHA: ASHAOptions{Eta: 3}}, 27); err == nil {
		t.Error("random with asha options: no error")
	}
	if _, err := NewSchedule("bohb", ScheduleOptions{ASHA: ASHAOptions{}}, 27); err == nil || !strings.Contains(err.Error(), `strategy "bohb": unknown`) {
		t.Errorf("unknown strategy: %v", err)
	}
}

// Optuna's _is_trial_promotable_to_next_rung, maximising; cases by hand.
func TestPromotable(t *testing.T) {
	nan := func() float64 { var z float64; return z / z }()
	for i, test := range []struct {
		value     float64
		competing []float64
		eta       int
		want      bool
	}{
		{0.9, []float64{0.9}, 3, true},                                     // 0: alone: the best
		{0.5, []float64{0.9, 0.5}, 3, false},                               // 1: n = 2 < η: only the best continues
		{0.9, []float64{0.5, 0.9}, 3, true},                                // 2
		{0.3, []float64{0.1, 0.2, 0.3}, 3, true},                           // 3: n = 3: top ⌊3/3⌋ = 1
		{0.2, []float64{0.1, 0.2, 0.3}, 3, false},                          // 4
		{0.5, []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6}, 3, true},            // 5: top 2 of 6: 0.6, 0.5
		{0.4, []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6}, 3, false},           // 6
		{0.5, []float64{0.5, 0.5, 0.4}, 3, true},                           // 7: a tie with the best continues
		{nan, []float64{nan, 0.1}, 3, false},                               // 8: NaN never continues
		{0.1, []float64{nan, nan, 0.1}, 3, true},                           // 9: NaN is the worst
		{0.7, []float64{0.9, 0.8, 0.7, 0.1, 0.1, 0.1, 0.1, 0.1}, 4, false}, // 10: η = 4, top 2 of 8
		{0.8, []float64{0.9, 0.8, 0.7, 0.1, 0.1, 0.1, 0.1, 0.1}, 4, true},  // 11
	} {
		if got := Promotable(test.value, test.competing, test.eta); got != test.want {
			t.Errorf("case %d: Promotable(%v, %v, %d) = %v, want %v", i, test.value, test.competing, test.eta, got, test.want)
		}
	}
}

func paused(i int, values ...float64) Trial {
	return Trial{Index: i, State: Paused, Values: values, Target: len(values)}
}

// ramp returns r values ending in v (the earlier ones lower).
func ramp(r int, v float64) []float64 {
	x := make([]float64, r)
	for k := range x {
		x[k] = v - float64(r-1-k)*0.001
	}
	return x
}

func TestPromoteOnReport(t *testing.T) {
	a := ASHA{MinRounds: 1, Eta: 3, MaxRounds: 9} // rungs 1, 3, 9
	trials := []Trial{paused(0, 0.5), paused(1, 0.7), paused(2, 0.6), paused(3, ramp(3, 0.6)...)}
	for i, test := range []struct {
		index int
		want  bool
	}{
		{1, true},  // 0: 0.7 is the best of 4 at rung 1 (top ⌊4/3⌋ = 1)
		{2, false}, // 1
		{3, true},  // 2: alone at rung 3 (round 3)
	} {
		got, err := a.PromoteOnReport(trials, test.index)
		if err != nil || got != test.want {
			t.Errorf("case %d: trial %d: %v, %v; want %v", i, test.index, got, err, test.want)
		}
	}
	if _, err := a.PromoteOnReport(append(trials, paused(4, 0.1, 0.2)), 4); err == nil {
		t.Error("trial at round 2, not a rung: no error")
	}
	if _, err := a.PromoteOnReport(trials, 9); err == nil {
		t.Error("unknown trial: no error")
	}
}

// ASHA's get_job with paused trials (Li et al. 2020, Algorithm 2); rungs
// 1, 3, 9 (η = 3), cases by hand.
func TestASHANextToPromote(t *testing.T) {
	a := ASHA{MinRounds: 1, Eta: 3, MaxRounds: 9}
	running := func(tr Trial, target int) Trial { tr.State, tr.Target = Running, target; return tr }
	failed := func(tr Trial) Trial { tr.State = Failed; return tr }
	for i, test := range []struct {
		trials []Trial
		want   *Action
	}{
		{ // 0: two trials at rung 0: ⌊2/3⌋ = 0 promotable
			[]Trial{paused(0, 0.5), paused(1, 0.7)}, nil},
		{ // 1: three: the best (trial 1) goes on to round 3
			[]Trial{paused(0, 0.5), paused(1, 0.7), paused(2, 0.6)},
			&Action{Kind: Promote, Trial: 1, Rung: 1, FromRound: 1, ToRound: 3}},
		{ // 2: trial 1 already promoted (running to 3): nothing else in the top 1
			[]Trial{paused(0, 0.5), running(paused(1, 0.7), 3), paused(2, 0.6)}, nil},
		{ // 3: six trials: top 2 = trials 1 (promoted, now at 3) and 4
			[]Trial{paused(0, 0.5), paused(1, ramp(3, 0.75)...), paused(2, 0.6), paused(3, 0.1), paused(4, 0.65), paused(5, 0.2)},
			&Action{Kind: Promote, Trial: 4, Rung: 1, FromRound: 1, ToRound: 3}},
		{ // 4: the higher rung first: three trials at round 3, the best goes to 9
			[]Trial{paused(0, ramp(3, 0.5)...), paused(1, ramp(3, 0.8)...), paused(2, ramp(3, 0.6)...),
				paused(3, 0.9), paused(4, 0.1), paused(5, 0.2)},
			&Action{Kind: Promote, Trial: 1, Rung: 2, FromRound: 3, ToRound: 9}},
		{ // 5: a failed trial in the top is passed over; no one else is in the top 1
			[]Trial{failed(paused(0, 0.9)), paused(1, 0.7), paused(2, 0.6)}, nil},
		{ // 6: a complete trial holds its rungs' values but is not paused
			[]Trial{{Index: 0, State: Complete, Values: ramp(9, 0.9), Target: 9}, paused(1, ramp(3, 0.7)...), paused(2, ramp(3, 0.6)...)},
			nil},
		{ // 7: ties at a rung go to the lower index
			[]Trial{paused(2, 0.7), paused(1, 0.7), paused(0, 0.7)},
			&Action{Kind: Promote, Trial: 0, Rung: 1, FromRound: 1, ToRound: 3}},
	} {
		got, ok := a.NextToPromote(test.trials)
		switch {
		case test.want == nil && ok:
			t.Errorf("case %d: promoted %+v, want none", i, got)
		case test.want != nil && (!ok || got != *test.want):
			t.Errorf("case %d: %+v (ok %v), want %+v", i, got, ok, *test.want)
		}
	}
}

// Schedule.Next: a promotion when there is one, else a new trial with the
// next index at the first rung; without a scheduler, straight to the max
// rounds.
func TestScheduleNext(t *testing.T) {
	sc, err := NewSchedule(StrategyASHA, ScheduleOptions{ASHA: ASHAOptions{MinRounds: 1, Eta: 3}}, 9)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sc.Next(nil), (Action{Kind: Start, Trial: 0, ToRound: 1}); got != want {
		t.Errorf("empty: %+v, want %+v", got, want)
	}
	trials := []Trial{paused(0, 0.5), paused(4, 0.7)}
	if got, want := sc.Next(trials), (Action{Kind: Start, Trial: 5, ToRound: 1}); got != want {
		t.Errorf("indices 0 and 4: %+v, want %+v", got, want)
	}
	trials = append(trials, paused(1, 0.6))
	if got, want := sc.Next(trials), (Action{Kind: Promote, Trial: 4, Rung: 1, FromRound: 1, ToRound: 3}); got != want {
		t.Errorf("three at rung 0: %+v, want %+v", got, want)
	}
	sc, _ = NewSchedule(StrategyTPE, ScheduleOptions{ASHA: ASHAOptions{}}, 9)
	if got, want := sc.Next(trials), (Action{Kind: Start, Trial: 5, ToRound: 9}); got != want || got.Cost() != 9 {
		t.Errorf("tpe: %+v, want %+v", got, want)
	}
}
