package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/ptopofl/ptopofl/pipeline"
)

// lsRow is one campaign of `ls`.
type lsRow struct {
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

// runLs lists campaigns from Temporal's visibility store, newest first, one
// row per campaign (continue-as-new runs of a campaign are one campaign).
func runLs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ls", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var conn connFlags
	conn.register(fs)
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return inputErrorf("unexpected argument %q", rest[0])
	}
	if err := conn.check(); err != nil {
		return err
	}
	e, err := conn.connect(ctx, stderr)
	if err != nil {
		return err
	}
	defer e.Close()
	seen := map[string]int{} // campaign → index in rows
	var rows []lsRow
	var token []byte
	for {
		resp, err := e.svc.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query:         fmt.Sprintf("WorkflowType = '%s'", pipeline.CampaignWorkflowName),
			NextPageToken: token,
		})
		if err != nil {
			return fmt.Errorf("list campaigns: %w", err)
		}
		for _, w := range resp.GetExecutions() {
			id := w.GetExecution().GetWorkflowId()
			i, ok := seen[id]
			if !ok {
				i = len(rows)
				seen[id] = i
				rows = append(rows, lsRow{Campaign: id})
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
	if conn.format == "json" {
		if rows == nil {
			rows = []lsRow{}
		}
		return json.NewEncoder(stdout).Encode(rows)
	}
	fmt.Fprintf(stdout, "%-40s %-11s %-19s %5s %s\n", "campaign", "status", "started", "runs", "largest history")
	for _, r := range rows {
		fmt.Fprintf(stdout, "%-40s %-11s %-19s %5d %d events, %d KiB\n", r.Campaign, r.Status, r.Started.Local().Format(time.DateTime), r.Runs, r.MaxHistoryEvents, r.MaxHistoryBytes/1024)
	}
	return nil
}
