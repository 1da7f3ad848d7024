package main

import (
	"context"
	"io"

	"github.com/ptopofl/ptopofl/pipeline"
)

// runStop ends a campaign after its running round (at once when paused);
// every committed round stays.
func runStop(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runControl(ctx, pipeline.UpdateStop, args, stdout, stderr)
}
