package aggregation

import (
	"fmt"
	"math"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/tda"
)

// SiteDistance selects how pTopoFL measures the distance between two sites.
type SiteDistance string

const (
	// DescriptorDistance is the Euclidean distance between l2-normalised
	// 48-number descriptors (paper §3.3, Step 1; the reference).
	DescriptorDistance SiteDistance = "descriptor"
	// WassersteinDistance is the p-Wasserstein distance between the sites'
	// persistence diagrams (paper Eq. 3), the metric §1 and the convergence
	// proof weight sites by.
	WassersteinDistance SiteDistance = "wasserstein"
)

// Config holds every server-side hyper-parameter.
type Config struct {
	// M is pTopoFL's number of clusters (paper Table 3: 2 for Scenarios A/B);
	// 0 chooses M in [2, MaxAutoClusters] by silhouette.
	M               int
	MaxAutoClusters int
	// Beta is the inter-cluster blending coefficient β of Eq. (7) (paper
	// Table 3: 0.3).
	Beta float64
	// Tau is the anomaly z-score threshold τ (paper Table 3: 2.0 for the
	// comparison, 1.8 for robustness): a site is flagged when z_k > Tau.
	Tau float64
	// FlagTrustBelow, if positive, replaces the z-score rule: a site is
	// flagged when its trust is below this value. The reference's `flagged`
	// is trust < 0.5 (its τ is unused); the paper preset sets 0.5.
	FlagTrustBelow float64
	// TrustMin and TrustMax clip the trust weight (reference: 0.05, 1).
	TrustMin, TrustMax float64
	// DriftThreshold re-clusters a site whose drift Δ_k (Eq. 9, on
	// normalised descriptors) exceeds it; 0 disables re-clustering.
	DriftThreshold float64
	// RefitClusters fits the clusters afresh in every round from that
	// round's descriptors (a deep pTopoFL campaign under descriptor_model
	// "global", whose descriptors change with the model): no reference is
	// kept, so drift (Eq. 9) is 0 and nothing is re-clustered by it.
	RefitClusters bool
	// Distance selects the site distance; WassersteinP is p and
	// Temperature is λ of the weights exp(−λ·W_p) for WassersteinDistance.
	Distance     SiteDistance
	WassersteinP float64
	Temperature  float64
	// TrimFraction is the fraction trimmed from each end by TrimmedMean
	// (default 0.2, which cuts one of 5 to 9 models: 0.1 cut none below 10),
	// KrumF the number of Byzantine sites Krum tolerates.
	TrimFraction float64
	KrumF        int
	// Detector selects pTopoFL's anomaly detector: DescriptorDetector
	// (the paper's, and the default; "" means it too), LabelledDetector or
	// CombinedDetector; the last two need extended descriptors
	// (tda.ExtendedDescriptorLen numbers) from every site.
	Detector Detector
	// LabelGap is γ of LabelledDetector: a site is flagged when it has lost
	// more than this fraction of the federation's typical label structure
	// (LabelScores, LabelZScores). Default 0.5, chosen on healthcare
	// federations of seeds 2000–2019 (eval.Healthcare; see
	// TestLabelledDetectorHealthcare for what it detects).
	LabelGap float64
	// FoolsGoldKappa is FoolsGold's confidence κ of the logit re-weighting
	// (FoolsGoldWeights; Fung et al.'s reference uses 1, the default).
	FoolsGoldKappa float64
	// FoolsGoldFlagBelow counts a site as flagged by FoolsGold when its
	// weight is below it (FoolsGoldFlags). Default 0.01: the logit step
	// sends the weights of sites it distrusts to exactly 0.
	FoolsGoldFlagBelow float64
	// Aggregation is pTopoFL's server rule (ClusterAggregation, the
	// default when empty, or SoftmaxAggregation); SoftmaxLambda is λ of
	// Eq. (12) and Barycentre the barycentre its distances are measured
	// from (SoftmaxWeights).
	Aggregation   Aggregation
	SoftmaxLambda float64
	Barycentre    Barycentre
	// ClipNorm is the update-norm bound M of norm-clipped FedAvg
	// (NormClippedAverage); 0, the default, uses each round's median update
	// norm.
	ClipNorm float64
}

