package campaign

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/store"
)

// ExportRows flattens manifests (round order) into one row per round and
// site of the federation, in spec order.
func ExportRows(manifests []StoredManifest) ([]store.ExportRow, error) {
	var rows []store.ExportRow
	for _, sm := range manifests {
		if sm.Err != nil {
			return nil, fmt.Errorf("round %d: %s: %w (starter verify reports the campaign's record)", sm.Round, sm.Key, sm.Err)
		}
		m := sm.Manifest
		for _, site := range m.Sites {
			r := store.ExportRow{
				Campaign: m.Campaign, Method: string(m.Method), Round: m.Round, Site: site,
				Participated:   slices.Contains(m.Participants, site),
				Flagged:        slices.Contains(m.Flagged, site),
				ManifestSHA256: sm.SHA256,
			}
			if i := slices.IndexFunc(m.Dropped, func(d pipeline.SiteDrop) bool { return d.Site == site }); i >= 0 {
				r.DropPhase, r.DropReason = &m.Dropped[i].Phase, &m.Dropped[i].Reason
			}
			if i := slices.IndexFunc(m.Clusters, func(c pipeline.SiteCluster) bool { return c.Site == site }); i >= 0 {
				c := m.Clusters[i]
				r.Cluster, r.Trust, r.Drift = &c.Cluster, &c.Trust, &c.Drift
				r.Flagged = r.Flagged || c.Flagged
			}
			if i := slices.IndexFunc(m.Metrics, func(x pipeline.SiteMetrics) bool { return x.Site == site }); i >= 0 {
				x := m.Metrics[i]
				r.AUC, r.Acc, r.NumTrain, r.NumTest = &x.AUC, &x.Accuracy, &x.NumTrain, &x.NumTest
			}
			if i := slices.IndexFunc(m.Released, func(x pipeline.SiteReleases) bool { return x.Site == site }); i >= 0 {
				r.Released, r.ReleasedNumbers = ReleasedText(m.Released[i].Items)
			}
			if m.Privacy != nil {
				if i := slices.IndexFunc(m.Privacy.Sites, func(x pipeline.SitePrivacy) bool { return x.Site == site }); i >= 0 {
					p := m.Privacy.Sites[i]
					r.EpsilonRound, r.Epsilon = &p.EpsilonRound, &p.Epsilon
				}
			}
			r.ModelSHA256 = siteArtifactSHA(m.Outputs, pipeline.RoleLocalModel, site)
			r.SiteModelSHA256 = siteArtifactSHA(m.Outputs, pipeline.RoleSiteModel, site)
			// A descriptor is an output of the round that computed it and an
			// input of the rounds that reuse it.
			r.DescriptorSHA256 = siteArtifactSHA(m.Outputs, pipeline.RoleDescriptor, site)
			if r.DescriptorSHA256 == nil {
				r.DescriptorSHA256 = siteArtifactSHA(m.Inputs, pipeline.RoleDescriptor, site)
			}
			rows = append(rows, r)
		}
	}
	return rows, nil
}

// ReleasedText is what a site released as "kind:numbers" separated by
// spaces ("kind:numbers within <group>" for what reached the server only
// inside a secure-aggregation group's sum), in the manifest's order, and
// the total count of numbers.
func ReleasedText(items []pipeline.Release) (string, int) {
	parts := make([]string, len(items))
	total := 0
	for i, it := range items {
		parts[i] = fmt.Sprintf("%s:%d", it.Kind, it.Numbers)
		if it.Within != "" {
			// Released only inside a secure-aggregation group's sum.
			parts[i] += " within " + it.Within
		}
		total += it.Numbers
	}
	return strings.Join(parts, " "), total
}

func siteArtifactSHA(recs []pipeline.ArtifactRecord, role, site string) *string {
	for _, a := range recs {
		if a.Role == role && a.Site == site {
			sha := a.Ref.SHA256
			return &sha
		}
	}
	return nil
}
