package aggregation

import (
	"fmt"
	"math"

	"github.com/ptopofl/ptopofl/tda"
)

// WassersteinMatrix returns the K×K matrix of p-Wasserstein distances
// between the sites' persistence diagrams (paper Eq. 3). H0 and H1 are
// matched separately (a matching never pairs points of different
// dimensions) and combined as (W_p(H0)^p + W_p(H1)^p)^{1/p}, the
// p-Wasserstein distance of the diagrams as one multiset graded by dimension.
// Infinite bars are dropped: every non-empty diagram has exactly one
// infinite H0 class, which carries no information about the site. Each
// distance is tda.Wasserstein (L∞ ground metric, exact assignment), so the
// matrix costs K(K−1)/2 assignment problems of O((|A|+|B|)³).
func WassersteinMatrix(sites []SiteResult, p float64) ([][]float64, error) {
	if !(p >= 1) || math.IsInf(p, 1) {
		return nil, fmt.Errorf("wasserstein order p = %v, want a finite p ≥ 1", p)
	}
	k := len(sites)
	d := make([][]float64, k)
	for i := range d {
		d[i] = make([]float64, k)
	}
	for i := 0; i < k; i++ {
		for j := i + 1; j < k; j++ {
			w0 := tda.Wasserstein(tda.Finite(sites[i].H0), tda.Finite(sites[j].H0), p)
			w1 := tda.Wasserstein(tda.Finite(sites[i].H1), tda.Finite(sites[j].H1), p)
			v := math.Pow(math.Pow(w0, p)+math.Pow(w1, p), 1/p)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("wasserstein distance between sites %d and %d is %v; diagrams must hold finite pairs", i, j, v)
			}
			d[i][j], d[j][i] = v, v
		}
	}
	return d, nil
}
