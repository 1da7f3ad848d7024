// Package stackconn connects a command to Temporal and S3 as its flags
// say: the local stack (--local: attached to one another process serves
// over the data directory, or started in this process, with per-site S3
// identities for the in-process site workers) or a deployment (the
// connect.Flags of address, namespace, TLS and payload keys). Env is the
// campaign.Service over that connection and what must be closed after.
package stackconn

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/internal/connect"
	"github.com/ptopofl/ptopofl/internal/devstack"
	"github.com/ptopofl/ptopofl/internal/payloadcodec"
	"github.com/ptopofl/ptopofl/internal/textout"
	"github.com/ptopofl/ptopofl/privacy/ledger"
	"github.com/ptopofl/ptopofl/store"
)

// Flags says where Temporal and S3 are: the local stack or a deployment.
type Flags struct {
	Local   bool
	DataDir string
	Remote  connect.Flags
	Format  string
	Given   []string // the flags the user set (the command fills it after parsing)
	// SiteBudget is the in-process sites' privacy budget
	// (--site-privacy-budget, RegisterSiteBudget); only with Local.
	SiteBudget *ledger.Budget
}

// RegisterSiteBudget adds --site-privacy-budget EPS[:DELTA] to fs, for the
// commands that start the in-process sites of --local (run, sweep,
// experiment), into b.
func RegisterSiteBudget(fs *flag.FlagSet, b **ledger.Budget) {
	fs.Func("site-privacy-budget", "with --local: EPS[:DELTA], the in-process sites' lifetime limit on their privacy loss (δ default 1e-5), as worker --privacy-budget sets a site's: each site refuses a task whose releases would take its ledger (<data-dir>/site-secrets/<site>.ledger) beyond it, and every task of a campaign without dp record", func(v string) error {
		parsed, err := ledger.ParseBudget(v)
		if err != nil {
			return err
		}
		*b = &parsed
		return nil
	})
}

// SiteSecretDir is where the in-process sites of the local stack over
// dataDir keep their secrets and ledgers: <dataDir>/site-secrets.
func SiteSecretDir(dataDir string) string { return filepath.Join(dataDir, "site-secrets") }

// Set reports whether the user set the flag name.
func (c *Flags) Set(name string) bool { return slices.Contains(c.Given, name) }

// Register adds the connection flags to fs: --local and --data-dir, the
// deployment's (connect.Flags), and --format.
func (c *Flags) Register(fs *flag.FlagSet) {
	fs.BoolVar(&c.Local, "local", false, "use the local stack (embedded Temporal and S3 over --data-dir)")
	fs.StringVar(&c.DataDir, "data-dir", "./.run/local", "data directory of the local stack; re-using it resumes")
	c.Remote.Register(fs, "")
	fs.StringVar(&c.Format, "format", "text", "output format: text or json")
}

// Bucket is the bucket the flags name.
func (c *Flags) Bucket() string { return c.Remote.Bucket }

// Check reports flag combinations that cannot work, before anything starts.
func (c *Flags) Check() error {
	if c.Format != "text" && c.Format != "json" {
		return inputErrorf("--format %q: want text or json", c.Format)
	}
	if c.SiteBudget != nil && !c.Local {
		return inputErrorf("--site-privacy-budget: only for the in-process sites of --local; a site's own worker sets its budget (worker --role site --privacy-budget EPS[:DELTA])")
	}
	if c.Local {
		if c.DataDir == "" {
			return inputErrorf("--data-dir: required with --local")
		}
		return nil
	}
	if err := c.Remote.Check(); err != nil {
		return inputErrorf("%v", err)
	}
	return nil
}

// Env is a connection to Temporal and S3, the campaign service over it,
// and whatever was started to provide it.
type Env struct {
	Svc     *campaign.Service
	Local   *devstack.Endpoints // nil when connected to a deployment
	DataDir string              // of the local stack
	closers []func()
}

// Where is where the env's campaigns keep their artifacts, for the text
// output.
func (e *Env) Where() textout.Where {
	w := textout.Where{Bucket: e.Svc.Store.Bucket()}
	if e.Local != nil {
		w.DataDir = e.DataDir
	}
	return w
}

// Close stops what Connect started, last first.
func (e *Env) Close() {
	for i := len(e.closers) - 1; i >= 0; i-- {
		e.closers[i]()
	}
}

