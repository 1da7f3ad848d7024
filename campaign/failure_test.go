package campaign

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/ptopofl/ptopofl/pipeline"
)

// TestCampaignErrorIsOneSentence: a failed workflow's error, as the client
// returns it, reads as one sentence naming the campaign once and saying
// what to do, while errors.As still finds the ApplicationError and its type
// (the exit status and the quorum report depend on them); an error of the
// wait itself keeps its text.
func TestCampaignErrorIsOneSentence(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(func(ctx workflow.Context) error {
		return temporal.NewNonRetryableApplicationError("invalid campaign spec: rounds = 0: must be >= 1", pipeline.ErrTypeInvalidSpec, nil)
	}, workflow.RegisterOptions{Name: "failing"})
	env.ExecuteWorkflow("failing")
	wfErr := env.GetWorkflowError()
	if wfErr == nil {
		t.Fatal("the workflow did not fail")
	}
	err := campaignError("hc", wfErr)
	const want = "campaign hc failed: invalid campaign spec: rounds = 0: must be >= 1; fix the campaign spec and start the campaign again"
	if err.Error() != want {
		t.Errorf("got  %s\nwant %s", err, want)
	}
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != pipeline.ErrTypeInvalidSpec || !app.NonRetryable() {
		t.Errorf("the ApplicationError is lost under %v", err)
	}
	var failed *FailedError
	if !errors.As(err, &failed) || failed.Failure.Campaign != "hc" {
		t.Errorf("not a FailedError: %T", err)
	}

	wait := campaignError("hc", context.DeadlineExceeded)
	if !errors.Is(wait, context.DeadlineExceeded) || !strings.HasPrefix(wait.Error(), "campaign hc: ") || errors.As(wait, &failed) {
		t.Errorf("wait error: %v", wait)
	}
}
