package campaign

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"

	"github.com/ptopofl/ptopofl/pipeline"
)

// RoundTiming is where one round's wall time went, read from its
// RoundWorkflow history (the record Temporal keeps, so no timer runs in the
// product for it).
type RoundTiming struct {
	Round int `json:"round"`
	// WallSeconds runs from the round workflow's start to its completion.
	WallSeconds float64 `json:"wall_seconds"`
	// ActivitySeconds maps an activity type (TrainLocal, ComputeDescriptor,
	// Evaluate: the site activities) to the seconds of the round
	// during which at least one activity of that type was executing (from
	// its start to its close, the union over sites). An activity's own S3
	// reads and writes fall inside its time.
	ActivitySeconds map[string]float64 `json:"activity_seconds"`
	// OrchestrationSeconds is the time of the round during which no site
	// activity was executing: workflow tasks, scheduling, task-queue waits,
	// and the server's local activities (ClusterSites, Aggregate,
	// CommitRound, PruneRound: the history records them as markers without
	// their start, so their time is not told apart here).
	OrchestrationSeconds float64 `json:"orchestration_seconds"`
	// StoreShare maps a site activity type to the share of its
	// activities' summed execution time that they reported spending in the
	// store (pipeline.Spent: S3 requests, parquet encoding and decoding).
	StoreShare map[string]float64 `json:"store_share,omitempty"`
	// ServerStoreSeconds is the time the server's local activities
	// (ClusterSites, Aggregate, CommitRound) reported spending in the
	// store; it lies inside OrchestrationSeconds.
	ServerStoreSeconds float64 `json:"server_store_seconds"`
	// Events is the number of events in the round workflow's history, and
	// WorkflowTasks the number of its workflow tasks that completed: with
	// the activity tasks (ActivityTasks, attempts included), what the
	// Temporal server persisted and dispatched for the round, each a
	// transaction of its persistence (the parent campaign's share, the
	// child's start and close, is not counted).
	//
	// LocalActivities counts the local activities the history records (a
	// marker each, written with a workflow task): the server's, and the
	// sites' in a colocated campaign (pipeline.CampaignWorkflowInput.Colocated),
	// whose execution intervals come from the activities' own clocks
	// (pipeline.Spent) and count in ActivitySeconds as a site worker's do.
	Events          int `json:"events"`
	WorkflowTasks   int `json:"workflow_tasks"`
	ActivityTasks   int `json:"activity_tasks"`
	LocalActivities int `json:"local_activities"`
	// StoreUnknown counts the activities whose result could not be read
	// (encrypted with a key this process lacks, or from a version that did
	// not record it): their store time counts as zero.
	StoreUnknown int `json:"store_unknown,omitempty"`
}

// Split divides the round's wall time into training (TrainLocal),
// descriptors (ComputeDescriptor), evaluation (Evaluate), storage and
// orchestration, in seconds, summing to WallSeconds. Storage is each site
// activity type's time × its StoreShare plus ServerStoreSeconds; the
// storage part of a site activity type is taken out of that type's time
// and the server's out of orchestration, which keeps the rest: workflow
// tasks, scheduling, queue waits and the server's computation.
func (t RoundTiming) Split() (training, descriptors, evaluation, storage, orchestration float64) {
	part := func(typ string) float64 {
		sec := t.ActivitySeconds[typ]
		st := sec * t.StoreShare[typ]
		storage += st
		return sec - st
	}
	training = part(pipeline.ActivityTrainLocal)
	descriptors = part(pipeline.ActivityComputeDescriptor)
	evaluation = part(pipeline.ActivityEvaluate)
	storage += t.ServerStoreSeconds
	orchestration = t.OrchestrationSeconds - t.ServerStoreSeconds
	return training, descriptors, evaluation, storage, orchestration
}

// Timings reads the histories of the campaign's first-attempt rounds 1 to
// rounds and returns each one's RoundTiming.
func (s *Service) Timings(ctx context.Context, campaign string, rounds int) ([]RoundTiming, error) {
	var out []RoundTiming
	for r := 1; r <= rounds; r++ {
		id := pipeline.AttemptRoundWorkflowID(campaign, r, 1)
		it := s.Client.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		var events []*historypb.HistoryEvent
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				return nil, fmt.Errorf("timings: history of %s: %w", id, err)
			}
			events = append(events, ev)
		}
		t, err := RoundTimingOf(events, s.converter())
		if err != nil {
			return nil, fmt.Errorf("timings: %s: %w", id, err)
		}
		t.Round = r
		out = append(out, t)
	}
	return out, nil
}

