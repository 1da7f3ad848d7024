package campaign

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/ptopofl/ptopofl/artifact"
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
// rounds and returns each one's RoundTiming: a round's own RoundWorkflow
// history or, for a round the campaign workflow ran as a stage of its own
// (a campaign whose sites its process served), the history of the
// campaign workflow's runs (InlineRoundTimingsOf).
func (s *Service) Timings(ctx context.Context, campaign string, rounds int) ([]RoundTiming, error) {
	var out []RoundTiming
	var inline map[int]RoundTiming
	for r := 1; r <= rounds; r++ {
		id := pipeline.AttemptRoundWorkflowID(campaign, r, 1)
		events, err := s.history(ctx, id, "")
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			if inline == nil {
				if inline, err = s.inlineTimings(ctx, campaign); err != nil {
					return nil, err
				}
			}
			t, ok := inline[r]
			if !ok {
				return nil, fmt.Errorf("timings: campaign %s: round %d has neither a round workflow (%s) nor a record in the campaign workflow's history", campaign, r, id)
			}
			out = append(out, t)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("timings: history of %s: %w", id, err)
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

// history reads the events of a workflow run (runID "" for the latest).
func (s *Service) history(ctx context.Context, id, runID string) ([]*historypb.HistoryEvent, error) {
	it := s.Client.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var events []*historypb.HistoryEvent
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return nil, err
		}
		events = append(events, ev)
	}
	return events, nil
}

// inlineTimings reads every run of the campaign's workflow (its own, or
// the sweep's child that ran it) and returns the timings of the rounds
// they ran as stages of their own, by round.
func (s *Service) inlineTimings(ctx context.Context, campaign string) (map[int]RoundTiming, error) {
	id := campaign
	if _, err := s.Client.DescribeWorkflowExecution(ctx, id, ""); err != nil {
		sid, ok, serr := s.inSweep(ctx, campaign, err)
		switch {
		case serr != nil:
			return nil, fmt.Errorf("timings: campaign %s: %w", campaign, serr)
		case !ok:
			return nil, fmt.Errorf("timings: campaign %s: %w", campaign, err)
		}
		id = sid
	}
	var runs []string
	var token []byte
	for {
		resp, err := s.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: fmt.Sprintf("WorkflowId = '%s'", strings.ReplaceAll(id, "'", "\\'")), NextPageToken: token,
		})
		if err != nil {
			return nil, fmt.Errorf("timings: runs of %s: %w", id, err)
		}
		for _, e := range resp.GetExecutions() {
			runs = append(runs, e.GetExecution().GetRunId())
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	out := map[int]RoundTiming{}
	for _, run := range runs {
		events, err := s.history(ctx, id, run)
		if err != nil {
			return nil, fmt.Errorf("timings: history of %s run %s: %w", id, run, err)
		}
		maps.Copy(out, InlineRoundTimingsOf(events, campaign, s.converter()))
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
	a := newTimingAcc(dc)
	for _, ev := range events {
		at := ev.GetEventTime().AsTime()
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
			first = at
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
			last, completed = at, true
		}
		a.add(ev)
	}
	if first.IsZero() || !completed {
		return RoundTiming{}, fmt.Errorf("round workflow has not completed")
	}
	return a.timing(first, last), nil
}

// InlineRoundTimingsOf computes the timing of every round that one run of
// a campaign workflow ran as a stage of its own (a campaign whose sites its
// process served), from the run's history events, by round; only rounds
// of the campaign's first attempt, whose manifests are at
// artifact.ManifestKey, are returned. A round ends when its CommitRound
// local activity ended (its own clock, pipeline.Spent) and begins where
// the run's previous round ended, or where the run began: its wall time
// holds what the campaign workflow did between two rounds (a privacy
// charge, the workflow task that ends a yield). Events, WorkflowTasks and
// LocalActivities count what the history records between those two
// points, so a workflow task that completed several rounds at once counts
// in the round it ends in.
func InlineRoundTimingsOf(events []*historypb.HistoryEvent, campaign string, dc converter.DataConverter) map[int]RoundTiming {
	out := map[int]RoundTiming{}
	a := newTimingAcc(dc)
	var start time.Time
	for _, ev := range events {
		if ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED {
			start = ev.GetEventTime().AsTime()
		}
		commit, ok := a.add(ev)
		if !ok {
			continue
		}
		end := commit.Started.Add(time.Duration(commit.Seconds * float64(time.Second)))
		if round, attempt, ok := artifact.ParseManifestKey(campaign, commit.Manifest.Key); ok && attempt == 1 && !start.IsZero() {
			t := a.timing(start, end)
			t.Round = round
			out[round] = t
		}
		a, start = newTimingAcc(dc), end
	}
	return out
}

// timingAcc gathers what the events of one round say: the site
// activities' execution intervals and store time, the server's local
// activities' store time, and the counts of events, workflow tasks,
// activity tasks and local activities.
type timingAcc struct {
	dc          converter.DataConverter
	types       map[int64]string          // scheduled event ID → activity type
	starts      map[int64]time.Time       // scheduled event ID → start
	spans       map[string][][2]time.Time // activity type → execution intervals
	all         [][2]time.Time
	busy        map[string]float64 // activity type → summed seconds
	inStore     map[string]float64
	serverStore float64
	unknown     int
	events      int
	wfts, acts  int
	locals      int
}

