package campaign

import (
	"context"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/ptopofl/ptopofl/pipeline"
)

// Listed is one campaign as List finds it in Temporal's visibility store.
type Listed struct {
	Campaign string    `json:"campaign"`
	Status   string    `json:"status"`
	Started  time.Time `json:"started"`
	Closed   time.Time `json:"closed,omitzero"`
	// Runs counts the campaign's runs (continue-as-new starts a new one);
	// MaxHistoryEvents and MaxHistoryBytes are the largest of their
	// histories, to compare with Temporal's limits (51,200 events, 50 MiB).
	Runs             int   `json:"runs"`
	MaxHistoryEvents int64 `json:"max_history_events"`
	MaxHistoryBytes  int64 `json:"max_history_bytes"`
}

// List lists campaigns from Temporal's visibility store, newest first, one
// row per campaign (continue-as-new runs of a campaign are one campaign).
func (s *Service) List(ctx context.Context) ([]Listed, error) {
	return s.listWorkflows(ctx, pipeline.CampaignWorkflowName, "campaigns")
}

// ListSweeps lists sweeps as List lists campaigns: one row per sweep
// (Listed.Campaign is the sweep's name), newest first.
func (s *Service) ListSweeps(ctx context.Context) ([]Listed, error) {
	return s.listWorkflows(ctx, pipeline.SweepWorkflowName, "sweeps")
}

// listWorkflows lists the workflows of type workflowType, one row per
// workflow ID; what names them in an error.
func (s *Service) listWorkflows(ctx context.Context, workflowType, what string) ([]Listed, error) {
	seen := map[string]int{} // workflow ID → index in rows
	var rows []Listed
	var token []byte
	for {
		resp, err := s.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query:         fmt.Sprintf("WorkflowType = '%s'", workflowType),
			NextPageToken: token,
		})
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", what, err)
		}
		for _, w := range resp.GetExecutions() {
			id := w.GetExecution().GetWorkflowId()
			i, ok := seen[id]
			if !ok {
				i = len(rows)
				seen[id] = i
				rows = append(rows, Listed{Campaign: id})
			}
			r := &rows[i]
			r.Runs++
			r.MaxHistoryEvents = max(r.MaxHistoryEvents, w.GetHistoryLength())
			r.MaxHistoryBytes = max(r.MaxHistoryBytes, w.GetHistorySizeBytes())
			if w.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW && r.Status != "" {
				continue
			}
			if r.Status == "" || r.Status == "continued_as_new" {
				r.Status = strings.ToLower(strings.TrimPrefix(w.GetStatus().String(), "WORKFLOW_EXECUTION_STATUS_"))
				r.Started = w.GetStartTime().AsTime()
				if w.GetCloseTime() != nil {
					r.Closed = w.GetCloseTime().AsTime()
				}
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	return rows, nil
}
