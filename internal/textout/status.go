package textout

import (
	"fmt"
	"io"

	"github.com/ptopofl/ptopofl/pipeline"
)

// WriteStatus prints the status st, a field a line.
func WriteStatus(stdout io.Writer, st pipeline.CampaignStatus) {
	fmt.Fprintf(stdout, "campaign   %s\nstate      %s\nrounds     %d/%d\n", st.Campaign, st.State, st.RoundsDone, st.RoundsTotal)
	if st.CurrentRound > 0 {
		fmt.Fprintf(stdout, "running    round %d\n", st.CurrentRound)
	}
	if st.LastMetrics != nil {
		fmt.Fprintf(stdout, "last round %d: auc %.4f acc %.4f\n", st.LastMetrics.Round, st.LastMetrics.AUC, st.LastMetrics.Accuracy)
	}
	for _, d := range st.LastDropped {
		fmt.Fprintf(stdout, "dropped    %s in %s: %s %s\n", d.Site, d.Phase, d.Reason, d.Error)
	}
	for _, r := range []struct{ k, v string }{{"paused", st.PauseReason}, {"stop", st.StopReason}, {"failure", st.FailureReason}} {
		if r.v != "" {
			fmt.Fprintf(stdout, "%-10s %s\n", r.k, r.v)
		}
	}
	if st.LastManifest != nil {
		fmt.Fprintf(stdout, "manifest   %s\n", st.LastManifest.String())
	}
}
