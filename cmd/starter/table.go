package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/internal/stackconn"
	"github.com/ptopofl/ptopofl/internal/textout"
	"github.com/ptopofl/ptopofl/pipeline"
)

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
	rest, err := stackconn.ParseFlags(fs, args)
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
		e, err := campaign.ParseVariant(v)
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
	out, err := executeSweep(ctx, &f.conn, plan, stderr, func(e *stackconn.Env, out campaign.SweepOutput) error {
		if f.conn.Format == "json" {
			return nil
		}
		failed = textout.WriteTable(stdout, out.Rows)
		fmt.Fprintf(stdout, "\n%d campaigns in %.1fs (sweep %s)\n", len(out.Rows), out.WallSeconds, out.Sweep)
		e.Where().Write(stdout, "campaigns/<campaign>/", "<campaign>", "")
		fmt.Fprintln(stdout, "results    "+out.Results)
		fmt.Fprintln(stdout, "campaigns  "+textout.CampaignNames(out.Rows))
		return nil
	}, nil)
	if err != nil {
		return err
	}
	if f.conn.Format == "json" {
		rows := make([]campaign.TableRow, len(out.Rows))
		for i, r := range out.Rows {
			rows[i] = campaign.TableRow{Label: campaign.TableLabel(r.Method, r.Setting), Row: r}
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
