package main

import (
	"context"
	"fmt"
	"io"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/internal/stackconn"
	"github.com/ptopofl/ptopofl/internal/textout"
)

// runHistory prints the per-round table of a campaign from its manifests in
// S3 (the audit record), so it works whether or not Temporal still holds
// the campaign's history.
func runHistory(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return stackconn.Query(ctx, "history", args, stdout, stderr, nil, func(e *stackconn.Env, name string) (textout.History, error) {
		rows, err := e.Svc.History(ctx, name)
		return textout.History{Campaign: name, Rounds: rows, Manifests: fmt.Sprintf("s3://%s/%sround-*/manifest.json", e.Svc.Store.Bucket(), artifact.CampaignPrefix(name))}, err
	}, textout.WriteHistory, nil)
}
