package textout

import (
	"fmt"
	"io"
	"time"

	"github.com/ptopofl/ptopofl/campaign"
)

// WriteList prints a row per campaign.
func WriteList(stdout io.Writer, rows []campaign.Listed) {
	fmt.Fprintf(stdout, "%-40s %-11s %-19s %5s %s\n", "campaign", "status", "started", "runs", "largest history")
	for _, r := range rows {
		fmt.Fprintf(stdout, "%-40s %-11s %-19s %5d %d events, %d KiB\n", r.Campaign, r.Status, r.Started.Local().Format(time.DateTime), r.Runs, r.MaxHistoryEvents, r.MaxHistoryBytes/1024)
	}
}
