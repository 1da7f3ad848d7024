package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/ptopofl/ptopofl/activities"
	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/eval"
	"github.com/ptopofl/ptopofl/pipeline"
)

// runSweep runs a sweep file: `starter sweep FILE.yaml`.
func runSweep(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "replay" {
		return runSweepReplay(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "report" {
		return runSweepReport(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "extend" {
		return runSweepExtend(ctx, args[1:], stdout, stderr)
	}
	var trainerFlags stringList
	conn, rest, err := parseCommand("sweep", args, stderr, func(fs *flag.FlagSet) func() error {
		fs.Var(&trainerFlags, "trainer", `with --local: a training program NAME=COMMAND the in-process site workers run for campaigns of model "external" that name trainer NAME (repeatable)`)
		return nil
	}, func(rest []string) error {
		if len(rest) != 1 {
			return inputErrorf("want one sweep file: starter sweep FILE.yaml")
		}
		return nil
	})
	if err != nil {
		return err
	}
	file, err := filepath.Abs(rest[0])
	if err != nil {
		return inputErrorf("%v", err)
	}
	sf, err := campaign.ReadSweepFile(file)
	if err != nil {
		return err
	}
	plan, err := campaign.BuildSweepPlan(sf, file, conn.bucket(), conn.set("bucket"))
	if err != nil {
		return err
	}
	trainers, err := parseTrainers(trainerFlags, conn.local)
	if err != nil {
		return err
	}
	out, err := executeSweep(ctx, conn, plan, stderr, nil, trainers)
	if err != nil {
		return err
	}
	return emitSweep(stdout, conn, out)
}

func emitSweep(stdout io.Writer, conn *connFlags, out campaign.SweepOutput) error {
	if conn.format == "json" {
		return json.NewEncoder(stdout).Encode(out)
	}
	printSweep(stdout, out)
	return nil
}

// runSweepExtend adds budget to an adaptive sweep and waits for it:
// `starter sweep extend SWEEP|FILE.yaml --campaign-rounds N --trials N`.
// With --local the sweep file is needed (its federations' directories feed
// the in-process sites); against a deployed stack its name is enough.
func runSweepExtend(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var in pipeline.ExtendInput
	var trainerFlags stringList
	conn, rest, err := parseCommand("sweep extend", args, stderr, func(fs *flag.FlagSet) func() error {
		fs.IntVar(&in.Budget, "campaign-rounds", 0, "campaign-rounds to add to the sweep's budget")
		fs.IntVar(&in.Trials, "trials", 0, "trials to add to the sweep's trial cap")
		fs.Var(&trainerFlags, "trainer", `with --local: as for starter sweep`)
		return func() error {
			if in.Budget < 0 || in.Trials < 0 || in.Budget == 0 && in.Trials == 0 {
				return inputErrorf("give --campaign-rounds N and/or --trials N, N > 0")
			}
			return nil
		}
	}, func(rest []string) error {
		if len(rest) != 1 {
			return inputErrorf("want one sweep: starter sweep extend SWEEP|FILE.yaml --campaign-rounds N --trials N")
		}
		return nil
	})
	if err != nil {
		return err
	}
	var plan campaign.SweepPlan
	name := rest[0]
	if ext := filepath.Ext(name); ext == ".yaml" || ext == ".yml" {
		file, err := filepath.Abs(name)
		if err != nil {
			return inputErrorf("%v", err)
		}
		sf, err := campaign.ReadSweepFile(file)
		if err != nil {
			return err
		}
		if plan, err = campaign.BuildSweepPlan(sf, file, conn.bucket(), conn.set("bucket")); err != nil {
			return err
		}
		name = plan.Spec.Sweep
	} else if conn.local {
		return inputErrorf("with --local, give the sweep file, not its name: the in-process sites need its federations' directories")
	} else if err := artifact.ValidateName(name); err != nil {
		return inputErrorf("sweep %v", err)
	}
	trainers, err := parseTrainers(trainerFlags, conn.local)
	if err != nil {
		return err
	}
	e, err := conn.connect(ctx, stderr)
	if err != nil {
		return err
	}
	defer e.Close()
	e.svc.Trainers = trainers
	var progress io.Writer
	if conn.format != "json" {
		progress = stderr
	}
	if conn.local {
		stop, err := e.svc.StartSweepWorkers(plan, progress)
		if err != nil {
			return err
		}
		defer stop()
	}
	spec, err := e.svc.ExtendSweep(ctx, name, in)
	if err != nil {
		return err
	}
	out, err := e.svc.RunSweep(ctx, spec, progress)
	if err != nil {
		return err
	}
	return emitSweep(stdout, conn, out)
}

// executeSweep connects, starts the local workers if asked, runs (or
// re-attaches to) the sweep and reads its results table back from S3;
// then, if after is not nil, calls it while the connection is still open.
func executeSweep(ctx context.Context, conn *connFlags, plan campaign.SweepPlan, stderr io.Writer, after func(*env, campaign.SweepOutput) error, trainers activities.Trainers) (campaign.SweepOutput, error) {
	start := time.Now()
	var progress io.Writer
	if conn.format != "json" {
		progress = stderr
	}
	e, err := conn.connect(ctx, stderr)
	if err != nil {
		return campaign.SweepOutput{}, err
	}
	defer e.Close()
	e.svc.Trainers = trainers
	if conn.local {
		stop, err := e.svc.StartSweepWorkers(plan, progress)
		if err != nil {
			return campaign.SweepOutput{}, err
		}
		defer stop()
	}
	out, err := e.svc.RunSweep(ctx, plan.Spec, progress)
	if err != nil {
		return out, err
	}
	out.WallSeconds = time.Since(start).Seconds() // the stack's start included
	if after != nil {
		if err := after(e, out); err != nil {
			return out, err
		}
	}
	return out, nil
}

func printSweep(w io.Writer, out campaign.SweepOutput) {
	fmt.Fprintf(w, "%-10s %-9s %-12s %6s %-8s %6s %9s %9s %5s  %-12s %s\n",
		"federation", "method", "setting", "seed", "state", "rounds", "final AUC", "accuracy", "conv", "flagged", "campaign")
	for _, r := range out.Rows {
		flagged := r.Flagged
		if flagged == "" {
			flagged = "-"
		}
		state := r.State
		if r.Strategy != "" && r.Strategy != "grid" {
			state = r.Status // complete, pruned or failed
		}
		fmt.Fprintf(w, "%-10s %-9s %-12s %6d %-8s %6d %9.4f %9.4f %5d  %-12s %s",
			r.Federation, r.Method, r.Setting, r.Seed, state, r.RoundsDone, r.FinalAUC, r.FinalAcc, r.ConvRound, flagged, r.Campaign)
		if r.Epsilon > 0 {
			fmt.Fprintf(w, "  ε %.3f", r.Epsilon) // dp record: the largest ε of any site
		}
		fmt.Fprintln(w)
	}
	// Mean ± std over seeds per grid point.
	fmt.Fprintf(w, "\n%-10s %-9s %-12s %5s %17s\n", "federation", "method", "setting", "seeds", "final AUC")
	for _, g := range out.SeedGroups() {
		m, sd := meanStd(g.FinalAUC)
		fmt.Fprintf(w, "%-10s %-9s %-12s %5d %8.4f ± %.4f\n", g.Federation, g.Method, g.Setting, len(g.FinalAUC), m, sd)
	}
	fmt.Fprintf(w, "\nsweep %s: %s, %d/%d campaigns (%d failed) in %.1fs\nresults    %s\ncurves     %s\n",
		out.Sweep, out.State, out.CampaignsDone, out.CampaignsTotal, out.Failed, out.WallSeconds, out.Results, out.Curves)
	if out.Strategy != "grid" {
		fmt.Fprintf(w, "search     %s: %d trials, %d campaign-rounds trained\n", out.Strategy, out.Trials, out.RoundsSpent)
	}
	if b := out.Best; b != nil {
		fmt.Fprintf(w, "best       %s %v: validation AUC %.4f, test AUC %.4f (selected on validation; %d campaigns)\n",
			b.Method, b.Setting, b.ValAUC, b.FinalAUC, len(b.Campaigns))
	}
}

// meanStd is eval.MeanStd with a standard deviation of 0 for one value, as
// the table has always printed it.
func meanStd(v []float64) (float64, float64) {
	m, sd := eval.MeanStd(v)
	if len(v) == 1 {
		sd = 0
	}
	return m, sd
}
