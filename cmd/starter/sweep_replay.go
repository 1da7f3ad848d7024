package main

import (
	"context"
	"flag"
	"io"
	"strings"

	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/internal/stackconn"
	"github.com/ptopofl/ptopofl/internal/textout"
	"github.com/ptopofl/ptopofl/search"
)

// runSweepReplay runs a search strategy against a finished grid sweep's
// per-round table at no training cost (search.Replay over
// campaign.ReplayTable): `starter sweep replay --from GRID_SWEEP --strategy
// S --seeds N`.
func runSweepReplay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		from, strategy, metric, meth, feds, pruner, mode string
		seeds, budget, minRounds, eta, concurrency       int
		fraction, tol                                    float64
	)
	conn, _, err := stackconn.ParseCommand("sweep replay", args, stderr, func(fs *flag.FlagSet) func() error {
		fs.StringVar(&from, "from", "", "the finished grid sweep to replay against (run with validation_fraction > 0)")
		fs.StringVar(&strategy, "strategy", string(search.StrategyASHA), "strategy: grid, random, asha, tpe, tpe+asha, hyperband")
		fs.IntVar(&seeds, "seeds", 10, "search seeds 1..N, one replay each")
		fs.IntVar(&budget, "budget", 0, "campaign-rounds each replay may train (default: --budget-fraction of the grid's)")
		fs.Float64Var(&fraction, "budget-fraction", 1.0/3, "the budget as a share of the grid's campaign-rounds")
		fs.StringVar(&metric, "metric", "val_auc", "the metric the strategy ranks on: val_auc or val_acc (the held-out training rows)")
		fs.StringVar(&meth, "method", "", "the sweep's method to replay (required when it has several)")
		fs.StringVar(&feds, "federations", "", "comma-separated federations to average over (default: all)")
		fs.IntVar(&minRounds, "min-rounds", 0, "ASHA's first rung (0: the default, max(1, R/η³))")
		fs.IntVar(&eta, "eta", 0, "ASHA's reduction factor η (0: the default, 3)")
		fs.Float64Var(&tol, "tolerance", 0.005, "a replay succeeds when its incumbent's test metric is within this of the grid's best")
		fs.IntVar(&concurrency, "concurrency", 1, "trials trained at once, as a live sweep of one campaign per trial at that concurrency")
		fs.StringVar(&pruner, "pruner", "", "median: Optuna's median pruner (random and tpe), with its defaults")
		fs.StringVar(&mode, "mode", "max", "max or min: rank the highest or the lowest validation metric first")
		return func() error {
			if from == "" {
				return inputErrorf("--from: name the finished grid sweep to replay against")
			}
			if seeds < 1 {
				return inputErrorf("--seeds %d: want >= 1", seeds)
			}
			if !(fraction > 0 && fraction <= 1) {
				return inputErrorf("--budget-fraction %v: want (0, 1]", fraction)
			}
			if concurrency < 1 {
				return inputErrorf("--concurrency %d: want >= 1", concurrency)
			}
			if mode != "max" && mode != "min" {
				return inputErrorf("--mode %q: want max or min", mode)
			}
			if err := search.Pruner(pruner).Validate(search.Strategy(strategy)); err != nil {
				return inputErrorf("--pruner: %v", err)
			}
			return nil
		}
	}, func(rest []string) error {
		if len(rest) > 0 {
			return inputErrorf("unexpected argument %q", rest[0])
		}
		return nil
	})
	if err != nil {
		return err
	}
	e, err := conn.Connect(ctx, stderr)
	if err != nil {
		return err
	}
	defer e.Close()
	o := campaign.ReplayTableOptions{Method: meth, Metric: metric}
	if feds != "" {
		o.Federations = strings.Split(feds, ",")
	}
	table, err := e.Svc.ReplayTable(ctx, from, o)
	if err != nil {
		return err
	}
	out, err := campaign.ReplayGrid(from, metric, table, campaign.ReplayGridOptions{Strategy: search.Strategy(strategy), Seeds: seeds,
		Budget: budget, BudgetFraction: fraction, ASHA: search.ASHAOptions{MinRounds: minRounds, Eta: eta}, Tolerance: tol,
		Concurrency: concurrency, Pruner: search.Pruner(pruner), Minimise: mode == "min"})
	if err != nil {
		return err
	}
	return stackconn.Emit(stdout, conn.Format, out, textout.WriteReplay)
}
