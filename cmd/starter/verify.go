package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/internal/stackconn"
	"github.com/ptopofl/ptopofl/internal/textout"
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
	return stackconn.Query(ctx, "verify", args, stdout, stderr, own, func(e *stackconn.Env, name string) (campaign.VerifyReport, error) {
		return e.Svc.Verify(ctx, name, *parallel)
	}, textout.WriteVerify, func(rep campaign.VerifyReport) error {
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
