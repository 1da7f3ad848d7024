package secagg_test

import (
	"crypto/sha256"
	"fmt"

	"github.com/ptopofl/ptopofl/secagg"
)

// Three members sum their vectors; the server sees masked integers and
// learns only the sum. (Seeds here are fixed for the example; a site's seed
// comes from its secret.)
func Example() {
	ctx := secagg.Context{Campaign: "demo", Round: 1, Group: "global"}
	members := []string{"a", "b", "c"}
	g, _ := secagg.NewGroup(ctx, members, secagg.Config{})
	x := map[string][]float64{"a": {0.5, -1}, "b": {0.25, 2}, "c": {1, 0.125}}

	side := map[string]*secagg.Member{}
	tr := secagg.Transcript{Public: map[string]secagg.PublicKeys{}, Masked: map[string][]uint64{}}
	for _, m := range members {
		side[m], _ = g.Member(m, sha256.Sum256([]byte("secret of "+m)))
		tr.Public[m] = side[m].PublicKeys()
	}
	inbox := map[string]map[string][]byte{"a": {}, "b": {}, "c": {}}
	for _, m := range members {
		out, _ := side[m].ShareKeys(tr.Public)
		for to, ct := range out {
			inbox[to][m] = ct
		}
		tr.Shared = append(tr.Shared, m)
	}
	for _, m := range members {
		tr.Masked[m], _, _ = side[m].MaskInput(x[m], tr.Public, tr.Shared)
	}
	for _, m := range members {
		r, _ := side[m].Unmask(tr.Public, inbox[m], tr.Survivors(), tr.Dropped())
		tr.Reveals = append(tr.Reveals, r)
	}
	sum, err := g.Aggregate(tr)
	fmt.Printf("%.4f %.4f %v\n", sum[0], sum[1], err)
	// Output: 1.7500 1.1250 <nil>
}