// DefaultConfig returns the paper's server-side hyper-parameters (Table 3)
// with the reference's trust clip, descriptor distance, flags by τ, and
// drift re-clustering above 0.1 (a tenth of the unit-descriptor scale; the
// paper gives no value).
func DefaultConfig() Config {
	return Config{
		M: 2, MaxAutoClusters: 10, Beta: 0.3, Tau: 2.0,
		TrustMin: 0.05, TrustMax: 1,
		DriftThreshold: 0.1,
		Distance:       DescriptorDistance, WassersteinP: 2, Temperature: 1,
		TrimFraction: 0.2, KrumF: 1,
		Detector: DescriptorDetector, LabelGap: 0.5,
		FoolsGoldKappa: 1, FoolsGoldFlagBelow: 0.01, ClipNorm: 0,
		Aggregation: ClusterAggregation, SoftmaxLambda: 1, Barycentre: MeanBarycentre,
	}
}

// SiteResult is what one site sends the server in a round.
type SiteResult struct {
	// Params is the site's local model.
	Params []float64
	// Control is SCAFFOLD's control-variate message (learn.SiteOutput.Control).
	Control []float64
	// N is the site's number of training rows.
	N int
	// Descriptor is the site's 48-number topological descriptor (pTopoFL),
	// or under LabelledDetector and CombinedDetector its extended
	// descriptor: those 48 numbers followed by tda.LabelledSummary.
	Descriptor []float64
	// H0 and H1 are the site's finite persistence pairs, needed only for
	// WassersteinDistance.
	H0, H1 []tda.Pair
}

// ServerState is what the server keeps between rounds.
type ServerState struct {
	// Round is the last aggregated round (0 before the first).
	Round int
	// Global is the global model of FedAvg-style methods.
	Global []float64
	// Control is SCAFFOLD's server control variate c.
	Control []float64
	// Labels are pTopoFL's cluster ids per site, fixed in the first round
	// and changed only by drift re-clustering.
	Labels []int
	// Reference holds each site's normalised descriptor of the first round
	// (or of its last drift re-clustering, which re-baselines it),
	// DriftSum Σ_r ‖φ̂_k^(r) − φ̂_k^(1)‖ over the measurements since, and
	// DriftCount their number R, counting the reference's own measurement
	// (r = 1, distance 0), for the drift Δ_k = DriftSum/DriftCount of
	// Eq. (9). A nil DriftCount (a state saved before it existed) counts
	// one measurement per round before this one, the old divisor.
	Reference  [][]float64
	DriftSum   []float64
	DriftCount []int
	// FoolsGoldHistory holds, per site, FoolsGold's aggregate update
	// H_k = Σ_r (θ_k^(r) − θ_global^(r−1)) over the rounds so far; a nil
	// entry is a site with no history yet.
	FoolsGoldHistory [][]float64
}

// RoundInput is everything AggregateRound reads.
type RoundInput struct {
	Method learn.Method
	// Round is the 1-based round being aggregated.
	Round  int
	Sites  []SiteResult
	State  ServerState
	Config Config
}

// RoundOutput is what AggregateRound returns.
type RoundOutput struct {
	// Models holds the model pushed to each site. Sites of one cluster (or
	// all sites, for a global model) share the same backing slice.
	Models [][]float64
	// Control is SCAFFOLD's new server control variate, pushed to every site.
	Control []float64
	// ClusterModels are pTopoFL's blended cluster models θ*_c, by cluster id.
	ClusterModels [][]float64
	// Labels, Trust, ZScores, Flagged and Drift are pTopoFL's per-site
	// cluster ids, trust weights t_k, anomaly z-scores z_k, flags and drift
	// Δ_k; nil for other methods, except Flagged, which FoolsGold also sets
	// (FoolsGoldFlags).
	Labels  []int
	Trust   []float64
	ZScores []float64
	Flagged []bool
	Drift   []float64
	// Reclustered lists the sites drift re-clustering considered this
	// round; Reassigned those whose cluster actually changed.
	Reclustered []int
	Reassigned  []int
	// SiteWeights is the implicit per-site selection of a robust baseline,
	// for reporting what it excludes: FoolsGold's weights α_k
	// (FoolsGoldWeights; its Flagged are FoolsGoldFlags of them),
	// norm-clipped FedAvg's clip factors (NormClipFactors), Krum's 1 for
	// the selected site and 0 for the others; nil for other methods.
	SiteWeights []float64
	State       ServerState
}

// AggregateRound runs the server side of one round of in.Method. It returns
// an error, never panics, for input a site or user can get wrong: no sites,
// models of different lengths, non-finite values, missing descriptors, or
// a state that does not match the sites.
func AggregateRound(in RoundInput) (RoundOutput, error) {
	out, err := aggregateRound(in)
	if err != nil {
		return RoundOutput{}, fmt.Errorf("aggregate round %d (%s): %w", in.Round, in.Method, err)
	}
	return out, nil
}

