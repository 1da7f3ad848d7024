// Command worker runs one ptopofl Temporal worker: the server worker
// (workflows and server activities) or one site's worker (that site's
// activities, reading only its own data directory).
//
//	worker --role server --temporal HOST:PORT --namespace NS --s3 URL --bucket B
//	worker --role site --site NAME --data PATH --temporal HOST:PORT --s3 URL --bucket B
//
// A site worker keeps a secret, <site>.secret in --secret-dir (default
// PTOPOFL_SECRET_DIR, else ptopofl/site-secrets in the user's configuration
// directory), created with mode 0600 on its first start: it keys the
// site's differential-privacy noise and secret subsamples under dp record,
// and never leaves the site. Beside it, <site>.ledger is the site's privacy
// ledger: every private release, across every campaign, charged before it
// leaves. --privacy-budget EPS[:DELTA] is the operator's lifetime limit:
// a task that would pass it is refused (the site drops from the round with
// privacy_budget_exhausted), as is any task of a campaign without dp
// record. A worker whose ledger records releases refuses to start when
// the secret is missing or another (restore it; --new-secret if it is
// lost for good). The ledger is read with
//
//	worker ledger --secret-dir DIR [--format text|json]
//
// --site takes a comma-separated list to host several sites in one process
// (one Temporal worker per site, each on its own queue, sharing the
// connection), for tests and benchmarks of many sites on one machine; --data
// is then the federation directory holding every site's files.
//
// The --fault-* flags inject failures and delays into the site activities
// (workers.Faults), for fault tests only; they are off by default:
//
//	--fault-rate 0.05 --fault-seed 7     fail 5 % of attempts (retryable, before any side effect)
//	--fault-delay 30s --fault-rounds 3   hold every activity of round 3 for 30 s (a straggler)
//
// A site's own training programs (campaigns of model "external"; the
// trainer protocol ptopofl.trainer/v1, docs/how-to/own-trainer.md) are
// mapped by name with --trainer NAME=COMMAND (one process per task) or
// --trainer-serve NAME=COMMAND (one long-lived process per site); they run
// in a sealed environment (PATH, HOME, LANG, LC_*, TMPDIR, the protocol's
// variables, and only what --trainer-env names: never the worker's S3
// credentials, payload keys or secret directory), at most --trainer-slots
// tasks at once (default 1).
//
// Every connection flag can come from the environment instead
// (PTOPOFL_TEMPORAL, PTOPOFL_NAMESPACE, PTOPOFL_S3, PTOPOFL_BUCKET); S3
// credentials come from the file --s3-credentials-file names (mode 0600)
// or from the environment (PTOPOFL_S3_ACCESS_KEY, PTOPOFL_S3_SECRET_KEY),
// never from a flag of their own, so they stay out of process listings.
// Temporal payloads are encrypted with the keys of --payload-key-file (or
// PTOPOFL_PAYLOAD_KEY_FILE, or PTOPOFL_PAYLOAD_KEYS); the starter and every
// worker of a deployment need the same keys. A secret file or key others
// may read is refused. SIGINT or SIGTERM stops the worker cleanly:
// in-flight activities finish or are retried elsewhere. A worker whose
// polls Temporal refuses (its certificate may not poll its queue) exits 1
// at once with one line naming the certificate, the queue and the reason.
// Wiring only.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/internal/connect"
	"github.com/ptopofl/ptopofl/internal/payloadcodec"
	"github.com/ptopofl/ptopofl/internal/trainerrun"
	"github.com/ptopofl/ptopofl/internal/workers"
	"github.com/ptopofl/ptopofl/privacy/ledger"
	"github.com/ptopofl/ptopofl/siteledger"
)

type config struct {
	role, site, data, label string
	secretDir               string
	budget                  *ledger.Budget
	newSecret               bool
	conn                    connect.Flags
	s3Insecure              bool
	faults                  workers.Faults
	faultRounds             string
	trainers, trainersServe []string
	trainerEnv              []string
	trainerSlots            int
	trainerDir              string
}

// trainerList is the repeatable --trainer flag.
type trainerList struct{ l *[]string }

