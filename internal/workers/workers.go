// Package workers wires the Temporal workers of ptopofl: the server worker
// (workflows and server activities on pipeline.ServerTaskQueue) and one
// site worker per site (site activities on pipeline.SiteTaskQueue(site)).
// cmd/worker runs one of them per process; `starter run --local` runs the
// server worker and every site's worker in process. Wiring only.
package workers

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/ptopofl/ptopofl/activities"
	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/internal/trainerrun"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/privacy/ledger"
	"github.com/ptopofl/ptopofl/siteledger"
	"github.com/ptopofl/ptopofl/store"
	"github.com/ptopofl/ptopofl/workflows"
)

// Options tunes a worker. The zero value uses the SDK's defaults.
type Options struct {
	// Worker is passed to worker.New as is.
	Worker worker.Options
	// Site configures how a site worker reads its data (label column,
	// expected feature count); ignored by the server worker.
	Site dataset.SiteOptions
	// Faults injects failures and delays into a site worker's activities,
	// for fault tests only; the zero value injects nothing. Ignored by the
	// server worker.
	Faults Faults
	// SecretDir is where a site worker keeps its secret, <site>.secret
	// (created on first start with mode 0600 and reused after), which
	// keys its noise and secret subsamples under dp record and its keys
	// under secure aggregation, and beside it its privacy ledger,
	// <site>.ledger (siteledger.Open: every private release charged
	// before it leaves; a ledger that records releases refuses a missing
	// or other secret), and its keep, <site>.keep (KeepDir). "" starts
	// the site without them: it refuses dp record and secure-aggregation
	// campaigns. Ignored by the server worker.
	SecretDir string
	// PrivacyBudget is the site operator's lifetime limit on the site's
	// privacy loss (`worker --privacy-budget`): a task whose releases
	// would take its ledger beyond it is refused, as is any task of a
	// campaign without dp record. nil: none (the ledger is still kept).
	// Needs SecretDir. Ignored by the server worker.
	PrivacyBudget *ledger.Budget
	// NewSecret starts a site whose ledger records releases made with
	// another secret than the one in SecretDir, or with none there
	// (`worker --new-secret`; see siteledger.Options).
	NewSecret bool
	// ColocateOn, when set, is the colocated worker (NewColocated, not
	// yet started) of the same process: NewSite registers the site's
	// activities on it too, under pipeline.ColocatedActivity names, so
	// that the rounds of the campaigns this process starts with its queue
	// run them there as local activities
	// (pipeline.CampaignWorkflowInput.ColocatedQueue). The same
	// activities, data and store identity serve both. Refused with Faults,
	// which wrap the site's own worker. Ignored by the server worker.
	ColocateOn worker.ActivityRegistry
	// Trainers runs the site's own training programs by name (model
	// "external": `worker --trainer NAME=COMMAND`, `--trainer-serve
	// NAME=COMMAND`), one Host shared by every site of the process (its
	// slots bound their tasks together); nil refuses such campaigns. Their
	// task directories go under TrainerDir (default
	// <tmp>/ptopofl-trainer/<site>), their output to TrainerLog (default
	// standard error). The Host's owner closes it after the workers stop.
	// Ignored by the server worker.
	Trainers   *trainerrun.Host
	TrainerDir string
	TrainerLog io.Writer
}

// SecretFile is the file of site's secret in dir.
func SecretFile(dir, site string) string { return siteledger.SecretFile(dir, site) }

// LedgerFile is the file of site's privacy ledger in dir.
func LedgerFile(dir, site string) string { return siteledger.LedgerFile(dir, site) }

// KeepDir is the directory in dir where site keeps what secure
// aggregation must not send (its trained models, control-variate updates
// and method state between activities, and its records of what it masked
// and revealed): <dir>/<site>.keep, beside its secret.
func KeepDir(dir, site string) string { return filepath.Join(dir, site+".keep") }

// NewServer returns, not started, the server worker: CampaignWorkflow,
// RoundWorkflow and SweepWorkflow under their pipeline names, and the
// server activities (including the sweep's results tables), on
// pipeline.ServerTaskQueue.
func NewServer(c client.Client, st *store.Store, opts Options) worker.Worker {
	return newServerOn(c, st, pipeline.ServerTaskQueue, opts)
}

// NewColocated returns, not started, the colocated worker of a process
// that serves the sites of a campaign or sweep itself: the server worker's
// workflows and activities on queue (pipeline.ColocatedTaskQueue), to which
// each NewSite given it as Options.ColocateOn adds its site's activities
// under pipeline.ColocatedActivity names. The rounds of a campaign started
// with that ColocatedQueue run here, their site activities as local
// activities.
func NewColocated(c client.Client, st *store.Store, queue string, opts Options) worker.Worker {
	return newServerOn(c, st, queue, opts)
}

