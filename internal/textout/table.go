package textout

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/store"
)

// CampaignNames lists the rows' campaigns, space-separated.
func CampaignNames(rs []store.SweepResultRow) string {
	var names []string
	for _, r := range rs {
		names = append(names, r.Campaign)
	}
	return strings.Join(names, " ")
}

// WriteTable prints one row per campaign and returns a line for each that
// did not finish. Its "settled" column is the round from which the mean
// AUC stays within eval.SettlingTolerance of its final value
// (eval.SettlingRound, the sweep's conv_round): how long a method is still
// moving.
func WriteTable(w io.Writer, rs []store.SweepResultRow) (failed []string) {
	fmt.Fprintf(w, "%-16s %9s %9s %7s  %-12s %s\n", "method", "final AUC", "accuracy", "settled", "flagged", "campaign")
	for _, r := range rs {
		label := campaign.TableLabel(r.Method, r.Setting)
		if r.State != pipeline.StateDone || math.IsNaN(r.FinalAUC) {
			fmt.Fprintf(w, "%-16s %9s %9s %7s  %-12s %s: %s\n", label, "-", "-", "-", "-", r.State, r.Error)
			failed = append(failed, fmt.Sprintf("%s: %s %s", label, r.State, r.Error))
			continue
		}
		flagged := r.Flagged
		if flagged == "" {
			flagged = "-"
		}
		fmt.Fprintf(w, "%-16s %9.4f %9.4f %7d  %-12s %s\n", label, r.FinalAUC, r.FinalAcc, r.ConvRound, flagged, r.Campaign)
	}
	return failed
}
