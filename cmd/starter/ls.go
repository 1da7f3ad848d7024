package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/ptopofl/ptopofl/campaign"
)

// runLs lists campaigns from Temporal's visibility store, newest first, one
// row per campaign (continue-as-new runs of a campaign are one campaign).
func runLs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	conn, _, err := parseCommand("ls", args, stderr, nil, func(rest []string) error {
		if len(rest) > 0 {
			return inputErrorf("unexpected argument %q", rest[0])
		}
		return nil
	})
	if err != nil {
		return err
	}
	e, err := conn.connect(ctx, stderr)
	if err != nil {
		return err
	}
	defer e.Close()
	rows, err := e.svc.List(ctx)
	if err != nil {
		return err
	}
	if rows == nil {
		rows = []campaign.Listed{}
	}
	return emit(stdout, conn, rows, printList)
}

// printList prints a row per campaign.
func printList(stdout io.Writer, rows []campaign.Listed) {
	fmt.Fprintf(stdout, "%-40s %-11s %-19s %5s %s\n", "campaign", "status", "started", "runs", "largest history")
	for _, r := range rows {
		fmt.Fprintf(stdout, "%-40s %-11s %-19s %5d %d events, %d KiB\n", r.Campaign, r.Status, r.Started.Local().Format(time.DateTime), r.Runs, r.MaxHistoryEvents, r.MaxHistoryBytes/1024)
	}
}
