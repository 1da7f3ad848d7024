package aggregation

import (
	"fmt"
	"math"
)

// NormalizeDescriptors returns φ̂_k = φ_k/(‖φ_k‖₂ + 1e-8) for every
// descriptor (paper §3.3, Step 1; the 1e-8 is the reference's guard,
// expected.json pTopoFL `notes`).
func NormalizeDescriptors(desc [][]float64) [][]float64 {
	out := make([][]float64, len(desc))
	for i, d := range desc {
		n := 0.0
		for _, v := range d {
			n += v * v
		}
		n = math.Sqrt(n) + 1e-8
		f := make([]float64, len(d))
		for j, v := range d {
			f[j] = v / n
		}
		out[i] = f
	}
	return out
}

// EuclideanMatrix returns the K×K matrix of Euclidean distances between
// the rows of f, D_ij = ‖f_i − f_j‖₂ (paper §3.3, Step 1).
func EuclideanMatrix(f [][]float64) [][]float64 {
	k := len(f)
	d := make([][]float64, k)
	flat := make([]float64, k*k)
	for i := range d {
		d[i] = flat[i*k : (i+1)*k]
	}
	for i := 0; i < k; i++ {
		for j := i + 1; j < k; j++ {
			v := euclid(f[i], f[j])
			d[i][j], d[j][i] = v, v
		}
	}
	return d
}

func euclid(a, b []float64) float64 {
	s := 0.0
	for j, v := range a {
		t := v - b[j]
		s += t * t
	}
	return math.Sqrt(s)
}

// TrustScores returns pTopoFL's anomaly z-scores and trust weights (paper
// §3.4, Eq. 8): δ_k = Σ_{j≠k} D_kj/(K−1), z_k = (δ_k − mean δ)/(std δ + 1e-8)
// with the population std, and t_k = clip(exp(−max(z_k − 1, 0)), lo, hi).
// A single site gets z = 0 and trust hi.
func TrustScores(dist [][]float64, lo, hi float64) (z, trust []float64) {
	k := len(dist)
	z = make([]float64, k)
	trust = make([]float64, k)
	if k < 2 {
		for i := range trust {
			trust[i] = math.Min(math.Max(1, lo), hi)
		}
		return z, trust
	}
	delta := make([]float64, k)
	mean := 0.0
	for i, row := range dist {
		s := 0.0
		for j, v := range row {
			if j != i {
				s += v
			}
		}
		delta[i] = s / float64(k-1)
		mean += delta[i]
	}
	mean /= float64(k)
	sd := 0.0
	for _, v := range delta {
		sd += (v - mean) * (v - mean)
	}
	sd = math.Sqrt(sd / float64(k))
	for i, v := range delta {
		z[i] = (v - mean) / (sd + 1e-8)
		trust[i] = math.Min(math.Max(math.Exp(-math.Max(z[i]-1, 0)), lo), hi)
	}
	return z, trust
}

// Flags returns which sites are flagged as anomalous: z_k > tau (paper
// §3.4), or, if trustBelow > 0, t_k < trustBelow (the reference's
// `flagged`, trust < 0.5).
func Flags(z, trust []float64, tau, trustBelow float64) []bool {
	out := make([]bool, len(z))
	for i := range z {
		if trustBelow > 0 {
			out[i] = trust[i] < trustBelow
		} else {
			out[i] = z[i] > tau
		}
	}
	return out
}

// ClusterWeights returns pTopoFL's intra-cluster weights (paper Eq. 6):
// for each site k in cluster c,
//
//	a_k = n_k·exp(−λ·d_k)·t_k / (Σ_{j∈c} n_j·exp(−λ·d_j)·t_j + 1e-8),
//
// where d_k is the site's distance to its cluster's centre, ‖φ̂_k − φ̂_C‖
// for descriptors (λ = 1 in Eq. 6). The 1e-8 is the reference's guard.
func ClusterWeights(labels []int, n []int, centreDist, trust []float64, lambda float64) []float64 {
	nc := numClusters(labels)
	raw := make([]float64, len(labels))
	sum := make([]float64, nc)
	for k, c := range labels {
		raw[k] = float64(n[k]) * math.Exp(-lambda*centreDist[k]) * trust[k]
		sum[c] += raw[k]
	}
	for k, c := range labels {
		raw[k] /= sum[c] + 1e-8
	}
	return raw
}

