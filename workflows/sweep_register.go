package workflows

import (
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ptopofl/ptopofl/pipeline"
)

// RegisterSweep registers SweepWorkflow under its pipeline name. A server
// worker that runs sweeps calls it beside Register (the sweep's children are
// CampaignWorkflows, which Register provides).
func RegisterSweep(r worker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(SweepWorkflow, workflow.RegisterOptions{Name: pipeline.SweepWorkflowName})
}
