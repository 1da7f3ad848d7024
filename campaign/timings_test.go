package campaign

import (
	"math"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ptopofl/ptopofl/pipeline"
)

// TestRoundTimingOf checks the split of a synthetic round history: the
// round runs from t=0 to t=10 s; two TrainLocal activities execute over
// [1, 4] and [2, 6] (union 5 s), Aggregate over [6.5, 7], CommitRound over
// [8, 8.5]; so 6 s of activity and 4 s of orchestration (10 − 6). An
// activity closed without a start (a schedule-to-start timeout) counts
// nowhere. The TrainLocal results and a local activity's marker say how
// long they spent in the store, which Split moves into storage.
func TestRoundTimingOf(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) *timestamppb.Timestamp {
		return timestamppb.New(t0.Add(time.Duration(s * float64(time.Second))))
	}
	var evs []*historypb.HistoryEvent
	add := func(id int64, typ enumspb.EventType, s float64, attrs func(*historypb.HistoryEvent)) {
		ev := &historypb.HistoryEvent{EventId: id, EventType: typ, EventTime: at(s)}
		if attrs != nil {
			attrs(ev)
		}
		evs = append(evs, ev)
	}
	dc := converter.GetDefaultDataConverter()
	result := func(storeSeconds float64) *commonpb.Payloads {
		p, err := dc.ToPayloads(pipeline.TrainLocalOutput{NumTrain: 5, Spent: pipeline.Spent{StoreSeconds: storeSeconds}})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	store := map[int64]float64{10: 0.5, 20: 1.5} // scheduled event ID → seconds in the store
	activity := func(sched int64, name string, s0, s1 float64, started bool) {
		add(sched, enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, s0-0.1, func(e *historypb.HistoryEvent) {
			e.Attributes = &historypb.HistoryEvent_ActivityTaskScheduledEventAttributes{ActivityTaskScheduledEventAttributes: &historypb.ActivityTaskScheduledEventAttributes{ActivityType: &commonpb.ActivityType{Name: name}}}
		})
		if started {
			add(sched+1, enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED, s0, func(e *historypb.HistoryEvent) {
				e.Attributes = &historypb.HistoryEvent_ActivityTaskStartedEventAttributes{ActivityTaskStartedEventAttributes: &historypb.ActivityTaskStartedEventAttributes{ScheduledEventId: sched}}
			})
			add(sched+2, enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, s1, func(e *historypb.HistoryEvent) {
				e.Attributes = &historypb.HistoryEvent_ActivityTaskCompletedEventAttributes{ActivityTaskCompletedEventAttributes: &historypb.ActivityTaskCompletedEventAttributes{ScheduledEventId: sched, Result: result(store[sched])}}
			})
			return
		}
		add(sched+2, enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT, s1, func(e *historypb.HistoryEvent) {
			e.Attributes = &historypb.HistoryEvent_ActivityTaskTimedOutEventAttributes{ActivityTaskTimedOutEventAttributes: &historypb.ActivityTaskTimedOutEventAttributes{ScheduledEventId: sched}}
		})
	}
	add(1, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, 0, nil)
	activity(10, "TrainLocal", 1, 4, true)
	activity(20, "TrainLocal", 2, 6, true)
	activity(30, "Evaluate", 3, 9, false)
	activity(40, "Aggregate", 6.5, 7, true)
	activity(50, "CommitRound", 8, 8.5, true)
	// A server local activity's marker, 0.25 s in the store.
	add(55, enumspb.EVENT_TYPE_MARKER_RECORDED, 9, func(e *historypb.HistoryEvent) {
		e.Attributes = &historypb.HistoryEvent_MarkerRecordedEventAttributes{MarkerRecordedEventAttributes: &historypb.MarkerRecordedEventAttributes{
			MarkerName: "LocalActivity", Details: map[string]*commonpb.Payloads{"result": result(0.25)}}}
	})
	add(60, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, 10, nil)

	got, err := RoundTimingOf(evs, dc)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		got, want float64
	}{
		{"wall", got.WallSeconds, 10},
		{"TrainLocal", got.ActivitySeconds["TrainLocal"], 5},
		{"Aggregate", got.ActivitySeconds["Aggregate"], 0.5},
		{"CommitRound", got.ActivitySeconds["CommitRound"], 0.5},
		{"Evaluate", got.ActivitySeconds["Evaluate"], 0},
		{"orchestration", got.OrchestrationSeconds, 4},
		// TrainLocal: 0.5 + 1.5 s in the store of 3 + 4 s executing.
		{"TrainLocal store share", got.StoreShare["TrainLocal"], 2.0 / 7},
		{"server store", got.ServerStoreSeconds, 0.25},
	}
	tr, _, ev, st, or := got.Split()
	cases = append(cases, []struct {
		name      string
		got, want float64
	}{
		{"split training", tr, 5 - 5*2.0/7},
		{"split evaluation", ev, 0},
		// TrainLocal's 5 s × 2/7, the server's 0.25 s; Aggregate and
		// CommitRound ran here as regular activities and reported none.
		{"split storage", st, 5*2.0/7 + 0.25},
		{"split orchestration", or, 4 - 0.25},
	}...)
	for i, c := range cases {
		if math.Abs(c.got-c.want) > 1e-9 {
			t.Errorf("case %d (%s): %v s, want %v", i, c.name, c.got, c.want)
		}
	}
	if _, err := RoundTimingOf(evs[:len(evs)-1], converter.GetDefaultDataConverter()); err == nil {
		t.Error("a round without its completion event: no error")
	}
}

