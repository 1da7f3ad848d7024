package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/store"
)

// parseVariant parses "LABEL:METHOD:name=v,name=v" (an ablation such as
// "ptopofl_M1:ptopofl:clusters=1").
func parseVariant(v string) (campaign.Variant, error) {
	parts := strings.SplitN(v, ":", 3)
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
		return campaign.Variant{}, inputErrorf("--variant %q: want LABEL:METHOD[:NAME=VALUE,...]", v)
	}
	e := campaign.Variant{Label: parts[0], Method: parts[1]}
	if len(parts) == 3 && parts[2] != "" {
		e.Set = strings.Split(parts[2], ",")
	}
	return e, nil
}

// tableRow is one row of `starter table --format json`: the sweep's
// result row under the table's label.
type tableRow struct {
	Label string
	Row   store.SweepResultRow
}

// MarshalJSON writes the result row's object with "label" first.
func (r tableRow) MarshalJSON() ([]byte, error) {
	row, err := json.Marshal(r.Row)
	if err != nil {
		return nil, err
	}
	label, err := json.Marshal(r.Label)
	if err != nil {
		return nil, err
	}
	out := append([]byte(`{"label":`), label...)
	if len(row) > 2 { // row is a non-empty object
		out = append(append(out, ','), row[1:]...)
	} else {
		out = append(out, '}')
	}
	return out, nil
}

// runTable runs several methods on one federation and prints one results
// table (`make run`). It is a front over `starter sweep`: the table
// becomes a sweep (campaign.TablePlan), so it is durable and running it
// again re-attaches to it.
func runTable(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("table", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f campaignFlags
	f.register(fs)
	methods := fs.String("methods", "ptopofl,fedavg,fedprox,scaffold,pfedme,local,median,trimmed-mean,krum", "comma-separated methods, one campaign each")
	var variants stringList
	fs.Var(&variants, "variant", "extra row LABEL:METHOD:NAME=VALUE,... (e.g. ptopofl_M1:ptopofl:clusters=1; repeatable)")
	parallel := fs.Int("parallel", 3, "campaigns running at once")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if f.spec.Campaign != "" {
		return inputErrorf("--campaign: table names each campaign itself")
	}
	cf, fed, err := f.prepare(fs, rest)
	if err != nil {
		return err
	}
	// A table runs as a sweep, whose campaigns keep every artifact: say so
	// rather than refuse the rows as a setting the sweep cannot express.
	if f.spec.KeepSiteModels != 0 || (cf != nil && cf.KeepSiteModels != 0) {
		return inputErrorf("--keep-site-models / keep_site_models: a table runs as a sweep, whose campaigns keep every artifact; use starter run for a retention policy")
	}
	var entries []campaign.Variant
	for _, m := range strings.Split(*methods, ",") {
		if m = strings.TrimSpace(m); m != "" {
			entries = append(entries, campaign.Variant{Label: m, Method: m})
		}
	}
	for _, v := range variants {
		e, err := parseVariant(v)
		if err != nil {
			return err
		}
		entries = append(entries, e)
	}
	if len(entries) == 0 {
		return inputErrorf("--methods: at least one method")
	}
	// Every spec is built and validated before the stack starts.
	plan, err := campaign.TablePlan(cf, f.spec, fed, entries, *parallel)
	if err != nil {
		return err
	}
	var failed []string
	out, err := executeSweep(ctx, &f.conn, plan, stderr, func(e *env, out campaign.SweepOutput) error {
		if f.conn.format == "json" {
			return nil
		}
		failed = printTable(stdout, out.Rows)
		fmt.Fprintf(stdout, "\n%d campaigns in %.1fs (sweep %s)\n", len(out.Rows), out.WallSeconds, out.Sweep)
		printWhere(stdout, e, "campaigns/<campaign>/", "<campaign>", "")
		fmt.Fprintln(stdout, "results    "+out.Results)
		fmt.Fprintln(stdout, "campaigns  "+campaignNames(out.Rows))
		return nil
	}, nil)
	if err != nil {
		return err
	}
	if f.conn.format == "json" {
		rows := make([]tableRow, len(out.Rows))
		for i, r := range out.Rows {
			rows[i] = tableRow{Label: campaign.TableLabel(r.Method, r.Setting), Row: r}
			if r.State != pipeline.StateDone {
				failed = append(failed, fmt.Sprintf("%s: %s %s", rows[i].Label, r.State, r.Error))
			}
		}
		if err := json.NewEncoder(stdout).Encode(map[string]any{"sweep": out.Sweep, "results": rows, "wall_seconds": out.WallSeconds}); err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d campaigns did not finish:\n  %s", len(failed), len(out.Rows), strings.Join(failed, "\n  "))
	}
	return nil
}

func campaignNames(rs []store.SweepResultRow) string {
	var names []string
	for _, r := range rs {
		names = append(names, r.Campaign)
	}
	return strings.Join(names, " ")
}

// printTable prints one row per campaign and returns a line for each that
// did not finish. Its "settled" column is the round from which the mean
// AUC stays within eval.SettlingTolerance of its final value
// (eval.SettlingRound, the sweep's conv_round): how long a method is still
// moving.
func printTable(w io.Writer, rs []store.SweepResultRow) (failed []string) {
	fmt.Fprintf(w, "%-16s %9s %9s %7s  %-12s %s\n", "method", "final AUC", "accuracy", "settled", "flagged", "campaign")
	for _, r := range rs {
		label := campaign.TableLabel(r.Method, r.Setting)
		if r.State != pipeline.StateDone || math.IsNaN(r.FinalAUC) {
			fmt.Fprintf(w, "%-16s %9s %9s %7s  %-12s %s: %s\n", label, "-", "-", "-", "-", r.State, r.Error)
			failed = append(failed, fmt.Sprintf("%s: %s %s", label, r.State, r.Error))
			continue
		}
		flagged := r.Flagged
		if flagged == "" {
			flagged = "-"
		}
		fmt.Fprintf(w, "%-16s %9.4f %9.4f %7d  %-12s %s\n", label, r.FinalAUC, r.FinalAcc, r.ConvRound, flagged, r.Campaign)
	}
	return failed
}