func (t trainerList) String() string {
	if t.l == nil {
		return ""
	}
	return strings.Join(*t.l, " ")
}
func (t trainerList) Set(v string) error { *t.l = append(*t.l, v); return nil }

// sites are the names --site lists.
func (c config) sites() []string { return strings.Split(c.site, ",") }

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.role, "role", "", `"server" or "site"`)
	fs.StringVar(&c.site, "site", "", "site name (role site)")
	fs.StringVar(&c.data, "data", "", "the site's data directory: <site>_train.csv|parquet and <site>_test.* , or train.* and test.* (role site)")
	fs.StringVar(&c.label, "label", dataset.DefaultLabelColumn, "name of the label column in the site's data")
	fs.StringVar(&c.secretDir, "secret-dir", defaultSecretDir(), "directory of the site's secret <site>.secret (created with mode 0600 on first start; it keys the site's differential-privacy noise and must never leave the site; back it up: a campaign resumed without it cannot repeat its releases) and of its privacy ledger <site>.ledger (role site; env PTOPOFL_SECRET_DIR)")
	fs.Func("privacy-budget", "EPS[:DELTA], the site operator's lifetime limit on its privacy loss (δ default 1e-5): a task whose releases would take the site's ledger beyond (EPS, DELTA) on any of its data files is refused, as is every task of a campaign without dp record; default none (role site)", func(v string) error {
		b, err := ledger.ParseBudget(v)
		if err != nil {
			return err
		}
		c.budget = &b
		return nil
	})
	fs.BoolVar(&c.newSecret, "new-secret", false, "start although the site's ledger records releases made with another secret than the one in --secret-dir, or with one now missing (drawn anew): only when the original is lost for good; releases with the new secret are charged afresh (role site)")
	c.conn.Register(fs, "127.0.0.1:7233")
	fs.Var(trainerList{&c.trainers}, "trainer", `the site's own training program NAME=COMMAND for campaigns of model "external" that name trainer NAME (COMMAND is split at spaces, no shell; the program runs once per task under the trainer protocol ptopofl.trainer/v1) (role site; repeatable)`)
	fs.Var(trainerList{&c.trainersServe}, "trainer-serve", `as --trainer, but the program serves every task of the site from one long-lived process, started at the first task (serve mode of ptopofl.trainer/v1) (role site; repeatable)`)
	fs.Var(trainerList{&c.trainerEnv}, "trainer-env", `a variable the training programs get besides their sealed environment (PATH, HOME, LANG, LC_*, TMPDIR and the protocol's): NAME passes the worker's own, NAME=VALUE sets it, e.g. CUDA_VISIBLE_DEVICES; never a PTOPOFL_ variable (role site; repeatable)`)
	fs.IntVar(&c.trainerSlots, "trainer-slots", 1, "how many tasks of the training programs run at once in this worker, across its sites, in either mode (role site)")
	fs.StringVar(&c.trainerDir, "trainer-dir", "", "directory of the training programs' task directories (default <tmp>/ptopofl-trainer/<site>) (role site)")
	fs.BoolVar(&c.s3Insecure, "s3-tls-insecure", false, "do not verify the S3 endpoint's certificate (testing only)")
	fs.Float64Var(&c.faults.Rate, "fault-rate", 0, "fault tests only: fail this fraction of site activity attempts with a retryable error")
	fs.Uint64Var(&c.faults.Seed, "fault-seed", 0, "fault tests only: seed of the --fault-rate draws")
	fs.DurationVar(&c.faults.Delay, "fault-delay", 0, "fault tests only: hold every site activity attempt this long before it runs")
	fs.StringVar(&c.faultRounds, "fault-rounds", "", "fault tests only: comma-separated rounds --fault-delay applies to (default every round)")
	fs.StringVar(&c.faults.Hold, "fault-hold", "", `fault tests only: hold a private release for --fault-delay "charged" (after its charge to the ledger, before anything leaves) or "released" (after its model or descriptor is written, before the activity returns) instead of before the activity`)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.faultRounds != "" {
		for _, f := range strings.Split(c.faultRounds, ",") {
			r, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return c, fmt.Errorf("--fault-rounds %q: %q is not a round number", c.faultRounds, f)
			}
			c.faults.Rounds = append(c.faults.Rounds, r)
		}
	}
	if err := c.faults.Validate(); err != nil {
		return c, fmt.Errorf("--fault-*: %w", err)
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	switch c.role {
	case "server":
		if c.faults.Enabled() {
			return c, errors.New("--fault-* flags apply to site workers only")
		}
		if c.budget != nil || c.newSecret {
			return c, errors.New("--privacy-budget and --new-secret apply to site workers only")
		}
	case "site":
		if c.site == "" || c.data == "" {
			return c, errors.New("--role site needs --site NAME and --data PATH")
		}
	default:
		return c, fmt.Errorf("--role %q: want server or site", c.role)
	}
	if c.conn.S3 == "" {
		return c, errors.New("--s3 (or PTOPOFL_S3) is required")
	}
	if (c.conn.TLSCert == "") != (c.conn.TLSKey == "") {
		return c, errors.New("--temporal-tls-cert and --temporal-tls-key go together")
	}
	return c, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "ledger" {
		return runLedger(args[1:], stdout, stderr)
	}
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	st, err := c.conn.OpenStore(c.s3Insecure)
	if err != nil {
		return err
	}
	// Only the server worker creates the bucket: a site's S3 identity may
	// read and write its own objects and nothing at the bucket level.
	if c.role == "server" {
		if err := st.EnsureBucket(ctx); err != nil {
			return err
		}
	}
	tlsCfg, err := c.conn.TemporalTLS()
	if err != nil {
		return err
	}
	keys, err := c.conn.PayloadKeys()
	if err != nil {
		return err
	}
	copts := connect.ClientOptions(c.conn.Temporal, c.conn.Namespace, tlsCfg)
	connect.SealPayloads(&copts, keys)
	// A worker whose polls the server refuses (its certificate may not
	// poll the queue) can never get work: it stops with the reason,
	// instead of polling on forever as the SDK would.
	fatal := make(chan error, 1)
	report := func(err error) {
		select {
		case fatal <- err:
		default:
		}
	}
	copts.ConnectionOptions.DialOptions = append(copts.ConnectionOptions.DialOptions, connect.RefusedPolls(func(queue string, err error) {
		report(refusedError(c.conn.TLSCert, queue, err))
	}))
	cl, err := client.DialContext(ctx, copts)
	if err != nil {
		return fmt.Errorf("connect to Temporal at %s: %w", c.conn.Temporal, err)
	}
	defer cl.Close()

	opts := workers.Options{Site: dataset.SiteOptions{LabelColumn: c.label}}
	if c.role == "site" {
		if c.secretDir == "" {
			return errors.New("--secret-dir: no directory for the site's secret (set it, or PTOPOFL_SECRET_DIR)")
		}
		opts.SecretDir, opts.PrivacyBudget, opts.NewSecret = c.secretDir, c.budget, c.newSecret
		for _, site := range c.sites() {
			// Opened here, before polling, so the operator sees where
			// they are and what the site has spent (and a secret that
			// does not match the ledger stops the worker at once).
			sl, err := siteledger.Open(c.secretDir, site, siteledger.Options{Budget: c.budget, NewSecret: c.newSecret})
			if err != nil {
				return err
			}
			lt, err := sl.Ledger.Lifetime()
			if err != nil {
				return err
			}
			verb := "using"
			if sl.SecretCreated {
				verb = "created"
			}
			limit := "no privacy budget"
			if c.budget != nil {
				limit = fmt.Sprintf("privacy budget ε %g at δ %g", c.budget.Epsilon, c.budget.Delta)
			}
			fmt.Fprintf(stderr, "worker: site %s: %s secret %s (keep it at this site); ledger %s: lifetime ε %.4g at δ %g, %s\n",
				site, verb, workers.SecretFile(c.secretDir, site), sl.Ledger.Path(), lt.Epsilon, lt.Delta, limit)
		}
	}
	if c.faults.Enabled() {
		c.faults.Log = stderr
		fmt.Fprintf(stderr, "worker: FAULT INJECTION on: rate %v seed %d, delay %v in rounds %v\n", c.faults.Rate, c.faults.Seed, c.faults.Delay, c.faults.Rounds)
	}
	opts.Faults = c.faults
	if c.role == "site" {
		trainers, err := trainerrun.NewHost(c.trainers, c.trainersServe, c.trainerEnv, c.trainerSlots)
		if err != nil {
			return err
		}
		// Closed after the workers stop (deferred before their Stop).
		defer trainers.Close()
		if trainers != nil {
			opts.Trainers = trainers
			for _, name := range slices.Sorted(maps.Keys(trainers.Programs)) {
				mode := "one process per task"
				if trainers.Programs[name].Serve {
					mode = "serve mode"
				}
				fmt.Fprintf(stderr, "worker: trainer %s (%s): %s\n", name, mode, strings.Join(trainers.Programs[name].Argv, " "))
			}
			fmt.Fprintf(stderr, "worker: trainers: %d slot(s); environment: the sealed one%s\n", trainers.Slots, envNote(trainers.Env))
			if c.trainerDir != "" && len(c.sites()) > 1 {
				return errors.New("--trainer-dir: one directory serves one site; give one --site, or leave --trainer-dir out")
			}
			opts.TrainerDir = c.trainerDir
		}
	}
	opts.Worker.OnFatalError = report
	var ws []worker.Worker
	if c.role == "server" {
		ws = append(ws, workers.NewServer(cl, st, opts))
	} else {
		for _, site := range c.sites() {
			w, err := workers.NewSite(cl, st, site, c.data, opts)
			if err != nil {
				return err
			}
			ws = append(ws, w)
		}
	}
	for i, w := range ws {
		if err := w.Start(); err != nil {
			for _, started := range ws[:i] {
				started.Stop()
			}
			return fmt.Errorf("start worker: %w", err)
		}
	}
	fmt.Fprintf(stderr, "worker: role %s%s polling %s in namespace %s, %s\n", c.role, siteNote(c), c.conn.Temporal, c.conn.Namespace, keysNote(keys))
	// On SIGINT/SIGTERM (ctx) each worker stops polling and waits for its
	// in-flight activities up to its stop timeout.
	select {
	case <-ctx.Done():
	case err = <-fatal:
	}
	for _, w := range ws {
		w.Stop()
	}
	return err
}

