package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ptopofl/ptopofl/internal/stackconn"
	"github.com/ptopofl/ptopofl/store"
)

// runExport writes a campaign's manifests as one flat parquet file, one row
// per round and site, for pandas, pyarrow or DuckDB.
func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var out *string
	var path string
	own := func(fs *flag.FlagSet) func() error {
		out = fs.String("out", "", "parquet file to write (required)")
		return func() (err error) {
			path, err = exportPath(*out)
			return err
		}
	}
	return stackconn.Query(ctx, "export", args, stdout, stderr, own, func(e *stackconn.Env, name string) (exportOutput, error) {
		rows, rounds, err := e.Svc.Export(ctx, name)
		if err != nil {
			return exportOutput{}, err
		}
		b, err := store.EncodeExport(rows)
		if err != nil {
			return exportOutput{}, err
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			return exportOutput{}, fmt.Errorf("--out: %w", err)
		}
		if err := os.Rename(tmp, path); err != nil {
			return exportOutput{}, fmt.Errorf("--out: %w", err)
		}
		return exportOutput{Campaign: name, Out: path, Rows: len(rows), Rounds: rounds, Bytes: len(b)}, nil
	}, func(w io.Writer, o exportOutput) {
		fmt.Fprintf(w, "wrote %d rows (%d rounds) of campaign %s to %s (%d bytes)\n", o.Rows, o.Rounds, o.Campaign, o.Out, o.Bytes)
	}, nil)
}

// exportOutput is what `starter export --format json` prints.
type exportOutput struct {
	Campaign string `json:"campaign"`
	Out      string `json:"out"`
	Rows     int    `json:"rows"`
	Rounds   int    `json:"rounds"`
	Bytes    int    `json:"bytes"`
}

// exportPath checks --out and makes it absolute before the embedded S3
// server, which changes the working directory when it starts.
func exportPath(out string) (string, error) {
	if out == "" {
		return "", inputErrorf("--out FILE.parquet is required")
	}
	path, err := filepath.Abs(out)
	if err != nil {
		return "", inputErrorf("--out %s: %v", out, err)
	}
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || !fi.IsDir() {
		return "", inputErrorf("--out %s: directory %s does not exist", out, filepath.Dir(path))
	}
	return path, nil
}
