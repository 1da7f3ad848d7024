// Command starter is the user's CLI for federated campaigns: it starts them,
// follows them, steers them and reads back their audit record.
//
//	starter run     [--file CAMPAIGN.yaml | --method NAME ...] [--local --federation DIR]
//	starter table   --local --federation DIR [--methods a,b,...]   one table: a sweep of methods and variants
//	starter status  CAMPAIGN
//	starter watch   CAMPAIGN
//	starter pause   CAMPAIGN [--reason TEXT]
//	starter resume  CAMPAIGN
//	starter stop    CAMPAIGN [--reason TEXT]
//	starter history CAMPAIGN
//	starter timings CAMPAIGN
//	starter verify  CAMPAIGN
//	starter export  CAMPAIGN --out FILE.parquet
//	starter ls
//	starter console [--addr HOST:PORT]   a read-only web console of the campaigns and sweeps
//
// Every sub-command takes --format text|json and either --local (the
// embedded stack over --data-dir, default ./.run/local) or --temporal
// HOST:PORT --namespace NS --s3 URL --bucket B (or PTOPOFL_TEMPORAL,
// PTOPOFL_NAMESPACE, PTOPOFL_S3, PTOPOFL_BUCKET; TLS with --temporal-tls-*, --s3-tls-ca
// or PTOPOFL_TEMPORAL_TLS_*, PTOPOFL_S3_TLS_CA); S3 credentials come only
// from PTOPOFL_S3_ACCESS_KEY and PTOPOFL_S3_SECRET_KEY.
//
// starter is flags, printing and exit codes only: the user's operations
// live in package campaign, the orchestration in workflows/ and
// activities/, the connection flags shared with cmd/worker in
// internal/connect.
//
// Exit statuses: 0 success, 1 a failure while running (including a rejected
// update or a failed campaign), 2 bad input (flags, campaign file), found
// before anything starts.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/ptopofl/ptopofl/campaign"
)

const usage = `usage: starter COMMAND [flags]

commands:
  run      start (or re-attach to) a campaign and wait for its result; a failed or stopped
           campaign starts its next attempt from its last committed round
  table    run several methods as campaigns on one stack and print the results table
  status   show a campaign's state
  watch    print a progress line per round until the campaign ends
  pause    pause a campaign before its next round
  resume   resume a paused campaign
  stop     stop a campaign after its running round
  history  per-round table from the campaign's manifests in S3
  timings  where each round's wall time went (site activities, the rest), from Temporal's histories
  verify   re-hash every artifact of a campaign and check the manifest chain (exit 1 on any problem)
  export   write a campaign's manifests as parquet, one row per round and site
  ls       list campaigns
  sweep    run a grid of campaigns (methods × hyper-parameters × seeds × federations) or an adaptive search and print the results table;
           sweep status|pause|resume|stop SWEEP follow and steer one, sweep extend|report|replay budget and read them
  experiment  run one of the paper's experiments (table1|adversarial|stability|privacy|ablation|deep) or the check of its theorems (theory) as a sweep; write its report
  privacy  compute ε for a DP-SGD/DP-GD plan, or the noise for a target ε (epsilon|noise)
  console  serve a read-only web console of the campaigns and sweeps (prints "console URL")

Run "starter COMMAND -h" for the flags of a command.
`

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1
	exitInput   = 2
)

// errInput marks errors the user caused with the command line or a campaign
// file; they exit with status 2. It is campaign.ErrInput, so that the
// library's errors about a campaign or sweep file exit 2 too.
var errInput = campaign.ErrInput

func inputErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errInput, fmt.Sprintf(format, args...))
}

func main() {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// command is one sub-command: it parses its own flags from args.
type command func(ctx context.Context, args []string, stdout, stderr io.Writer) error

var commands = map[string]command{
	"run":        runRun,
	"table":      runTable,
	"status":     runStatus,
	"watch":      runWatch,
	"pause":      runPause,
	"resume":     runResume,
	"stop":       runStop,
	"history":    runHistory,
	"timings":    runTimings,
	"verify":     runVerify,
	"export":     runExport,
	"ls":         runLs,
	"sweep":      runSweep,
	"experiment": runExperiment,
	"privacy":    runPrivacy,
	"console":    runConsole,
}

// run executes the command line args (without the program name) and returns
// the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitInput
	}
	name := args[0]
	if name == "help" || name == "-h" || name == "--help" {
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "starter: unknown command %q\n%s", name, usage)
		return exitInput
	}
	// PTOPOFL_CPUPROFILE=FILE writes a CPU profile of the whole command
	// (stack, workers and all), for finding where a local run spends its time.
	if path := os.Getenv("PTOPOFL_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil && pprof.StartCPUProfile(f) == nil {
			defer func() { pprof.StopCPUProfile(); f.Close() }()
		}
	}
	// PTOPOFL_HEAPPROFILE=FILE writes the heap profile (what the last
	// collection found live, and every allocation so far) every two seconds
	// while the command runs, so that the file holds the heap of its last
	// seconds of work, before the stack stops.
	if path := os.Getenv("PTOPOFL_HEAPPROFILE"); path != "" {
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			t := time.NewTicker(2 * time.Second)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					if f, err := os.Create(path); err == nil {
						_ = pprof.Lookup("heap").WriteTo(f, 0)
						f.Close()
					}
				}
			}
		}()
		defer func() { close(stop); <-done }()
	}
	err := cmd(ctx, args[1:], stdout, stderr)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, errInput):
		fmt.Fprintf(stderr, "starter %s: %v\n", name, err)
		return exitInput
	default:
		fmt.Fprintf(stderr, "starter %s: %v\n", name, err)
		return exitFailure
	}
}
