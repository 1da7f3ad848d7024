package campaign

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// stallingRun is a client.WorkflowRun whose first stalls calls to Get block
// until their context ends (a long poll that missed the close), after which
// Get returns result.
type stallingRun struct {
	client.WorkflowRun
	stalls, calls int
	early         error // if set, a stalled Get returns this at once instead of waiting for its context
	result        string
	err           error
}

func (r *stallingRun) Get(ctx context.Context, valuePtr any) error {
	r.calls++
	if r.calls <= r.stalls {
		if r.early != nil {
			return r.early
		}
		<-ctx.Done()
		return ctx.Err()
	}
	if r.err != nil {
		return r.err
	}
	*valuePtr.(*string) = r.result
	return nil
}

// errAny in a case means any error will do.
var errAny = errors.New("any error")

func TestAwaitResult(t *testing.T) {
	defer func(d time.Duration) { resultPoll = d }(resultPoll)
	resultPoll = 50 * time.Millisecond
	failed := errors.New("workflow failed")
	cases := []struct {
		stalls    int
		early     error
		err       error
		ctxAfter  time.Duration // outer deadline; 0: none
		wantCalls int
		wantErr   error
	}{
		0: {stalls: 0, wantCalls: 1},
		1: {stalls: 2, wantCalls: 3},                                                                // two missed closes, then the result
		2: {stalls: 1, err: failed, wantCalls: 2, wantErr: failed},                                  // a failure is returned, not retried
		3: {stalls: 100, ctxAfter: resultPoll / 2, wantCalls: 1, wantErr: context.DeadlineExceeded}, // the caller's deadline ends the wait
		// The poll cut short the way the client reports it: before the
		// attempt's own deadline, as a gRPC status or a service error.
		4: {stalls: 2, early: status.Error(codes.Canceled, "stream terminated by RST_STREAM with error code: CANCEL"), wantCalls: 3},
		5: {stalls: 2, early: serviceerror.NewDeadlineExceeded("context deadline exceeded"), wantCalls: 3},
		6: {stalls: 1, early: fmt.Errorf("get result: %w", context.DeadlineExceeded), wantCalls: 2},
		// A cancelled workflow is an outcome, not a cut poll (run.Get
		// returns this cause inside a WorkflowExecutionError, which the SDK
		// gives no way to build here).
		7: {stalls: 5, early: temporal.NewCanceledError(), wantCalls: 1, wantErr: errAny},
	}
	for i, c := range cases {
		r := &stallingRun{stalls: c.stalls, early: c.early, result: "done", err: c.err}
		ctx := context.Background()
		if c.ctxAfter > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, c.ctxAfter)
			defer cancel()
		}
		var got string
		start := time.Now()
		err := awaitResult(ctx, r, &got)
		if c.wantErr == errAny {
			if err == nil {
				t.Errorf("case %d: no error", i)
			}
		} else if !errors.Is(err, c.wantErr) {
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
