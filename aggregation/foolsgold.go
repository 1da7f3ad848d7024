package aggregation

import (
	"fmt"
	"math"
	"slices"
)

// foolsGoldMaxWeight is where FoolsGoldWeights caps the rescaled weights
// before the logit, so that the best site's ln(α/(1 − α)) stays finite
// (Fung et al.'s reference implementation uses the same 0.99).
const foolsGoldMaxWeight = 0.99

// FoolsGoldWeights returns FoolsGold's per-site aggregation weights from
// the sites' update histories (C. Fung, C. J. M. Yoon, I. Beschastnikh,
// "The Limitations of Federated Learning in Sybil Settings", RAID 2020,
// Algorithm 1). history[k] is site k's aggregate update H_k = Σ_r Δ_k^(r),
// summed over every round so far. With cs_ij the cosine similarity of H_i
// and H_j (i ≠ j):
//
//  1. v_i = max_{j≠i} cs_ij, the closest any other site comes to i;
//  2. pardoning: for every j with v_j > v_i, cs_ij ← cs_ij · v_i/v_j, so an
//     honest site that merely resembles a sybil is not punished as one;
//  3. α_i = 1 − max_{j≠i} cs_ij, clipped to [0, 1];
//  4. α ← α / max_k α_k, and α_i ← min(α_i, 0.99);
//  5. α_i ← κ·(ln(α_i/(1 − α_i)) + 0.5), clipped to [0, 1] (the logit
//     spreads the weights around 0.5; α_i = 0 gives 0).
//
// Sites whose histories point the same way (sybils pushing the same
// poisoned direction) get weights near 0; a weight of 0 means FoolsGold
// ignores the site, which FoolsGoldFlags counts as flagged. The paper's
// optional per-feature importance weighting of the similarity is not
// applied (it targets deep networks' output layers).
//
// A zero history has cosine similarity 0 with every other. A single site
// gets weight 1. If every α is 0 after step 3 (every site an exact copy of
// another) all weights are 0. kappa (κ, the paper's confidence; 1 in the
// reference) must be positive. It returns an error for no sites, ragged
// or non-finite histories, or κ ≤ 0.
func FoolsGoldWeights(history [][]float64, kappa float64) ([]float64, error) {
	if !(kappa > 0) || math.IsInf(kappa, 0) {
		return nil, fmt.Errorf("foolsgold: κ = %v, want a positive confidence", kappa)
	}
	if _, err := checkModels("foolsgold", history); err != nil {
		return nil, err
	}
	k := len(history)
	if k == 1 {
		return []float64{1}, nil
	}
	norm := make([]float64, k)
	for i, h := range history {
		s := 0.0
		for _, v := range h {
			s += v * v
		}
		norm[i] = math.Sqrt(s)
	}
	cs := make([][]float64, k)
	for i := range cs {
		cs[i] = make([]float64, k)
	}
	for i := 0; i < k; i++ {
		for j := i + 1; j < k; j++ {
			c := 0.0
			if norm[i] > 0 && norm[j] > 0 {
				dot := 0.0
				for p, v := range history[i] {
					dot += v * history[j][p]
				}
				c = dot / (norm[i] * norm[j])
			}
			cs[i][j], cs[j][i] = c, c
		}
	}
	maxOther := func(row []float64, i int) float64 {
		m := math.Inf(-1)
		for j, v := range row {
			if j != i && v > m {
				m = v
			}
		}
		return m
	}
	v := make([]float64, k)
	for i := range v {
		v[i] = maxOther(cs[i], i)
	}
	// Pardoning reads v, fixed above, so the order of the updates does not
	// matter.
	for i := 0; i < k; i++ {
		for j := 0; j < k; j++ {
			if i != j && v[j] > v[i] {
				cs[i][j] *= v[i] / v[j]
			}
		}
	}
	alpha := make([]float64, k)
	for i := range alpha {
		alpha[i] = min(max(1-maxOther(cs[i], i), 0), 1)
	}
	top := slices.Max(alpha)
	if top == 0 {
		return alpha, nil
	}
	for i, a := range alpha {
		a = min(a/top, foolsGoldMaxWeight)
		w := 0.0
		if a > 0 {
			w = kappa * (math.Log(a/(1-a)) + 0.5)
		}
		alpha[i] = min(max(w, 0), 1)
	}
	return alpha, nil
}

// FoolsGoldFlags returns which sites FoolsGold effectively excludes: those
// whose weight is below below (Config.FoolsGoldFlagBelow).
func FoolsGoldFlags(weights []float64, below float64) []bool {
	out := make([]bool, len(weights))
	for k, w := range weights {
		out[k] = w < below
	}
	return out
}

// foolsGoldRound runs FoolsGold's server step: Δ_k = θ_k − θ_global (θ_global
// is zero before the first round, the cold start of FedAvg's site update),
// H_k += Δ_k, weights from FoolsGoldWeights, and
//
//	θ_global ← θ_global + Σ_k α_k Δ_k / Σ_k α_k,
//
// a weighted mean of the site models. The reference adds Σ α_k Δ_k scaled
// by a learning rate to gradient-descent steps; sites here send fitted
// models, so the weights are normalised to keep the result a model. With
// every weight 0 the global model stays. It returns the new global model,
// history and weights.
func foolsGoldRound(models [][]float64, prev ServerState, kappa float64) (global []float64, history [][]float64, weights []float64, err error) {
	np := len(models[0])
	old := prev.Global
	if old == nil {
		old = make([]float64, np)
	} else if err := finiteVector(old, np); err != nil {
		return nil, nil, nil, fmt.Errorf("foolsgold: global model: %w", err)
	}
	history = make([][]float64, len(models))
	if prev.FoolsGoldHistory != nil && len(prev.FoolsGoldHistory) != len(models) {
		return nil, nil, nil, fmt.Errorf("foolsgold: server state holds %d update histories for %d sites", len(prev.FoolsGoldHistory), len(models))
	}
	delta := make([][]float64, len(models))
	for k, m := range models {
		delta[k] = make([]float64, np)
		history[k] = make([]float64, np)
		// A site without a history (new, or absent from earlier rounds)
		// starts from zero.
		if prev.FoolsGoldHistory != nil && prev.FoolsGoldHistory[k] != nil {
			if err := finiteVector(prev.FoolsGoldHistory[k], np); err != nil {
				return nil, nil, nil, fmt.Errorf("foolsgold: site %d update history: %w", k, err)
			}
			copy(history[k], prev.FoolsGoldHistory[k])
		}
		for j, v := range m {
			delta[k][j] = v - old[j]
			history[k][j] += delta[k][j]
		}
	}
	weights, err = FoolsGoldWeights(history, kappa)
	if err != nil {
		return nil, nil, nil, err
	}
	global = slices.Clone(old)
	total := 0.0
	for _, w := range weights {
		total += w
	}
	if total == 0 {
		return global, history, weights, nil
	}
	for k, d := range delta {
		for j, v := range d {
			global[j] += weights[k] * v / total
		}
	}
	return global, history, weights, nil
}
