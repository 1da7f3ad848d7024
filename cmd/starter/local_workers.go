package main

import (
	"context"
	"errors"
	"io"

	"github.com/ptopofl/ptopofl/pipeline"
)

// startLocalWorkers starts, in this process, the server worker and one site
// worker per site of the federation, each site reading only its own files.
func startLocalWorkers(ctx context.Context, e *env, fed *federation, sites []pipeline.Site, progress io.Writer) (stop func(), err error) {
	return nil, errors.New("local workers: internal/workers is not available yet")
}
