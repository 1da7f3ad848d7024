package campaign

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

// Result is a campaign's outcome as `starter run --format json` prints it:
// THE CONTRACT scripts rely on (method, final_auc, final_acc, conv_round, auc_curve, acc_curve,
// clusters, trust, flagged), plus where the record of the campaign is.
//
// For a tabular campaign final_acc and acc_curve score the model each site
// holds after the round's aggregation (the manifests' mean accuracy). For a
// deep campaign they score each site's model right after its local update,
// before the aggregation (the manifests' mean update_accuracy): the
// quantity PyTorch federated loops, issue 13's anchor among them, report
// as "mean site top-1"; final_acc_aggregate and acc_curve_aggregate then
// carry the after-aggregation scores. final_auc and auc_curve always score
// the model held after the aggregation.
type Result struct {
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
	// FinalAccAggregate and AccCurveAggregate are, for a deep campaign, the
	// mean top-1 accuracy of the models the sites hold after each round's
	// aggregation (the manifests' mean accuracy); absent for tabular ones.
	FinalAccAggregate *float64  `json:"final_acc_aggregate,omitempty"`
	AccCurveAggregate []float64 `json:"acc_curve_aggregate,omitempty"`
	// FinalValAUC and FinalValAcc are the last round's mean validation
	// scores, ValAUCCurve and ValAccCurve their curves (validation_fraction:
	// the training rows each site held out; absent without it). A sweep
	// selects on these and reports final_auc.
	FinalValAUC *float64  `json:"final_val_auc,omitempty"`
	FinalValAcc *float64  `json:"final_val_acc,omitempty"`
	ValAUCCurve []float64 `json:"val_auc_curve,omitempty"`
	ValAccCurve []float64 `json:"val_acc_curve,omitempty"`
	// Privacy is what a dp record campaign spent: the largest ε of any
	// site, the δ, and every site's ε (absent without dp record).
	Privacy *PrivacyResult `json:"privacy,omitempty"`
	// StopReason says why a campaign stopped early (a stop, or a spent
	// privacy budget).
	StopReason string `json:"stop_reason,omitempty"`
}

// PrivacyResult is Result.Privacy: epsilon is the largest cumulative ε of
// any site, per_site every site's (pipeline.SitePrivacy), budget the
// campaign's dp_epsilon (0: none).
type PrivacyResult struct {
	Epsilon float64                `json:"epsilon"`
	Delta   float64                `json:"delta"`
	Budget  float64                `json:"budget,omitempty"`
	PerSite []pipeline.SitePrivacy `json:"per_site"`
}

// privacyResult is PrivacyResult of a round's privacy record (nil: none).
func privacyResult(p *pipeline.RoundPrivacy) *PrivacyResult {
	if p == nil {
		return nil
	}
	return &PrivacyResult{Epsilon: p.Epsilon(), Delta: p.Delta, Budget: p.Budget, PerSite: p.Sites}
}

