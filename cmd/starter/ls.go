package main

import (
	"context"
	"io"

	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/internal/stackconn"
	"github.com/ptopofl/ptopofl/internal/textout"
)

// runLs lists campaigns from Temporal's visibility store, newest first, one
// row per campaign (continue-as-new runs of a campaign are one campaign).
func runLs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	conn, _, err := stackconn.ParseCommand("ls", args, stderr, nil, func(rest []string) error {
		if len(rest) > 0 {
			return inputErrorf("unexpected argument %q", rest[0])
		}
		return nil
	})
	if err != nil {
		return err
	}
	e, err := conn.Connect(ctx, stderr)
	if err != nil {
		return err
	}
	defer e.Close()
	rows, err := e.Svc.List(ctx)
	if err != nil {
		return err
	}
	if rows == nil {
		rows = []campaign.Listed{}
	}
	return stackconn.Emit(stdout, conn.Format, rows, textout.WriteList)
}
