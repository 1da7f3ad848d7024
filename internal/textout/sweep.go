package textout

import (
	"fmt"
	"io"

	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/eval"
)

// WriteSweep prints a sweep's results: a row per campaign, the mean ±
// standard deviation of the final AUC over seeds per setting, and where the
// tables are (and, for a search, its trials and its best setting).
func WriteSweep(w io.Writer, out campaign.SweepOutput) {
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
	if p := out.Privacy; p != nil {
		budget := ""
		if p.Budget != nil {
			budget = fmt.Sprintf(" of budget %g", *p.Budget)
		}
		fmt.Fprintf(w, "privacy    ε %.4f%s at δ %g over the whole sweep (largest of any site; %d sites)\n", p.Epsilon, budget, p.Delta, len(p.PerSite))
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
