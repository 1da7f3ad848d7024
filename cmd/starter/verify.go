package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/ptopofl/ptopofl/artifact"
)

// runVerify re-hashes every artifact the campaign's manifests list and
// checks the chain of manifest hashes (DESIGN §4). Every problem is printed
// with its round and key; any problem exits with status 1.
func runVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var conn connFlags
	conn.register(fs)
	parallel := fs.Int("parallel", 4, "objects fetched at once")
	name, err := oneCampaignArg(fs, args)
	if err != nil {
		return err
	}
	if err := conn.check(); err != nil {
		return err
	}
	if err := artifact.ValidateName(name); err != nil {
		return inputErrorf("campaign: %v", err)
	}
	if *parallel < 1 {
		return inputErrorf("--parallel %d: want >= 1", *parallel)
	}
	e, err := conn.connect(ctx, stderr)
	if err != nil {
		return err
	}
	defer e.Close()
	rep, err := e.svc.Verify(ctx, name, *parallel)
	if err != nil {
		return err
	}
	if conn.format == "json" {
		if err := json.NewEncoder(stdout).Encode(rep); err != nil {
			return err
		}
	} else {
		for _, p := range rep.Problems {
			fmt.Fprintln(stdout, p.Text())
		}
		if rep.OK {
			fmt.Fprintln(stdout, rep.Summary())
		}
	}
	if !rep.OK {
		noun := "problems"
		if len(rep.Problems) == 1 {
			noun = "problem"
		}
		return fmt.Errorf("campaign %s: %d %s in its audit record (%s)", name, len(rep.Problems), noun, rep.Summary())
	}
	return nil
}
