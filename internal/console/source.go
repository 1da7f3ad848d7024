package console

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/report"
	"github.com/ptopofl/ptopofl/store"
)

// source is what the console reads: Temporal's list and state of the
// workflows, and the objects of the bucket. serviceSource reads a stack
// through campaign.Service; the tests give a fake.
type source interface {
	ListCampaigns(ctx context.Context) ([]campaign.Listed, error)
	ListSweeps(ctx context.Context) ([]campaign.Listed, error)
	// CampaignStatus is the state of the campaign run by workflowID.
	CampaignStatus(ctx context.Context, name, workflowID string) (pipeline.CampaignStatus, error)
	// SweepStatus is the state of a sweep: its status query while it
	// runs, its result once closed.
	SweepStatus(ctx context.Context, sweep string) (pipeline.SweepStatus, error)
	// Manifests reads a campaign's manifests (campaign.ReadManifests).
	Manifests(ctx context.Context, name string) (campaign.Objects, error)
	// Get returns the bytes at key; store.ErrNotFound when there are none.
	Get(ctx context.Context, key string) ([]byte, error)
	Verify(ctx context.Context, name string) (campaign.VerifyReport, error)
	SweepReport(ctx context.Context, sweep string) (report.SearchInput, error)
	Bucket() string
}

// serviceSource reads through a campaign.Service, with a cache of the
// manifests read and of the result of the sweeps that have closed
// (neither changes once written).
type serviceSource struct {
	svc       *campaign.Service
	manifests *campaign.ManifestCache

	mu     sync.Mutex
	sweeps map[string]pipeline.SweepStatus // closed run ID → its result
}

func newServiceSource(svc *campaign.Service) *serviceSource {
	return &serviceSource{svc: svc, manifests: campaign.NewManifestCache(), sweeps: map[string]pipeline.SweepStatus{}}
}

func (s *serviceSource) ListCampaigns(ctx context.Context) ([]campaign.Listed, error) {
	return s.svc.List(ctx)
}

func (s *serviceSource) ListSweeps(ctx context.Context) ([]campaign.Listed, error) {
	return s.svc.ListSweeps(ctx)
}

// statusTimeout bounds a running workflow's status query: with no server
// worker polling, the query would otherwise wait out the SDK's timeout,
// and a page would wait with it.
const statusTimeout = 3 * time.Second

func (s *serviceSource) CampaignStatus(ctx context.Context, name, workflowID string) (pipeline.CampaignStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	return s.svc.StatusOf(ctx, name, workflowID)
}

func (s *serviceSource) SweepStatus(ctx context.Context, sweep string) (pipeline.SweepStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	desc, err := s.svc.Client.DescribeWorkflowExecution(ctx, sweep, "")
	if err != nil {
		return pipeline.SweepStatus{}, fmt.Errorf("sweep %s: %w", sweep, err)
	}
	info := desc.GetWorkflowExecutionInfo()
	if info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		var st pipeline.SweepStatus
		v, err := s.svc.Client.QueryWorkflow(ctx, sweep, "", pipeline.QueryStatus)
		if err == nil {
			err = v.Get(&st)
		}
		if err != nil {
			return pipeline.SweepStatus{Sweep: sweep, State: pipeline.SweepRunning},
				fmt.Errorf("sweep %s is running but did not answer the status query (is a server worker polling %s?): %w", sweep, pipeline.ServerTaskQueue, err)
		}
		return st, nil
	}
	key := info.GetExecution().GetRunId()
	s.mu.Lock()
	st, ok := s.sweeps[key]
	s.mu.Unlock()
	if ok {
		return st, nil
	}
	st = pipeline.SweepStatus{Sweep: sweep}
	var out pipeline.SweepWorkflowOutput
	if err := s.svc.Client.GetWorkflow(ctx, sweep, "").Get(ctx, &out); err != nil {
		if ctx.Err() != nil {
			return st, err
		}
		st.State = strings.ToLower(strings.TrimPrefix(info.GetStatus().String(), "WORKFLOW_EXECUTION_STATUS_"))
		st.StopReason = pipeline.DescribeFailure(sweep, err).Reason()
	} else {
		st.State, st.CampaignsDone, st.CampaignsTotal, st.Failed, st.StopReason = out.State, out.CampaignsDone, out.CampaignsTotal, out.Failed, out.StopReason
		if out.Search != nil {
			st.Trials = len(out.Search.Trials)
		}
	}
	s.mu.Lock()
	s.sweeps[key] = st
	s.mu.Unlock()
	return st, nil
}

func (s *serviceSource) Manifests(ctx context.Context, name string) (campaign.Objects, error) {
	return campaign.ReadManifestsCached(ctx, s.svc.Store, name, s.manifests)
}

func (s *serviceSource) Get(ctx context.Context, key string) ([]byte, error) {
	_, b, err := s.svc.Store.GetKey(ctx, key)
	return b, err
}

// verifyParallel is how many objects a verify the console runs fetches
// at once (starter verify's default).
const verifyParallel = 4

func (s *serviceSource) Verify(ctx context.Context, name string) (campaign.VerifyReport, error) {
	return s.svc.Verify(ctx, name, verifyParallel)
}

func (s *serviceSource) SweepReport(ctx context.Context, sweep string) (report.SearchInput, error) {
	return s.svc.SweepReport(ctx, sweep, "")
}

func (s *serviceSource) Bucket() string { return s.svc.Store.Bucket() }

// cachedStatus is src.CampaignStatus, remembered for a workflow that has
// closed (l.Closed set): its state no longer changes.
func (s *Server) cachedStatus(ctx context.Context, name string, l campaign.Listed) (pipeline.CampaignStatus, error) {
	if l.Closed.IsZero() {
		return s.src.CampaignStatus(ctx, name, l.Campaign)
	}
	key := l.Campaign + " " + l.Closed.String()
	s.mu.Lock()
	st, ok := s.closed[key]
	s.mu.Unlock()
	if ok {
		return st, nil
	}
	st, err := s.src.CampaignStatus(ctx, name, l.Campaign)
	if err == nil {
		s.mu.Lock()
		s.closed[key] = st
		s.mu.Unlock()
	}
	return st, err
}

// isNotFound reports whether err says S3 has no object at a key.
func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }
