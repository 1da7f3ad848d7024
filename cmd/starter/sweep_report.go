package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/internal/stackconn"
	"github.com/ptopofl/ptopofl/report"
)

// runSweepReport shows an adaptive sweep's best-so-far curve against the
// campaign-rounds spent and its trials' rungs, optionally beside a grid
// sweep's curve, and writes report.md, report.html and the figure with
// --out: `starter sweep report SWEEP [--grid GRID_SWEEP] [--out DIR]`.
func runSweepReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var grid, out string
	conn, rest, err := stackconn.ParseCommand("sweep report", args, stderr, func(fs *flag.FlagSet) func() error {
		fs.StringVar(&grid, "grid", "", "a finished grid sweep over the same space and metric, drawn on the same axis")
		fs.StringVar(&out, "out", "", "write report.md, report.html and the figure into this directory")
		return nil
	}, func(rest []string) error {
		if len(rest) != 1 {
			return inputErrorf("want one sweep: starter sweep report SWEEP [--grid GRID_SWEEP] [--out DIR]")
		}
		if err := artifact.ValidateName(rest[0]); err != nil {
			return inputErrorf("sweep %v", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	e, err := conn.Connect(ctx, stderr)
	if err != nil {
		return err
	}
	defer e.Close()
	in, err := e.Svc.SweepReport(ctx, rest[0], grid)
	if err != nil {
		return err
	}
	var files []string
	if out != "" {
		rep, err := report.Search(in)
		if err != nil {
			return err
		}
		if files, err = campaign.WriteReport(out, rep); err != nil {
			return err
		}
	}
	if conn.Format == "json" {
		return json.NewEncoder(stdout).Encode(in)
	}
	fmt.Fprintf(stdout, "sweep %s: %s on %s, %d campaign-rounds over %d trials (%d campaigns each)\n\n",
		in.Sweep, in.Strategy, in.Objective, in.Spent, len(in.Trials), in.PerTrial)
	fmt.Fprintf(stdout, "%8s %6s %6s %9s %9s\n", "spent", "trial", "round", "val", "test")
	for _, p := range in.Curve {
		fmt.Fprintf(stdout, "%8d %6d %6d %9.4f %9.4f\n", p.Spent, p.Trial, p.Round, p.Val, p.Test)
	}
	fmt.Fprintf(stdout, "\n%5s  %-10s %-40s %s\n", "trial", "status", "configuration", "rounds reached (validation) — why it stopped")
	for _, t := range in.Trials {
		rungs := ""
		for i, r := range t.Rungs {
			if i > 0 {
				rungs += ", "
			}
			rungs += fmt.Sprintf("%d (%.4f)", r.Round, r.Val)
		}
		fmt.Fprintf(stdout, "%5d  %-10s %-40s %s — %s\n", t.Trial, t.Status, t.Config, rungs, t.Why)
	}
	if g := in.Grid; g != nil && len(g.Points) > 0 {
		b := g.Points[len(g.Points)-1]
		fmt.Fprintf(stdout, "\ngrid %s: best test %.4f (validation %.4f) after %d campaign-rounds\n", g.Sweep, b.Test, b.Val, b.Spent)
	}
	if out != "" {
		fmt.Fprintf(stdout, "\nreport     %s (%d files)\n", filepath.Join(out, "report.html"), len(files))
	}
	return nil
}
