package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"

	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/tda"
)

const diagramUsage = `usage: tda diagram [--dim 1] FILE.csv

Prints the Vietoris–Rips persistence diagram of the points in FILE.csv (one
point per row; a header line is detected, and a column named "y" is not a
coordinate) as "dim birth death" lines in the canonical form of
shared/golden/ph: dimensions 0..dim, sorted by (dim, birth, death), "inf" for
the infinite bar, numbers as Python's repr prints them.

flags:
`

// runDiagram implements "tda diagram".
func runDiagram(args []string, out *bytes.Buffer, stderr io.Writer) error {
	fs := newFlagSet("diagram", diagramUsage, stderr)
	dim := fs.Int("dim", 1, "highest homology `dimension` to print: 0 or 1")
	pos, err := parseArgs(fs, args, 1, "one FILE.csv")
	if err != nil {
		return err
	}
	if *dim != 0 && *dim != 1 {
		return fmt.Errorf("--dim %d: want 0 or 1", *dim)
	}
	tab, err := dataset.ReadCSV(pos[0], dataset.CSVOptions{})
	if err != nil {
		return err
	}
	dm, err := tda.EuclideanDistances(tab.X)
	if err != nil {
		return fmt.Errorf("%s: %w", pos[0], err)
	}
	d := tda.VietorisRips(dm)
	if *dim == 0 {
		d.H1 = nil
	}
	return tda.WriteDiagram(out, d)
}

// newFlagSet returns a flag set that reports to stderr and prints usage
// followed by the flag defaults.
func newFlagSet(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("tda "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	return fs
}
