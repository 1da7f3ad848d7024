package campaign

import (
	"context"
	"fmt"

	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/store"
)

// HistoryRow is one round of `history`, read from its manifest.
type HistoryRow struct {
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
	Artifacts    []HistoryArtifact   `json:"artifacts"` // inputs, then outputs, as the manifest lists them
	// Attempt is the campaign's attempt that committed the round (absent:
	// the first); Superseded lists the manifests of earlier attempts at the
	// round that this one replaced.
	Attempt    int      `json:"attempt,omitempty"`
	Superseded []string `json:"superseded,omitempty"`
	// Released is what each site released in the round (the manifest's
	// record), Privacy the ε each site spent under dp record.
	Released []pipeline.SiteReleases `json:"released,omitempty"`
	Privacy  *pipeline.RoundPrivacy  `json:"privacy,omitempty"`
	// SecAgg is the round's secure aggregation under secure_aggregation
	// "secagg+" (the manifest's record: per group, its members,
	// survivors, dropped and threshold).
	SecAgg *pipeline.RoundSecAgg `json:"secure_aggregation,omitempty"`
}

// HistoryArtifact is one artifact a round read or wrote, with its full sha256.
type HistoryArtifact struct {
	Listed string `json:"listed_as"` // input or output
	Role   string `json:"role"`
	Site   string `json:"site,omitempty"`
	Name   string `json:"name,omitempty"`
	Key    string `json:"key"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// History reads the record of every round of campaign in round order, one
// row per round (the manifest of its latest attempt, naming the ones it
// superseded), and checks the sha256 chain as it goes.
func History(ctx context.Context, st *store.Store, campaign string) ([]HistoryRow, error) {
	objs, err := ReadManifests(ctx, st, campaign)
	if err != nil {
		return nil, err
	}
	return HistoryOf(objs, st.Bucket())
}

// HistoryOf is History of the manifests objs already read from bucket
// (ReadManifests, or ReadManifestsCached for a viewer that reads the same
// campaign again and again): one row per round, checking the chain.
func HistoryOf(objs Objects, bucket string) ([]HistoryRow, error) {
	effective, superseded := objs.Effective()
	var rows []HistoryRow
	prev := ""
	for _, sm := range effective {
		k, m := sm.Key, sm.Manifest
		if sm.Err != nil {
			return nil, fmt.Errorf("%s: %w", k, sm.Err)
		}
		if len(rows) > 0 && m.PrevManifestSHA256 != prev {
			return nil, fmt.Errorf("%s: prev_manifest_sha256 %s does not match the previous manifest's sha256 %s: the chain is broken", k, m.PrevManifestSHA256, prev)
		}
		prev = sm.SHA256
		r := HistoryRow{
			Round: m.Round, Outcome: m.Outcome, Participants: m.Participants, Dropped: m.Dropped,
			Clusters: map[string]int{}, Trust: map[string]float64{}, Drift: map[string]float64{},
			Flagged: m.Flagged, MeanAUC: m.Mean.AUC, MeanAcc: m.Mean.Accuracy,
			Manifest: "s3://" + bucket + "/" + k, SHA256: sm.SHA256, PrevSHA256: m.PrevManifestSHA256,
			Attempt: m.Attempt, Released: m.Released, Privacy: m.Privacy, SecAgg: m.SecAgg,
		}
		for _, o := range superseded {
			if o.Round == sm.Round {
				r.Superseded = append(r.Superseded, "s3://"+bucket+"/"+o.Key)
			}
		}
		r.SpecHash = m.SpecHash
		for _, lst := range []struct {
			listed string
			recs   []pipeline.ArtifactRecord
		}{{"input", m.Inputs}, {"output", m.Outputs}} {
			for _, a := range lst.recs {
				r.Artifacts = append(r.Artifacts, HistoryArtifact{Listed: lst.listed, Role: a.Role, Site: a.Site, Name: a.Name, Key: a.Ref.Key, SHA256: a.Ref.SHA256, Size: a.Ref.Size})
			}
		}
		for _, c := range m.Clusters {
			r.Clusters[c.Site], r.Trust[c.Site], r.Drift[c.Site] = c.Cluster, c.Trust, c.Drift
		}
		rows = append(rows, r)
	}
	return rows, nil
}
