package main

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/ptopofl/ptopofl/campaign"
)

// timingsOutput is what `starter timings --format json` prints.
type timingsOutput struct {
	Campaign string                 `json:"campaign"`
	Rounds   []campaign.RoundTiming `json:"rounds"`
}

// runTimings prints where each round of a campaign spent its wall time,
// from the round workflows' histories (so it needs Temporal to still hold
// them): the seconds during which each site activity type executed and
// the rest, orchestration (which includes the server's local activities).
func runTimings(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return query(ctx, "timings", args, stdout, stderr, nil, func(e *env, name string) (timingsOutput, error) {
		st, err := e.svc.Status(ctx, name)
		if err != nil {
			return timingsOutput{}, err
		}
		rounds, err := e.svc.Timings(ctx, name, st.RoundsDone)
		return timingsOutput{Campaign: name, Rounds: rounds}, err
	}, printTimings, nil)
}

// printTimings prints a row per round: wall time, each activity type's
// time, orchestration, in seconds.
func printTimings(stdout io.Writer, t timingsOutput) {
	var types []string
	for _, r := range t.Rounds {
		for k := range r.ActivitySeconds {
			if !slices.Contains(types, k) {
				types = append(types, k)
			}
		}
	}
	slices.Sort(types)
	fmt.Fprintf(stdout, "%5s %8s", "round", "wall_s")
	for _, k := range types {
		fmt.Fprintf(stdout, " %17s", k)
	}
	fmt.Fprintf(stdout, " %13s\n", "orchestration")
	for _, r := range t.Rounds {
		fmt.Fprintf(stdout, "%5d %8.3f", r.Round, r.WallSeconds)
		for _, k := range types {
			fmt.Fprintf(stdout, " %17.3f", r.ActivitySeconds[k])
		}
		fmt.Fprintf(stdout, " %13.3f\n", r.OrchestrationSeconds)
	}
}
