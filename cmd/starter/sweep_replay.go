package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/search"
)

// replaySeed is one search seed's replay in `starter sweep replay`.
type replaySeed struct {
	Seed      uint64           `json:"seed"`
	Trials    int              `json:"trials"`
	Spent     int              `json:"rounds_spent"`
	Incumbent search.Incumbent `json:"incumbent"`
	// Gap is the grid's best test metric (selected on validation) minus
	// the incumbent's test metric at the grid's rounds.
	Gap float64 `json:"gap"`
}

// replayOutput is `starter sweep replay --format json`.
type replayOutput struct {
	Sweep      string           `json:"sweep"`
	Strategy   string           `json:"strategy"`
	Metric     string           `json:"metric"`
	GridSize   int              `json:"grid_size"`
	GridRounds int              `json:"grid_rounds"` // campaign-rounds of the whole grid (one per configuration and round)
	Budget     int              `json:"budget"`
	GridBest   search.Incumbent `json:"grid_best"`
	Tolerance  float64          `json:"tolerance"`
	Within     int              `json:"within"` // seeds whose incumbent is within Tolerance of the grid's best
	Seeds      []replaySeed     `json:"seeds"`
}

// runSweepReplay runs a search strategy against a finished grid sweep's
// per-round table at no training cost (search.Replay over
// campaign.ReplayTable): `starter sweep replay --from GRID_SWEEP --strategy
// S --seeds N`.
func runSweepReplay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		from, strategy, metric, meth, feds string
		seeds, budget, minRounds, eta      int
		fraction, tol                      float64
	)
	conn, _, err := parseCommand("sweep replay", args, stderr, func(fs *flag.FlagSet) func() error {
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
	e, err := conn.connect(ctx, stderr)
	if err != nil {
		return err
	}
	defer e.Close()
	o := campaign.ReplayTableOptions{Method: meth, Metric: metric}
	if feds != "" {
		o.Federations = strings.Split(feds, ",")
	}
	table, err := e.svc.ReplayTable(ctx, from, o)
	if err != nil {
		return err
	}
	rounds := len(table.Rows[0].Val)
	out := replayOutput{Sweep: from, Strategy: strategy, Metric: metric, GridSize: len(table.Rows),
		GridRounds: len(table.Rows) * rounds, GridBest: search.GridBest(table), Tolerance: tol}
	out.Budget = budget
	if out.Budget == 0 {
		out.Budget = int(math.Floor(fraction * float64(out.GridRounds)))
	}
	opts := search.ReplayOptions{ASHA: search.ASHAOptions{MinRounds: minRounds, Eta: eta}, Budget: out.Budget}
	for sd := 1; sd <= seeds; sd++ {
		res, err := search.Replay(table, search.Strategy(strategy), opts, uint64(sd))
		if err != nil {
			return inputErrorf("replay %s: %v", strategy, err)
		}
		rs := replaySeed{Seed: uint64(sd), Trials: len(res.Trials), Spent: res.Spent, Incumbent: res.Incumbent,
			Gap: out.GridBest.TestAtMax - res.Incumbent.TestAtMax}
		if rs.Gap <= tol {
			out.Within++
		}
		out.Seeds = append(out.Seeds, rs)
	}
	if conn.format == "json" {
		return json.NewEncoder(stdout).Encode(out)
	}
	fmt.Fprintf(stdout, "replay of %s against sweep %s: %d configurations × %d rounds = %d campaign-rounds; budget %d, ranked on %s\n",
		strategy, from, out.GridSize, rounds, out.GridRounds, out.Budget, metric)
	fmt.Fprintf(stdout, "grid's best on validation: %s  val %.4f  test %.4f\n", out.GridBest.Config, out.GridBest.Val, out.GridBest.TestAtMax)
	fmt.Fprintf(stdout, "%4s %6s %6s  %-40s %8s %8s %8s\n", "seed", "trials", "spent", "incumbent", "val", "test", "gap")
	for _, s := range out.Seeds {
		fmt.Fprintf(stdout, "%4d %6d %6d  %-40s %8.4f %8.4f %8.4f\n", s.Seed, s.Trials, s.Spent, s.Incumbent.Config, s.Incumbent.Val, s.Incumbent.TestAtMax, s.Gap)
	}
	fmt.Fprintf(stdout, "within %.3f of the grid's best test metric in %d of %d seeds\n", tol, out.Within, len(out.Seeds))
	return nil
}
