package campaign

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/store"
)

// StartSweep starts the sweep's workflow or attaches to the one already
// running or finished under the same ID (re-running a sweep re-attaches),
// after checking that the name is not bound to another sweep file
// (CheckSweepSpec: an edited file is refused, naming what changed).
func (s *Service) StartSweep(ctx context.Context, spec pipeline.SweepSpec) (client.WorkflowRun, error) {
	if err := s.CheckSweepSpec(ctx, spec); err != nil {
		return nil, err
	}
	return startOrAttach(ctx, s.Client, "sweep", spec.Sweep, pipeline.ServerTaskQueue, pipeline.SweepWorkflowName, pipeline.SweepWorkflowInput{Spec: spec, ColocatedQueue: s.ColocatedQueue},
		enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY)
}

// AwaitSweep starts or re-attaches to the sweep and waits for it,
// printing a progress line to progress (nil: silent) whenever a campaign
// ends.
func (s *Service) AwaitSweep(ctx context.Context, spec pipeline.SweepSpec, progress io.Writer) (pipeline.SweepWorkflowOutput, error) {
	run, err := s.StartSweep(ctx, spec)
	if err != nil {
		return pipeline.SweepWorkflowOutput{}, err
	}
	done := make(chan struct{})
	if progress != nil {
		go func() {
			start, first, last := time.Now(), -1, -1
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				var st pipeline.SweepStatus
				qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				v, err := s.Client.QueryWorkflow(qctx, spec.Sweep, "", pipeline.QueryStatus)
				cancel()
				if err == nil && v.Get(&st) == nil && st.CampaignsDone != last {
					if first < 0 {
						first = st.CampaignsDone
					}
					last = st.CampaignsDone
					el := time.Since(start)
					if spec.Search != nil {
						// An adaptive sweep's size is its budget's, not known ahead.
						fmt.Fprintf(progress, "sweep %s  %s  trials %d  campaign runs %d/%d  %s  failed %d  running %d  elapsed %s\n",
							spec.Sweep, spec.Search.Strategy, st.Trials, st.CampaignsDone, st.CampaignsTotal, st.State, st.Failed, len(st.Running), FmtDuration(el.Seconds()))
					} else {
						eta := "--"
						if n := st.CampaignsDone - first; n > 0 {
							eta = FmtDuration(el.Seconds() / float64(n) * float64(st.CampaignsTotal-st.CampaignsDone))
						}
						fmt.Fprintf(progress, "sweep %s  campaigns %d/%d  %s  failed %d  running %d  elapsed %s  eta %s\n",
							spec.Sweep, st.CampaignsDone, st.CampaignsTotal, st.State, st.Failed, len(st.Running), FmtDuration(el.Seconds()), eta)
					}
				}
				select {
				case <-done:
					return
				case <-t.C:
				}
			}
		}()
	}
	var out pipeline.SweepWorkflowOutput
	err = awaitResult(ctx, run, &out)
	close(done)
	if err != nil {
		return out, fmt.Errorf("sweep %s: %w", spec.Sweep, err)
	}
	return out, nil
}

func toStoreRef(r pipeline.ArtifactRef) artifact.Ref {
	return artifact.Ref{Bucket: r.Bucket, Key: r.Key, SHA256: r.SHA256, Size: r.Size}
}

// RunSweep starts or re-attaches to the sweep, waits for it (progress
// lines to progress, nil: silent) and reads its results table back from
// S3. WallSeconds counts from the call.
func (s *Service) RunSweep(ctx context.Context, spec pipeline.SweepSpec, progress io.Writer) (SweepOutput, error) {
	start := time.Now()
	res, err := s.AwaitSweep(ctx, spec, progress)
	if err != nil {
		return SweepOutput{}, err
	}
	b, err := s.Store.Get(ctx, toStoreRef(res.Results))
	if err != nil {
		return SweepOutput{}, fmt.Errorf("sweep %s: read results: %w", spec.Sweep, err)
	}
	rows, err := store.DecodeSweepResults(b)
	if err != nil {
		return SweepOutput{}, fmt.Errorf("sweep %s: %w", spec.Sweep, err)
	}
	out := SweepOutput{
		Sweep: res.Sweep, State: res.State, CampaignsDone: res.CampaignsDone, CampaignsTotal: res.CampaignsTotal,
		Failed: res.Failed, Results: res.Results.String(), Curves: res.Curves.String(), Rows: rows,
		WallSeconds: time.Since(start).Seconds(),
	}
	out.summarise(spec)
	if out.Privacy, err = s.sweepPrivacy(ctx, spec, rows); err != nil {
		return out, fmt.Errorf("sweep %s: %w", spec.Sweep, err)
	}
	return out, nil
}

