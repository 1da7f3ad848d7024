package main

import (
	"context"
	"fmt"
	"io"

	"go.temporal.io/sdk/worker"

	"github.com/ptopofl/ptopofl/internal/workers"
	"github.com/ptopofl/ptopofl/pipeline"
)

// startLocalWorkers starts, in this process, the server worker and one site
// worker per site of the campaign, each reading only its own files of the
// federation directory.
func startLocalWorkers(ctx context.Context, e *env, fed *federation, sites []pipeline.Site, progress io.Writer) (stop func(), err error) {
	var started []worker.Worker
	stop = func() {
		for i := len(started) - 1; i >= 0; i-- {
			started[i].Stop()
		}
	}
	w, err := workers.StartServer(e.client, e.store, workers.Options{})
	if err != nil {
		return nil, err
	}
	started = append(started, w)
	for _, s := range sites {
		w, err := workers.StartSite(e.client, e.store, s.Name, fed.Dir, workers.Options{})
		if err != nil {
			stop()
			return nil, err
		}
		started = append(started, w)
	}
	if progress != nil {
		fmt.Fprintf(progress, "workers: server + %d sites in process, data %s\n", len(sites), fed.Dir)
	}
	return stop, nil
}
