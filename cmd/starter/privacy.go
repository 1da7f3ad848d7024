package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"

	"github.com/ptopofl/ptopofl/internal/stackconn"
	"github.com/ptopofl/ptopofl/internal/textout"
	"github.com/ptopofl/ptopofl/privacy"
	"github.com/ptopofl/ptopofl/siteledger"
)

const privacyUsage = `usage: starter privacy epsilon --noise-multiplier Z --sampling-rate Q --steps T --delta D [--accountant rdp|gdp] [--format text|json]
       starter privacy noise --target-epsilon E --sampling-rate Q --steps T --delta D [--accountant rdp|gdp] [--format text|json]
       starter privacy ledger --local [--data-dir D] [--format text|json]

epsilon  the ε that T Gaussian releases (DP-SGD or DP-GD steps) with noise multiplier
         Z = σ/Δ, each sampling the records with probability Q, spend at δ = D
noise    the noise multiplier for which T such releases spend at most E at δ = D
ledger   the privacy ledgers of the local stack's in-process sites
         (D/site-secrets/<site>.ledger): each site's lifetime ε over every
         campaign on its data, its budget, and each campaign's ε alone

--accountant defaults to gdp (exact) when Q = 1 and rdp otherwise; gdp needs Q = 1.
"noise" with rdp is Opacus's get_noise_multiplier; with gdp it is exact. The
commands need no connection to Temporal or S3. A deployed site's ledger is at
the site: worker ledger --secret-dir DIR.
`

// runPrivacy computes the privacy budget of a DP-SGD/DP-GD plan with package
// privacy: "epsilon" the ε a noise multiplier spends, "noise" the noise
// multiplier for a target ε. It is arithmetic only: no connection flags.
func runPrivacy(_ context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, privacyUsage)
		return inputErrorf("want a sub-command: epsilon, noise or ledger")
	}
	switch args[0] {
	case "epsilon":
		return runPrivacyEpsilon(args[1:], stdout, stderr)
	case "noise":
		return runPrivacyNoise(args[1:], stdout, stderr)
	case "ledger":
		return runPrivacyLedger(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, privacyUsage)
		return flag.ErrHelp
	}
	return inputErrorf("unknown sub-command %q: want epsilon, noise or ledger", args[0])
}

// runPrivacyLedger is `starter privacy ledger --local --data-dir D`: the
// ledgers of the local stack's in-process sites, read from their files
// (no stack is started). Its JSON, {"sites": [{"site", "epsilon",
// "delta", "budget", "campaigns": [{"campaign", "epsilon"}]}]}, is
// `worker ledger`'s, a contract scripts rely on.
func runPrivacyLedger(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("privacy ledger", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var conn stackconn.Flags
	fs.BoolVar(&conn.Local, "local", false, "the local stack's in-process sites (required: a deployed site's ledger is at the site, worker ledger --secret-dir DIR)")
	fs.StringVar(&conn.DataDir, "data-dir", "./.run/local", "data directory of the local stack")
	fs.StringVar(&conn.Format, "format", "text", "output format: text or json")
	rest, err := stackconn.ParseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return inputErrorf("privacy ledger: unexpected argument %q", rest[0])
	}
	if !conn.Local {
		return inputErrorf("privacy ledger: --local: reads the ledgers of the local stack's in-process sites; a deployed site's is at the site (worker ledger --secret-dir DIR)")
	}
	if err := conn.Check(); err != nil {
		return err
	}
	if _, err := os.Stat(conn.DataDir); err != nil {
		return inputErrorf("privacy ledger: --data-dir: %v", err)
	}
	dir := stackconn.SiteSecretDir(conn.DataDir)
	r := siteledger.Report{Sites: []siteledger.SiteReport{}}
	if _, err := os.Stat(dir); err == nil {
		if r, err = siteledger.ReportDir(dir); err != nil {
			return fmt.Errorf("privacy ledger: %w", err)
		}
	}
	return stackconn.Emit(stdout, conn.Format, r, func(w io.Writer, r siteledger.Report) { textout.WriteLedger(w, r, dir) })
}

// privacyFlags are the flags the two sub-commands share.
type privacyFlags struct {
	cmd        string // epsilon or noise: the prefix of its messages
	fs         *flag.FlagSet
	q, delta   float64
	steps      int
	accountant string
	format     string
}

func newPrivacyFlags(cmd string, stderr io.Writer) *privacyFlags {
	p := &privacyFlags{cmd: cmd, fs: flag.NewFlagSet("privacy "+cmd, flag.ContinueOnError)}
	p.fs.SetOutput(stderr)
	p.fs.Usage = func() {
		fmt.Fprint(stderr, privacyUsage+"\nflags of "+cmd+":\n")
		p.fs.PrintDefaults()
	}
	p.fs.Float64Var(&p.q, "sampling-rate", 0, "Poisson sampling rate Q of the records per step, in (0, 1]; 1 = every record (required)")
	p.fs.IntVar(&p.steps, "steps", 0, "number of steps (releases) T, ≥ 1 (required)")
	p.fs.Float64Var(&p.delta, "delta", 0, "δ, in (0, 1) (required)")
	p.fs.StringVar(&p.accountant, "accountant", "", "rdp or gdp (default: gdp when --sampling-rate is 1, rdp otherwise)")
	p.fs.StringVar(&p.format, "format", "text", "output format: text or json")
	return p
}

