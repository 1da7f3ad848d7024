package campaign

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/internal/trainerrun"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/privacy/ledger"
	"github.com/ptopofl/ptopofl/store"
)

// ErrInput marks errors the user caused with a campaign or sweep file or a
// value given for one; nothing was started when one is returned.
var ErrInput = errors.New("invalid input")

// inputErrorf is an error wrapping ErrInput.
func inputErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInput, fmt.Sprintf(format, args...))
}

// Service runs the user's operations against one Temporal namespace and
// one bucket.
type Service struct {
	Client client.Client
	Store  *store.Store
	// SiteStores, when set, gives the site workers started in this process
	// (StartLocalWorkers, StartSweepWorkers) each its own S3 identity,
	// which may touch only that site's artifacts; nil means they share
	// Store.
	SiteStores func(ctx context.Context, sites []string) (map[string]*store.Store, error)
	// SecretDir, when set, is where the site workers started in this
	// process keep their secrets (<site>.secret, created on first use),
	// which dp record campaigns need; "" starts them without one.
	SecretDir string
	// SiteBudget, when set, is the privacy budget of the site workers
	// started in this process (workers.Options.PrivacyBudget): each keeps
	// its ledger beside its secret in SecretDir and refuses a task beyond
	// it.
	SiteBudget *ledger.Budget
	// Trainers runs the site workers' own training programs by name
	// (model "external", `starter run --local --trainer NAME=COMMAND` or
	// `--trainer-serve NAME=COMMAND`), shared by every site worker started
	// in this process; its owner closes it. TrainerDir, when set, holds
	// their task directories (one directory a site).
	Trainers   *trainerrun.Host
	TrainerDir string
	// Converter reads payloads from histories (Timings); nil is the SDK's
	// default. A client sealing payloads (internal/payloadcodec) needs its
	// own converter here.
	Converter converter.DataConverter
	// ColocatedQueue starts campaigns and sweeps with
	// pipeline.CampaignWorkflowInput.ColocatedQueue: their rounds run on
	// this process's colocated worker, their site activities as local
	// activities there. StartLocalWorkers and StartSweepWorkers set it once
	// that worker has every site's activities; a deployment, whose sites
	// run workers of their own, leaves it empty.
	ColocatedQueue string
}

// New returns a Service over c and st; closing them stays the caller's.
func New(c client.Client, st *store.Store) *Service {
	return &Service{Client: c, Store: st}
}

// QueryStatus asks a running campaign for its status, bounded so that a
// campaign with no server worker polling does not hang the caller.
func (s *Service) QueryStatus(ctx context.Context, campaign string) (pipeline.CampaignStatus, error) {
	return s.queryStatus(ctx, campaign)
}

// queryStatus is QueryStatus of the campaign workflow with ID workflowID.
func (s *Service) queryStatus(ctx context.Context, workflowID string) (pipeline.CampaignStatus, error) {
	var st pipeline.CampaignStatus
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := s.Client.QueryWorkflow(qctx, workflowID, "", pipeline.QueryStatus)
	if err != nil {
		return st, err
	}
	return st, v.Get(&st)
}

// Status returns the status of a campaign, running or closed, whether
// `starter run` started it (its workflow is named after it) or a sweep
// (pipeline.SweepCampaignWorkflowID). A running campaign answers the
// status query; a closed one is described from its result, so Status
// works even when no worker is polling.
func (s *Service) Status(ctx context.Context, campaign string) (pipeline.CampaignStatus, error) {
	st, err := s.workflowStatus(ctx, campaign, campaign)
	if id, ok, serr := s.inSweep(ctx, campaign, err); serr != nil {
		return st, serr
	} else if ok {
		return s.workflowStatus(ctx, campaign, id)
	}
	return st, err
}

// inSweep returns, when err says Temporal has no workflow named campaign,
// the workflow ID of the sweep's child that ran it (sweepWorkflowID);
// false when err is another error or no sweep ran it. The error is err
// joined with the failure to look, if looking failed.
func (s *Service) inSweep(ctx context.Context, campaign string, err error) (string, bool, error) {
	var notFound *serviceerror.NotFound
	if !errors.As(err, &notFound) {
		return "", false, nil
	}
	id, ok, serr := s.sweepWorkflowID(ctx, campaign)
	if serr != nil {
		return "", false, fmt.Errorf("%w; looking for a sweep that ran it: %w", err, serr)
	}
	return id, ok, nil
}

// StatusOf is Status of campaign run by the workflow with ID workflowID,
// for a caller that knows the ID already (from List): the campaign's name
// for `starter run`, "<sweep>/<campaign>" for a sweep's campaign.
func (s *Service) StatusOf(ctx context.Context, campaign, workflowID string) (pipeline.CampaignStatus, error) {
	return s.workflowStatus(ctx, campaign, workflowID)
}

