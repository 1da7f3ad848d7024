package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/internal/textout"
	"github.com/ptopofl/ptopofl/theory"
)

// theoryJSON is what `experiment theory --format json` prints: the
// experiment's fields and, beside them, the theory report's (theory.json
// of the report directory), with every statement's verdict.
type theoryJSON struct {
	experimentOutput
	theory.Report
}

// theoryOutput prints the theory experiment's outcome: with --format json
// the experiment's fields and the theory report's; as text the sweep's
// table, then each statement with its verdict and numbers.
func theoryOutput(eo experimentOutput, quiet bool, res campaign.SweepOutput, stdout io.Writer) error {
	b, err := os.ReadFile(filepath.Join(eo.Out, campaign.TheoryJSON))
	if err != nil {
		return fmt.Errorf("experiment theory: %w", err)
	}
	var rep theory.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return fmt.Errorf("experiment theory: %s: %w", campaign.TheoryJSON, err)
	}
	if quiet {
		return json.NewEncoder(stdout).Encode(theoryJSON{eo, rep})
	}
	textout.WriteSweep(stdout, res)
	for _, v := range rep.Verdicts {
		fmt.Fprintf(stdout, "%s\n  verdict  %s\n  numbers  %s\n", v.Claim, v.Verdict, v.Numbers)
	}
	fmt.Fprintf(stdout, "report     %s\n", filepath.Join(eo.Out, "report.html"))
	return nil
}
