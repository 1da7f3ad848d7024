package textout

import (
	"fmt"
	"io"

	"github.com/ptopofl/ptopofl/campaign"
)

// WriteVerify prints every problem with its round and key, what the
// retention policy pruned, then the summary of a clean record.
func WriteVerify(stdout io.Writer, rep campaign.VerifyReport) {
	for _, p := range rep.Problems {
		fmt.Fprintln(stdout, p.Text())
	}
	for _, p := range rep.Pruned {
		fmt.Fprintln(stdout, p.Text())
	}
	if p := rep.Privacy; p != nil {
		budget := "no budget"
		if p.Budget > 0 {
			budget = fmt.Sprintf("budget %g", p.Budget)
		}
		checked := "every manifest's ε within the budget and never decreasing"
		for _, q := range rep.Problems {
			if q.Kind == campaign.ProblemPrivacy {
				checked = "see the privacy problems above"
			}
		}
		fmt.Fprintf(stdout, "privacy: largest ε of any site %.4f at δ %g (%s); %s\n", p.Epsilon(), p.Delta, budget, checked)
	}
	if rep.OK {
		fmt.Fprintln(stdout, rep.Summary())
	}
}
