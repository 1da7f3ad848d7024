package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/store"
)

// historyRow is one round of `history`, read from its manifest.
type historyRow struct {
	Round        int                 `json:"round"`
	Outcome      string              `json:"outcome"`
	Participants []string            `json:"participants"`
	Dropped      []pipeline.SiteDrop `json:"dropped"`
	Clusters     map[string]int      `json:"clusters"`
	Trust        map[string]float64  `json:"trust"`
	Flagged      []string            `json:"flagged"`
	Drift        map[string]float64  `json:"drift"`
	MeanAUC      float64             `json:"mean_auc"`
	MeanAcc      float64             `json:"mean_acc"`
	Manifest     string              `json:"manifest"`
	SHA256       string              `json:"sha256"`
	PrevSHA256   string              `json:"prev_sha256"`
	SpecHash     string              `json:"spec_hash"`
	Artifacts    []historyArtifact   `json:"artifacts"` // inputs, then outputs, as the manifest lists them
}

// historyArtifact is one artifact a round read or wrote, with its full sha256.
type historyArtifact struct {
	Listed string `json:"listed_as"` // input or output
	Role   string `json:"role"`
	Site   string `json:"site,omitempty"`
	Name   string `json:"name,omitempty"`
	Key    string `json:"key"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// runHistory prints the per-round table of a campaign from its manifests in
// S3 (the audit record), so it works whether or not Temporal still holds
// the campaign's history.
func runHistory(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("history", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var conn connFlags
	e, campaign, err := openCampaign(ctx, fs, &conn, args, stderr)
	if err != nil {
		return err
	}
	defer e.Close()
	// The campaign's keys are built from its name, and a key function
	// refuses (panics on) a name no campaign can have.
	if err := artifact.ValidateName(campaign); err != nil {
		return inputErrorf("campaign: %v", err)
	}
	rows, err := readHistory(ctx, e.store, campaign)
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return fmt.Errorf("campaign %s: no round manifests under s3://%s/%s", campaign, e.store.Bucket(), artifact.CampaignPrefix(campaign))
	}
	if conn.format == "json" {
		return json.NewEncoder(stdout).Encode(map[string]any{"campaign": campaign, "rounds": rows})
	}
	fmt.Fprintf(stdout, "%5s  %-9s %5s  %-24s %-18s %-18s %-10s %8s  %8s %8s  %-8s\n",
		"round", "outcome", "sites", "dropped (why)", "clusters", "trust", "flagged", "max drift", "mean AUC", "mean acc", "manifest")
	for _, r := range rows {
		var drops []string
		for _, d := range r.Dropped {
			drops = append(drops, fmt.Sprintf("%s(%s/%s)", d.Site, d.Phase, d.Reason))
		}
		var cl, tr []string
		maxDrift := 0.0
		for _, s := range sortedKeys(r.Clusters) {
			cl = append(cl, fmt.Sprintf("%s:%d", s, r.Clusters[s]))
			tr = append(tr, fmt.Sprintf("%.2f", r.Trust[s]))
			maxDrift = max(maxDrift, r.Drift[s])
		}
		fmt.Fprintf(stdout, "%5d  %-9s %5d  %-24s %-18s %-18s %-10s %8.4f  %8.4f %8.4f  %.8s\n",
			r.Round, r.Outcome, len(r.Participants), dash(strings.Join(drops, " ")), dash(strings.Join(cl, " ")),
			dash(strings.Join(tr, " ")), dash(strings.Join(r.Flagged, ",")), maxDrift, r.MeanAUC, r.MeanAcc, r.SHA256)
		printArtifactHashes(stdout, r.Artifacts)
	}
	fmt.Fprintf(stdout, "manifests  s3://%s/%sround-*/manifest.json\n", e.store.Bucket(), artifact.CampaignPrefix(campaign))
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// readHistory reads every round manifest of campaign in round order and
// checks the sha256 chain as it goes.
func readHistory(ctx context.Context, st *store.Store, campaign string) ([]historyRow, error) {
	keys, err := st.List(ctx, artifact.CampaignPrefix(campaign))
	if err != nil {
		return nil, err
	}
	var rows []historyRow
	prev := ""
	for _, k := range keys {
		if !strings.HasSuffix(k, "/manifest.json") {
			continue
		}
		var m pipeline.RoundManifest
		ref, err := st.GetJSONKey(ctx, k, &m)
		if err != nil {
			return nil, err
		}
		if len(rows) > 0 && m.PrevManifestSHA256 != prev {
			return nil, fmt.Errorf("%s: prev_manifest_sha256 %s does not match the previous manifest's sha256 %s: the chain is broken", k, m.PrevManifestSHA256, prev)
		}
		prev = ref.SHA256
		r := historyRow{
			Round: m.Round, Outcome: m.Outcome, Participants: m.Participants, Dropped: m.Dropped,
			Clusters: map[string]int{}, Trust: map[string]float64{}, Drift: map[string]float64{},
			Flagged: m.Flagged, MeanAUC: m.Mean.AUC, MeanAcc: m.Mean.Accuracy,
			Manifest: "s3://" + st.Bucket() + "/" + k, SHA256: ref.SHA256, PrevSHA256: m.PrevManifestSHA256,
		}
		r.SpecHash = m.SpecHash
		for _, lst := range []struct {
			listed string
			recs   []pipeline.ArtifactRecord
		}{{"input", m.Inputs}, {"output", m.Outputs}} {
			for _, a := range lst.recs {
				r.Artifacts = append(r.Artifacts, historyArtifact{Listed: lst.listed, Role: a.Role, Site: a.Site, Name: a.Name, Key: a.Ref.Key, SHA256: a.Ref.SHA256, Size: a.Ref.Size})
			}
		}
		for _, c := range m.Clusters {
			r.Clusters[c.Site], r.Trust[c.Site], r.Drift[c.Site] = c.Cluster, c.Trust, c.Drift
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// printArtifactHashes prints a round's artifacts one line per role, inputs
// then outputs, each as owner:short-sha ("--format json" has the full
// sha256 and keys).
func printArtifactHashes(w io.Writer, as []historyArtifact) {
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
