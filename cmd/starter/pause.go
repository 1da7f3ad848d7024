package main

import (
	"context"
	"io"

	"github.com/ptopofl/ptopofl/pipeline"
)

// runPause pauses a campaign: the running round finishes and commits, and
// no new round starts until resume.
func runPause(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runControl(ctx, pipeline.UpdatePause, args, stdout, stderr)
}