func numClusters(labels []int) int {
	nc := 0
	for _, l := range labels {
		if l+1 > nc {
			nc = l + 1
		}
	}
	return nc
}

// centroidDistances returns ‖f_k − mean_{j∈C(k)} f_j‖ for every site.
func centroidDistances(f [][]float64, labels []int) []float64 {
	nc := numClusters(labels)
	dim := len(f[0])
	centre := make([][]float64, nc)
	count := make([]float64, nc)
	for c := range centre {
		centre[c] = make([]float64, dim)
	}
	for k, c := range labels {
		count[c]++
		for j, v := range f[k] {
			centre[c][j] += v
		}
	}
	for c := range centre {
		for j := range centre[c] {
			centre[c][j] /= count[c]
		}
	}
	out := make([]float64, len(f))
	for k, c := range labels {
		out[k] = euclid(f[k], centre[c])
	}
	return out
}

// meanClusterDistances returns, for every site, its mean distance to the
// members of its cluster (itself included, at distance 0): the stand-in for
// the distance to the cluster's Wasserstein barycentre, which the paper's
// Theorem 1 proves exists but does not compute.
func meanClusterDistances(dist [][]float64, labels []int) []float64 {
	nc := numClusters(labels)
	count := make([]float64, nc)
	for _, c := range labels {
		count[c]++
	}
	out := make([]float64, len(labels))
	for k, c := range labels {
		s := 0.0
		for j, cj := range labels {
			if cj == c {
				s += dist[k][j]
			}
		}
		out[k] = s / count[c]
	}
	return out
}

// BlendClusters returns the blended cluster models of paper Eq. (7):
// θ*_c = (1−β)·θ_c + β·θ̄ with the consensus θ̄ = Σ_c (|C_c|/K)·θ_c. Empty
// clusters (possible after re-clustering) contribute nothing and get nil.
func BlendClusters(clusterModels [][]float64, sizes []int, beta float64) [][]float64 {
	k := 0
	for _, s := range sizes {
		k += s
	}
	np := 0
	for _, m := range clusterModels {
		if m != nil {
			np = len(m)
		}
	}
	consensus := make([]float64, np)
	for c, m := range clusterModels {
		if sizes[c] == 0 {
			continue
		}
		w := float64(sizes[c]) / float64(k)
		for j, v := range m {
			consensus[j] += w * v
		}
	}
	out := make([][]float64, len(clusterModels))
	for c, m := range clusterModels {
		if sizes[c] == 0 {
			continue
		}
		b := make([]float64, np)
		for j, v := range m {
			b[j] = (1-beta)*v + beta*consensus[j]
		}
		out[c] = b
	}
	return out
}

// reassign moves each site in moved to the cluster whose other members are
// closest on average (average linkage between the site and the cluster),
// keeping cluster ids stable; the lowest id wins ties. A site alone in its
// cluster stays there unless another cluster is closer.
func reassign(dist [][]float64, labels []int, moved []int) []int {
	nc := numClusters(labels)
	out := append([]int(nil), labels...)
	for _, k := range moved {
		best, bestD := out[k], math.Inf(1)
		for c := 0; c < nc; c++ {
			s, n := 0.0, 0
			for j, cj := range out {
				if j != k && cj == c {
					s += dist[k][j]
					n++
				}
			}
			if n == 0 {
				continue
			}
			if d := s / float64(n); d < bestD {
				best, bestD = c, d
			}
		}
		out[k] = best
	}
	return out
}

// TopologyInput is everything TopologyStep reads: the sites' descriptors
// (and diagrams, for WassersteinDistance), the 1-based round and the
// pTopoFL state of the previous round (zero before the first).
type TopologyInput struct {
	Round  int
	Sites  []SiteResult
	State  ServerState
	Config Config
	// Measured says which sites' descriptors were computed afresh for this
	// step; nil means all of them. Only a fresh descriptor is a drift
	// measurement: a site whose descriptor is the one it sent earlier
	// keeps its drift unchanged and is not re-clustered on it.
	Measured []bool
}

