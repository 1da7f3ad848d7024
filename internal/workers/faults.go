package workers

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"

	"github.com/ptopofl/ptopofl/activities"
	"github.com/ptopofl/ptopofl/pipeline"
)

// ErrTypeInjectedDrop is the type of the non-retryable error every
// attempt of Faults.Drop's activity fails with.
const ErrTypeInjectedDrop = "InjectedDrop"

// ErrTypeInjectedFault is the type of the retryable error a site activity
// attempt fails with when Faults injects a failure.
const ErrTypeInjectedFault = "InjectedFault"

// Faults injects faults into a site worker's activities, for tests of what
// the system survives (the e2e fault tests; `worker --fault-*`). The zero
// value injects nothing, and nothing in a campaign ever turns it on: a
// fault changes when work happens, never what it computes.
//
// Both kinds act before the activity does anything, so an injected fault
// has no side effect to undo:
//
//   - Rate: an attempt fails with a retryable ErrTypeInjectedFault error
//     with probability Rate. The draw is a hash of (Seed, campaign, round,
//     site, activity type, attempt), so a run repeats the same failures
//     and a retry of a failed attempt draws again.
//   - Delay: in the rounds listed in Rounds (every round when Rounds is
//     empty), every attempt waits Delay before it runs, heartbeating as
//     training does, so that the site is a straggler that only the round
//     deadline (or the attempt's own timeout) cuts short.
//   - Lose: the first attempt of each activity of that type in the rounds
//     listed in Rounds (every round when empty) is lost: it never answers
//     and never heartbeats, as an activity task whose worker vanished or
//     whose poll response never arrived, until the server times it out.
//   - Hold moves Delay inside a private release (dp record): to just
//     after its charge to the site's ledger and before anything leaves
//     ("charged", activities.HoldCharged), or to just after a model or
//     descriptor was written and before the activity returns
//     ("released"), so that a test can kill the worker there.
//   - Drop: every attempt of that activity type in the rounds listed in
//     Rounds (every round when empty) fails with a non-retryable
//     ErrTypeInjectedDrop error, so the site leaves the round at that
//     stage (a secure aggregation's stages: pipeline.ActivitySecAggShare,
//     ActivitySecAggMask, ActivitySecAggUnmask).
type Faults struct {
	Rate   float64
	Seed   uint64
	Delay  time.Duration
	Lose   string // an activity type (pipeline.ActivityEvaluate, ...)
	Hold   string // "", activities.HoldCharged or activities.HoldReleased
	Drop   string // an activity type
	Rounds []int
	// Log receives one line per injected failure ("fault: injected
	// failure: ...") and per delayed attempt ("fault: delaying ..."), so a
	// test can count what was injected; nil discards them.
	Log io.Writer
}

// Enabled reports whether f injects anything.
func (f Faults) Enabled() bool { return f.Rate > 0 || f.Delay > 0 || f.Lose != "" || f.Drop != "" }

// Validate checks the fault settings a user gave.
func (f Faults) Validate() error {
	if f.Rate < 0 || f.Rate > 1 || math.IsNaN(f.Rate) {
		return fmt.Errorf("fault rate %v: must be in [0, 1]", f.Rate)
	}
	if f.Delay < 0 {
		return fmt.Errorf("fault delay %v: must be >= 0", f.Delay)
	}
	if f.Hold != "" && f.Hold != activities.HoldCharged && f.Hold != activities.HoldReleased {
		return fmt.Errorf("fault hold %q: want %q or %q", f.Hold, activities.HoldCharged, activities.HoldReleased)
	}
	if f.Hold != "" && f.Delay <= 0 {
		return fmt.Errorf("fault hold %q: needs a delay to hold for", f.Hold)
	}
	for _, r := range f.Rounds {
		if r < 1 {
			return fmt.Errorf("fault round %d: rounds count from 1", r)
		}
	}
	return nil
}

// Fails reports whether the attempt of activityType for (campaign, round,
// site) fails: a uniform draw in [0, 1) from the SHA-256 of the tuple,
// below Rate.
func (f Faults) Fails(campaign string, round int, site, activityType string, attempt int) bool {
	if f.Rate <= 0 {
		return false
	}
	h := sha256.New()
	fmt.Fprintf(h, "ptopofl-fault\x00%d\x00%s\x00%d\x00%s\x00%s\x00%d", f.Seed, campaign, round, site, activityType, attempt)
	u := float64(binary.BigEndian.Uint64(h.Sum(nil))>>11) / (1 << 53)
	return u < f.Rate
}

// loses reports whether the attempt of activityType in round is lost.
func (f Faults) loses(round int, activityType string, attempt int) bool {
	return f.Lose != "" && f.Lose == activityType && attempt == 1 && (len(f.Rounds) == 0 || slices.Contains(f.Rounds, round))
}

