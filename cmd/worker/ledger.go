package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/ptopofl/ptopofl/internal/textout"
	"github.com/ptopofl/ptopofl/siteledger"
)

// runLedger is `worker ledger --secret-dir DIR [--format text|json]`: the
// privacy ledger of every site whose secret is in DIR, composed
// (siteledger.ReportDir). Its JSON, {"sites": [{"site", "epsilon",
// "delta", "budget", "campaigns": [{"campaign", "epsilon"}]}]}, is a
// contract scripts rely on.
func runLedger(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("worker ledger", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("secret-dir", defaultSecretDir(), "the site worker's secret directory, where its ledgers <site>.ledger are (env PTOPOFL_SECRET_DIR)")
	format := fs.String("format", "text", "output format: text or json")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("ledger: unexpected arguments %q", fs.Args())
	}
	if *format != "text" && *format != "json" {
		return fmt.Errorf("ledger: --format %q: want text or json", *format)
	}
	if *dir == "" {
		return errors.New("ledger: --secret-dir: no directory (set it, or PTOPOFL_SECRET_DIR)")
	}
	r, err := siteledger.ReportDir(*dir)
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	if *format == "json" {
		enc := json.NewEncoder(stdout)
		return enc.Encode(r)
	}
	textout.WriteLedger(stdout, r, *dir)
	return nil
}
