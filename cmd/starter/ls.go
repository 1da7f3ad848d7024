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
	seen := map[string]bool{}
	var rows []lsRow
	var token []byte
	for {
		resp, err := e.client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query:         fmt.Sprintf("WorkflowType = '%s'", pipeline.CampaignWorkflowName),
			NextPageToken: token,
		})
		if err != nil {
			return fmt.Errorf("list campaigns: %w", err)
		}
		for _, w := range resp.GetExecutions() {
			id := w.GetExecution().GetWorkflowId()
			if w.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW || seen[id] {
				continue
			}
			seen[id] = true
			r := lsRow{Campaign: id, Status: strings.ToLower(strings.TrimPrefix(w.GetStatus().String(), "WORKFLOW_EXECUTION_STATUS_")), Started: w.GetStartTime().AsTime()}
			if w.GetCloseTime() != nil {
				r.Closed = w.GetCloseTime().AsTime()
			}
			rows = append(rows, r)
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
	fmt.Fprintf(stdout, "%-40s %-11s %s\n", "campaign", "status", "started")
	for _, r := range rows {
		fmt.Fprintf(stdout, "%-40s %-11s %s\n", r.Campaign, r.Status, r.Started.Local().Format(time.DateTime))
	}
	return nil
}
