package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"go.temporal.io/sdk/client"

	"github.com/ptopofl/ptopofl/pipeline"
)

// runControl sends one of the pause, resume and stop Updates and prints the
// acknowledgement (the campaign's status after it) or the rejection.
func runControl(ctx context.Context, update string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet(update, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var conn connFlags
	reason := fs.String("reason", "", "why, recorded in the campaign's status")
	e, campaign, err := openCampaign(ctx, fs, &conn, args, stderr)
	if err != nil {
		return err
	}
	defer e.Close()
	h, err := e.client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   campaign,
		UpdateName:   update,
		Args:         []any{pipeline.ControlInput{Reason: *reason}},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return fmt.Errorf("%s %s: %w", update, campaign, err)
	}
	var st pipeline.CampaignStatus
	// A rejected update returns its error from Get, not from UpdateWorkflow.
	if err := h.Get(ctx, &st); err != nil {
		if conn.format == "json" {
			json.NewEncoder(stdout).Encode(map[string]any{"campaign": campaign, "update": update, "accepted": false, "error": err.Error()})
		}
		return fmt.Errorf("%s %s rejected: %w", update, campaign, err)
	}
	if conn.format == "json" {
		return json.NewEncoder(stdout).Encode(map[string]any{"campaign": campaign, "update": update, "accepted": true, "status": st})
	}
	fmt.Fprintf(stdout, "%s %s: accepted; state %s, rounds %d/%d\n", update, campaign, st.State, st.RoundsDone, st.RoundsTotal)
	return nil
}
