package campaign

import (
	"fmt"
	"io"

	"go.temporal.io/sdk/worker"

	"github.com/ptopofl/ptopofl/internal/workers"
	"github.com/ptopofl/ptopofl/pipeline"
)

// StartLocalWorkers starts, in this process, the server worker and one
// site worker per site of a campaign, each reading only its own files of
// the federation directory; a line saying so goes to progress (nil:
// silent). Call stop when done.
func (s *Service) StartLocalWorkers(fed *Federation, sites []pipeline.Site, progress io.Writer) (stop func(), err error) {
	var started []worker.Worker
	stop = func() {
		for i := len(started) - 1; i >= 0; i-- {
			started[i].Stop()
		}
	}
	w, err := workers.StartServer(s.Client, s.Store, workers.Options{})
	if err != nil {
		return nil, err
	}
	started = append(started, w)
	for _, site := range sites {
		w, err := workers.StartSite(s.Client, s.Store, site.Name, fed.Dir, workers.Options{})
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

// StartSweepWorkers starts in this process the server worker (campaigns,
// rounds, sweeps and their activities) and one site worker per distinct
// site of the sweep's federations, each reading only its own files, per
// round (activities.Site reads dataset.RoundDir), so continual scenarios work.
func (s *Service) StartSweepWorkers(plan SweepPlan, progress io.Writer) (stop func(), err error) {
	var started []worker.Worker
	stop = func() {
		for i := len(started) - 1; i >= 0; i-- {
			started[i].Stop()
		}
	}
	w := workers.NewServer(s.Client, s.Store, workers.Options{})
	if err := w.Start(); err != nil {
		return nil, fmt.Errorf("start server worker: %w", err)
	}
	started = append(started, w)
	seen := map[string]bool{}
	for _, f := range plan.Spec.Federations {
		for _, site := range f.Sites {
			if seen[site.Name] {
				continue
			}
			seen[site.Name] = true
			// One poller: a sweep can have a hundred sites in one process.
			sw, err := workers.NewSite(s.Client, s.Store, site.Name, plan.FedDirs[f.Name],
				workers.Options{Worker: worker.Options{MaxConcurrentActivityTaskPollers: 1}})
			if err != nil {
				stop()
				return nil, err
			}
			if err := sw.Start(); err != nil {
				stop()
				return nil, fmt.Errorf("start site worker %s: %w", site.Name, err)
			}
			started = append(started, sw)
		}
	}
	if progress != nil {
		fmt.Fprintf(progress, "workers: server + %d sites in process\n", len(seen))
	}
	return stop, nil
}
