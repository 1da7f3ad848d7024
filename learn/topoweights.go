package learn

import (
	"fmt"
	"math"

	"github.com/ptopofl/ptopofl/tda"
)

// TopologyWeightConfig holds the constants of pTopoFL's topology-guided
// sample weights.
type TopologyWeightConfig struct {
	// ClipMin and ClipMax bound the normalised weights (reference: 0.2, 5).
	ClipMin, ClipMax float64
	// MinBandwidth is the floor of the bandwidth A0 (reference: 0.1).
	MinBandwidth float64
	// StandardiseEps is added to the population std when the rows are
	// standardised (reference: 1e-8).
	StandardiseEps float64
	// DescriptorIndex is the position of A0, the H0 amplitude, in the
	// 48-number descriptor (reference: 42).
	DescriptorIndex int
}

// DefaultTopologyWeights are the reference's constants (expected.json
// pTopoFL `sample_weight_clip` and `notes`).
var DefaultTopologyWeights = TopologyWeightConfig{ClipMin: 0.2, ClipMax: 5, MinBandwidth: 0.1, StandardiseEps: 1e-8, DescriptorIndex: tda.AmplitudeH0}

// TopologySampleWeights returns pTopoFL's per-sample weights (paper §3.2,
// "topology-guided sample weighting", as the reference computes it,
// expected.json pTopoFL `notes`): with xs the rows of x standardised by
// (x − mean)/(std + eps),
//
//	w_i = exp(−‖xs_i − mean(xs)‖ / max(A0, MinBandwidth)),
//	w ← w/(mean(w) + 1e-8), clipped to [ClipMin, ClipMax],
//
// where A0 = descriptor[DescriptorIndex] is the H0 amplitude. Samples far
// from the local centroid, relative to the scale of the site's H0
// topology, count less.
//
// It returns an error if x is empty or ragged or the descriptor is too
// short.
func TopologySampleWeights(x [][]float64, descriptor []float64, c TopologyWeightConfig) ([]float64, error) {
	if c.DescriptorIndex < 0 || c.DescriptorIndex >= len(descriptor) {
		return nil, fmt.Errorf("learn: topology weights: descriptor has %d numbers, A0 is at index %d", len(descriptor), c.DescriptorIndex)
	}
	sc, err := FitStandardScalerEps(x, c.StandardiseEps)
	if err != nil {
		return nil, fmt.Errorf("learn: topology weights: %w", err)
	}
	xs, err := sc.Transform(x)
	if err != nil {
		return nil, fmt.Errorf("learn: topology weights: %w", err)
	}
	d := len(xs[0])
	centre := make([]float64, d)
	for _, row := range xs {
		for j, v := range row {
			centre[j] += v
		}
	}
	n := float64(len(xs))
	for j := range centre {
		centre[j] /= n
	}
	bw := math.Max(descriptor[c.DescriptorIndex], c.MinBandwidth)
	w := make([]float64, len(xs))
	sum := 0.0
	for i, row := range xs {
		s := 0.0
		for j, v := range row {
			t := v - centre[j]
			s += t * t
		}
		w[i] = math.Exp(-math.Sqrt(s) / bw)
		sum += w[i]
	}
	norm := sum/n + 1e-8
	for i := range w {
		w[i] = math.Min(math.Max(w[i]/norm, c.ClipMin), c.ClipMax)
	}
	return w, nil
}