func newServerOn(c client.Client, st *store.Store, queue string, opts Options) worker.Worker {
	nameBinary()
	w := worker.New(c, queue, opts.Worker)
	workflows.Register(w) // every workflow, under its pipeline name
	workflows.RegisterSweep(w)
	activities.NewServer(st).WithCodeVersion(CodeVersion()).Register(w)
	return w
}

// StartServer starts the server worker; Stop it when done.
func StartServer(c client.Client, st *store.Store, opts Options) (worker.Worker, error) {
	w := NewServer(c, st, opts)
	if err := w.Start(); err != nil {
		return nil, fmt.Errorf("start server worker on %s: %w", pipeline.ServerTaskQueue, err)
	}
	return w, nil
}

// NewSite returns, not started, the worker of site: the site activities
// reading dataDir, on pipeline.SiteTaskQueue(site).
func NewSite(c client.Client, st *store.Store, site, dataDir string, opts Options) (worker.Worker, error) {
	if err := (pipeline.Site{Name: site}).Validate(); err != nil {
		return nil, fmt.Errorf("site worker: %w", err)
	}
	if dataDir == "" {
		return nil, fmt.Errorf("site worker %s: no data directory", site)
	}
	if err := opts.Faults.Validate(); err != nil {
		return nil, fmt.Errorf("site worker %s: %w", site, err)
	}
	nameBinary()
	wo := opts.Worker
	// A site runs activities only: without this, its worker also polls its
	// queue for workflow tasks, which a deployment's authorizer rightly
	// refuses a site's certificate ("Request unauthorized" in its log).
	wo.DisableWorkflowWorker = true
	if opts.Faults.Enabled() {
		// A new slice: the caller's Options may be shared by other sites.
		wo.Interceptors = append(slices.Clone(wo.Interceptors), newFaultInterceptor(site, opts.Faults))
	}
	if opts.ColocateOn != nil && opts.Faults.Enabled() {
		return nil, fmt.Errorf("site worker %s: fault injection wraps the site's own worker, not a colocated server worker", site)
	}
	a, err := siteActivities(st, site, dataDir, opts)
	if err != nil {
		return nil, err
	}
	w := worker.New(c, pipeline.SiteTaskQueue(site), wo)
	a.Register(w)
	if opts.ColocateOn != nil {
		a.RegisterColocated(opts.ColocateOn)
	}
	return w, nil
}

// siteActivities is site's activities over dataDir and st, with the site's
// secret when opts names a SecretDir.
func siteActivities(st *store.Store, site, dataDir string, opts Options) (*activities.Site, error) {
	a := activities.NewSite(site, dataDir, st, opts.Site)
	if opts.SecretDir != "" {
		sl, err := siteledger.Open(opts.SecretDir, site, siteledger.Options{Budget: opts.PrivacyBudget, NewSecret: opts.NewSecret})
		if err != nil {
			return nil, fmt.Errorf("site worker %s: %w", site, err)
		}
		a.WithSecret(sl.Secret).WithLedger(sl.Ledger).WithKeep(KeepDir(opts.SecretDir, site))
	} else if opts.PrivacyBudget != nil {
		return nil, fmt.Errorf("site worker %s: a privacy budget needs a secret directory (--secret-dir), where the site's ledger is kept", site)
	}
	if opts.Faults.Hold != "" {
		a.WithHold(newFaultInterceptor(site, opts.Faults).holdRelease)
	}
	if opts.Trainers != nil {
		dir := opts.TrainerDir
		if dir == "" {
			dir = filepath.Join(os.TempDir(), "ptopofl-trainer", site)
		}
		log := opts.TrainerLog
		if log == nil {
			log = os.Stderr
		}
		if _, err := a.WithTrainers(opts.Trainers, dir, log); err != nil {
			return nil, fmt.Errorf("site worker %s: %w", site, err)
		}
	}
	return a, nil
}

// StartSite starts the worker of site; Stop it when done.
func StartSite(c client.Client, st *store.Store, site, dataDir string, opts Options) (worker.Worker, error) {
	w, err := NewSite(c, st, site, dataDir, opts)
	if err != nil {
		return nil, err
	}
	if err := w.Start(); err != nil {
		return nil, fmt.Errorf("start site worker on %s: %w", pipeline.SiteTaskQueue(site), err)
	}
	return w, nil
}
