package workers_test

import (
	"testing"

	"go.temporal.io/sdk/worker"

	"github.com/ptopofl/ptopofl/internal/workers"
	"github.com/ptopofl/ptopofl/pipeline"
)

// startColocatedWorkers runs the workers of a process that serves sites
// itself, as `starter run --local` does: a server worker, and one
// colocated worker on queue with every site's activities, each site under
// its own S3 account (grantSites). They stop when the test ends.
func startColocatedWorkers(t *testing.T, s *stack, sites []pipeline.Site, queue string) {
	t.Helper()
	grantSites(t, s, sites)
	var ws []worker.Worker
	t.Cleanup(func() {
		for _, w := range ws {
			w.Stop()
		}
	})
	server, err := workers.StartServer(s.client, s.store, workers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ws = append(ws, server)
	colocated := workers.NewColocated(s.client, s.store, queue, workers.Options{})
	for _, site := range sites {
		w, err := workers.StartSite(s.client, siteStore(t, s, site.Name), site.Name, s.dataDir, workers.Options{ColocateOn: colocated})
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	if err := colocated.Start(); err != nil {
		t.Fatal(err)
	}
	ws = append(ws, colocated)
}