// workflowStatus is Status of campaign run by the workflow with ID
// workflowID: the campaign's name for `starter run`, another for a
// sweep's campaign (pipeline.SweepCampaignWorkflowID).
func (s *Service) workflowStatus(ctx context.Context, campaign, workflowID string) (pipeline.CampaignStatus, error) {
	desc, err := s.Client.DescribeWorkflowExecution(ctx, workflowID, "")
	if err != nil {
		return pipeline.CampaignStatus{}, fmt.Errorf("campaign %s: %w", campaign, err)
	}
	info := desc.GetWorkflowExecutionInfo()
	if info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		st, err := s.queryStatus(ctx, workflowID)
		if err != nil {
			return pipeline.CampaignStatus{Campaign: campaign, State: pipeline.StateRunning},
				fmt.Errorf("campaign %s is running but did not answer the status query (is a worker polling %s?): %w", campaign, queueOf(info), err)
		}
		if st.Round != nil {
			// A round running as a stage of the campaign workflow: the
			// status query answered its progress.
			st.Round.DeadlineInSeconds = deadlineIn(st.Round.Deadline, time.Now())
		} else {
			st.Round = s.roundProgress(ctx, desc.GetPendingChildren(), time.Now())
		}
		return st, nil
	}
	st := pipeline.CampaignStatus{Campaign: campaign}
	var out pipeline.CampaignWorkflowOutput
	err = s.Client.GetWorkflow(ctx, workflowID, "").Get(ctx, &out)
	if err != nil {
		st.State = pipeline.StateFailed
		st.FailureReason = pipeline.DescribeFailure(campaign, err).Reason()
		if s := info.GetStatus(); s != enumspb.WORKFLOW_EXECUTION_STATUS_FAILED {
			st.State = strings.ToLower(strings.TrimPrefix(s.String(), "WORKFLOW_EXECUTION_STATUS_"))
		}
		return st, nil
	}
	st.State, st.RoundsDone, st.RoundsTotal = out.State, out.RoundsDone, out.RoundsDone
	st.LastManifest, st.StopReason = out.LastManifest, out.StopReason
	if n := len(out.AUCCurve); n > 0 {
		st.LastMetrics = &pipeline.RoundMetrics{Round: n, AUC: out.AUCCurve[n-1], Accuracy: out.AccCurve[n-1]}
	}
	return st, nil
}

// queueOf is the task queue a workflow runs on: the server's for a
// campaign whose sites run workers of their own (and every campaign begun
// before rounds ran inline), the colocated worker's of the starter serving
// its sites otherwise.
func queueOf(info *workflowpb.WorkflowExecutionInfo) string {
	if q := info.GetTaskQueue(); q != "" {
		return q
	}
	return pipeline.ServerTaskQueue
}

// roundProgress asks the campaign's running child round, among its pending
// children, where it stands (pipeline.QueryRoundProgress), and fills in
// the time left until the round deadline as of now. Nil when no round is
// running or it does not answer (a round of a version without the query,
// or a moment with no server worker): the status is still the campaign's.
func (s *Service) roundProgress(ctx context.Context, children []*workflowpb.PendingChildExecutionInfo, now time.Time) *pipeline.RoundProgress {
	for _, ch := range children {
		if ch.GetWorkflowTypeName() != pipeline.RoundWorkflowName {
			continue
		}
		qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		v, err := s.Client.QueryWorkflow(qctx, ch.GetWorkflowId(), ch.GetRunId(), pipeline.QueryRoundProgress)
		cancel()
		var p pipeline.RoundProgress
		if err != nil || v.Get(&p) != nil {
			return nil
		}
		p.DeadlineInSeconds = deadlineIn(p.Deadline, now)
		return &p
	}
	return nil
}

// deadlineIn is the seconds from now until deadline, never negative; 0
// for no deadline.
func deadlineIn(deadline, now time.Time) float64 {
	if deadline.IsZero() {
		return 0
	}
	return max(deadline.Sub(now).Seconds(), 0)
}

// Terminal reports whether a campaign in state will not change any more.
func Terminal(state string) bool {
	switch state {
	case pipeline.StateDone, pipeline.StateStopped, pipeline.StateFailed, "terminated", "canceled", "timed_out":
		return true
	}
	return false
}

// ErrRejected marks a control update the campaign refused (pausing a
// campaign that is done, for example).
var ErrRejected = errors.New("rejected")

// Control sends one of the pipeline.UpdatePause, UpdateResume and
// UpdateStop updates with reason and returns the campaign's status after
// it. A refusal is returned as an error wrapping ErrRejected.
func (s *Service) Control(ctx context.Context, campaign, update, reason string) (pipeline.CampaignStatus, error) {
	var st pipeline.CampaignStatus
	send := func(id string) (client.WorkflowUpdateHandle, error) {
		return s.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
			WorkflowID:   id,
			UpdateName:   update,
			Args:         []any{pipeline.ControlInput{Reason: reason}},
			WaitForStage: client.WorkflowUpdateStageCompleted,
		})
	}
	h, err := send(campaign)
	if id, ok, serr := s.inSweep(ctx, campaign, err); serr != nil {
		err = serr
	} else if ok {
		h, err = send(id) // a campaign a sweep runs, under the sweep's child ID
	}
	if err != nil {
		return st, fmt.Errorf("%s %s: %w", update, campaign, err)
	}
	// A rejected update returns its error from Get, not from UpdateWorkflow.
	if err := h.Get(ctx, &st); err != nil {
		return st, &rejection{update: update, campaign: campaign, err: err}
	}
	return st, nil
}

