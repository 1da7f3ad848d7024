package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/eval"
)

// parseVariant parses "LABEL:METHOD:name=v,name=v" (an ablation such as
// "ptopofl_M1:ptopofl:clusters=1").
func parseVariant(v string) (campaign.Variant, error) {
	parts := strings.SplitN(v, ":", 3)
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
		return campaign.Variant{}, inputErrorf("--variant %q: want LABEL:METHOD[:NAME=VALUE,...]", v)
	}
	e := campaign.Variant{Label: parts[0], Method: parts[1]}
	if len(parts) == 3 && parts[2] != "" {
		e.Set = strings.Split(parts[2], ",")
	}
	return e, nil
}

// runTable runs several methods as campaigns on one stack (concurrently,
// --parallel at a time) and prints the results table: `make run`.
func runTable(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("table", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f campaignFlags
	f.register(fs)
	methods := fs.String("methods", "ptopofl,fedavg,fedprox,scaffold,pfedme,local,median,trimmed-mean,krum", "comma-separated methods, one campaign each")
	var variants stringList
	fs.Var(&variants, "variant", "extra row LABEL:METHOD:NAME=VALUE,... (e.g. ptopofl_M1:ptopofl:clusters=1; repeatable)")
	parallel := fs.Int("parallel", 3, "campaigns running at once")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if f.spec.Campaign != "" {
		return inputErrorf("--campaign: table names each campaign itself")
	}
	cf, fed, err := f.prepare(fs, rest)
	if err != nil {
		return err
	}
	if *parallel < 1 {
		return inputErrorf("--parallel %d: want >= 1", *parallel)
	}
	var entries []campaign.Variant
	for _, m := range strings.Split(*methods, ",") {
		if m = strings.TrimSpace(m); m != "" {
			entries = append(entries, campaign.Variant{Label: m, Method: m})
		}
	}
	for _, v := range variants {
		e, err := parseVariant(v)
		if err != nil {
			return err
		}
		entries = append(entries, e)
	}
	if len(entries) == 0 {
		return inputErrorf("--methods: at least one method")
	}
	// Every spec is built and validated before the stack starts.
	built, err := campaign.BuildJobs(cf, f.spec, fed, entries)
	if err != nil {
		return err
	}
	quiet := f.conn.format == "json"
	var progressOut io.Writer
	if !quiet {
		progressOut = stderr
	}
	start := time.Now()
	e, err := f.conn.connect(ctx, stderr)
	if err != nil {
		return err
	}
	defer e.Close()
	if f.conn.local {
		stop, err := e.svc.StartLocalWorkers(fed, built[0].Spec.Sites, progressOut)
		if err != nil {
			return err
		}
		defer stop()
	}

	// Campaigns done out of the total, a line each (the rounds of the
	// campaigns print lines of their own in between, so never a rewritten
	// terminal line: a locked writer is no terminal).
	var mu sync.Mutex // serialises progress lines
	var pw, meterOut io.Writer
	if progressOut != nil {
		pw = campaign.LockedWriter(progressOut, &mu)
		meterOut = pw
	}
	meter := newProgressMeter(meterOut, len(built), "campaigns")
	finished := 0
	meter.update(0)
	results, errs := e.svc.ExecuteAll(ctx, built, *parallel, pw, func(i int, err error) {
		finished++
		state := "done"
		if err != nil {
			state = "failed"
		}
		meter.updateDetail(finished, "last: "+built[i].Label+" "+state)
	})
	wall := time.Since(start)
	var failed []string
	for i, err := range errs {
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", built[i].Label, err))
		}
	}
	if quiet {
		if err := json.NewEncoder(stdout).Encode(map[string]any{"results": results, "wall_seconds": wall.Seconds()}); err != nil {
			return err
		}
	} else {
		printTable(stdout, results, errs)
		fmt.Fprintf(stdout, "\n%d campaigns in %.1fs\n", len(results), wall.Seconds())
		printWhere(stdout, e, "campaigns/<campaign>/", "<campaign>", "")
		fmt.Fprintln(stdout, "campaigns  "+campaignNames(results))
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d campaigns failed:\n  %s", len(failed), len(results), strings.Join(failed, "\n  "))
	}
	return nil
}

func campaignNames(rs []campaign.Result) string {
	var names []string
	for _, r := range rs {
		if r.Campaign != "" {
			names = append(names, r.Campaign)
		}
	}
	return strings.Join(names, " ")
}

// printTable prints one row per campaign. Its "settled" column is the
// round from which the mean AUC stays within eval.SettlingTolerance of its
// final value (eval.SettlingRound): how long a method is still moving.
func printTable(w io.Writer, rs []campaign.Result, errs []error) {
	fmt.Fprintf(w, "%-16s %9s %9s %7s  %-12s %s\n", "method", "final AUC", "accuracy", "settled", "flagged", "campaign")
	for i, r := range rs {
		if errs[i] != nil {
			fmt.Fprintf(w, "%-16s %9s %9s %7s  %-12s failed: %v\n", r.Label, "-", "-", "-", "-", errs[i])
			continue
		}
		flagged := strings.Join(r.Flagged, ",")
		if flagged == "" {
			flagged = "-"
		}
		fmt.Fprintf(w, "%-16s %9.4f %9.4f %7d  %-12s %s\n", r.Label, r.FinalAUC, r.FinalAcc, eval.SettlingRound(r.AUCCurve, eval.SettlingTolerance), flagged, r.Campaign)
	}
}