func ResultFromOutput(spec pipeline.CampaignSpec, bucket string, out pipeline.CampaignWorkflowOutput, wall time.Duration) Result {
	r := Result{
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
	// A deep campaign's sites scored their update in every round: that is
	// its final_acc (see Result).
	if n := len(out.UpdateAccCurve); n > 0 && n == len(r.AccCurve) {
		r.AccCurveAggregate = r.AccCurve
		last := r.AccCurve[n-1]
		r.FinalAccAggregate = &last
		r.AccCurve = out.UpdateAccCurve
	}
	if n := len(r.AUCCurve); n > 0 {
		r.FinalAUC = r.AUCCurve[n-1]
		r.ConvRound = eval.ConvergenceRound(r.AUCCurve)
	}
	if n := len(r.AccCurve); n > 0 {
		r.FinalAcc = r.AccCurve[n-1]
	}
	if n := len(out.ValAUCCurve); n > 0 && n == len(out.ValAccCurve) {
		r.ValAUCCurve, r.ValAccCurve = out.ValAUCCurve, out.ValAccCurve
		va, vc := out.ValAUCCurve[n-1], out.ValAccCurve[n-1]
		r.FinalValAUC, r.FinalValAcc = &va, &vc
	}
	for _, c := range out.Clusters {
		r.Clusters[c.Site] = c.Cluster
		r.Trust[c.Site] = c.Trust
	}
	r.Flagged = append(r.Flagged, out.Flagged...)
	if out.LastManifest != nil {
		r.LastManifest = out.LastManifest.String()
	}
	r.Privacy = privacyResult(out.Privacy)
	r.StopReason = out.StopReason
	return r
}

// Start starts the campaign's first attempt, or attaches to the run
// already under the same ID, running or closed: a campaign is durable, and
// running the same command again re-attaches to it. It never starts a
// campaign afresh over a failed run, which would redo committed rounds
// (and meet their manifests); StartAttempt starts the next attempt instead.
func (s *Service) Start(ctx context.Context, spec pipeline.CampaignSpec) (client.WorkflowRun, error) {
	return startOrAttach(ctx, s.Client, "campaign", spec.Campaign, s.campaignQueue(), pipeline.CampaignWorkflowName, pipeline.CampaignWorkflowInput{Spec: spec, ColocatedQueue: s.ColocatedQueue},
		enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE)
}

// Attach returns the latest run of the campaign (or sweep) named id,
// running or closed, without starting anything; Await or AwaitSweep waits
// for it.
func (s *Service) Attach(ctx context.Context, id string) client.WorkflowRun {
	return s.Client.GetWorkflow(ctx, id, "")
}

// campaignQueue is the task queue a campaign this Service starts runs on:
// its colocated worker's when this process serves the sites
// (ColocatedQueue), where the campaign runs its rounds as stages of its
// own workflow (workflows.CampaignWorkflow), else the server's.
func (s *Service) campaignQueue() string {
	if s.ColocatedQueue != "" {
		return s.ColocatedQueue
	}
	return pipeline.ServerTaskQueue
}

// startOrAttach starts workflow under id on queue, or returns the run
// already under that ID: a running one, or a closed one that reuse does
// not allow to start again (ALLOW_DUPLICATE_FAILED_ONLY starts a failed,
// terminated or timed-out run afresh; REJECT_DUPLICATE never does).
func startOrAttach(ctx context.Context, c client.Client, kind, id, queue, workflow string, input any, reuse enumspb.WorkflowIdReusePolicy) (client.WorkflowRun, error) {
	opts := client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                queue,
		WorkflowIDReusePolicy:    reuse,
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

// Await waits for the campaign's result, printing a progress line per
// committed round to progress (nil: silent).
func (s *Service) Await(ctx context.Context, run client.WorkflowRun, spec pipeline.CampaignSpec, progress io.Writer) (pipeline.CampaignWorkflowOutput, error) {
	var out pipeline.CampaignWorkflowOutput
	done := make(chan struct{})
	if progress != nil {
		go func() {
			p := NewProgress(spec.Campaign, progress)
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				if st, err := s.QueryStatus(ctx, spec.Campaign); err == nil {
					p.Update(st)
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
		return out, campaignError(spec.Campaign, err)
	}
	return out, nil
}

// FailedError is a campaign whose workflow failed. Error is one sentence
// (pipeline.Failure: campaign, round, step, the root cause once, what to do);
// Unwrap gives Temporal's whole chain, so errors.As still finds its
// ApplicationErrors and their types.
type FailedError struct {
	Failure pipeline.Failure
	Err     error
}

// Error is the sentence the user reads.
func (e *FailedError) Error() string { return e.Failure.String() }

// Unwrap is Temporal's error.
func (e *FailedError) Unwrap() error { return e.Err }

// campaignError is err from waiting for campaign's result: a FailedError
// when the workflow itself ended in failure, else err with the campaign
// named (the wait, not the campaign, went wrong).
func campaignError(campaign string, err error) error {
	var outcome *temporal.WorkflowExecutionError
	if errors.As(err, &outcome) {
		return &FailedError{Failure: pipeline.DescribeFailure(campaign, err), Err: err}
	}
	return fmt.Errorf("campaign %s: %w", campaign, err)
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

// Execute records the spec in the store once (ClaimSpec: spec.json is
// never overwritten, and a different spec under the same name is refused
// with a *SpecConflictError before anything starts), starts the campaign,
// re-attaches to it, or starts its next attempt after a failure or a stop
// (StartAttempt), and, unless detach, waits for its result. Progress lines,
// and the line announcing a new attempt, go to progressOut (nil: silent).
// A detached run returns a Result naming only the campaign.
func (s *Service) Execute(ctx context.Context, spec pipeline.CampaignSpec, progressOut io.Writer, detach bool) (Result, error) {
	start := time.Now()
	spec, err := s.ClaimSpec(ctx, spec)
	if err != nil {
		return Result{}, err
	}
	a, err := s.StartAttempt(ctx, spec)
	if err != nil {
		return Result{}, err
	}
	announce(progressOut, spec.Campaign, a)
	if progressOut != nil {
		fmt.Fprintf(progressOut, "campaign %s: %s, %d sites, %d rounds\n", spec.Campaign, spec.Method, len(spec.Sites), spec.Rounds)
	}
	if detach {
		return Result{Campaign: spec.Campaign}, nil
	}
	out, err := s.Await(ctx, a.Run, spec, progressOut)
	if err != nil {
		return Result{}, err
	}
	return ResultFromOutput(spec, s.Store.Bucket(), out, time.Since(start)), nil
}
