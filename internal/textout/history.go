package textout

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/pipeline"
)

// History is what `starter history --format json` prints.
type History struct {
	Campaign  string                `json:"campaign"`
	Rounds    []campaign.HistoryRow `json:"rounds"`
	Manifests string                `json:"manifests"`
}

// WriteHistory prints a row per round, with its artifacts' hashes.
func WriteHistory(stdout io.Writer, h History) {
	fmt.Fprintf(stdout, "%5s  %-9s %5s  %-24s %-18s %-18s %-10s %9s  %8s %8s  %-8s\n",
		"round", "outcome", "sites", "dropped (why)", "clusters", "trust", "flagged", "max drift", "mean AUC", "mean acc", "manifest")
	for _, r := range h.Rounds {
		var drops []string
		for _, d := range r.Dropped {
			drops = append(drops, fmt.Sprintf("%s(%s/%s)", d.Site, d.Phase, d.Reason))
		}
		var cl, tr, siteTrust []string
		maxDrift, minTrust := 0.0, math.Inf(1)
		ids := map[int]bool{}
		for _, s := range slices.Sorted(maps.Keys(r.Clusters)) {
			cl = append(cl, fmt.Sprintf("%s:%d", s, r.Clusters[s]))
			tr = append(tr, fmt.Sprintf("%.2f", r.Trust[s]))
			siteTrust = append(siteTrust, fmt.Sprintf("%s:%.2f", s, r.Trust[s]))
			maxDrift = max(maxDrift, r.Drift[s])
			minTrust = min(minTrust, r.Trust[s])
			ids[r.Clusters[s]] = true
		}
		// A value wider than its column is summarised there and given in
		// full on a line of its own below the row, so that columns never
		// run into each other (ten sites' clusters do not fit 18
		// characters).
		var below [][2]string
		// fit is text if it fits width, else summary, with full (the same
		// values, each named by its site where the column leaves that out)
		// on a line below.
		fit := func(label, text, full string, width int, summary string) string {
			if len(text) <= width {
				return dash(text)
			}
			below = append(below, [2]string{label, full})
			return summary
		}
		dropped := strings.Join(drops, " ")
		dropCol := fit("dropped", dropped, dropped, 24, fmt.Sprintf("%d sites, below", len(drops)))
		clusters := strings.Join(cl, " ")
		clCol := fit("clusters", clusters, clusters, 18, fmt.Sprintf("%d clusters, below", len(ids)))
		trCol := fit("trust", strings.Join(tr, " "), strings.Join(siteTrust, " "), 18, fmt.Sprintf("min %.2f, below", minTrust))
		flagged := strings.Join(r.Flagged, ",")
		flCol := fit("flagged", flagged, flagged, 10, fmt.Sprintf("%d, below", len(r.Flagged)))
		fmt.Fprintf(stdout, "%5d  %-9s %5d  %-24s %-18s %-18s %-10s %9.4f  %8.4f %8.4f  %.8s\n",
			r.Round, r.Outcome, len(r.Participants), dropCol, clCol, trCol, flCol, maxDrift, r.MeanAUC, r.MeanAcc, r.SHA256)
		for _, b := range below {
			fmt.Fprintf(stdout, "       %-9s %s\n", b[0], b[1])
		}
		if r.Attempt > 1 {
			fmt.Fprintf(stdout, "       attempt %d", r.Attempt)
			if len(r.Superseded) > 0 {
				fmt.Fprintf(stdout, ", superseding %s", strings.Join(r.Superseded, ", "))
			}
			fmt.Fprintln(stdout)
		}
		writeReleased(stdout, r)
		writeSecAgg(stdout, r.SecAgg)
		writeArtifactHashes(stdout, r.Artifacts)
	}
	fmt.Fprintf(stdout, "manifests  %s\n", h.Manifests)
}

// writeSecAgg prints each secure-aggregation group of the round on a line
// ("secagg    global: 8 members, 6 in the sum, 5 revealed, dropped
// client1,client2; k 7, t 4").
func writeSecAgg(w io.Writer, s *pipeline.RoundSecAgg) {
	if s == nil {
		return
	}
	for _, g := range s.Groups {
		dropped := "none"
		if len(g.Dropped) > 0 {
			dropped = strings.Join(g.Dropped, ",")
		}
		fmt.Fprintf(w, "       secagg    %s: %d members, %d in the sum, %d revealed, dropped %s; k %d, t %d\n",
			g.Name, len(g.Members), len(g.Survivors), len(g.Revealed), dropped, g.Shares, g.Threshold)
	}
}

// writeReleased prints what each site released in the round, grouped by
// what they released alike ("released  site0..site7: descriptor:48
// model:21 metrics:2"), and each site's ε under dp record.
func writeReleased(w io.Writer, r campaign.HistoryRow) {
	var order []string
	sites := map[string][]string{}
	for _, sr := range r.Released {
		text, n := campaign.ReleasedText(sr.Items)
		text = fmt.Sprintf("%s (%d numbers)", text, n)
		if _, ok := sites[text]; !ok {
			order = append(order, text)
		}
		sites[text] = append(sites[text], sr.Site)
	}
	for _, text := range order {
		fmt.Fprintf(w, "       released  %s: %s\n", strings.Join(sites[text], ","), text)
	}
	if p := r.Privacy; p != nil {
		var eps []string
		for _, s := range p.Sites {
			eps = append(eps, fmt.Sprintf("%s:%.3f(+%.3f)", s.Site, s.Epsilon, s.EpsilonRound))
		}
		budget := "no budget"
		if p.Budget > 0 {
			budget = fmt.Sprintf("budget %g", p.Budget)
		}
		fmt.Fprintf(w, "       ε (δ %g, %s)  %s\n", p.Delta, budget, strings.Join(eps, " "))
		// Each site's own account: its lifetime ε over every campaign on
		// its data, from its ledger.
		var life []string
		var last *pipeline.SiteLifetime
		for _, s := range p.Sites {
			if s.Lifetime != nil {
				life = append(life, fmt.Sprintf("%s:%.3f", s.Site, s.Lifetime.Epsilon))
				last = s.Lifetime
			}
		}
		if last != nil {
			limit := "no budget"
			if last.Budget != nil {
				limit = fmt.Sprintf("budget %g", *last.Budget)
			}
			fmt.Fprintf(w, "       lifetime ε (the sites' ledgers, δ %g, %s)  %s\n", last.Delta, limit, strings.Join(life, " "))
		}
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// writeArtifactHashes prints a round's artifacts one line per role, inputs
// then outputs, each as owner:short-sha ("--format json" has the full
// sha256 and keys).
func writeArtifactHashes(w io.Writer, as []campaign.HistoryArtifact) {
	type group struct{ listed, role string }
	var order []group
	lines := map[group][]string{}
	for _, a := range as {
		g := group{a.Listed, a.Role}
		if _, ok := lines[g]; !ok {
			order = append(order, g)
		}
		owner := a.Site + a.Name
		if owner == "" {
			owner = "server"
		}
		lines[g] = append(lines[g], fmt.Sprintf("%s:%.8s", owner, a.SHA256))
	}
	for _, g := range order {
		dir := "in "
		if g.listed == "output" {
			dir = "out"
		}
		fmt.Fprintf(w, "       %s %-13s %s\n", dir, g.role, strings.Join(lines[g], " "))
	}
}
