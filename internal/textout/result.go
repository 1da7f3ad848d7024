package textout

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
)

// WriteResult prints a campaign's result: its final metrics, clusters,
// trust, flagged sites, privacy spent, and where its artifacts are.
func WriteResult(w io.Writer, r campaign.Result, where Where) {
	fmt.Fprintf(w, "campaign   %s (%s, preset %s): %s after %d rounds in %.1fs\n", r.Campaign, r.Method, r.Preset, r.State, r.RoundsDone, r.WallSeconds)
	fmt.Fprintf(w, "final AUC  %.4f\nfinal acc  %.4f\nconv round %d\n", r.FinalAUC, r.FinalAcc, r.ConvRound)
	if len(r.Clusters) > 0 {
		fmt.Fprintf(w, "clusters   %v\ntrust      %v\n", fmtClusters(r.Clusters), fmtTrust(r.Trust))
	}
	if len(r.Flagged) > 0 {
		fmt.Fprintf(w, "flagged    %s\n", strings.Join(r.Flagged, ", "))
	}
	if p := r.Privacy; p != nil {
		budget := ""
		if p.Budget > 0 {
			budget = fmt.Sprintf(" of budget %g", p.Budget)
		}
		fmt.Fprintf(w, "privacy    ε %.3f%s at δ %g (largest of any site; per site in starter history)\n", p.Epsilon, budget, p.Delta)
	}
	if r.StopReason != "" {
		fmt.Fprintf(w, "stopped    %s\n", r.StopReason)
	}
	where.Write(w, artifact.CampaignPrefix(r.Campaign), r.Campaign, r.LastManifest)
}

// WritePrivacyPlan says, before a dp record campaign starts, the noise its
// plan set and what each site will spend if every planned round runs.
func WritePrivacyPlan(w io.Writer, spec pipeline.CampaignSpec) {
	h := spec.Hyperparameters
	if !h.IsDP() {
		return
	}
	recs := make([]method.SiteRecords, len(spec.Sites))
	for i, s := range spec.Sites {
		recs[i] = method.SiteRecords{Site: s.Name, Train: s.NTrain, Test: s.NTest}
	}
	budgets, err := method.SpendPlan(spec.Method, spec.Preset, h, spec.Rounds, recs)
	if err != nil {
		return
	}
	desc := ""
	if h.DPDescriptorNoise > 0 {
		desc = fmt.Sprintf(", %g (descriptors)", h.DPDescriptorNoise)
	}
	fmt.Fprintf(w, "privacy: dp record, noise multipliers %g (training steps)%s, %g (metrics), clip %g\n",
		h.DPNoise, desc, h.DPMetricsNoise, dpClip(h))
	for _, line := range campaign.PrivacySummary(budgets) {
		fmt.Fprintf(w, "  planned over %d rounds  %s\n", spec.Rounds, line)
	}
}

func dpClip(h method.Hyperparameters) float64 {
	p, _ := method.Lookup("dp_clip")
	return p.Get(h).Num
}

func fmtTrust(t map[string]float64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(t)) {
		parts = append(parts, fmt.Sprintf("%s:%.3f", k, t[k]))
	}
	return strings.Join(parts, " ")
}

// fmtClusters prints site:cluster pairs in site order.
func fmtClusters(c map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(c)) {
		parts = append(parts, fmt.Sprintf("%s:%d", k, c[k]))
	}
	return strings.Join(parts, " ")
}

// Where is where a campaign's artifacts are: the bucket, and the local
// stack's data directory when the objects are files on this machine ("":
// a remote store).
type Where struct {
	Bucket  string
	DataDir string
}

// Write says where a campaign's artifacts and manifests are: prefix is its
// key prefix (artifact.CampaignPrefix, or a pattern for a table of
// campaigns) and name what `starter history` takes.
func (wh Where) Write(w io.Writer, prefix, name, lastManifest string) {
	fmt.Fprintf(w, "artifacts  s3://%s/%s (history: starter history %s)\n", wh.Bucket, prefix, name)
	if lastManifest != "" {
		fmt.Fprintf(w, "manifest   %s\n", lastManifest)
	}
	if wh.DataDir != "" {
		fmt.Fprintf(w, "on disk    %s/s3/%s/%s\n", wh.DataDir, wh.Bucket, prefix)
	}
}
