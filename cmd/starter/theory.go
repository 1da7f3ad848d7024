package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/ptopofl/ptopofl/theory"
)

// runTheory is `starter experiment theory [--seeds N]`: the paper's
// theorems checked where they can be (package theory), each with its
// verdict and the numbers behind it.
func runTheory(seeds int, format string, stdout, stderr io.Writer) error {
	if seeds < 1 {
		return inputErrorf("--seeds %d: want ≥ 1 (healthcare federations for the convergence check)", seeds)
	}
	if format != "json" {
		fmt.Fprintf(stderr, "theory: Eq. 4, Thm 3.3, Thm 3.5, Thm 3.6 and Thm 3.9 on %d healthcare federations…\n", seeds)
	}
	rep, err := theory.Measure(seeds)
	if err != nil {
		return err
	}
	if format == "json" {
		return json.NewEncoder(stdout).Encode(rep)
	}
	for _, v := range rep.Verdicts {
		fmt.Fprintf(stdout, "%s\n  verdict  %s\n  numbers  %s\n", v.Claim, v.Verdict, v.Numbers)
	}
	return nil
}
