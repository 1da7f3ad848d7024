package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/internal/stackconn"
	"github.com/ptopofl/ptopofl/internal/textout"
	"github.com/ptopofl/ptopofl/pipeline"
)

// runSweepStatus shows where a sweep stands while it runs or after:
// `starter sweep status SWEEP [--format json]` (trials so far, rungs,
// incumbent, campaign-rounds spent of the budget, running campaigns).
func runSweepStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	conn, rest, err := stackconn.ParseCommand("sweep status", args, stderr, nil, sweepName("status"))
	if err != nil {
		return err
	}
	e, err := conn.Connect(ctx, stderr)
	if err != nil {
		return err
	}
	defer e.Close()
	st, err := e.Svc.SweepStatus(ctx, rest[0])
	if err != nil {
		return err
	}
	return stackconn.Emit(stdout, conn.Format, st, textout.WriteSweepStatus)
}

// runSweepControl sends a sweep the pause, resume or stop update, with the
// campaigns' semantics: `starter sweep pause|resume|stop SWEEP [--reason
// TEXT]`. It prints the acknowledgement (the sweep's state after it) or the
// rejection, as `starter pause` does for a campaign.
func runSweepControl(ctx context.Context, update string, args []string, stdout, stderr io.Writer) error {
	var reason string
	conn, rest, err := stackconn.ParseCommand("sweep "+update, args, stderr, func(fs *flag.FlagSet) func() error {
		fs.StringVar(&reason, "reason", "", "why, recorded in the sweep's status")
		return nil
	}, sweepName(update))
	if err != nil {
		return err
	}
	name := rest[0]
	e, err := conn.Connect(ctx, stderr)
	if err != nil {
		return err
	}
	defer e.Close()
	st, err := e.Svc.SweepControl(ctx, name, update, reason)
	if errors.Is(err, campaign.ErrRejected) {
		if conn.Format == "json" {
			json.NewEncoder(stdout).Encode(map[string]any{"sweep": name, "update": update, "accepted": false, "error": campaign.RejectionReason(err)})
		}
		return err
	}
	if err != nil {
		return err
	}
	if conn.Format == "json" {
		return json.NewEncoder(stdout).Encode(map[string]any{"sweep": name, "update": update, "accepted": true, "status": st})
	}
	fmt.Fprintf(stdout, "%s sweep %s: accepted; state %s, %d running campaigns\n", update, name, st.State, len(st.Running))
	return nil
}

// sweepName checks that a sub-command got one sweep name.
func sweepName(cmd string) func([]string) error {
	return func(rest []string) error {
		if len(rest) != 1 {
			return inputErrorf("want one sweep: starter sweep %s SWEEP", cmd)
		}
		if err := artifact.ValidateName(rest[0]); err != nil {
			return inputErrorf("sweep %v", err)
		}
		return nil
	}
}

// sweepControls are the sweep sub-commands that send an update.
var sweepControls = map[string]string{"pause": pipeline.UpdatePause, "resume": pipeline.UpdateResume, "stop": pipeline.UpdateStop}
