package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/eval"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/pipeline"
)

// campaignResult is what `run --format json` prints: THE CONTRACT scripts
// rely on (method, final_auc, final_acc, conv_round, auc_curve, acc_curve,
// clusters, trust, flagged), plus where the record of the campaign is.
type campaignResult struct {
	Label        string             `json:"label,omitempty"` // table variants only
	Campaign     string             `json:"campaign"`
	Method       learn.Method       `json:"method"`
	Preset       string             `json:"preset"`
	State        string             `json:"state"`
	RoundsDone   int                `json:"rounds_done"`
	FinalAUC     float64            `json:"final_auc"`
	FinalAcc     float64            `json:"final_acc"`
	ConvRound    int                `json:"conv_round"`
	AUCCurve     []float64          `json:"auc_curve"`
	AccCurve     []float64          `json:"acc_curve"`
	Clusters     map[string]int     `json:"clusters"`
	Trust        map[string]float64 `json:"trust"`
	Flagged      []string           `json:"flagged"`
	Artifacts    string             `json:"artifacts"`               // s3://bucket/campaigns/<campaign>/
	LastManifest string             `json:"last_manifest,omitempty"` // s3://bucket/campaigns/<campaign>/round-NNNN/manifest.json
	WallSeconds  float64            `json:"wall_seconds"`
}

func resultFromOutput(spec pipeline.CampaignSpec, bucket string, out pipeline.CampaignWorkflowOutput, wall time.Duration) campaignResult {
	r := campaignResult{
		Campaign: out.Campaign, Method: out.Method, Preset: spec.Preset, State: out.State,
		RoundsDone: out.RoundsDone, AUCCurve: out.AUCCurve, AccCurve: out.AccCurve,
		Clusters: map[string]int{}, Trust: map[string]float64{}, Flagged: []string{},
		Artifacts:   fmt.Sprintf("s3://%s/%s", bucket, artifact.CampaignPrefix(out.Campaign)),
		WallSeconds: wall.Seconds(),
	}
	if r.AUCCurve == nil {
		r.AUCCurve = []float64{}
	}
	if r.AccCurve == nil {
		r.AccCurve = []float64{}
	}
	if n := len(r.AUCCurve); n > 0 {
		r.FinalAUC = r.AUCCurve[n-1]
		r.ConvRound = eval.ConvergenceRound(r.AUCCurve)
	}
	if n := len(r.AccCurve); n > 0 {
		r.FinalAcc = r.AccCurve[n-1]
	}
	for _, c := range out.Clusters {
		r.Clusters[c.Site] = c.Cluster
		r.Trust[c.Site] = c.Trust
	}
	r.Flagged = append(r.Flagged, out.Flagged...)
	if out.LastManifest != nil {
		r.LastManifest = out.LastManifest.String()
	}
	return r
}

// startCampaign starts the campaign's workflow, or finds the one already
// running or finished under the same ID: a campaign is durable, and
// running the same command again re-attaches to it. Only a failed,
// terminated or timed-out campaign is started afresh.
func startCampaign(ctx context.Context, c client.Client, spec pipeline.CampaignSpec) (client.WorkflowRun, error) {
	return startOrAttach(ctx, c, "campaign", spec.Campaign, pipeline.CampaignWorkflowName, pipeline.CampaignWorkflowInput{Spec: spec})
}

// startOrAttach starts workflow under id on the server queue, or returns
// the run already under that ID (running or finished); only a failed,
// terminated or timed-out run is started afresh.
func startOrAttach(ctx context.Context, c client.Client, kind, id, workflow string, input any) (client.WorkflowRun, error) {
	opts := client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                pipeline.ServerTaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}
	run, err := c.ExecuteWorkflow(ctx, opts, workflow, input)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return c.GetWorkflow(ctx, id, ""), nil
	}
	if err != nil {
		return nil, fmt.Errorf("start %s %s: %w", kind, id, err)
	}
	return run, nil
}

// waitCampaign waits for the campaign's result, printing a progress line
// per committed round to progress (nil: silent).
func waitCampaign(ctx context.Context, c client.Client, run client.WorkflowRun, spec pipeline.CampaignSpec, progress io.Writer) (pipeline.CampaignWorkflowOutput, error) {
	var out pipeline.CampaignWorkflowOutput
	done := make(chan struct{})
	if progress != nil {
		go func() {
			p := newProgress(spec.Campaign, progress)
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				if st, err := queryStatus(ctx, c, spec.Campaign); err == nil {
					p.update(st)
				}
				select {
				case <-done:
					return
				case <-t.C:
				}
			}
		}()
	}
	err := awaitResult(ctx, run, &out)
	close(done)
	if err != nil {
		return out, fmt.Errorf("campaign %s: %w", spec.Campaign, err)
	}
	return out, nil
}

