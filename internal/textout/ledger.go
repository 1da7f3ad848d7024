package textout

import (
	"fmt"
	"io"

	"github.com/ptopofl/ptopofl/siteledger"
)

// WriteLedger prints the sites' privacy ledgers (`worker ledger`, `starter
// privacy ledger`): per site its lifetime ε at δ, its budget and each
// campaign's ε alone; dir is where they were read.
func WriteLedger(w io.Writer, r siteledger.Report, dir string) {
	if len(r.Sites) == 0 {
		fmt.Fprintf(w, "no privacy ledger in %s\n", dir)
		return
	}
	for _, s := range r.Sites {
		budget := "no budget"
		if s.Budget != nil {
			budget = fmt.Sprintf("budget %g", *s.Budget)
		}
		fmt.Fprintf(w, "%-10s ε %.4f at δ %g, %s (%d releases, %d campaigns)\n", s.Site, s.Epsilon, s.Delta, budget, s.Releases, len(s.Campaigns))
		for _, c := range s.Campaigns {
			fmt.Fprintf(w, "  %-40s ε %.4f\n", c.Campaign, c.Epsilon)
		}
	}
}
