package main

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
	"github.com/ptopofl/ptopofl/store"
)

// connFlags says where Temporal and S3 are: the local stack or a deployment.
type connFlags struct {
	local   bool
	dataDir string
	remote  connect.Flags
	format  string
	given   []string // the flags the user set (parseCommand)
}

// set reports whether the user set the flag name.
func (c *connFlags) set(name string) bool { return slices.Contains(c.given, name) }

func (c *connFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&c.local, "local", false, "use the local stack (embedded Temporal and S3 over --data-dir)")
	fs.StringVar(&c.dataDir, "data-dir", "./.run/local", "data directory of the local stack; re-using it resumes")
	c.remote.Register(fs, "")
	fs.StringVar(&c.format, "format", "text", "output format: text or json")
}

// bucket is the bucket the flags name.
func (c *connFlags) bucket() string { return c.remote.Bucket }

// check reports flag combinations that cannot work, before anything starts.
func (c *connFlags) check() error {
	if c.format != "text" && c.format != "json" {
		return inputErrorf("--format %q: want text or json", c.format)
	}
	if c.local {
		if c.dataDir == "" {
			return inputErrorf("--data-dir: required with --local")
		}
		return nil
	}
	if err := c.remote.Check(); err != nil {
		return inputErrorf("%v", err)
	}
	return nil
}

// env is a connection to Temporal and S3, the campaign service over it,
// and whatever was started to provide it.
type env struct {
	svc     *campaign.Service
	local   *devstack.Endpoints // nil when connected to a deployment
	dataDir string              // of the local stack
	closers []func()
}

func (e *env) Close() {
	for i := len(e.closers) - 1; i >= 0; i-- {
		e.closers[i]()
	}
}

// connect dials Temporal and S3 as the flags say. With --local it attaches
// to a stack already served by another starter over the same data
// directory, or starts one in this process.
func (c *connFlags) connect(ctx context.Context, stderr io.Writer) (*env, error) {
	if c.local {
		return c.connectLocal(ctx, stderr)
	}
	tc, err := c.remote.TemporalTLS()
	if err != nil {
		return nil, inputErrorf("%v", err)
	}
	keys, err := c.remote.PayloadKeys()
	if err != nil {
		return nil, inputErrorf("%v", err)
	}
	opts := connect.ClientOptions(c.remote.Temporal, c.remote.Namespace, tc)
	opts.Logger = connect.QuietLogger()
	connect.SealPayloads(&opts, keys)
	cl, err := connect.Dial(ctx, opts)
	if err != nil {
		return nil, err
	}
	st, err := c.remote.OpenStore(false)
	if err != nil {
		cl.Close()
		return nil, err
	}
	e := &env{svc: campaign.New(cl, st), closers: []func(){cl.Close}}
	e.svc.Converter = opts.DataConverter
	return e, nil
}

// connectLocal attaches to the stack another process (a starter or
// cmd/devstack) serves over the data directory, or starts one in this
// process.
func (c *connFlags) connectLocal(ctx context.Context, stderr io.Writer) (*env, error) {
	dir, err := filepath.Abs(c.dataDir)
	if err != nil {
		return nil, fmt.Errorf("--data-dir %s: %w", c.dataDir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--data-dir: %w", err)
	}
	start := time.Now()
	o, err := devstack.Open(ctx, dir, c.remote.Bucket)
	if err != nil {
		return nil, err
	}
	ep := o.Endpoints
	if o.Started && c.format != "json" {
		fmt.Fprintf(stderr, "local stack up in %.1fs: Temporal %s, S3 %s, data %s\n", time.Since(start).Seconds(), ep.Temporal, ep.S3URL, dir)
	}
	e := &env{local: &ep, dataDir: dir, closers: []func(){o.Stop}}
	// The stack's own payload key unless the user names another key file.
	keyFile := c.remote.PayloadKeyFile
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
	e.svc = campaign.New(cl, st)
	e.svc.Converter = opts.DataConverter
	// Site workers started here get their own S3 identities, as they
	// would at their premises.
	// The in-process site workers' secrets live beside the stack's data,
	// so a re-run (crash-resume included) finds the same ones.
	e.svc.SecretDir = filepath.Join(dir, "site-secrets")
	// Their own programs' task directories too: a re-run sweeps what a
	// killed run left (trainer.SweepOrphans).
	e.svc.TrainerDir = filepath.Join(dir, "trainer-tasks")
	e.svc.SiteStores = func(ctx context.Context, sites []string) (map[string]*store.Store, error) {
		return devstack.SiteStores(ctx, ep, o.AccessKey, o.SecretKey, sites)
	}
	return e, nil
}