func newTimingAcc(dc converter.DataConverter) *timingAcc {
	return &timingAcc{dc: dc, types: map[int64]string{}, starts: map[int64]time.Time{}, spans: map[string][][2]time.Time{},
		busy: map[string]float64{}, inStore: map[string]float64{}}
}

func (a *timingAcc) spent(p *commonpb.Payloads) (pipeline.Spent, bool) {
	var sp pipeline.Spent
	if p == nil || a.dc.FromPayloads(p, &sp) != nil {
		return pipeline.Spent{}, false
	}
	return sp, true
}

// add counts ev; for the marker of a CommitRound local activity it also
// returns that activity's output, and true.
func (a *timingAcc) add(ev *historypb.HistoryEvent) (pipeline.CommitRoundOutput, bool) {
	a.events++
	at := ev.GetEventTime().AsTime()
	switch ev.GetEventType() {
	case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
		a.wfts++
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
		a.types[ev.GetEventId()] = ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
		a.acts++
		a.starts[ev.GetActivityTaskStartedEventAttributes().GetScheduledEventId()] = at
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED,
		enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT, enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCELED:
		id := closedScheduledID(ev)
		st, ok := a.starts[id]
		if !ok {
			break // closed before it started (a schedule-to-start timeout)
		}
		iv := [2]time.Time{st, at}
		a.spans[a.types[id]] = append(a.spans[a.types[id]], iv)
		a.all = append(a.all, iv)
		a.busy[a.types[id]] += at.Sub(st).Seconds()
		if ev.GetEventType() == enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED {
			sp, ok := a.spent(ev.GetActivityTaskCompletedEventAttributes().GetResult())
			if !ok {
				a.unknown++
			}
			a.inStore[a.types[id]] += sp.StoreSeconds
		}
	case enumspb.EVENT_TYPE_MARKER_RECORDED:
		// A local activity's marker: the SDK's "data" (its type) and
		// "result" payloads.
		m := ev.GetMarkerRecordedEventAttributes()
		if m.GetMarkerName() != "LocalActivity" || m.GetFailure() != nil {
			break
		}
		a.locals++
		sp, ok := a.spent(m.GetDetails()["result"])
		if !ok {
			a.unknown++
			break
		}
		typ := localActivityType(m.GetDetails()["data"], a.dc)
		if site := colocatedType(typ); site != "" && !sp.Started.IsZero() {
			// A colocated site activity: its own clock says when it ran.
			iv := [2]time.Time{sp.Started, sp.Started.Add(time.Duration(sp.Seconds * float64(time.Second)))}
			a.spans[site] = append(a.spans[site], iv)
			a.all = append(a.all, iv)
			a.busy[site] += sp.Seconds
			a.inStore[site] += sp.StoreSeconds
			break
		}
		a.serverStore += sp.StoreSeconds
		if typ == pipeline.ActivityCommitRound {
			var out pipeline.CommitRoundOutput
			if a.dc.FromPayloads(m.GetDetails()["result"], &out) == nil && out.Manifest.Key != "" {
				return out, true
			}
		}
	}
	return pipeline.CommitRoundOutput{}, false
}

// timing is the RoundTiming of what was added, for a round that ran from
// first to last.
func (a *timingAcc) timing(first, last time.Time) RoundTiming {
	t := RoundTiming{WallSeconds: last.Sub(first).Seconds(), ActivitySeconds: map[string]float64{},
		Events: a.events, WorkflowTasks: a.wfts, ActivityTasks: a.acts, LocalActivities: a.locals}
	for typ, ivs := range a.spans {
		t.ActivitySeconds[typ] = unionSeconds(ivs)
	}
	t.OrchestrationSeconds = max(t.WallSeconds-unionSeconds(a.all), 0)
	t.StoreShare = map[string]float64{}
	for typ, b := range a.busy {
		if b > 0 {
			t.StoreShare[typ] = min(a.inStore[typ]/b, 1)
		}
	}
	t.ServerStoreSeconds, t.StoreUnknown = min(a.serverStore, t.OrchestrationSeconds), a.unknown
	return t
}

// localActivityType is the activity type a local activity marker's "data"
// payload names, "" when it cannot be read.
func localActivityType(p *commonpb.Payloads, dc converter.DataConverter) string {
	var data struct{ ActivityType string }
	if p == nil || dc.FromPayloads(p, &data) != nil {
		return ""
	}
	return data.ActivityType
}

// colocatedType is the site activity type (pipeline.ActivityTrainLocal, …)
// of a local activity type that names a colocated site activity
// (pipeline.ColocatedActivity), "" otherwise.
func colocatedType(typ string) string {
	parts := strings.Split(typ, "/")
	if len(parts) != 3 || pipeline.ColocatedActivity(parts[1], parts[2]) != typ {
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
