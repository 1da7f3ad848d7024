package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/ptopofl/ptopofl/pipeline"
)

// runStatus prints a campaign's state. A running campaign answers the
// status query; a closed one is described from its result, so status works
// even when no worker is polling.
func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var conn connFlags
	e, campaign, err := openCampaign(ctx, fs, &conn, args, stderr)
	if err != nil {
		return err
	}
	defer e.Close()
	st, err := campaignStatus(ctx, e.client, campaign)
	if err != nil {
		return err
	}
	if conn.format == "json" {
		return json.NewEncoder(stdout).Encode(st)
	}
	fmt.Fprintf(stdout, "campaign   %s\nstate      %s\nrounds     %d/%d\n", st.Campaign, st.State, st.RoundsDone, st.RoundsTotal)
	if st.CurrentRound > 0 {
		fmt.Fprintf(stdout, "running    round %d\n", st.CurrentRound)
	}
	if st.LastMetrics != nil {
		fmt.Fprintf(stdout, "last round %d: auc %.4f acc %.4f\n", st.LastMetrics.Round, st.LastMetrics.AUC, st.LastMetrics.Accuracy)
	}
	for _, d := range st.LastDropped {
		fmt.Fprintf(stdout, "dropped    %s in %s: %s %s\n", d.Site, d.Phase, d.Reason, d.Error)
	}
	for _, r := range []struct{ k, v string }{{"paused", st.PauseReason}, {"stop", st.StopReason}, {"failure", st.FailureReason}} {
		if r.v != "" {
			fmt.Fprintf(stdout, "%-10s %s\n", r.k, r.v)
		}
	}
	if st.LastManifest != nil {
		fmt.Fprintf(stdout, "manifest   %s\n", st.LastManifest.String())
	}
	return nil
}

// campaignStatus returns the status of a campaign, running or closed.
func campaignStatus(ctx context.Context, c client.Client, campaign string) (pipeline.CampaignStatus, error) {
	desc, err := c.DescribeWorkflowExecution(ctx, campaign, "")
	if err != nil {
		return pipeline.CampaignStatus{}, fmt.Errorf("campaign %s: %w", campaign, err)
	}
	info := desc.GetWorkflowExecutionInfo()
	if info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		st, err := queryStatus(ctx, c, campaign)
		if err != nil {
			return pipeline.CampaignStatus{Campaign: campaign, State: pipeline.StateRunning},
				fmt.Errorf("campaign %s is running but did not answer the status query (is a server worker polling %s?): %w", campaign, pipeline.ServerTaskQueue, err)
		}
		return st, nil
	}
	st := pipeline.CampaignStatus{Campaign: campaign}
	var out pipeline.CampaignWorkflowOutput
	err = c.GetWorkflow(ctx, campaign, "").Get(ctx, &out)
	if err != nil {
		st.State = pipeline.StateFailed
		st.FailureReason = err.Error()
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
