package textout

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/campaign"
)

// TestWriteHistoryWideValues: with three short-named sites the clusters,
// trust and flagged values fit their columns; with ten sites they do not,
// and the row then summarises each in its column ("2 clusters, below", the
// lowest trust, the count flagged) and gives the full values, each named
// by its site, on lines of their own below the row, so that no column
// runs into the next and every data line of a row starts at the same
// columns.
func TestWriteHistoryWideValues(t *testing.T) {
	row := func(n int) campaign.HistoryRow {
		r := campaign.HistoryRow{Round: 1, Outcome: "committed", Clusters: map[string]int{}, Trust: map[string]float64{},
			Drift: map[string]float64{}, MeanAUC: 0.9, MeanAcc: 0.8, SHA256: "faa32fed0000"}
		for i := range n {
			s := fmt.Sprintf("s%d", i)
			if n > 3 {
				s = fmt.Sprintf("bm-s1-site%d", i)
			}
			r.Participants = append(r.Participants, s)
			r.Clusters[s] = i % 2
			r.Trust[s] = 1 - 0.05*float64(i)
		}
		r.Flagged = []string{r.Participants[n-1]}
		return r
	}
	cases := []struct {
		name     string
		row      campaign.HistoryRow
		inRow    []string // in the row's line
		below    []string // lines below it, in order
		notBelow bool
	}{
		{"three sites", row(3), []string{"s0:0 s1:1 s2:0", "1.00 0.95 0.90", "s2"}, nil, true},
		{"ten sites", row(10), []string{"2 clusters, below", "min 0.55, below", "1, below"},
			[]string{"       clusters  bm-s1-site0:0 bm-s1-site1:1", "       trust     bm-s1-site0:1.00 bm-s1-site1:0.95", "       flagged   bm-s1-site9"}, false},
	}
	for i, c := range cases {
		var b bytes.Buffer
		WriteHistory(&b, History{Campaign: "c", Rounds: []campaign.HistoryRow{c.row}, Manifests: "s3://b/c/"})
		lines := strings.Split(b.String(), "\n")
		header, first := lines[0], lines[1]
		for _, w := range c.inRow {
			if !strings.Contains(first, w) {
				t.Errorf("case %d (%s): row lacks %q:\n%s", i, c.name, w, b.String())
			}
		}
		// The row's last columns start where the header's do.
		if a, h := strings.Index(first, "faa32fed"), strings.Index(header, "manifest"); a != h {
			t.Errorf("case %d (%s): manifest column at %d, header at %d:\n%s", i, c.name, a, h, b.String())
		}
		for k, w := range c.below {
			if len(lines) < 3+k || !strings.HasPrefix(lines[2+k], w) {
				t.Errorf("case %d (%s): line %d below the row does not start with %q:\n%s", i, c.name, k+1, w, b.String())
			}
		}
		if c.notBelow && strings.Contains(b.String(), "\n       clusters") {
			t.Errorf("case %d (%s): clusters printed below although they fit:\n%s", i, c.name, b.String())
		}
	}
}