// parse parses args and checks the shared flags; required lists the flags
// that must be given (the shared ones are added).
func (p *privacyFlags) parse(args []string, required ...string) (privacy.Accountant, error) {
	rest, err := stackconn.ParseFlags(p.fs, args)
	if err != nil {
		return "", err
	}
	if len(rest) > 0 {
		return "", p.errorf("unexpected argument %q", rest[0])
	}
	var given []string
	p.fs.Visit(func(f *flag.Flag) { given = append(given, f.Name) })
	for _, name := range append(required, "sampling-rate", "steps", "delta") {
		if !slices.Contains(given, name) {
			return "", p.errorf("--%s is required", name)
		}
	}
	switch {
	case p.format != "text" && p.format != "json":
		return "", p.errorf("--format %q: want text or json", p.format)
	case !(p.q > 0 && p.q <= 1):
		return "", p.errorf("--sampling-rate %v: must be in (0, 1]", p.q)
	case p.steps < 1:
		return "", p.errorf("--steps %d: must be ≥ 1", p.steps)
	case !(p.delta > 0 && p.delta < 1):
		return "", p.errorf("--delta %v: must be in (0, 1)", p.delta)
	}
	switch acc := privacy.Accountant(p.accountant); acc {
	case "":
		return privacy.DefaultAccountant([]privacy.Event{{Q: p.q, Count: p.steps}}), nil
	case privacy.GDP:
		if p.q != 1 {
			return "", p.errorf("--accountant gdp: needs --sampling-rate 1, not %v (use --accountant rdp)", p.q)
		}
		return acc, nil
	case privacy.RDP:
		return acc, nil
	}
	return "", p.errorf("--accountant %q: want rdp or gdp", p.accountant)
}

// errorf is an input error (exit 2) of the sub-command.
func (p *privacyFlags) errorf(format string, args ...any) error {
	return inputErrorf("%s: %s", p.cmd, fmt.Sprintf(format, args...))
}

// checkPositive reports a flag value that is not a positive finite number.
func (p *privacyFlags) checkPositive(name string, v float64) error {
	if !(v > 0) || math.IsInf(v, 1) {
		return p.errorf("--%s %v: must be a positive finite number", name, v)
	}
	return nil
}

// runPrivacyEpsilon prints the ε that --steps releases with
// --noise-multiplier at --sampling-rate spend at --delta.
func runPrivacyEpsilon(args []string, stdout, stderr io.Writer) error {
	p := newPrivacyFlags("epsilon", stderr)
	z := p.fs.Float64("noise-multiplier", 0, "noise multiplier Z = σ/Δ (noise standard deviation over the clipping norm), > 0 (required)")
	acc, err := p.parse(args, "noise-multiplier")
	if err != nil {
		return err
	}
	if err := p.checkPositive("noise-multiplier", *z); err != nil {
		return err
	}
	spent, err := privacy.Epsilon([]privacy.Event{{Z: *z, Q: p.q, Count: p.steps}}, p.delta, acc)
	if err != nil {
		return fmt.Errorf("epsilon: %w", err)
	}
	if math.IsInf(spent.Epsilon, 1) {
		return fmt.Errorf("epsilon: ε is unbounded: --noise-multiplier %v is too small for %s accounting", *z, acc)
	}
	out := textout.PrivacyEpsilon{Epsilon: spent.Epsilon, Accountant: string(acc), Order: spent.Order, Steps: p.steps, Z: *z, Q: p.q, Delta: p.delta}
	return stackconn.Emit(stdout, p.format, out, textout.WritePrivacyEpsilon)
}

// runPrivacyNoise prints the noise multiplier for which --steps releases at
// --sampling-rate spend at most --target-epsilon at --delta.
func runPrivacyNoise(args []string, stdout, stderr io.Writer) error {
	p := newPrivacyFlags("noise", stderr)
	target := p.fs.Float64("target-epsilon", 0, "the ε to spend at most, > 0 (required)")
	acc, err := p.parse(args, "target-epsilon")
	if err != nil {
		return err
	}
	if err := p.checkPositive("target-epsilon", *target); err != nil {
		return err
	}
	z, err := privacy.NoiseMultiplier(*target, p.delta, p.q, p.steps, acc)
	if err != nil {
		return fmt.Errorf("noise: %w", err)
	}
	spent, err := privacy.Epsilon([]privacy.Event{{Z: z, Q: p.q, Count: p.steps}}, p.delta, acc)
	if err != nil {
		return fmt.Errorf("noise: %w", err)
	}
	out := textout.PrivacyNoise{NoiseMultiplier: z, Accountant: string(acc), Epsilon: spent.Epsilon, Order: spent.Order, Steps: p.steps, Q: p.q, Delta: p.delta, Target: *target}
	return stackconn.Emit(stdout, p.format, out, textout.WritePrivacyNoise)
}
