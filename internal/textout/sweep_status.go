package textout

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/ptopofl/ptopofl/searchview"
)

// WriteSweepStatus prints where a sweep stands: its state and, for an
// adaptive sweep, its strategy, the campaign-rounds spent of the budget,
// the incumbent, the rungs, the running campaigns and a line per trial.
func WriteSweepStatus(w io.Writer, st searchview.Status) {
	fmt.Fprintf(w, "sweep %s: %s (from %s), %s", st.Sweep, st.State, sourceText(st.Source), st.Strategy)
	if st.Strategy == "grid" {
		fmt.Fprintf(w, ", campaigns %d/%d (%d failed)\n", st.CampaignsDone, st.CampaignsTotal, st.Failed)
		writeReasons(w, st)
		writeRunning(w, st.Running)
		return
	}
	if st.Pruner != "" {
		fmt.Fprintf(w, " with the %s pruner", st.Pruner)
	}
	fmt.Fprintf(w, " on %s (%s), %d trials started", st.Objective, st.Mode, st.TrialsStarted)
	if st.WarmStart != "" {
		fmt.Fprintf(w, " beside %d from grid %s", len(st.Trials)-st.TrialsStarted, st.WarmStart)
	}
	budget := "no budget"
	if st.Budget > 0 {
		budget = fmt.Sprintf("of %d", st.Budget)
	}
	fmt.Fprintf(w, ", %d campaign-rounds %s (+%d running)\n", st.RoundsSpent, budget, st.RoundsRunning)
	if st.TrialCap > 0 {
		fmt.Fprintf(w, "trial cap  %d\n", st.TrialCap)
	}
	writeReasons(w, st)
	if inc := st.Incumbent; inc != nil {
		test := "—"
		if inc.Test != nil {
			test = fmt.Sprintf("%.4f", *inc.Test)
		}
		fmt.Fprintf(w, "incumbent  trial %d (%s) at round %d: %s %.4f, test %s\n", inc.Trial, configText(inc.Config), inc.Round, st.Objective, inc.Value, test)
	}
	var rungs []string
	for _, r := range st.Rungs {
		s := fmt.Sprintf("round %d: %d", r.Round, r.Reached)
		if r.Best != nil {
			s += fmt.Sprintf(" (best %.4f)", *r.Best)
		}
		if r.Running > 0 {
			s += fmt.Sprintf(", %d on the way", r.Running)
		}
		rungs = append(rungs, s)
	}
	if len(rungs) > 0 {
		fmt.Fprintf(w, "rungs      %s\n", strings.Join(rungs, "; "))
	}
	writeRunning(w, st.Running)
	fmt.Fprintf(w, "\n%5s  %-9s %4s %6s %6s %9s %9s  %s\n", "trial", "state", "rung", "rounds", "target", "value", "test", "configuration")
	for _, t := range st.Trials {
		state := t.State
		if t.Warm {
			state = "warm"
		}
		fmt.Fprintf(w, "%5d  %-9s %4d %6d %6d %9s %9s  %s\n", t.Trial, state, t.Rung, t.Rounds, t.Target, numberText(t.Value), numberText(t.Test), configText(t.Config))
	}
}

func writeReasons(w io.Writer, st searchview.Status) {
	for _, r := range []struct{ label, text string }{
		{"paused", st.PauseReason}, {"stopping", st.StopReason}, {"waiting", st.Waiting}, {"ended", st.Ended},
	} {
		if r.text != "" {
			fmt.Fprintf(w, "%-10s %s\n", r.label, r.text)
		}
	}
}

func writeRunning(w io.Writer, running []string) {
	if len(running) > 0 {
		fmt.Fprintf(w, "running    %s\n", strings.Join(running, ", "))
	}
}

func sourceText(s string) string {
	switch s {
	case "query":
		return "the running sweep"
	case "result":
		return "its result"
	case "record":
		return "its search.json: no worker answered"
	}
	return s
}

func numberText(x *float64) string {
	if x == nil {
		return "—"
	}
	return fmt.Sprintf("%.4f", *x)
}

// configText formats a configuration as "beta=0.3 clusters=2", names
// sorted.
func configText(c map[string]any) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(c)) {
		parts = append(parts, fmt.Sprintf("%s=%v", k, c[k]))
	}
	return strings.Join(parts, " ")
}
