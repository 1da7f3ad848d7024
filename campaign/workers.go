package campaign

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"go.temporal.io/sdk/worker"

	"github.com/ptopofl/ptopofl/internal/workers"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/store"
)

// StartLocalWorkers starts, in this process, the server worker and one
// site worker per site of campaign, each reading only its own files of
// the federation directory, and the campaign's colocated worker
// (pipeline.ColocatedTaskQueue(campaign)) with every site's activities,
// where the campaigns this Service then starts run their rounds
// (ColocatedQueue); a line saying so goes to progress (nil: silent). Each
// site uses its own S3 identity when SiteStores is set. Call stop when
// done.
func (s *Service) StartLocalWorkers(fed *Federation, campaign string, sites []pipeline.Site, progress io.Writer) (stop func(), err error) {
	local := make([]localSite, len(sites))
	for i, site := range sites {
		local[i] = localSite{site.Name, fed.Dir}
	}
	stop, err = s.startLocal(pipeline.ColocatedTaskQueue(campaign), local, worker.Options{})
	if err == nil && progress != nil {
		fmt.Fprintf(progress, "workers: server + %d sites in process, data %s\n", len(sites), fed.Dir)
	}
	return stop, err
}

// StartSweepWorkers starts in this process the server worker (campaigns,
// rounds, sweeps and their activities) and one site worker per distinct
// site of the sweep's federations, each reading only its own files, per
// round (activities.Site reads dataset.RoundDir), so continual scenarios
// work, and the sweep's colocated worker (pipeline.ColocatedTaskQueue of
// the sweep's name) with every site's activities, where the rounds of the
// sweeps this Service then starts run (ColocatedQueue).
func (s *Service) StartSweepWorkers(plan SweepPlan, progress io.Writer) (stop func(), err error) {
	var local []localSite
	seen := map[string]bool{}
	for _, f := range plan.Spec.Federations {
		for _, site := range f.Sites {
			if !seen[site.Name] {
				seen[site.Name] = true
				local = append(local, localSite{site.Name, plan.FedDirs[f.Name]})
			}
		}
	}
	// One poller a site: a sweep can have a hundred sites in one process.
	stop, err = s.startLocal(pipeline.ColocatedTaskQueue(plan.Spec.Sweep), local, worker.Options{MaxConcurrentActivityTaskPollers: 1})
	if err == nil && progress != nil {
		fmt.Fprintf(progress, "workers: server + %d sites in process\n", len(local))
	}
	return stop, err
}

// localSite is a site this process serves: its name and the directory of
// its federation.
type localSite struct{ name, dir string }

// startLocal starts the server worker, each site's worker (with
// siteWorker's options, its own store and the Service's secrets) and the
// colocated worker on queue, on which every site worker registers its
// activities too and which starts once it has them all; then it sets
// ColocatedQueue. On an error it stops what it started.
func (s *Service) startLocal(queue string, sites []localSite, siteWorker worker.Options) (stop func(), err error) {
	var started []worker.Worker
	stop = func() {
		for i := len(started) - 1; i >= 0; i-- {
			started[i].Stop()
		}
	}
	names := make([]string, len(sites))
	for i, site := range sites {
		names[i] = site.name
	}
	stores, err := s.siteStores(names)
	if err != nil {
		return nil, err
	}
	w, err := workers.StartServer(s.Client, s.Store, workers.Options{})
	if err != nil {
		return nil, err
	}
	started = append(started, w)
	colocated := workers.NewColocated(s.Client, s.Store, queue, workers.Options{})
	for _, site := range sites {
		opts := workers.Options{Worker: siteWorker, SecretDir: s.SecretDir, PrivacyBudget: s.SiteBudget, ColocateOn: colocated, Trainers: s.Trainers}
		if s.TrainerDir != "" {
			opts.TrainerDir = filepath.Join(s.TrainerDir, site.name)
		}
		w, err := workers.StartSite(s.Client, stores[site.name], site.name, site.dir, opts)
		if err != nil {
			stop()
			return nil, err
		}
		started = append(started, w)
	}
	if err := colocated.Start(); err != nil {
		stop()
		return nil, fmt.Errorf("start colocated worker on %s: %w", queue, err)
	}
	started = append(started, colocated)
	s.ColocatedQueue = queue
	return stop, nil
}

// siteStores is the store of each site's worker: its own identity from
// SiteStores, or the service's store for every site when SiteStores is nil.
func (s *Service) siteStores(sites []string) (map[string]*store.Store, error) {
	out := make(map[string]*store.Store, len(sites))
	if s.SiteStores == nil {
		for _, site := range sites {
			out[site] = s.Store
		}
		return out, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, err := s.SiteStores(ctx, sites)
	if err != nil {
		return nil, fmt.Errorf("S3 identities of the sites: %w", err)
	}
	for _, site := range sites {
		if got[site] == nil {
			return nil, fmt.Errorf("S3 identities of the sites: none for site %s", site)
		}
		out[site] = got[site]
	}
	return out, nil
}
