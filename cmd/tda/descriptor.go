package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/tda"
)

const descriptorUsage = `usage: tda descriptor [--variant exact|triangle] [--rows 3,17,42 | --n-sub 80 --seed S] FILE.csv

Prints the 48-number pTopoFL descriptor of the site whose feature rows are in
FILE.csv (a header line is detected; a column named "y" holds labels and is
not a feature) as one JSON object
  {"descriptor": [48 numbers], "h0": [[birth, death], ...], "h1": [[birth, death], ...]}
with every number the shortest decimal that round-trips the float64.
--rows lists 0-based data-row indices to use, in order, and excludes
--n-sub and --seed, which draw a deterministic subsample instead.

flags:
`

// runDescriptor implements "tda descriptor".
func runDescriptor(args []string, out *bytes.Buffer, stderr io.Writer) error {
	fs := newFlagSet("descriptor", descriptorUsage, stderr)
	variant := fs.String("variant", tda.VariantExact, "H1 `variant`: exact (Vietoris–Rips) or triangle (paper-era statistic)")
	rowsFlag := fs.String("rows", "", "comma-separated 0-based `indices` of the data rows to use, in order")
	nSub := fs.Int("n-sub", 80, "subsample `size` when --rows is not given (all rows if the file has no more)")
	seed := fs.Uint64("seed", 0, "`seed` of the subsample drawn when --rows is not given")
	pos, err := parseArgs(fs, args, 1, "one FILE.csv")
	if err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["rows"] && (set["n-sub"] || set["seed"]) {
		return fmt.Errorf("--rows excludes --n-sub and --seed")
	}
	if *variant != tda.VariantExact && *variant != tda.VariantTriangle {
		return fmt.Errorf("--variant %q: want %s or %s", *variant, tda.VariantExact, tda.VariantTriangle)
	}
	if *nSub < 1 {
		return fmt.Errorf("--n-sub %d: want at least 1", *nSub)
	}
	tab, err := dataset.ReadCSV(pos[0], dataset.CSVOptions{})
	if err != nil {
		return err
	}
	opt := tda.DescriptorOptions{Variant: *variant, NSub: *nSub, Seed: *seed}
	if set["rows"] {
		if opt.Rows, err = parseRows(*rowsFlag, len(tab.X)); err != nil {
			return fmt.Errorf("--rows: %w", err)
		}
	}
	d, err := tda.ComputeDescriptor(tab.X, opt)
	if err != nil {
		return fmt.Errorf("%s: %w", pos[0], err)
	}
	return writeDescriptorJSON(out, d)
}

// parseRows parses a comma-separated list of distinct row indices in
// [0, n).
func parseRows(s string, n int) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("empty list")
	}
	parts := strings.Split(s, ",")
	rows := make([]int, len(parts))
	seen := make(map[int]int, len(parts))
	for k, part := range parts {
		i, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil {
			return nil, fmt.Errorf("entry %d %q is not an integer", k+1, part)
		}
		if i < 0 || i >= n {
			return nil, fmt.Errorf("entry %d: row %d is out of range: the file has %d data rows, numbered from 0", k+1, i, n)
		}
		if prev, dup := seen[i]; dup {
			return nil, fmt.Errorf("entry %d: row %d already given as entry %d", k+1, i, prev)
		}
		seen[i] = k + 1
		rows[k] = i
	}
	return rows, nil
}

// writeDescriptorJSON writes d as Python's json.dumps would write the same
// dict of floats, so the output compares byte for byte with the reference
// tools'. JSON has no infinity or NaN, so such a value is an error.
func writeDescriptorJSON(out *bytes.Buffer, d tda.Descriptor) error {
	num := func(x float64) (string, error) {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "", fmt.Errorf("descriptor value %v cannot be written as JSON", x)
		}
		return tda.FormatFloat(x), nil
	}
	var b strings.Builder
	b.WriteString(`{"descriptor": [`)
	for k, x := range d.Vector {
		s, err := num(x)
		if err != nil {
			return err
		}
		if k > 0 {
			b.WriteString(", ")
		}
		b.WriteString(s)
	}
	b.WriteString("]")
	for _, part := range []struct {
		key   string
		pairs []tda.Pair
	}{{"h0", d.H0}, {"h1", d.H1}} {
		fmt.Fprintf(&b, `, "%s": [`, part.key)
		for k, q := range part.pairs {
			bs, err := num(q.Birth)
			if err != nil {
				return err
			}
			ds, err := num(q.Death)
			if err != nil {
				return err
			}
			if k > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "[%s, %s]", bs, ds)
		}
		b.WriteString("]")
	}
	b.WriteString("}\n")
	out.WriteString(b.String())
	return nil
}