// Topology is pTopoFL's server-side topology step for one round: who is
// in which cluster, how much each site is trusted, which sites are flagged,
// how far each has drifted and which were moved by it.
type Topology struct {
	// Labels are the cluster ids per site; Trust, ZScores and Flagged the
	// trust weights t_k, anomaly z-scores z_k and flags; Drift the drift
	// Δ_k of Eq. (9).
	Labels  []int
	Trust   []float64
	ZScores []float64
	Flagged []bool
	Drift   []float64
	// Reclustered lists the sites moved by drift re-clustering this round
	// (their label may be unchanged when their cluster stays the closest);
	// Reassigned the sites whose label actually changed.
	Reclustered []int
	Reassigned  []int
	// CentreDistances are each site's distances to its cluster's centre
	// and Lambda the temperature of the intra-cluster weights (Eq. 6).
	CentreDistances []float64
	Lambda          float64
	// State is the pTopoFL part of the server state after the step.
	State ServerState
}

// TopologyStep runs pTopoFL's topology step (paper §3.3–3.5, Algorithm 1
// before the model aggregation): site distances between l2-normalised
// descriptors (or Wasserstein distances between diagrams), clustering in
// the first round (average linkage, M clusters or chosen by silhouette),
// drift Δ_k = (1/R) Σ_{r≤R} ‖φ̂_k^(r) − φ̂_k^(1)‖ (Eq. 9) over the R
// measurements of the site's descriptor (see ServerState.DriftCount) with
// re-assignment of the measured sites above the threshold, and trust
// scores and flags from the
// configured detector. It reads no model: what it returns depends on the
// descriptors alone, so the server can cluster before local training and
// aggregate with exactly these clusters afterwards.
func TopologyStep(in TopologyInput) (Topology, error) {
	k := len(in.Sites)
	if k == 0 {
		return Topology{}, fmt.Errorf("no sites")
	}
	cfg := in.Config
	desc := make([][]float64, k)
	for i, s := range in.Sites {
		if len(s.Descriptor) == 0 {
			return Topology{}, fmt.Errorf("site %d sent no descriptor", i)
		}
		if err := finiteVector(s.Descriptor, len(in.Sites[0].Descriptor)); err != nil {
			return Topology{}, fmt.Errorf("site %d descriptor: %w", i, err)
		}
		desc[i] = s.Descriptor
	}
	var labelBlocks [][]float64
	switch cfg.Detector {
	case DescriptorDetector, "":
	case LabelledDetector, CombinedDetector:
		if !(cfg.LabelGap > 0) {
			return Topology{}, fmt.Errorf("label gap γ = %v, want a positive fraction", cfg.LabelGap)
		}
		// Everything but the anomaly score sees only the paper's numbers,
		// so the label block changes detection and nothing else.
		labelBlocks = make([][]float64, k)
		for i := range desc {
			paper, label, err := SplitExtendedDescriptor(desc[i])
			if err != nil {
				return Topology{}, fmt.Errorf("site %d descriptor: %w", i, err)
			}
			desc[i], labelBlocks[i] = paper, label
		}
	default:
		return Topology{}, fmt.Errorf("unknown detector %q; want %q, %q or %q", cfg.Detector, DescriptorDetector, LabelledDetector, CombinedDetector)
	}
	f := NormalizeDescriptors(desc)
	var dist [][]float64
	lambda := 1.0
	switch cfg.Distance {
	case DescriptorDistance, "":
		dist = EuclideanMatrix(f)
	case WassersteinDistance:
		var err error
		dist, err = WassersteinMatrix(in.Sites, cfg.WassersteinP)
		if err != nil {
			return Topology{}, err
		}
		lambda = cfg.Temperature
	default:
		return Topology{}, fmt.Errorf("unknown site distance %q; want %q or %q", cfg.Distance, DescriptorDistance, WassersteinDistance)
	}

	if in.Measured != nil && len(in.Measured) != k {
		return Topology{}, fmt.Errorf("%d measured flags for %d sites", len(in.Measured), k)
	}
	measured := func(i int) bool { return in.Measured == nil || in.Measured[i] }

	state := in.State
	state.Round = in.Round
	first := state.Labels == nil || cfg.RefitClusters
	if first {
		// The first clustering's descriptors are the references: the
		// measurement r = 1 of Eq. (9), at distance 0.
		state.Labels = ChooseClusters(dist, cfg.M, cfg.MaxAutoClusters)
		state.Reference = f
		state.DriftSum = make([]float64, k)
		state.DriftCount = make([]int, k)
		for i := range state.DriftCount {
			state.DriftCount[i] = 1
		}
	}
	if len(state.Labels) != k || len(state.Reference) != k || len(state.DriftSum) != k {
		return Topology{}, fmt.Errorf("server state holds %d cluster labels, %d reference descriptors and %d drift sums for %d sites", len(state.Labels), len(state.Reference), len(state.DriftSum), k)
	}
	count := make([]int, k)
	switch {
	case state.DriftCount == nil:
		// A state saved before the count existed divided by the round
		// number: one measurement per round before this one.
		for i := range count {
			count[i] = max(in.Round-1, 1)
		}
	case len(state.DriftCount) != k:
		return Topology{}, fmt.Errorf("server state holds %d drift counts for %d sites", len(state.DriftCount), k)
	default:
		copy(count, state.DriftCount)
	}

	// Drift, Eq. (9): Δ_k = (1/R) Σ_{r≤R} ‖φ̂_k^(r) − φ̂_k^(1)‖ over the R
	// measurements of the site's descriptor since its reference: a round
	// that did not measure the site adds nothing to the sum and nothing to
	// R (the paper measures every round, where R is the round number).
	drift := make([]float64, k)
	sum := append([]float64(nil), state.DriftSum...)
	reference := append([][]float64(nil), state.Reference...)
	var moved []int
	for i := range f {
		if len(state.Reference[i]) != len(f[i]) {
			return Topology{}, fmt.Errorf("site %d descriptor has %d numbers, its reference has %d", i, len(f[i]), len(state.Reference[i]))
		}
		if measured(i) && !first {
			sum[i] += euclid(f[i], state.Reference[i])
			count[i]++
		}
		drift[i] = sum[i] / float64(count[i])
		if cfg.DriftThreshold > 0 && measured(i) && drift[i] > cfg.DriftThreshold {
			moved = append(moved, i)
		}
	}
	labels := state.Labels
	var reassigned []int
	if len(moved) > 0 {
		labels = reassign(dist, labels, moved)
		for _, i := range moved {
			if labels[i] != state.Labels[i] {
				reassigned = append(reassigned, i)
			}
			// Re-clustering placed the site by its current descriptor,
			// which becomes its reference: Eq. (9) measures how far a
			// site has moved from the descriptor its cluster was chosen
			// by (the paper's "retain their original cluster assignments"
			// while stable). Without this, a shifted site's mean distance
			// from its old reference stays above the threshold and it is
			// re-clustered again in every later round.
			reference[i] = f[i]
			sum[i], count[i] = 0, 1
		}
	}
	state.Labels = labels
	state.Reference, state.DriftSum, state.DriftCount = reference, sum, count

	z, trust := TrustScores(dist, cfg.TrustMin, cfg.TrustMax)
	if labelBlocks != nil {
		g, err := LabelScores(labelBlocks)
		if err != nil {
			return Topology{}, err
		}
		zl := LabelZScores(g, cfg.Tau, cfg.LabelGap)
		if cfg.Detector == CombinedDetector {
			for i := range zl {
				zl[i] = math.Max(zl[i], z[i])
			}
		}
		z, trust = zl, TrustFromZ(zl, cfg.TrustMin, cfg.TrustMax)
	}
	var centre []float64
	if cfg.Distance == WassersteinDistance {
		centre = meanClusterDistances(dist, labels)
	} else {
		centre = centroidDistances(f, labels)
	}
	return Topology{
		Labels:          append([]int(nil), labels...),
		Trust:           trust,
		ZScores:         z,
		Flagged:         Flags(z, trust, cfg.Tau, cfg.FlagTrustBelow),
		Drift:           drift,
		Reclustered:     moved,
		Reassigned:      reassigned,
		CentreDistances: centre,
		Lambda:          lambda,
		State:           state,
	}, nil
}
