package tda

import "math"

// Hausdorff returns the Hausdorff distance between two finite point sets
// of R^d, by brute force: the larger of the two directed distances
// max_x min_y ‖x − y‖ (O(|x|·|y|·d)). The stability theorem the paper
// states as Eq. 4 bounds the bottleneck distance of the sets' diagrams by
// it (with a factor 2 for the diameter filtration; see
// TestStabilityHausdorff).
func Hausdorff(x, y [][]float64) float64 {
	directed := func(a, b [][]float64) float64 {
		worst := 0.0
		for _, p := range a {
			best := math.Inf(1)
			for _, q := range b {
				var s float64
				for k := range p {
					s += (p[k] - q[k]) * (p[k] - q[k])
				}
				best = math.Min(best, math.Sqrt(s))
			}
			worst = math.Max(worst, best)
		}
		return worst
	}
	return math.Max(directed(x, y), directed(y, x))
}