// refusedError says, in one line, that Temporal refused the polls of queue
// made with the certificate in certFile (its common name and file), and
// why.
func refusedError(certFile, queue string, err error) error {
	who := "no client certificate"
	if certFile != "" {
		who = "certificate " + certFile
		if cn, cerr := connect.CertificateName(certFile); cerr == nil {
			who = "certificate " + cn + " (" + certFile + ")"
		}
	}
	return fmt.Errorf("Temporal refused to let %s poll task queue %s: %s", who, queue, connect.Refusal(err))
}

// envNote names the variables the site adds to its programs' sealed
// environment, never their values.
func envNote(env []string) string {
	if len(env) == 0 {
		return ""
	}
	names := make([]string, len(env))
	for i, e := range env {
		names[i], _, _ = strings.Cut(e, "=")
	}
	return " plus " + strings.Join(names, ", ")
}

// defaultSecretDir is PTOPOFL_SECRET_DIR, else ptopofl/site-secrets in the
// user's configuration directory, else "" (the flag is then required).
func defaultSecretDir() string {
	if d := os.Getenv("PTOPOFL_SECRET_DIR"); d != "" {
		return d
	}
	if d, err := os.UserConfigDir(); err == nil {
		return filepath.Join(d, "ptopofl", "site-secrets")
	}
	return ""
}

// keysNote says whether payloads are encrypted, naming key IDs only.
func keysNote(keys *payloadcodec.Keys) string {
	if keys == nil {
		return "payloads NOT encrypted (no payload keys)"
	}
	return "payloads encrypted with key " + keys.Current()
}

func siteNote(c config) string {
	if c.role == "site" {
		if n := len(c.sites()); n > 1 {
			return fmt.Sprintf(" (%d sites, data %s)", n, c.data)
		}
		return " (site " + c.site + ", data " + c.data + ")"
	}
	return ""
}

func main() {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}
