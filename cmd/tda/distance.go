package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"

	"github.com/ptopofl/ptopofl/tda"
)

const distanceUsage = `usage: tda distance [--p 2|inf] [--dim 1] A.diag B.diag

Prints the p-Wasserstein distance (L∞ ground metric, points may be matched to
the diagonal) between the dimension-dim bars of two diagram files in the
canonical "dim birth death" form; bars of other dimensions are ignored.
--p inf gives the bottleneck distance. Infinite bars are matched only with
infinite bars, so different numbers of them give "inf". The distance is
printed as Python's repr prints a float.

flags:
`

// runDistance implements "tda distance".
func runDistance(args []string, out *bytes.Buffer, stderr io.Writer) error {
	fs := newFlagSet("distance", distanceUsage, stderr)
	pFlag := fs.String("p", "2", "Wasserstein `order`: a number ≥ 1, or inf for the bottleneck distance")
	dim := fs.Int("dim", 1, "homology `dimension` whose bars are compared: 0 or 1")
	pos, err := parseArgs(fs, args, 2, "two diagram files A.diag B.diag")
	if err != nil {
		return err
	}
	p, err := strconv.ParseFloat(*pFlag, 64)
	if err != nil || math.IsNaN(p) || p < 1 {
		return fmt.Errorf("--p %q: want a number ≥ 1 or inf", *pFlag)
	}
	if *dim != 0 && *dim != 1 {
		return fmt.Errorf("--dim %d: want 0 or 1", *dim)
	}
	a, err := readDiagramFile(pos[0])
	if err != nil {
		return err
	}
	b, err := readDiagramFile(pos[1])
	if err != nil {
		return err
	}
	fmt.Fprintln(out, tda.FormatFloat(tda.Wasserstein(a.Dim(*dim), b.Dim(*dim), p)))
	return nil
}

// readDiagramFile reads a diagram file; its errors are "file:line:column:
// message" or "file: message".
func readDiagramFile(path string) (tda.Diagram, error) {
	f, err := os.Open(path)
	if err != nil {
		return tda.Diagram{}, fmt.Errorf("%s: cannot open file: %w", path, err)
	}
	defer f.Close()
	d, err := tda.ReadDiagram(f)
	var se *tda.DiagramSyntaxError
	if errors.As(err, &se) {
		return tda.Diagram{}, fmt.Errorf("%s:%d:%d: %s", path, se.Line, se.Column, se.Msg)
	}
	if err != nil {
		return tda.Diagram{}, fmt.Errorf("%s: %w", path, err)
	}
	if len(d.H0)+len(d.H1) == 0 {
		// Every diagram of a non-empty cloud has its infinite H0 bar, so an
		// empty file is almost surely a mistake rather than an empty diagram.
		return tda.Diagram{}, fmt.Errorf("%s:1:1: empty diagram file: no \"dim birth death\" lines", path)
	}
	return d, nil
}
