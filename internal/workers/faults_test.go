package workers

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/ptopofl/ptopofl/pipeline"
)

func TestFaultsValidate(t *testing.T) {
	for i, c := range []struct {
		f       Faults
		wantErr string
	}{
		{Faults{}, ""}, // 0: off
		{Faults{Rate: 0.05, Seed: 3}, ""},
		{Faults{Rate: 1}, ""},
		{Faults{Delay: time.Second, Rounds: []int{1, 3}}, ""},
		{Faults{Rate: -0.1}, "fault rate"}, // 4
		{Faults{Rate: 1.5}, "fault rate"},
		{Faults{Delay: -time.Second}, "fault delay"},
		{Faults{Delay: time.Second, Rounds: []int{0}}, "fault round 0"},
	} {
		err := c.f.Validate()
		if (c.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("%d: Validate(%+v) = %v, want error containing %q", i, c.f, err, c.wantErr)
		}
	}
}

// TestFaultsFails: the draw is a function of its arguments only, each of
// them changes it, and its rate is the one asked for.
func TestFaultsFails(t *testing.T) {
	f := Faults{Rate: 0.05, Seed: 11}
	const n = 100000
	failed := 0
	for i := range n {
		if f.Fails("c", 1+i/200, "site"+string(rune('a'+i%26)), pipeline.ActivityTrainLocal, 1+i%7) {
			failed++
		}
	}
	// The binomial standard deviation at n = 100,000 and p = 0.05 is
	// 0.00069; 0.004 is almost six of them.
	if got := float64(failed) / n; got < 0.046 || got > 0.054 {
		t.Errorf("failure rate %.4f over %d draws, want 0.05 ± 0.004", got, n)
	}
	// Find a failing call, then check that it repeats and that changing any
	// one part of the key changes the draw somewhere.
	var round int
	for round = 1; !f.Fails("c", round, "s", "A", 1); round++ {
	}
	if !f.Fails("c", round, "s", "A", 1) {
		t.Fatal("the same call drew differently twice")
	}
	differs := func(name string, fails func(k int) bool) {
		for k := range 200 {
			if !fails(k) {
				return
			}
		}
		t.Errorf("the draw never changes with the %s", name)
	}
	differs("seed", func(k int) bool { return Faults{Rate: 0.05, Seed: uint64(100 + k)}.Fails("c", round, "s", "A", 1) })
	differs("campaign", func(k int) bool { return f.Fails(strings.Repeat("c", k+2), round, "s", "A", 1) })
	differs("site", func(k int) bool { return f.Fails("c", round, strings.Repeat("s", k+2), "A", 1) })
	differs("activity", func(k int) bool { return f.Fails("c", round, "s", strings.Repeat("A", k+2), 1) })
	differs("attempt", func(k int) bool { return f.Fails("c", round, "s", "A", k+2) })
	if (Faults{Seed: 11}).Fails("c", round, "s", "A", 1) {
		t.Error("rate 0 failed a call")
	}
}

// TestFaultInterceptor runs an activity through the interceptor a site
// worker installs: a drawn failure is a retryable InjectedFault error
// raised before the activity runs, and is logged; a delay holds the
// activity only in the listed rounds.
func TestFaultInterceptor(t *testing.T) {
	const site = "s1"
	rate := Faults{Rate: 0.5, Seed: 1}
	failRound, passRound := 0, 0
	for r := 1; failRound == 0 || passRound == 0; r++ {
		if rate.Fails("camp", r, site, pipeline.ActivityEvaluate, 1) {
			failRound = r
		} else {
			passRound = r
		}
	}
	for i, c := range []struct {
		f        Faults
		round    int
		wantFail bool
		minTime  time.Duration
		wantLog  string
	}{
		{rate, failRound, true, 0, "fault: injected failure: site s1 campaign camp round"}, // 0
		{rate, passRound, false, 0, ""},
		{Faults{Delay: 300 * time.Millisecond, Rounds: []int{2}}, 2, false, 300 * time.Millisecond, "fault: delaying site s1 campaign camp round 2"},
		{Faults{Delay: 300 * time.Millisecond, Rounds: []int{2}}, 3, false, 0, ""}, // 3: not a listed round
	} {
		var log bytes.Buffer
		c.f.Log = &log
		var s testsuite.WorkflowTestSuite
		env := s.NewTestActivityEnvironment()
		env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{newFaultInterceptor(site, c.f)}})
		ran := false
		env.RegisterActivityWithOptions(func(ctx context.Context, in pipeline.EvaluateInput) (pipeline.EvaluateOutput, error) {
			ran = true
			return pipeline.EvaluateOutput{NumTest: in.Round}, nil
		}, activity.RegisterOptions{Name: pipeline.ActivityEvaluate})
		t0 := time.Now()
		val, err := env.ExecuteActivity(pipeline.ActivityEvaluate, pipeline.EvaluateInput{SiteCall: pipeline.SiteCall{Campaign: "camp", Round: c.round, Site: site}})
		took := time.Since(t0)
		if c.wantFail {
			var appErr *temporal.ApplicationError
			if !errors.As(err, &appErr) || appErr.Type() != ErrTypeInjectedFault || appErr.NonRetryable() {
				t.Errorf("%d: error %v, want a retryable %s", i, err, ErrTypeInjectedFault)
			}
			if ran {
				t.Errorf("%d: the activity ran despite the injected failure", i)
			}
		} else {
			var out pipeline.EvaluateOutput
			if err != nil || val.Get(&out) != nil || out.NumTest != c.round || !ran {
				t.Errorf("%d: err %v, ran %v, want the activity's own result", i, err, ran)
			}
		}
		if took < c.minTime {
			t.Errorf("%d: took %v, want at least the delay %v", i, took, c.minTime)
		}
		if c.wantLog == "" && log.Len() != 0 || !strings.Contains(log.String(), c.wantLog) {
			t.Errorf("%d: log %q, want %q", i, log.String(), c.wantLog)
		}
	}
}
