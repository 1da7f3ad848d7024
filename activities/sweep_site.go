package activities

import (
	"context"

	"go.temporal.io/sdk/activity"

	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/store"
)

// RoundSite holds the activities of a site whose data may change during a
// campaign (a continual scenario, paper §3.5): every call reads the site's
// data as it is in the call's round, dataset.LoadSiteRound, so the files
// under dataset.ShiftDir(dir, r) replace the originals from round r on.
// Everything else is Site's behaviour.
type RoundSite struct {
	name    string
	dataDir string
	store   *store.Store
	opt     dataset.SiteOptions
}

// NewRoundSite returns the round-aware activities of site over dataDir.
func NewRoundSite(site, dataDir string, st *store.Store, opt dataset.SiteOptions) *RoundSite {
	return &RoundSite{name: site, dataDir: dataDir, store: st, opt: opt}
}

func (s *RoundSite) at(round int) *Site {
	return NewSite(s.name, dataset.RoundDir(s.dataDir, s.name, round), s.store, s.opt)
}

// Register registers the site activities under their pipeline names.
func (s *RoundSite) Register(r interface {
	RegisterActivityWithOptions(any, activity.RegisterOptions)
}) {
	r.RegisterActivityWithOptions(s.ComputeDescriptor, activity.RegisterOptions{Name: pipeline.ActivityComputeDescriptor})
	r.RegisterActivityWithOptions(s.TrainLocal, activity.RegisterOptions{Name: pipeline.ActivityTrainLocal})
	r.RegisterActivityWithOptions(s.Evaluate, activity.RegisterOptions{Name: pipeline.ActivityEvaluate})
}

// ComputeDescriptor is Site.ComputeDescriptor on the round's data.
func (s *RoundSite) ComputeDescriptor(ctx context.Context, in pipeline.ComputeDescriptorInput) (pipeline.ComputeDescriptorOutput, error) {
	return s.at(in.Round).ComputeDescriptor(ctx, in)
}

// TrainLocal is Site.TrainLocal on the round's data.
func (s *RoundSite) TrainLocal(ctx context.Context, in pipeline.TrainLocalInput) (pipeline.TrainLocalOutput, error) {
	return s.at(in.Round).TrainLocal(ctx, in)
}

// Evaluate is Site.Evaluate on the round's data.
func (s *RoundSite) Evaluate(ctx context.Context, in pipeline.EvaluateInput) (pipeline.EvaluateOutput, error) {
	return s.at(in.Round).Evaluate(ctx, in)
}
