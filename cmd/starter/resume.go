package main

import (
	"context"
	"io"

	"github.com/ptopofl/ptopofl/pipeline"
)

// runResume resumes a paused campaign; it is rejected unless paused.
func runResume(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runControl(ctx, pipeline.UpdateResume, args, stdout, stderr)
}