// RoundTimingOf computes a round's timing from its workflow history events
// (Round left zero): the activities' execution intervals come from their
// started and closed events, matched by scheduled event ID, and their
// store time from their results (and the server's local activities'
// markers), read with dc.
func RoundTimingOf(events []*historypb.HistoryEvent, dc converter.DataConverter) (RoundTiming, error) {
	var first, last time.Time
	completed := false
	types := map[int64]string{}          // scheduled event ID → activity type
	starts := map[int64]time.Time{}      // scheduled event ID → start
	spans := map[string][][2]time.Time{} // activity type → execution intervals
	var all [][2]time.Time
	busy, inStore := map[string]float64{}, map[string]float64{} // activity type → summed seconds
	var serverStore float64
	unknown := 0
	spent := func(p *commonpb.Payloads) (pipeline.Spent, bool) {
		var sp pipeline.Spent
		if p == nil || dc.FromPayloads(p, &sp) != nil {
			return pipeline.Spent{}, false
		}
		return sp, true
	}
	wfts, acts, locals := 0, 0, 0
	for _, ev := range events {
		at := ev.GetEventTime().AsTime()
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			wfts++
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
			first = at
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
			last, completed = at, true
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			types[ev.GetEventId()] = ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			acts++
			starts[ev.GetActivityTaskStartedEventAttributes().GetScheduledEventId()] = at
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED,
			enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT, enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCELED:
			id := closedScheduledID(ev)
			st, ok := starts[id]
			if !ok {
				continue // closed before it started (a schedule-to-start timeout)
			}
			iv := [2]time.Time{st, at}
			spans[types[id]] = append(spans[types[id]], iv)
			all = append(all, iv)
			busy[types[id]] += at.Sub(st).Seconds()
			if ev.GetEventType() == enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED {
				sp, ok := spent(ev.GetActivityTaskCompletedEventAttributes().GetResult())
				if !ok {
					unknown++
				}
				inStore[types[id]] += sp.StoreSeconds
			}
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			// A local activity's marker: the SDK's "data" (its type) and
			// "result" payloads.
			m := ev.GetMarkerRecordedEventAttributes()
			if m.GetMarkerName() != "LocalActivity" || m.GetFailure() != nil {
				continue
			}
			locals++
			sp, ok := spent(m.GetDetails()["result"])
			if !ok {
				unknown++
				continue
			}
			if typ := colocatedType(m.GetDetails()["data"], dc); typ != "" && !sp.Started.IsZero() {
				// A colocated site activity: its own clock says when it ran.
				iv := [2]time.Time{sp.Started, sp.Started.Add(time.Duration(sp.Seconds * float64(time.Second)))}
				spans[typ] = append(spans[typ], iv)
				all = append(all, iv)
				busy[typ] += sp.Seconds
				inStore[typ] += sp.StoreSeconds
				continue
			}
			serverStore += sp.StoreSeconds
		}
	}
	if first.IsZero() || !completed {
		return RoundTiming{}, fmt.Errorf("round workflow has not completed")
	}
	t := RoundTiming{WallSeconds: last.Sub(first).Seconds(), ActivitySeconds: map[string]float64{},
		Events: len(events), WorkflowTasks: wfts, ActivityTasks: acts, LocalActivities: locals}
	for typ, ivs := range spans {
		t.ActivitySeconds[typ] = unionSeconds(ivs)
	}
	t.OrchestrationSeconds = t.WallSeconds - unionSeconds(all)
	t.StoreShare = map[string]float64{}
	for typ, b := range busy {
		if b > 0 {
			t.StoreShare[typ] = min(inStore[typ]/b, 1)
		}
	}
	t.ServerStoreSeconds, t.StoreUnknown = min(serverStore, t.OrchestrationSeconds), unknown
	return t, nil
}

// colocatedType is the site activity type (pipeline.ActivityTrainLocal, …)
// of a local activity marker's "data" payload when it names a colocated
// site activity (pipeline.ColocatedActivity), "" otherwise.
func colocatedType(p *commonpb.Payloads, dc converter.DataConverter) string {
	var data struct{ ActivityType string }
	if p == nil || dc.FromPayloads(p, &data) != nil {
		return ""
	}
	parts := strings.Split(data.ActivityType, "/")
	if len(parts) != 3 || pipeline.ColocatedActivity(parts[1], parts[2]) != data.ActivityType {
		return ""
	}
	return parts[2]
}

// converter is the data converter the service's histories are read with.
func (s *Service) converter() converter.DataConverter {
	if s.Converter != nil {
		return s.Converter
	}
	return converter.GetDefaultDataConverter()
}

func closedScheduledID(ev *historypb.HistoryEvent) int64 {
	switch ev.GetEventType() {
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
		return ev.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED:
		return ev.GetActivityTaskFailedEventAttributes().GetScheduledEventId()
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
		return ev.GetActivityTaskTimedOutEventAttributes().GetScheduledEventId()
	default:
		return ev.GetActivityTaskCanceledEventAttributes().GetScheduledEventId()
	}
}

// unionSeconds is the length of the union of the intervals.
func unionSeconds(ivs [][2]time.Time) float64 {
	ivs = slices.Clone(ivs)
	slices.SortFunc(ivs, func(a, b [2]time.Time) int { return a[0].Compare(b[0]) })
	total := 0.0
	var cur [2]time.Time
	for i, iv := range ivs {
		switch {
		case i == 0:
			cur = iv
		case !iv[0].After(cur[1]):
			if iv[1].After(cur[1]) {
				cur[1] = iv[1]
			}
		default:
			total += cur[1].Sub(cur[0]).Seconds()
			cur = iv
		}
	}
	if len(ivs) > 0 {
		total += cur[1].Sub(cur[0]).Seconds()
	}
	return total
}
