package search_test

import (
	"encoding/json"
	"fmt"

	"github.com/ptopofl/ptopofl/search"
)

// A sweep file's search block (here as JSON; YAML decodes to the same
// Dimensions), validated into a Space, and the first suggestions of
// random search under sweep seed 1: each depends only on the seed and the
// trial's index.
func ExampleNewSpace() {
	var dims []search.Dimension
	err := json.Unmarshal([]byte(`[
		{"name": "beta", "uniform": [0, 1]},
		{"name": "lr", "log_uniform": [0.001, 0.1]},
		{"name": "clusters", "int": [1, 6]},
		{"name": "descriptor", "choice": ["exact", "triangle"]}
	]`), &dims)
	if err != nil {
		fmt.Println(err)
		return
	}
	space, err := search.NewSpace(dims)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := range 3 {
		c, _ := search.Suggest(space, search.StrategyRandom, nil, 1, i)
		fmt.Printf("trial %d: beta=%.3f lr=%.4f clusters=%v descriptor=%s\n", i, c[0].Value, c[1].Value, c[2].Value, c[3].Text)
	}
	_, err = search.NewSpace([]search.Dimension{{Name: "beta", Uniform: []float64{0.5, 0.2}}})
	fmt.Println(err)
	// Output:
	// trial 0: beta=0.930 lr=0.0477 clusters=1 descriptor=triangle
	// trial 1: beta=0.190 lr=0.0016 clusters=4 descriptor=triangle
	// trial 2: beta=0.519 lr=0.0036 clusters=4 descriptor=triangle
	// search.beta: uniform [0.5, 0.2]: lo must be below hi
}

// Hyperband's brackets for R = 81 rounds and η = 3: Table 1 of Li et al.
// 2018, with rounds as the resource.
func ExampleHyperband_Bracket() {
	h, _ := search.NewHyperband(search.ASHAOptions{MinRounds: 1, Eta: 3}, 81)
	for s := h.SMax(); s >= 0; s-- {
		b := h.Bracket(s)
		fmt.Printf("s=%d  n_i %v  r_i %v\n", s, b.N, b.Rounds)
	}
	// Output:
	// s=4  n_i [81 27 9 3 1]  r_i [1 3 9 27 81]
	// s=3  n_i [34 11 3 1]  r_i [3 9 27 81]
	// s=2  n_i [15 5 1]  r_i [9 27 81]
	// s=1  n_i [8 2]  r_i [27 81]
	// s=0  n_i [5]  r_i [81]
}

// ASHA with paused-trial promotion, driven by hand: three trials reach
// rung 0 (round 1) and pause; the best of the three is resumed from round
// 1 to rung 1 (round 3) instead of starting a fourth trial.
func ExampleSchedule_Next() {
	sc, _ := search.NewSchedule(search.StrategyASHA, search.ScheduleOptions{ASHA: search.ASHAOptions{MinRounds: 1, Eta: 3}}, 9)
	fmt.Println("rungs", sc.ASHA.Rungs())
	var trials []search.Trial
	for _, v := range []float64{0.61, 0.74, 0.68} {
		a := sc.Next(trials)
		fmt.Printf("%s trial %d to round %d\n", a.Kind, a.Trial, a.ToRound)
		trials = append(trials, search.Trial{Index: a.Trial, State: search.Paused, Values: []float64{v}, Target: a.ToRound})
	}
	a := sc.Next(trials)
	fmt.Printf("%s trial %d from round %d to %d (%d rounds)\n", a.Kind, a.Trial, a.FromRound, a.ToRound, a.Cost())
	// Output:
	// rungs [1 3 9]
	// start trial 0 to round 1
	// start trial 1 to round 1
	// start trial 2 to round 1
	// promote trial 1 from round 1 to 3 (2 rounds)
}