// TestRoundTimingOfColocated checks a colocated round (site activities as
// local activities, pipeline.CampaignWorkflowInput.Colocated): their
// markers say nothing of when they ran, so the intervals come from the
// activities' own clocks (pipeline.Spent.Started, Seconds). The round runs
// from t=0 to t=10 s; TrainLocal markers for sites a and b ran over [1, 4]
// (0.5 s in the store) and [2, 6] (1.5 s), union 5 s; Evaluate for a over
// [7, 8]; the server's Aggregate marker reported 0.25 s in the store. So
// 6 s of site activity, 4 s of orchestration, and four local activities.
// A marker whose type is not a colocated name counts as the server's even
// when it reports a start.
func TestRoundTimingOfColocated(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sec := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	dc := converter.GetDefaultDataConverter()
	payload := func(v any) *commonpb.Payloads {
		p, err := dc.ToPayloads(v)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	evs := []*historypb.HistoryEvent{{EventId: 1, EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, EventTime: timestamppb.New(t0)}}
	marker := func(typ string, start, ran, store float64) {
		data := struct{ ActivityID, ActivityType string }{"1", typ}
		res := pipeline.TrainLocalOutput{Spent: pipeline.Spent{StoreSeconds: store, Started: sec(start), Seconds: ran}}
		evs = append(evs, &historypb.HistoryEvent{EventId: int64(len(evs) + 1), EventType: enumspb.EVENT_TYPE_MARKER_RECORDED, EventTime: timestamppb.New(sec(9)),
			Attributes: &historypb.HistoryEvent_MarkerRecordedEventAttributes{MarkerRecordedEventAttributes: &historypb.MarkerRecordedEventAttributes{
				MarkerName: "LocalActivity", Details: map[string]*commonpb.Payloads{"data": payload(data), "result": payload(res)}}}})
	}
	marker(pipeline.ColocatedActivity("a", pipeline.ActivityTrainLocal), 1, 3, 0.5)
	marker(pipeline.ColocatedActivity("b", pipeline.ActivityTrainLocal), 2, 4, 1.5)
	marker(pipeline.ColocatedActivity("a", pipeline.ActivityEvaluate), 7, 1, 0)
	marker(pipeline.ActivityAggregate, 8.5, 0.5, 0.25)
	evs = append(evs, &historypb.HistoryEvent{EventId: int64(len(evs) + 1), EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, EventTime: timestamppb.New(sec(10))})

	got, err := RoundTimingOf(evs, dc)
	if err != nil {
		t.Fatal(err)
	}
	tr, _, ev, st, or := got.Split()
	cases := []struct {
		name      string
		got, want float64
	}{
		{"wall", got.WallSeconds, 10},
		{"TrainLocal", got.ActivitySeconds[pipeline.ActivityTrainLocal], 5},
		{"Evaluate", got.ActivitySeconds[pipeline.ActivityEvaluate], 1},
		{"orchestration", got.OrchestrationSeconds, 4},
		{"TrainLocal store share", got.StoreShare[pipeline.ActivityTrainLocal], 2.0 / 7},
		{"server store", got.ServerStoreSeconds, 0.25},
		{"split training", tr, 5 - 5*2.0/7},
		{"split evaluation", ev, 1},
		{"split storage", st, 5*2.0/7 + 0.25},
		{"split orchestration", or, 4 - 0.25},
		{"local activities", float64(got.LocalActivities), 4},
		{"activity tasks", float64(got.ActivityTasks), 0},
	}
	for i, c := range cases {
		if math.Abs(c.got-c.want) > 1e-9 {
			t.Errorf("case %d (%s): %v, want %v", i, c.name, c.got, c.want)
		}
	}
}