// SeedGroup is one grid point of a sweep (federation, method, setting) and
// the final AUCs of its seeds.
type SeedGroup struct {
	Federation, Method, Setting string
	FinalAUC                    []float64 // NaN (a failed campaign) left out
}

// SeedGroups groups the rows by grid point, in the order the rows first
// name them.
func (o SweepOutput) SeedGroups() []SeedGroup {
	var groups []SeedGroup
	index := map[[3]string]int{}
	for _, r := range o.Rows {
		k := [3]string{r.Federation, r.Method, r.Setting}
		i, ok := index[k]
		if !ok {
			i = len(groups)
			index[k] = i
			groups = append(groups, SeedGroup{Federation: r.Federation, Method: r.Method, Setting: r.Setting})
		}
		if !math.IsNaN(r.FinalAUC) {
			groups[i].FinalAUC = append(groups[i].FinalAUC, r.FinalAUC)
		}
	}
	return groups
}

// ExtendSweep adds in's campaign-rounds and trials to the adaptive sweep
// named sweep. A running sweep gets the extend update (its validator
// refuses a grid, a limit the sweep does not have, or a sweep that is
// stopping). A finished sweep is continued: a new run under the same
// workflow ID starts from the trials its last run returned (paused trials
// may then be promoted) with the extended limits and the spec it recorded
// at sweeps/<sweep>/spec.json. It returns that spec, to await with
// RunSweep; errors on bad input wrap ErrInput.
func (s *Service) ExtendSweep(ctx context.Context, sweep string, in pipeline.ExtendInput) (pipeline.SweepSpec, error) {
	var spec pipeline.SweepSpec
	if _, err := s.Store.GetJSONKey(ctx, artifact.SweepSpecKey(sweep), &spec); err != nil {
		return spec, fmt.Errorf("sweep %s: read its spec: %w", sweep, err)
	}
	if spec.Search == nil {
		return spec, inputErrorf("sweep %s is a grid: there is no budget to extend", sweep)
	}
	if b := spec.PrivacyBudget; b != nil {
		return spec, inputErrorf("sweep %s: its trials' noise was sized so that its %d campaign-rounds keep every site within its privacy budget ε %v (δ %v); more rounds would pass it: start another sweep, with a budget of its own", sweep, b.CampaignRounds, b.Epsilon, b.Delta)
	}
	desc, err := s.Client.DescribeWorkflowExecution(ctx, sweep, "")
	if err != nil {
		return spec, fmt.Errorf("sweep %s: %w", sweep, err)
	}
	if desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		h, err := s.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
			WorkflowID: sweep, UpdateName: pipeline.UpdateExtend, Args: []any{in},
			WaitForStage: client.WorkflowUpdateStageCompleted,
		})
		if err != nil {
			return spec, fmt.Errorf("extend sweep %s: %w", sweep, err)
		}
		var st pipeline.SweepStatus
		if err := h.Get(ctx, &st); err != nil {
			return spec, inputErrorf("extend sweep %s rejected: %v", sweep, err)
		}
		return spec, nil
	}
	var last pipeline.SweepWorkflowOutput
	if err := s.Client.GetWorkflow(ctx, sweep, "").Get(ctx, &last); err != nil {
		return spec, fmt.Errorf("sweep %s: its last run did not finish (%v); run its file again to re-attach or restart it", sweep, err)
	}
	if err := pipeline.ValidateExtend(sweep, last.Search, in); err != nil {
		return spec, inputErrorf("%v", err)
	}
	st := *last.Search
	st.Budget += in.Budget
	st.TrialCap += in.Trials
	_, err = s.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: sweep, TaskQueue: pipeline.ServerTaskQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
	}, pipeline.SweepWorkflowName, pipeline.SweepWorkflowInput{
		Spec: spec, State: &pipeline.SweepState{Recorded: true, Search: &st}, ColocatedQueue: s.ColocatedQueue,
	})
	if err != nil {
		return spec, fmt.Errorf("extend sweep %s: start its next run: %w", sweep, err)
	}
	return spec, nil
}