// rejection is a refused update; its text is the one starter has always
// printed.
type rejection struct {
	update, campaign string
	err              error
}

func (r *rejection) Error() string {
	return fmt.Sprintf("%s %s rejected: %v", r.update, r.campaign, r.err)
}

func (r *rejection) Unwrap() []error { return []error{ErrRejected, r.err} }

// Reason is the campaign's own error text, without the update and campaign.
func (r *rejection) Reason() string { return r.err.Error() }

// RejectionReason is the campaign's own text of a refused update (err from
// Control wrapping ErrRejected), or "" for any other error.
func RejectionReason(err error) string {
	var r *rejection
	if errors.As(err, &r) {
		return r.Reason()
	}
	return ""
}

// Verify re-hashes every artifact the campaign's manifests list and checks
// the chain of manifest hashes (DESIGN §4); the last manifest, which no
// later one protects, is compared with the one Temporal recorded when
// Temporal still has the campaign's workflow, its own or, for a campaign a
// sweep ran, the sweep's child (otherwise the report's TipSkipped, and its
// Summary, say why it was not). parallel objects are fetched at once.
// The error is for S3 failing; everything wrong with the record is in the
// report's Problems.
func (s *Service) Verify(ctx context.Context, campaign string, parallel int) (VerifyReport, error) {
	rep, err := VerifyRecord(ctx, s.Store, campaign, parallel)
	if err != nil {
		return rep, err
	}
	st, err := s.Status(ctx, campaign) // a sweep's campaign too, under its child's ID
	CheckTipStatus(&rep, st, err)
	return rep, nil
}

// sweepWorkflowID returns the workflow ID under which a sweep ran campaign
// (pipeline.SweepCampaignWorkflowID), and false when no sweep recorded in
// the bucket has it. A sweep's campaigns are named "<sweep>-…", the whole
// sweep name first (pipeline.SweepSpec.Campaigns), so the sweeps that may
// hold campaign are those named like a part of its name that ends before
// a "-": each of those whose spec is stored (sweeps/<sweep>/spec.json) is
// expanded, as its workflow expanded it, and searched for campaign.
func (s *Service) sweepWorkflowID(ctx context.Context, campaign string) (string, bool, error) {
	for i := 1; i < len(campaign) && i <= pipeline.MaxSweepNameLen; i++ {
		sweep := campaign[:i]
		if campaign[i] != '-' || artifact.ValidateName(sweep) != nil {
			continue
		}
		var spec pipeline.SweepSpec
		_, err := s.Store.GetJSONKey(ctx, artifact.SweepSpecKey(sweep), &spec)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return "", false, fmt.Errorf("read sweep %s: %w", sweep, err)
		}
		if spec.Search != nil {
			// An adaptive sweep's campaigns are its trials', recorded
			// (spec.json) as each trial starts.
			var cs pipeline.CampaignSpec
			if _, err := s.Store.GetJSONKey(ctx, artifact.SpecKey(campaign), &cs); err == nil {
				return pipeline.SweepCampaignWorkflowID(sweep, campaign), true, nil
			}
			continue
		}
		campaigns, err := spec.Campaigns()
		if err != nil {
			return "", false, fmt.Errorf("sweep %s: %w", sweep, err)
		}
		for _, c := range campaigns {
			if c.Spec.Campaign == campaign {
				return c.WorkflowID, true, nil
			}
		}
	}
	return "", false, nil
}

// History reads the per-round rows of a campaign from its manifests in S3
// (the audit record), so it works whether or not Temporal still holds the
// campaign's history. A campaign without manifests is an error.
func (s *Service) History(ctx context.Context, campaign string) ([]HistoryRow, error) {
	rows, err := History(ctx, s.Store, campaign)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("campaign %s: no round manifests under s3://%s/%s", campaign, s.Store.Bucket(), artifact.CampaignPrefix(campaign))
	}
	return rows, nil
}

// Export reads a campaign's manifests and flattens them into one row per
// round and site (ExportRows); it returns the rows and the number of
// rounds read.
func (s *Service) Export(ctx context.Context, campaign string) ([]store.ExportRow, int, error) {
	objs, err := ReadManifests(ctx, s.Store, campaign)
	if err != nil {
		return nil, 0, err
	}
	if len(objs.Manifests) == 0 {
		return nil, 0, fmt.Errorf("campaign %s: no round manifests under s3://%s/%s", campaign, s.Store.Bucket(), artifact.CampaignPrefix(campaign))
	}
	rows, err := ExportRows(objs.Manifests)
	return rows, len(objs.Manifests), err
}
