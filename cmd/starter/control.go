package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/internal/stackconn"
)

// runControl sends one of the pause, resume and stop Updates and prints the
// acknowledgement (the campaign's status after it) or the rejection.
func runControl(ctx context.Context, update string, args []string, stdout, stderr io.Writer) error {
	var reason *string
	e, conn, name, err := stackconn.OpenCampaign(ctx, update, args, stderr, func(fs *flag.FlagSet) func() error {
		reason = fs.String("reason", "", "why, recorded in the campaign's status")
		return nil
	})
	if err != nil {
		return err
	}
	defer e.Close()
	st, err := e.Svc.Control(ctx, name, update, *reason)
	if errors.Is(err, campaign.ErrRejected) {
		if conn.Format == "json" {
			json.NewEncoder(stdout).Encode(map[string]any{"campaign": name, "update": update, "accepted": false, "error": campaign.RejectionReason(err)})
		}
		return err
	}
	if err != nil {
		return err
	}
	if conn.Format == "json" {
		return json.NewEncoder(stdout).Encode(map[string]any{"campaign": name, "update": update, "accepted": true, "status": st})
	}
	fmt.Fprintf(stdout, "%s %s: accepted; state %s, rounds %d/%d\n", update, name, st.State, st.RoundsDone, st.RoundsTotal)
	return nil
}
