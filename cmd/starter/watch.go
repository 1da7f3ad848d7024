package main

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"time"

	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/internal/stackconn"
)

// runWatch prints a progress line per committed round (rounds done/total,
// metrics, elapsed, ETA) until the campaign ends; with --format json, one
// JSON object per line.
func runWatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var every *time.Duration
	e, conn, name, err := stackconn.OpenCampaign(ctx, "watch", args, stderr, func(fs *flag.FlagSet) func() error {
		every = fs.Duration("every", time.Second, "polling interval")
		return nil
	})
	if err != nil {
		return err
	}
	defer e.Close()
	var text io.Writer
	if conn.Format != "json" {
		text = stdout
	}
	p := campaign.NewProgress(name, text)
	enc := json.NewEncoder(stdout)
	for {
		st, err := e.Svc.Status(ctx, name)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if l, changed := p.Update(st); changed && text == nil {
			if err := enc.Encode(l); err != nil {
				return err
			}
		}
		if campaign.Terminal(st.State) {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil // interrupted: leaving watch does not touch the campaign
		case <-time.After(*every):
		}
	}
}
