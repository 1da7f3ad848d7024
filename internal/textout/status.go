package textout

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ptopofl/ptopofl/pipeline"
)

// WriteStatus prints the status st, a field a line.
func WriteStatus(stdout io.Writer, st pipeline.CampaignStatus) {
	fmt.Fprintf(stdout, "campaign   %s\nstate      %s\nrounds     %d/%d\n", st.Campaign, st.State, st.RoundsDone, st.RoundsTotal)
	if st.CurrentRound > 0 {
		fmt.Fprintf(stdout, "running    round %d%s\n", st.CurrentRound, roundStep(st.Round))
	}
	if r := st.Round; r != nil && len(r.Answered)+len(r.Dropped)+len(r.Awaited) > 0 {
		fmt.Fprintf(stdout, "answered   %s\n", siteList(r.Answered))
		if len(r.Dropped) > 0 {
			fmt.Fprintf(stdout, "failed     %s (out of this round)\n", siteList(r.Dropped))
		}
		if len(r.Awaited) > 0 {
			fmt.Fprintf(stdout, "awaiting   %s (dropped at the round deadline, in %s)\n", siteList(r.Awaited),
				time.Duration(r.DeadlineInSeconds*float64(time.Second)).Round(time.Second))
		}
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

// roundStep names the running round's step, when the round said.
func roundStep(r *pipeline.RoundProgress) string {
	if r == nil {
		return ""
	}
	switch r.Phase {
	case pipeline.PhaseInit, pipeline.PhaseDescriptor, pipeline.PhaseTrain, pipeline.PhaseEvaluate:
		return ", " + r.Phase + " phase at the sites"
	}
	return ", " + r.Phase + " on the server"
}

// siteList is sites comma-separated, or "none".
func siteList(sites []string) string {
	if len(sites) == 0 {
		return "none"
	}
	return strings.Join(sites, ", ")
}
