package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/store"
)

// runExport writes a campaign's manifests as one flat parquet file, one row
// per round and site, for pandas, pyarrow or DuckDB.
func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var conn connFlags
	conn.register(fs)
	out := fs.String("out", "", "parquet file to write (required)")
	campaign, err := oneCampaignArg(fs, args)
	if err != nil {
		return err
	}
	if err := conn.check(); err != nil {
		return err
	}
	if *out == "" {
		return inputErrorf("--out FILE.parquet is required")
	}
	if err := artifact.ValidateName(campaign); err != nil {
		return inputErrorf("campaign: %v", err)
	}
	// The embedded S3 server changes the working directory when it starts:
	// resolve the path first.
	path, err := filepath.Abs(*out)
	if err != nil {
		return inputErrorf("--out %s: %v", *out, err)
	}
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || !fi.IsDir() {
		return inputErrorf("--out %s: directory %s does not exist", *out, filepath.Dir(path))
	}
	e, err := conn.connect(ctx, stderr)
	if err != nil {
		return err
	}
	defer e.Close()
	objs, err := readManifests(ctx, e.store, campaign)
	if err != nil {
		return err
	}
	if len(objs.manifests) == 0 {
		return fmt.Errorf("campaign %s: no round manifests under s3://%s/%s", campaign, e.store.Bucket(), artifact.CampaignPrefix(campaign))
	}
	rows, err := exportRows(objs.manifests)
	if err != nil {
		return err
	}
	b, err := store.EncodeExport(rows)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if conn.format == "json" {
		return json.NewEncoder(stdout).Encode(map[string]any{
			"campaign": campaign, "out": path, "rows": len(rows), "rounds": len(objs.manifests), "bytes": len(b),
		})
	}
	fmt.Fprintf(stdout, "wrote %d rows (%d rounds) of campaign %s to %s (%d bytes)\n", len(rows), len(objs.manifests), campaign, path, len(b))
	return nil
}

// exportRows flattens manifests (round order) into one row per round and
// site of the federation, in spec order.
func exportRows(manifests []storedManifest) ([]store.ExportRow, error) {
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

func siteArtifactSHA(recs []pipeline.ArtifactRecord, role, site string) *string {
	for _, a := range recs {
		if a.Role == role && a.Site == site {
			sha := a.Ref.SHA256
			return &sha
		}
	}
	return nil
}