// drops reports whether the site leaves round at activityType.
func (f Faults) drops(round int, activityType string) bool {
	return f.Drop != "" && f.Drop == activityType && (len(f.Rounds) == 0 || slices.Contains(f.Rounds, round))
}

// delays reports whether attempts of round are held back.
func (f Faults) delays(round int) bool {
	return f.Delay > 0 && (len(f.Rounds) == 0 || slices.Contains(f.Rounds, round))
}

// faultInterceptor applies Faults to every activity of one site worker.
type faultInterceptor struct {
	interceptor.WorkerInterceptorBase
	site string
	f    Faults
	mu   sync.Mutex // serialises the log lines of concurrent activities
}

func newFaultInterceptor(site string, f Faults) *faultInterceptor {
	if f.Log == nil {
		f.Log = io.Discard
	}
	return &faultInterceptor{site: site, f: f}
}

func (fi *faultInterceptor) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	a := &faultActivity{fi: fi}
	a.Next = next
	return a
}

func (fi *faultInterceptor) logf(format string, args ...any) {
	fi.mu.Lock()
	defer fi.mu.Unlock()
	fmt.Fprintf(fi.f.Log, "fault: "+format+"\n", args...)
}

type faultActivity struct {
	interceptor.ActivityInboundInterceptorBase
	fi *faultInterceptor
}

func (a *faultActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	info := activity.GetInfo(ctx)
	call := siteCallOf(in.Args)
	name, attempt := info.ActivityType.Name, int(info.Attempt)
	what := fmt.Sprintf("site %s campaign %s round %d activity %s attempt %d", a.fi.site, call.Campaign, call.Round, name, attempt)
	f := a.fi.f
	if f.Fails(call.Campaign, call.Round, a.fi.site, name, attempt) {
		a.fi.logf("injected failure: %s", what)
		return nil, temporal.NewApplicationError("injected fault: "+what, ErrTypeInjectedFault)
	}
	if f.drops(call.Round, name) {
		a.fi.logf("dropping %s", what)
		return nil, temporal.NewNonRetryableApplicationError("injected drop: "+what, ErrTypeInjectedDrop, nil)
	}
	if f.loses(call.Round, name, attempt) {
		a.fi.logf("losing %s", what)
		<-ctx.Done() // no answer, no heartbeat: the server's timeouts notice
		return nil, ctx.Err()
	}
	if f.delays(call.Round) && f.Hold == "" {
		a.fi.logf("delaying %s by %v", what, f.Delay)
		if err := straggle(ctx, f.Delay, info.HeartbeatTimeout); err != nil {
			return nil, err
		}
	}
	return a.Next.ExecuteActivity(ctx, in)
}

// holdRelease is the site's hold hook (activities.Site.WithHold) under
// Faults.Hold: at that point of a private release in the rounds Delay
// applies to, it logs and waits Delay, heartbeating.
func (fi *faultInterceptor) holdRelease(ctx context.Context, point string, call pipeline.SiteCall) error {
	if point != fi.f.Hold || !fi.f.delays(call.Round) {
		return nil
	}
	info := activity.GetInfo(ctx)
	fi.logf("holding site %s campaign %s round %d activity %s attempt %d %s for %v",
		fi.site, call.Campaign, call.Round, info.ActivityType.Name, info.Attempt, point, fi.f.Delay)
	return straggle(ctx, fi.f.Delay, info.HeartbeatTimeout)
}

// straggle waits d, or until ctx ends (the attempt's timeout or the round
// deadline), heartbeating every third of the heartbeat timeout, as a slow
// training would.
func straggle(ctx context.Context, d, heartbeat time.Duration) error {
	end := time.NewTimer(d)
	defer end.Stop()
	var tick <-chan time.Time
	if heartbeat > 0 {
		t := time.NewTicker(heartbeat / 3)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-end.C:
			return nil
		case <-tick:
			activity.RecordHeartbeat(ctx, "delayed by fault injection")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// siteCallOf finds the pipeline.SiteCall every site activity's input
// embeds; an input without one (no site activity has none) gives the zero
// SiteCall, which still draws deterministically.
func siteCallOf(args []any) pipeline.SiteCall {
	for _, arg := range args {
		v := reflect.ValueOf(arg)
		if v.Kind() == reflect.Pointer && !v.IsNil() {
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			continue
		}
		if f := v.FieldByName("SiteCall"); f.IsValid() {
			if call, ok := f.Interface().(pipeline.SiteCall); ok {
				return call
			}
		}
	}
	return pipeline.SiteCall{}
}
