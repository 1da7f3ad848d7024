package textout

import (
	"fmt"
	"io"

	"github.com/ptopofl/ptopofl/campaign"
)

// WriteReplay prints a replay against a grid: the grid's best, a row per
// search seed, and how many seeds came within the tolerance.
func WriteReplay(w io.Writer, r campaign.ReplayReport) {
	rounds := 0
	if r.GridSize > 0 {
		rounds = r.GridRounds / r.GridSize
	}
	fmt.Fprintf(w, "replay of %s against sweep %s: %d configurations × %d rounds = %d campaign-rounds; budget %d, ranked on %s\n",
		r.Strategy, r.Sweep, r.GridSize, rounds, r.GridRounds, r.Budget, r.Metric)
	fmt.Fprintf(w, "grid's best on validation: %s  val %.4f  test %.4f\n", r.GridBest.Config, r.GridBest.Val, r.GridBest.TestAtMax)
	fmt.Fprintf(w, "%4s %6s %6s  %-40s %8s %8s %8s\n", "seed", "trials", "spent", "incumbent", "val", "test", "gap")
	for _, s := range r.Seeds {
		fmt.Fprintf(w, "%4d %6d %6d  %-40s %8.4f %8.4f %8.4f\n", s.Seed, s.Trials, s.Spent, s.Incumbent.Config, s.Incumbent.Val, s.Incumbent.TestAtMax, s.Gap)
	}
	fmt.Fprintf(w, "within %.3f of the grid's best test metric in %d of %d seeds\n", r.Tolerance, r.Within, len(r.Seeds))
}
