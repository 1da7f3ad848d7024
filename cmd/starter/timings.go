package main

import (
	"context"
	"io"

	"github.com/ptopofl/ptopofl/internal/stackconn"
	"github.com/ptopofl/ptopofl/internal/textout"
)

// runTimings prints where each round of a campaign spent its wall time,
// from the round workflows' histories (so it needs Temporal to still hold
// them): training, descriptors, evaluation, storage (the time the
// activities reported in the store) and orchestration (the rest, which
// includes the server's computation).
func runTimings(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return stackconn.Query(ctx, "timings", args, stdout, stderr, nil, func(e *stackconn.Env, name string) (textout.Timings, error) {
		st, err := e.Svc.Status(ctx, name)
		if err != nil {
			return textout.Timings{}, err
		}
		rounds, err := e.Svc.Timings(ctx, name, st.RoundsDone)
		return textout.Timings{Campaign: name, Rounds: rounds}, err
	}, textout.WriteTimings, nil)
}