// Connect dials Temporal and S3 as the flags say. With --local it attaches
// to a stack already served by another starter over the same data
// directory, or starts one in this process.
func (c *Flags) Connect(ctx context.Context, stderr io.Writer) (*Env, error) {
	if c.Local {
		return c.connectLocal(ctx, stderr)
	}
	tc, err := c.Remote.TemporalTLS()
	if err != nil {
		return nil, inputErrorf("%v", err)
	}
	keys, err := c.Remote.PayloadKeys()
	if err != nil {
		return nil, inputErrorf("%v", err)
	}
	opts := connect.ClientOptions(c.Remote.Temporal, c.Remote.Namespace, tc)
	opts.Logger = connect.QuietLogger()
	connect.SealPayloads(&opts, keys)
	cl, err := connect.Dial(ctx, opts)
	if err != nil {
		return nil, err
	}
	st, err := c.Remote.OpenStore(false)
	if err != nil {
		cl.Close()
		return nil, err
	}
	e := &Env{Svc: campaign.New(cl, st), closers: []func(){cl.Close}}
	e.Svc.Converter = opts.DataConverter
	return e, nil
}

// connectLocal attaches to the stack another process (a starter or
// cmd/devstack) serves over the data directory, or starts one in this
// process.
func (c *Flags) connectLocal(ctx context.Context, stderr io.Writer) (*Env, error) {
	dir, err := filepath.Abs(c.DataDir)
	if err != nil {
		return nil, fmt.Errorf("--data-dir %s: %w", c.DataDir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--data-dir: %w", err)
	}
	start := time.Now()
	o, err := devstack.Open(ctx, dir, c.Remote.Bucket)
	if err != nil {
		return nil, err
	}
	ep := o.Endpoints
	if o.Started && c.Format != "json" {
		fmt.Fprintf(stderr, "local stack up in %.1fs: Temporal %s, S3 %s, data %s\n", time.Since(start).Seconds(), ep.Temporal, ep.S3URL, dir)
	}
	e := &Env{Local: &ep, DataDir: dir, closers: []func(){o.Stop}}
	// The stack's own payload key unless the user names another key file.
	keyFile := c.Remote.PayloadKeyFile
	if keyFile == "" {
		keyFile = ep.PayloadKeyFile
	}
	keys, err := payloadcodec.LoadKeys(keyFile)
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("local stack: %w", err)
	}
	opts := connect.ClientOptions(ep.Temporal, ep.Namespace, nil)
	opts.Logger = connect.QuietLogger()
	connect.SealPayloads(&opts, keys)
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cl, err := client.DialContext(dctx, opts)
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("local stack: dial Temporal %s: %w", ep.Temporal, err)
	}
	e.closers = append(e.closers, cl.Close)
	// The stack's root account reads the whole bucket: the process's
	// shared artifact cache may answer it anything (store.Config.ReadsAll).
	st, err := store.New(store.Config{Endpoint: ep.S3URL, Bucket: ep.Bucket, AccessKey: o.AccessKey, SecretKey: o.SecretKey, ReadsAll: true})
	if err == nil {
		err = st.EnsureBucket(ctx)
	}
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("local stack: S3 %s: %w", ep.S3URL, err)
	}
	e.Svc = campaign.New(cl, st)
	e.Svc.Converter = opts.DataConverter
	// Site workers started here get their own S3 identities, as they
	// would at their premises.
	// The in-process site workers' secrets live beside the stack's data,
	// so a re-run (crash-resume included) finds the same ones.
	e.Svc.SecretDir = SiteSecretDir(dir)
	e.Svc.SiteBudget = c.SiteBudget
	// Their own programs' task directories too: a re-run sweeps what a
	// killed run left (trainer.SweepOrphans).
	e.Svc.TrainerDir = filepath.Join(dir, "trainer-tasks")
	e.Svc.SiteStores = func(ctx context.Context, sites []string) (map[string]*store.Store, error) {
		return devstack.SiteStores(ctx, ep, o.AccessKey, o.SecretKey, sites)
	}
	return e, nil
}

// inputErrorf is an error of the user's flags (campaign.ErrInput: exit
// status 2).
func inputErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", campaign.ErrInput, fmt.Sprintf(format, args...))
}
