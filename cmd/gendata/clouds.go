package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/eval"
)

// runClouds writes the point clouds the persistent-homology benchmarks time
// (eval.Blobs), one file per size, named as testdata/ph names them:
// "blobs_d<D>_n<N>_s<seed>.csv".
func runClouds(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("clouds", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seed := fs.Uint64("seed", 1, "seed of every random draw")
	out := fs.String("out", "", "output directory (created if missing; required)")
	sizes := fs.String("n", "500,1000,2000", "comma-separated numbers of points, one cloud each")
	d := fs.Int("d", 20, "dimension of the points")
	k := fs.Int("k", 4, "number of blobs")
	if err := parseFlags(fs, args, out); err != nil {
		return err
	}
	ns, err := parseInts(*sizes)
	if err != nil {
		return fmt.Errorf("%w: --n: %v", errInput, err)
	}
	if len(ns) == 0 {
		return fmt.Errorf("%w: --n: at least one number of points", errInput)
	}
	for _, n := range ns {
		if n < 1 {
			return fmt.Errorf("%w: --n: %d is not a positive number of points", errInput, n)
		}
	}
	clouds := make([][][]float64, len(ns))
	for i, n := range ns {
		opt := eval.DefaultBlobsOptions(n, *seed)
		opt.D, opt.K = *d, *k
		pts, err := eval.Blobs(opt)
		if err != nil {
			return fmt.Errorf("%w: %v", errInput, err)
		}
		clouds[i] = pts
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return fmt.Errorf("write clouds: %w", err)
	}
	for i, pts := range clouds {
		path := filepath.Join(*out, fmt.Sprintf("blobs_d%d_n%d_s%d.csv", *d, ns[i], *seed))
		var buf bytes.Buffer
		if err := dataset.EncodePointsCSV(&buf, pts); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("write clouds: %w", err)
		}
		fmt.Fprintln(stdout, path)
	}
	return nil
}
