package workflows

import (
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ptopofl/ptopofl/pipeline"
)

// Register registers CampaignWorkflow and RoundWorkflow with a worker (or a
// replayer) under their pipeline names, so that histories keep matching
// even if the Go functions are ever renamed. The server worker, which polls
// pipeline.ServerTaskQueue, is the one that calls it.
func Register(r worker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(CampaignWorkflow, workflow.RegisterOptions{Name: pipeline.CampaignWorkflowName})
	r.RegisterWorkflowWithOptions(RoundWorkflow, workflow.RegisterOptions{Name: pipeline.RoundWorkflowName})
}
