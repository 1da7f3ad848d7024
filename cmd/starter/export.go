package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ptopofl/ptopofl/artifact"
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
	rows, rounds, err := e.svc.Export(ctx, campaign)
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
			"campaign": campaign, "out": path, "rows": len(rows), "rounds": rounds, "bytes": len(b),
		})
	}
	fmt.Fprintf(stdout, "wrote %d rows (%d rounds) of campaign %s to %s (%d bytes)\n", len(rows), rounds, campaign, path, len(b))
	return nil
}
