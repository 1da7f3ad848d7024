package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
)

// stallingRun is a client.WorkflowRun whose first stalls calls to Get block
// until their context ends (a long poll that missed the close), after which
// Get returns result.
type stallingRun struct {
	client.WorkflowRun
	stalls, calls int
	result        string
	err           error
}

func (r *stallingRun) Get(ctx context.Context, valuePtr any) error {
	r.calls++
	if r.calls <= r.stalls {
		<-ctx.Done()
		return ctx.Err()
	}
	if r.err != nil {
		return r.err
	}
	*valuePtr.(*string) = r.result
	return nil
}

func TestAwaitResult(t *testing.T) {
	defer func(d time.Duration) { resultPoll = d }(resultPoll)
	resultPoll = 50 * time.Millisecond
	failed := errors.New("workflow failed")
	cases := []struct {
		stalls    int
		err       error
		ctxAfter  time.Duration // outer deadline; 0: none
		wantCalls int
		wantErr   error
	}{
		0: {stalls: 0, wantCalls: 1},
		1: {stalls: 2, wantCalls: 3},                                                                // two missed closes, then the result
		2: {stalls: 1, err: failed, wantCalls: 2, wantErr: failed},                                  // a failure is returned, not retried
		3: {stalls: 100, ctxAfter: resultPoll / 2, wantCalls: 1, wantErr: context.DeadlineExceeded}, // the caller's deadline ends the wait
	}
	for i, c := range cases {
		r := &stallingRun{stalls: c.stalls, result: "done", err: c.err}
		ctx := context.Background()
		if c.ctxAfter > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, c.ctxAfter)
			defer cancel()
		}
		var got string
		start := time.Now()
		err := awaitResult(ctx, r, &got)
		if !errors.Is(err, c.wantErr) {
			t.Errorf("case %d: err %v, want %v", i, err, c.wantErr)
		}
		if r.calls != c.wantCalls {
			t.Errorf("case %d: %d calls to Get, want %d", i, r.calls, c.wantCalls)
		}
		if c.wantErr == nil && got != "done" {
			t.Errorf("case %d: result %q, want done", i, got)
		}
		// Each stalled attempt is cut at resultPoll.
		if max := time.Duration(c.stalls+1) * resultPoll; c.ctxAfter == 0 && time.Since(start) > max+time.Second {
			t.Errorf("case %d: took %v, want at most about %v", i, time.Since(start), max)
		}
	}
}
