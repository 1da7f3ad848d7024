package main

import (
	"context"
	"io"

	"github.com/ptopofl/ptopofl/internal/stackconn"
	"github.com/ptopofl/ptopofl/internal/textout"
	"github.com/ptopofl/ptopofl/pipeline"
)

// runStatus prints a campaign's state. A running campaign answers the
// status query; a closed one is described from its result, so status works
// even when no worker is polling.
func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return stackconn.Query(ctx, "status", args, stdout, stderr, nil, func(e *stackconn.Env, name string) (pipeline.CampaignStatus, error) {
		return e.Svc.Status(ctx, name)
	}, textout.WriteStatus, nil)
}
