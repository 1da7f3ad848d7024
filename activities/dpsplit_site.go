package activities

import (
	"context"
	"errors"

	"github.com/ptopofl/ptopofl/aggregation"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/secagg"
)

// splitGroupConfig is a group's configuration under dp_noise_split "sum".
func splitGroupConfig(c secagg.Config) secagg.Config {
	c.ModulusBits = 64
	return c
}

func (s *Site) splitInput(ctx context.Context, in pipeline.SecAggMaskInput, m *secagg.Member, doc pipeline.SecAggViewDoc, shared []string) ([]uint64, pipeline.Released, error) {
	return nil, pipeline.Released{}, errors.New("TODO split")
}

func (s *Server) splitPlan(ctx context.Context, in pipeline.SecAggPlanInput, rd secaggRound, plan aggregation.SecurePlan) (map[string]*pipeline.SecAggSplit, error) {
	return nil, nil
}
