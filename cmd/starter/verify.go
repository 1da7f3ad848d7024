package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/ptopofl/ptopofl/campaign"
)

// runVerify re-hashes every artifact the campaign's manifests list and
// checks the chain of manifest hashes (DESIGN §4). Every problem is printed
// with its round and key; any problem exits with status 1.
func runVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var parallel *int
	own := func(fs *flag.FlagSet) func() error {
		parallel = fs.Int("parallel", 4, "objects fetched at once")
		return func() error {
			if *parallel < 1 {
				return inputErrorf("--parallel %d: want >= 1", *parallel)
			}
			return nil
		}
	}
	return query(ctx, "verify", args, stdout, stderr, own, func(e *env, name string) (campaign.VerifyReport, error) {
		return e.svc.Verify(ctx, name, *parallel)
	}, printVerify, func(rep campaign.VerifyReport) error {
		if rep.OK {
			return nil
		}
		noun := "problems"
		if len(rep.Problems) == 1 {
			noun = "problem"
		}
		return fmt.Errorf("campaign %s: %d %s in its audit record (%s)", rep.Campaign, len(rep.Problems), noun, rep.Summary())
	})
}

// printVerify prints every problem with its round and key, what the
// retention policy pruned, then the summary of a clean record.
func printVerify(stdout io.Writer, rep campaign.VerifyReport) {
	for _, p := range rep.Problems {
		fmt.Fprintln(stdout, p.Text())
	}
	for _, p := range rep.Pruned {
		fmt.Fprintln(stdout, p.Text())
	}
	if p := rep.Privacy; p != nil {
		budget := "no budget"
		if p.Budget > 0 {
			budget = fmt.Sprintf("budget %g", p.Budget)
		}
		checked := "every manifest's ε within the budget and never decreasing"
		for _, q := range rep.Problems {
			if q.Kind == campaign.ProblemPrivacy {
				checked = "see the privacy problems above"
			}
		}
		fmt.Fprintf(stdout, "privacy: largest ε of any site %.4f at δ %g (%s); %s\n", p.Epsilon(), p.Delta, budget, checked)
	}
	if rep.OK {
		fmt.Fprintln(stdout, rep.Summary())
	}
}
