package store

import (
	"context"
	"sync"
	"time"
)

// Timer adds up the wall time a piece of work spends in the store: S3
// requests and the store's parquet and JSON decoding and encoding. Calls
// that nest (PutModelCached calls PutCached) or overlap count once: the
// timer runs while at least one call is in progress. It is safe for
// concurrent use.
type Timer struct {
	mu     sync.Mutex
	active int
	since  time.Time
	total  time.Duration
}

type timerKey struct{}

// WithTimer returns a context whose store calls add their time to the
// returned Timer.
func WithTimer(ctx context.Context) (context.Context, *Timer) {
	t := &Timer{}
	return context.WithValue(ctx, timerKey{}, t), t
}

// Seconds returns the time counted so far, including a call still in
// progress.
func (t *Timer) Seconds() float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	d := t.total
	if t.active > 0 {
		d += time.Since(t.since)
	}
	return d.Seconds()
}

// timed starts counting a store call for ctx's timer, if it has one, and
// returns the function that stops it.
func timed(ctx context.Context) func() {
	t, _ := ctx.Value(timerKey{}).(*Timer)
	if t == nil {
		return func() {}
	}
	t.mu.Lock()
	if t.active == 0 {
		t.since = time.Now()
	}
	t.active++
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		if t.active--; t.active == 0 {
			t.total += time.Since(t.since)
		}
		t.mu.Unlock()
	}
}