// resultPoll bounds each wait for a workflow's result. Temporal v1.32's
// history service keeps one pending close notification per waiting client
// and drops a second that arrives before the first is read: on a loaded
// machine a workflow whose last updates come a few milliseconds apart can
// close without waking the client's long poll, which then sits out its
// full 20 s (seen in make bench-pipeline: a 2.9 s campaign reported after
// 20 s). A fresh poll reads the history first, so re-polling bounds the
// stall to this interval.
var resultPoll = 2 * time.Second

// awaitResult is run.Get, re-polled every resultPoll until the workflow has
// a result or ctx ends.
func awaitResult(ctx context.Context, run client.WorkflowRun, valuePtr any) error {
	for {
		pctx, cancel := context.WithTimeout(ctx, resultPoll)
		err := run.Get(pctx, valuePtr)
		cancel()
		if err == nil || ctx.Err() != nil || !pollInterrupted(err) {
			return err
		}
	}
}

// pollInterrupted reports whether err is the end of a cut-short poll
// rather than the workflow's outcome: a deadline or cancellation, as a Go
// context error or as the gRPC status the client or server turned it into
// (the server may answer a moment before the deadline, the transport may
// reset the stream).
func pollInterrupted(err error) bool {
	var outcome *temporal.WorkflowExecutionError
	if errors.As(err, &outcome) {
		return false // the workflow failed, timed out, was cancelled or terminated
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	var deadline *serviceerror.DeadlineExceeded
	var canceled *serviceerror.Canceled
	if errors.As(err, &deadline) || errors.As(err, &canceled) {
		return true
	}
	switch status.Code(err) {
	case codes.DeadlineExceeded, codes.Canceled:
		return true
	}
	return false
}

// queryStatus asks the campaign for its status, bounded so that a campaign
// with no server worker polling does not hang the CLI.
func queryStatus(ctx context.Context, c client.Client, campaign string) (pipeline.CampaignStatus, error) {
	var st pipeline.CampaignStatus
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := c.QueryWorkflow(qctx, campaign, "", pipeline.QueryStatus)
	if err != nil {
		return st, err
	}
	return st, v.Get(&st)
}

// progress prints one line per committed round: rounds done/total, the
// round's mean metrics, elapsed time and an ETA from the observed pace.
type progress struct {
	campaign string
	w        io.Writer
	start    time.Time
	first    int // rounds already done when we started watching
	last     int
	state    string
}

func newProgress(campaign string, w io.Writer) *progress {
	return &progress{campaign: campaign, w: w, start: time.Now(), first: -1, last: -1}
}

// update prints a line when a round was committed or the state changed; it
// returns the line's fields for JSON watchers.
func (p *progress) update(st pipeline.CampaignStatus) (watchLine, bool) {
	if p.first < 0 {
		p.first = st.RoundsDone
	}
	if st.RoundsDone == p.last && st.State == p.state {
		return watchLine{}, false
	}
	p.last, p.state = st.RoundsDone, st.State
	elapsed := time.Since(p.start)
	l := watchLine{Campaign: p.campaign, State: st.State, RoundsDone: st.RoundsDone, RoundsTotal: st.RoundsTotal, ElapsedSeconds: elapsed.Seconds(), ETASeconds: -1}
	if seen := st.RoundsDone - p.first; seen > 0 {
		l.ETASeconds = elapsed.Seconds() / float64(seen) * float64(st.RoundsTotal-st.RoundsDone)
	}
	if st.LastMetrics != nil {
		l.AUC, l.Accuracy = st.LastMetrics.AUC, st.LastMetrics.Accuracy
	}
	for _, d := range st.LastDropped {
		l.Dropped = append(l.Dropped, d.Site+":"+d.Reason)
	}
	if p.w != nil {
		fmt.Fprintln(p.w, l.text())
	}
	return l, true
}

// watchLine is one progress line.
type watchLine struct {
	Campaign       string   `json:"campaign"`
	State          string   `json:"state"`
	RoundsDone     int      `json:"rounds_done"`
	RoundsTotal    int      `json:"rounds_total"`
	AUC            float64  `json:"auc"`
	Accuracy       float64  `json:"accuracy"`
	Dropped        []string `json:"dropped,omitempty"`
	ElapsedSeconds float64  `json:"elapsed_seconds"`
	ETASeconds     float64  `json:"eta_seconds"` // -1 until a round was seen
}

func (l watchLine) text() string {
	eta := "--"
	if l.ETASeconds >= 0 {
		eta = fmtDuration(l.ETASeconds)
	}
	s := fmt.Sprintf("%s  round %d/%d  %-8s  auc %.4f  acc %.4f  elapsed %s  eta %s",
		l.Campaign, l.RoundsDone, l.RoundsTotal, l.State, l.AUC, l.Accuracy, fmtDuration(l.ElapsedSeconds), eta)
	if len(l.Dropped) > 0 {
		s += fmt.Sprintf("  dropped %v", l.Dropped)
	}
	return s
}

func fmtDuration(sec float64) string {
	return (time.Duration(sec*10) * time.Second / 10).String()
}