func aggregateRound(in RoundInput) (RoundOutput, error) {
	k := len(in.Sites)
	if k == 0 {
		return RoundOutput{}, fmt.Errorf("no sites")
	}
	np := len(in.Sites[0].Params)
	for i, s := range in.Sites {
		if err := finiteVector(s.Params, np); err != nil {
			return RoundOutput{}, fmt.Errorf("site %d model: %w", i, err)
		}
		if s.N <= 0 {
			return RoundOutput{}, fmt.Errorf("site %d has n = %d, want a positive row count", i, s.N)
		}
	}
	models := make([][]float64, k)
	for i, s := range in.Sites {
		models[i] = s.Params
	}
	state := in.State
	state.Round = in.Round
	out := RoundOutput{}
	var global []float64
	var err error
	if Streams(in.Method) {
		// The same sums as AggregateStream: one code path for both.
		return aggregateStream(in, func(i int) ([]float64, []float64, error) {
			return in.Sites[i].Params, in.Sites[i].Control, nil
		})
	}
	switch in.Method {
	case learn.LocalOnly:
		// The server is idle: each site keeps its own fit (the reference
		// computes a FedAvg aggregate and never uses it).
		out.Models = models
		out.State = state
		return out, nil
	case learn.Median:
		global, err = CoordinateMedian(models)
	case learn.TrimmedMean:
		global, err = TrimmedMean(models, in.Config.TrimFraction)
	case learn.Krum:
		var sel int
		sel, err = KrumSelect(models, in.Config.KrumF)
		if err == nil {
			global = append([]float64(nil), models[sel]...)
			out.SiteWeights = make([]float64, k)
			out.SiteWeights[sel] = 1
		}
	case learn.FoolsGold:
		var hist [][]float64
		global, hist, out.SiteWeights, err = foolsGoldRound(models, in.State, in.Config.FoolsGoldKappa)
		if err == nil {
			state.FoolsGoldHistory = hist
			out.Flagged = FoolsGoldFlags(out.SiteWeights, in.Config.FoolsGoldFlagBelow)
		}
	case learn.NormClip:
		global, out.SiteWeights, err = NormClippedAverage(in.State.Global, in.Sites, in.Config.ClipNorm)
	default:
		_, err = learn.ParseMethod(string(in.Method))
	}
	if err != nil {
		return RoundOutput{}, err
	}
	state.Global = global
	out.Models = make([][]float64, k)
	for i := range out.Models {
		out.Models[i] = global
	}
	out.State = state
	return out, nil
}

// WeightedAverage returns FedAvg's aggregate Σ_k n_k θ_k / Σ_k n_k
// (McMahan et al. 2017; the p_k = |D_k|/Σ|D_j| of paper Eq. 1). The site
// models must have equal lengths.
func WeightedAverage(sites []SiteResult) []float64 {
	sum := make(weightedSum, len(sites[0].Params))
	total := 0.0
	for _, s := range sites {
		total += float64(s.N)
	}
	for _, s := range sites {
		sum.add(float64(s.N), s.Params)
	}
	return sum.scaled(total)
}

// weightedSum accumulates Σ_k w_k θ_k one model at a time, in the order
// the models are added (so the same models in the same order give the same
// bits, whether they were all in memory or read one by one).
type weightedSum []float64

func (s weightedSum) add(w float64, theta []float64) {
	for j, v := range theta {
		s[j] += w * v
	}
}

// scaled divides the sum by d in place and returns it.
func (s weightedSum) scaled(d float64) []float64 {
	for j := range s {
		s[j] /= d
	}
	return s
}

// scaffoldControl returns SCAFFOLD's new server variate c + mean_k(m_k)
// (Karimireddy et al. 2020, Algorithm 1, with all N sites sampled so
// |S|/N = 1), where m_k is what site k sent: its change Δc_i, or under the
// reference bug its full c_i (learn.SCAFFOLDConfig.ReferenceBug); sum is
// Σ_k m_k over the k sites.
func scaffoldControl(sum weightedSum, k int, prev []float64) ([]float64, error) {
	c := make([]float64, len(sum))
	if prev != nil {
		if err := finiteVector(prev, len(sum)); err != nil {
			return nil, fmt.Errorf("server control variate: %w", err)
		}
		copy(c, prev)
	}
	for j := range c {
		c[j] += sum[j] / float64(k)
	}
	return c, nil
}

func finiteVector(v []float64, n int) error {
	if len(v) != n {
		return fmt.Errorf("has %d values, want %d", len(v), n)
	}
	for j, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("value %d is %v", j, x)
		}
	}
	return nil
}
