package aggregation

import (
	"fmt"
	"math"

	"github.com/ptopofl/ptopofl/tda"
)

// Aggregation selects pTopoFL's server rule.
type Aggregation string

const (
	// ClusterAggregation is the paper's algorithm (§3.3, Eqs. 6–7):
	// clusters, trust-weighted sums inside them, blended with the
	// consensus by β. The default.
	ClusterAggregation Aggregation = "clusters"
	// SoftmaxAggregation is the global rule of §1 and Eq. (12), the one
	// the convergence theorem is about: one model Σ_k α_k θ_k for every
	// site with α_k = exp(−λ d_k) / Σ_j exp(−λ d_j), where d_k is site
	// k's distance to the federation's barycentre (Barycentre).
	SoftmaxAggregation Aggregation = "softmax"
)

// Barycentre selects the barycentre SoftmaxAggregation measures d_k from.
type Barycentre string

const (
	// MeanBarycentre is the paper's "in practice" (§3.3, after Thm 1):
	// the mean of the l2-normalised descriptors in R^m, d_k = ‖φ̂_k − φ̄‖.
	MeanBarycentre Barycentre = "mean"
	// FrechetBarycentre is a Fréchet mean of the sites' diagrams in the
	// space of diagrams (tda.FrechetMean, Turner et al. 2014), per
	// dimension, and d_k = (W2(H0_k, H̄0)² + W2(H1_k, H̄1)²)^½ with
	// tda.W2Euclid: the barycentre Theorem 1 is about. It needs the
	// sites' diagrams (site_distance wasserstein).
	FrechetBarycentre Barycentre = "frechet"
)

// SoftmaxWeights returns the weights α_k of Eq. (12) for the sites under
// cfg.Barycentre and λ = cfg.SoftmaxLambda, with the distances d_k they
// are computed from. exp is taken of −λ(d_k − min_j d_j), which leaves
// the ratios unchanged and keeps the largest term 1.
func SoftmaxWeights(sites []SiteResult, cfg Config) (alpha, dist []float64, err error) {
	k := len(sites)
	if k == 0 {
		return nil, nil, fmt.Errorf("no sites")
	}
	if !(cfg.SoftmaxLambda >= 0) || math.IsInf(cfg.SoftmaxLambda, 0) {
		return nil, nil, fmt.Errorf("softmax λ = %v, want a finite λ ≥ 0", cfg.SoftmaxLambda)
	}
	dist = make([]float64, k)
	switch cfg.Barycentre {
	case MeanBarycentre, "":
		desc := make([][]float64, k)
		for i, s := range sites {
			if err := finiteVector(s.Descriptor, len(sites[0].Descriptor)); err != nil || len(s.Descriptor) == 0 {
				return nil, nil, fmt.Errorf("site %d descriptor: %v", i, err)
			}
			desc[i] = s.Descriptor
		}
		f := NormalizeDescriptors(desc)
		dist = centroidDistances(f, make([]int, k))
	case FrechetBarycentre:
		h0, h1 := make([][]tda.Pair, k), make([][]tda.Pair, k)
		for i, s := range sites {
			h0[i], h1[i] = tda.Finite(s.H0), tda.Finite(s.H1)
		}
		m0, err := tda.FrechetMean(h0)
		if err != nil {
			return nil, nil, fmt.Errorf("H0: %w", err)
		}
		m1, err := tda.FrechetMean(h1)
		if err != nil {
			return nil, nil, fmt.Errorf("H1: %w", err)
		}
		for i := range sites {
			w0, err := tda.W2Euclid(h0[i], m0)
			if err != nil {
				return nil, nil, fmt.Errorf("site %d H0: %w", i, err)
			}
			w1, err := tda.W2Euclid(h1[i], m1)
			if err != nil {
				return nil, nil, fmt.Errorf("site %d H1: %w", i, err)
			}
			dist[i] = math.Sqrt(w0*w0 + w1*w1)
		}
	default:
		return nil, nil, fmt.Errorf("unknown barycentre %q; want %q or %q", cfg.Barycentre, MeanBarycentre, FrechetBarycentre)
	}
	lo := math.Inf(1)
	for _, d := range dist {
		lo = math.Min(lo, d)
	}
	alpha = make([]float64, k)
	sum := 0.0
	for i, d := range dist {
		alpha[i] = math.Exp(-cfg.SoftmaxLambda * (d - lo))
		sum += alpha[i]
	}
	for i := range alpha {
		alpha[i] /= sum
	}
	return alpha, dist, nil
}
