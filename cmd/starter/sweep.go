package main

import (
	"context"
	"flag"
	"io"
	"path/filepath"
	"time"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/internal/stackconn"
	"github.com/ptopofl/ptopofl/internal/textout"
	"github.com/ptopofl/ptopofl/internal/trainerrun"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/privacy/ledger"
)

// runSweep runs a sweep file: `starter sweep FILE.yaml`; its
// sub-commands replay, report, extend, status, pause, resume and stop
// follow and steer a sweep.
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
	if len(args) > 0 && args[0] == "status" {
		return runSweepStatus(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && sweepControls[args[0]] != "" {
		return runSweepControl(ctx, sweepControls[args[0]], args[1:], stdout, stderr)
	}
	var tf trainerFlags
	var budget *ledger.Budget
	conn, rest, err := stackconn.ParseCommand("sweep", args, stderr, func(fs *flag.FlagSet) func() error {
		tf.register(fs, "")
		stackconn.RegisterSiteBudget(fs, &budget)
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
	if conn.SiteBudget = budget; budget != nil {
		if err := conn.Check(); err != nil {
			return err
		}
	}
	plan, err := campaign.LoadSweepPlan(rest[0], conn.Bucket(), conn.Set("bucket"))
	if err != nil {
		return err
	}
	trainers, err := tf.host(conn.Local)
	if err != nil {
		return err
	}
	defer trainers.Close()
	out, err := executeSweep(ctx, conn, plan, stderr, nil, trainers)
	if err != nil {
		return err
	}
	return stackconn.Emit(stdout, conn.Format, out, textout.WriteSweep)
}

// runSweepExtend adds budget to an adaptive sweep and waits for it:
// `starter sweep extend SWEEP|FILE.yaml --campaign-rounds N --trials N`.
// With --local the sweep file is needed (its federations' directories feed
// the in-process sites); against a deployed stack its name is enough.
func runSweepExtend(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var in pipeline.ExtendInput
	var tf trainerFlags
	var budget *ledger.Budget
	conn, rest, err := stackconn.ParseCommand("sweep extend", args, stderr, func(fs *flag.FlagSet) func() error {
		fs.IntVar(&in.Budget, "campaign-rounds", 0, "campaign-rounds to add to the sweep's budget")
		fs.IntVar(&in.Trials, "trials", 0, "trials to add to the sweep's trial cap")
		tf.register(fs, "as for starter sweep")
		stackconn.RegisterSiteBudget(fs, &budget)
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
	if conn.SiteBudget = budget; budget != nil {
		if err := conn.Check(); err != nil {
			return err
		}
	}
	var plan campaign.SweepPlan
	name := rest[0]
	if ext := filepath.Ext(name); ext == ".yaml" || ext == ".yml" {
		var err error
		if plan, err = campaign.LoadSweepPlan(name, conn.Bucket(), conn.Set("bucket")); err != nil {
			return err
		}
		name = plan.Spec.Sweep
	} else if conn.Local {
		return inputErrorf("with --local, give the sweep file, not its name: the in-process sites need its federations' directories")
	} else if err := artifact.ValidateName(name); err != nil {
		return inputErrorf("sweep %v", err)
	}
	trainers, err := tf.host(conn.Local)
	if err != nil {
		return err
	}
	defer trainers.Close()
	e, err := conn.Connect(ctx, stderr)
	if err != nil {
		return err
	}
	defer e.Close()
	e.Svc.Trainers = trainers
	var progress io.Writer
	if conn.Format != "json" {
		progress = stderr
	}
	if conn.Local {
		stop, err := e.Svc.StartSweepWorkers(plan, progress)
		if err != nil {
			return err
		}
		defer stop()
	}
	if plan.Spec.Sweep != "" {
		// The file must be the one the sweep runs: extend adds budget,
		// nothing else.
		if err := e.Svc.ResolveWarmStart(ctx, &plan); err != nil {
			return err
		}
		if err := e.Svc.CheckSweepSpec(ctx, plan.Spec); err != nil {
			return err
		}
	}
	spec, err := e.Svc.ExtendSweep(ctx, name, in)
	if err != nil {
		return err
	}
	out, err := e.Svc.RunSweep(ctx, spec, progress)
	if err != nil {
		return err
	}
	return stackconn.Emit(stdout, conn.Format, out, textout.WriteSweep)
}

// executeSweep connects, starts the local workers if asked, runs (or
// re-attaches to) the sweep and reads its results table back from S3;
// then, if after is not nil, calls it while the connection is still open.
func executeSweep(ctx context.Context, conn *stackconn.Flags, plan campaign.SweepPlan, stderr io.Writer, after func(*stackconn.Env, campaign.SweepOutput) error, trainers *trainerrun.Host) (campaign.SweepOutput, error) {
	start := time.Now()
	var progress io.Writer
	if conn.Format != "json" {
		progress = stderr
	}
	e, err := conn.Connect(ctx, stderr)
	if err != nil {
		return campaign.SweepOutput{}, err
	}
	defer e.Close()
	e.Svc.Trainers = trainers
	if err := e.Svc.ResolveWarmStart(ctx, &plan); err != nil {
		return campaign.SweepOutput{}, err
	}
	if conn.Local {
		stop, err := e.Svc.StartSweepWorkers(plan, progress)
		if err != nil {
			return campaign.SweepOutput{}, err
		}
		defer stop()
	}
	out, err := e.Svc.RunSweep(ctx, plan.Spec, progress)
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
