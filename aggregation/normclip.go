package aggregation

import (
	"fmt"
	"math"
)

// NormClipFactors returns the factor c_k = min(1, M/‖Δ_k‖) by which
// norm-clipped FedAvg scales each site's update Δ_k (1 for a zero update),
// and the bound M used: bound itself if positive, otherwise the median of
// the update norms (numpy's median), the adaptive choice that leaves half
// the sites unclipped. A factor below 1 marks a site whose update was
// larger than the bound. It returns an error for no updates, ragged or
// non-finite ones, or a negative or non-finite bound.
func NormClipFactors(updates [][]float64, bound float64) (factors []float64, m float64, err error) {
	if !(bound >= 0) || math.IsInf(bound, 0) {
		return nil, 0, fmt.Errorf("norm clipping: bound %v, want ≥ 0 (0 for the median norm)", bound)
	}
	if _, err := checkModels("norm clipping", updates); err != nil {
		return nil, 0, err
	}
	norms := make([]float64, len(updates))
	for k, u := range updates {
		s := 0.0
		for _, v := range u {
			s += v * v
		}
		norms[k] = math.Sqrt(s)
	}
	m = bound
	if m == 0 {
		m = median(norms)
	}
	factors = make([]float64, len(updates))
	for k, n := range norms {
		factors[k] = 1
		if n > m {
			factors[k] = m / n
		}
	}
	return factors, m, nil
}

// NormClippedAverage returns norm-clipped FedAvg's new global model and
// each site's clip factor (Z. Sun, P. Kairouz, A. T. Suresh, H. B. McMahan,
// "Can You Really Backdoor Federated Learning?", 2019, §4 "norm bounding"):
// every site's update Δ_k = θ_k − θ_global is scaled to norm at most M
// (NormClipFactors: bound, or the median update norm when bound is 0),
// and the clipped updates are averaged with FedAvg's weights n_k/Σ n_j:
//
//	θ_global ← θ_global + Σ_k (n_k/Σ n_j) · c_k Δ_k.
//
// A nil global is the zero vector (before the first round, the cold start
// of FedAvg's site update). A large update, the trace of a boosted or
// heavily poisoned model, then moves the global model no further than an
// honest one. Errors are NormClipFactors', no sites, site models or a global
// model of different lengths or with non-finite values, and n_k ≤ 0.
func NormClippedAverage(global []float64, sites []SiteResult, bound float64) ([]float64, []float64, error) {
	if len(sites) == 0 {
		return nil, nil, fmt.Errorf("norm clipping: no sites")
	}
	np := len(sites[0].Params)
	old := global
	if old == nil {
		old = make([]float64, np)
	} else if err := finiteVector(old, np); err != nil {
		return nil, nil, fmt.Errorf("norm clipping: global model: %w", err)
	}
	updates := make([][]float64, len(sites))
	total := 0.0
	for k, s := range sites {
		if err := finiteVector(s.Params, np); err != nil {
			return nil, nil, fmt.Errorf("norm clipping: site %d model: %w", k, err)
		}
		if s.N <= 0 {
			return nil, nil, fmt.Errorf("norm clipping: site %d has n = %d, want a positive row count", k, s.N)
		}
		updates[k] = make([]float64, np)
		for j, v := range s.Params {
			updates[k][j] = v - old[j]
		}
		total += float64(s.N)
	}
	factors, _, err := NormClipFactors(updates, bound)
	if err != nil {
		return nil, nil, err
	}
	out := append([]float64(nil), old...)
	for k, u := range updates {
		w := float64(sites[k].N) / total * factors[k]
		for j, v := range u {
			out[j] += w * v
		}
	}
	return out, factors, nil
}
