package theory

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/ptopofl/ptopofl/aggregation"
	"github.com/ptopofl/ptopofl/tda"
)

// Thm35Round is Thm 3.5 measured on one round of a pTopoFL campaign on a
// federation with label-flipping sites.
type Thm35Round struct {
	Campaign string `json:"campaign"`
	Setting  string `json:"setting"`
	Level    string `json:"level"`
	Round    int    `json:"round"`
	Sites    int    `json:"sites"`
	// Adversaries is |A| and Epsilon ε = |A|/K.
	Adversaries int     `json:"adversaries"`
	Epsilon     float64 `json:"epsilon"`
	// Score names the anomaly score the system's trust is exponential in:
	// "δ" (Eq. 8's mean descriptor distance, the theorem's own, under the
	// descriptor detector) or "g" (the label score of the labelled
	// detector, aggregation.LabelScores).
	Score string `json:"score"`
	// Delta is the measured margin Δ = min_{k∈A} s_k − mean_{k∉A} s_k of
	// the score s; the theorem's premise is Δ > 0.
	Delta float64 `json:"delta"`
	// Lambda is the temperature of the system's trust rule in the score's
	// units: t_k = exp(−max(λ(s_k − s̄) − 1, 0)) with λ = 1/σ_δ (σ the
	// population std of δ, Eq. 8) for the descriptor detector, and
	// t_k = exp(−max(λ s_k − 1, 0)) with λ = τ/γ for the labelled one.
	Lambda float64 `json:"lambda"`
	// Share is the adversaries' share of the round's consensus weight,
	// read off the stored models (RecoverWeights); WorstHonest the largest
	// adversaries' share in the model an honest site received; FedAvgShare
	// their share under FedAvg's weights n_k/Σn.
	Share       float64 `json:"share"`
	WorstHonest float64 `json:"worst_honest"`
	FedAvgShare float64 `json:"fedavg_share"`
	// Bound is the theorem's εe^{−λΔ}/((1−ε) + εe^{−λΔ}) (meaningful only
	// when Premise).
	Bound float64 `json:"bound"`
	// Premise is Δ > 0; Holds is Share ≤ Bound; Suppressed is Share <
	// FedAvgShare ("from linear (FedAvg: O(ε))" in the theorem's words).
	Premise    bool `json:"premise"`
	Holds      bool `json:"holds"`
	Suppressed bool `json:"suppressed"`
	// Corollary is λΔ ≥ log((1−ε)/ε), where the theorem promises Share ≤
	// ε²; CorollaryHolds says whether it does.
	Corollary      bool `json:"corollary"`
	CorollaryHolds bool `json:"corollary_holds"`
	// Residual and Cond are the weight recovery's (RecoverWeights): how
	// exactly the stored consensus is a combination of the stored site
	// models, and how well the weights are determined.
	Residual float64 `json:"residual"`
	Cond     float64 `json:"cond"`
}

// MeasureThm35 measures Thm 3.5 on every round of run in which at least one
// site is adversarial: the anomaly score the campaign's detector computes
// (δ_k of Eq. 8 on the l2-normalised descriptors, or the labelled
// detector's g_k, both with package aggregation's functions on the stored
// descriptors), the margin Δ and temperature λ of the premise, and the
// adversaries' share of the weight the aggregation actually gave, read off
// the stored models.
func MeasureThm35(run CampaignRun) ([]Thm35Round, error) {
	if err := run.check(); err != nil {
		return nil, err
	}
	k := len(run.Sites)
	nA := 0
	totalN, advN := 0.0, 0.0
	for _, s := range run.Sites {
		totalN += float64(s.N)
		if s.Adversarial {
			nA++
			advN += float64(s.N)
		}
	}
	if nA == 0 {
		return nil, nil
	}
	eps := float64(nA) / float64(k)
	var out []Thm35Round
	for _, r := range run.Rounds {
		score, lambda, unit, err := anomalyScores(run, r.Descriptors)
		if err != nil {
			return nil, fmt.Errorf("theory: campaign %s round %d: %w", run.Campaign, r.Round, err)
		}
		minA, meanH := math.Inf(1), 0.0
		for i, s := range score {
			if run.Sites[i].Adversarial {
				minA = math.Min(minA, s)
			} else {
				meanH += s / float64(k-nA)
			}
		}
		alpha, rec, err := r.consensusWeights()
		if err != nil {
			return nil, fmt.Errorf("theory: campaign %s round %d: %w", run.Campaign, r.Round, err)
		}
		t := Thm35Round{Campaign: run.Campaign, Setting: run.Setting, Level: run.Level, Round: r.Round, Sites: k, Adversaries: nA, Epsilon: eps,
			Score: unit, Delta: minA - meanH, Lambda: lambda, Share: adversaryShare(alpha, run.Sites),
			FedAvgShare: advN / totalN, Residual: rec.Residual, Cond: rec.Cond}
		// The share in the model each honest site holds, one recovery per
		// distinct model (a cluster's sites hold the same one).
		seen := map[int]float64{}
		for i, m := range r.Received {
			if run.Sites[i].Adversarial {
				continue
			}
			j := slices.IndexFunc(r.Received, func(o []float64) bool { return slices.Equal(o, m) })
			share, ok := seen[j]
			if !ok {
				ri, err := RecoverWeights(r.Local, m)
				if err != nil {
					return nil, fmt.Errorf("theory: campaign %s round %d site %s: %w", run.Campaign, r.Round, run.Sites[i].Name, err)
				}
				share = adversaryShare(ri.W, run.Sites)
				seen[j] = share
			}
			t.WorstHonest = math.Max(t.WorstHonest, share)
		}
		e := eps * math.Exp(-lambda*t.Delta)
		t.Bound = e / ((1 - eps) + e)
		t.Premise = t.Delta > 0
		t.Holds = t.Share <= t.Bound
		t.Suppressed = t.Share < t.FedAvgShare
		t.Corollary = t.Premise && lambda*t.Delta >= math.Log((1-eps)/eps)
		t.CorollaryHolds = t.Share <= eps*eps
		out = append(out, t)
	}
	return out, nil
}

// adversaryShare is Σ_{k∈A} w_k / Σ_k w_k.
func adversaryShare(w []float64, sites []RunSite) float64 {
	a, s := 0.0, 0.0
	for i, v := range w {
		s += v
		if sites[i].Adversarial {
			a += v
		}
	}
	return a / s
}

// anomalyScores returns the anomaly score the campaign's detector computes
// from the descriptors, the temperature λ of the trust rule in its units,
// and its name: δ_k of Eq. 8 with λ = 1/(σ_δ + 1e-8) for the paper's
// detector (aggregation.TrustScores: z = (δ − δ̄)/(σ + 1e-8), t =
// exp(−max(z − 1, 0))), the label score g_k with λ = τ/γ for the labelled
// detector (aggregation.LabelZScores, TrustFromZ), and for the combined
// detector the z it takes (the larger of the two) with λ = 1.
func anomalyScores(run CampaignRun, desc [][]float64) ([]float64, float64, string, error) {
	cfg := run.Config.Server
	k := len(desc)
	paper := make([][]float64, k)
	labels := make([][]float64, k)
	for i, d := range desc {
		paper[i] = d
		if len(d) == tda.ExtendedDescriptorLen {
			var err error
			if paper[i], labels[i], err = aggregation.SplitExtendedDescriptor(d); err != nil {
				return nil, 0, "", fmt.Errorf("site %d descriptor: %w", i, err)
			}
		}
	}
	dist := aggregation.EuclideanMatrix(aggregation.NormalizeDescriptors(paper))
	delta := make([]float64, k)
	mean := 0.0
	for i, row := range dist {
		for j, v := range row {
			if j != i {
				delta[i] += v / float64(k-1)
			}
		}
		mean += delta[i] / float64(k)
	}
	sd := 0.0
	for _, v := range delta {
		sd += (v - mean) * (v - mean) / float64(k)
	}
	lambdaDelta := 1 / (math.Sqrt(sd) + 1e-8)
	switch cfg.Detector {
	case aggregation.DescriptorDetector, "":
		return delta, lambdaDelta, "δ", nil
	case aggregation.LabelledDetector, aggregation.CombinedDetector:
		if labels[0] == nil {
			return nil, 0, "", fmt.Errorf("detector %s without extended descriptors", cfg.Detector)
		}
		g, err := aggregation.LabelScores(labels)
		if err != nil {
			return nil, 0, "", err
		}
		if cfg.Detector == aggregation.LabelledDetector {
			return g, cfg.Tau / cfg.LabelGap, "g", nil
		}
		z := aggregation.LabelZScores(g, cfg.Tau, cfg.LabelGap)
		for i := range z {
			z[i] = math.Max(z[i], (delta[i]-mean)*lambdaDelta)
		}
		return z, 1, "z", nil
	}
	return nil, 0, "", fmt.Errorf("unknown detector %q", cfg.Detector)
}

// Thm35Summary is Thm 3.5 over the rounds of one setting (or all).
type Thm35Summary struct {
	Setting string `json:"setting"`
	Score   string `json:"score"`
	// Rounds counts the rounds with an adversary; Premise those with
	// Δ > 0; Holds, Suppressed of those, the bound held and the share was
	// below FedAvg's; Corollary those where λΔ ≥ log((1−ε)/ε) and
	// CorollaryHolds of them, the share was at most ε².
	Rounds, Premise, Holds, Suppressed int
	Corollary, CorollaryHolds          int
	// ShareOverBound is the median Share/Bound over the premise rounds,
	// ShareOverFedAvg the median Share/FedAvgShare over them (0 when the
	// premise holds on none).
	ShareOverBound, ShareOverFedAvg float64
	// WorstResidual is the largest weight-recovery residual.
	WorstResidual float64
}

// SummariseThm35 counts rounds per setting, in the order settings first
// appear.
func SummariseThm35(rounds []Thm35Round) []Thm35Summary {
	var out []Thm35Summary
	index := map[string]int{}
	ratios := map[string][2][]float64{}
	for _, r := range rounds {
		i, ok := index[r.Setting]
		if !ok {
			i = len(out)
			index[r.Setting] = i
			out = append(out, Thm35Summary{Setting: r.Setting, Score: r.Score})
		}
		s := &out[i]
		s.Rounds++
		s.WorstResidual = math.Max(s.WorstResidual, r.Residual)
		if !r.Premise {
			continue
		}
		s.Premise++
		if r.Holds {
			s.Holds++
		}
		if r.Suppressed {
			s.Suppressed++
		}
		if r.Corollary {
			s.Corollary++
			if r.CorollaryHolds {
				s.CorollaryHolds++
			}
		}
		q := ratios[r.Setting]
		q[0] = append(q[0], r.Share/r.Bound)
		q[1] = append(q[1], r.Share/r.FedAvgShare)
		ratios[r.Setting] = q
	}
	for i := range out {
		q := ratios[out[i].Setting]
		out[i].ShareOverBound, out[i].ShareOverFedAvg = medianOf(q[0]), medianOf(q[1])
	}
	return out
}

// Verdict states what the rounds of s say of Thm 3.5.
func (s Thm35Summary) Verdict() string {
	switch {
	case s.Rounds == 0:
		return "not measured (no round with an adversary)"
	case s.Premise == 0:
		return fmt.Sprintf("says nothing here: its premise (Δ > 0 on %s) fails on all %d rounds", s.Score, s.Rounds)
	}
	v := fmt.Sprintf("premise (Δ > 0 on %s) holds on %d of %d rounds; ", s.Score, s.Premise, s.Rounds)
	switch {
	case s.Holds == s.Premise:
		v += "the bound holds on all of them"
	case s.Holds == 0:
		v += fmt.Sprintf("the bound fails on all of them (median share/bound %.3g)", s.ShareOverBound)
	default:
		v += fmt.Sprintf("the bound fails on %d of them (median share/bound %.3g)", s.Premise-s.Holds, s.ShareOverBound)
	}
	if s.Suppressed == s.Premise {
		v += fmt.Sprintf("; the adversaries' share is below FedAvg's on every one (median ratio %.3g)", s.ShareOverFedAvg)
	} else {
		v += fmt.Sprintf("; the adversaries keep FedAvg's share or more on %d of them (median ratio to FedAvg's %.3g)", s.Premise-s.Suppressed, s.ShareOverFedAvg)
	}
	return v
}

func medianOf(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// SoftmaxBoundResult is CheckSoftmaxBound's outcome: over Instances random
// instances, how many broke the first bound, and the tight instance that
// breaks the ε² corollary.
type SoftmaxBoundResult struct {
	Instances  int     `json:"instances"`
	Violations int     `json:"violations"`
	TightShare float64 `json:"tight_share"` // adversaries' weight on the tight instance
	TightEps2  float64 `json:"tight_eps2"`  // ε² there
}

// CheckSoftmaxBound checks Thm 3.5 on the weights it has in mind, softmax
// weights α_k ∝ exp(−λ δ_k), rather than the system's: the first bound
// Σ_A α ≤ εe^{−λΔ}/((1−ε) + εe^{−λΔ}) on random instances (3–12 sites, up
// to half adversarial, every adversary's δ at least the honest mean plus
// Δ; it follows from Jensen's inequality, Σ_H e^{−λδ} ≥ |H|e^{−λδ_H}), and
// the tight instance K = 4, ε = 1/4, honest δ = 1, adversary δ = 1 + ln 3,
// λ = 1, where λΔ = log((1 − ε)/ε) and the adversary's weight is 0.1 > ε².
func CheckSoftmaxBound(instances int, seed uint64) SoftmaxBoundResult {
	share := func(delta []float64, na int, lambda float64) float64 {
		var num, den float64
		for k, d := range delta {
			w := math.Exp(-lambda * d)
			den += w
			if k < na {
				num += w
			}
		}
		return num / den
	}
	res := SoftmaxBoundResult{Instances: instances}
	r := rand.New(rand.NewPCG(seed, 21))
	for range instances {
		k := 3 + r.IntN(10)
		na := 1 + r.IntN(k/2)
		delta := make([]float64, k)
		meanH := 0.0
		for i := na; i < k; i++ {
			delta[i] = 3 * r.Float64()
			meanH += delta[i] / float64(k-na)
		}
		gap := 2 * r.Float64()
		for i := range na {
			delta[i] = meanH + gap + r.Float64()
		}
		lambda := 4 * r.Float64()
		eps := float64(na) / float64(k)
		e := eps * math.Exp(-lambda*gap)
		if share(delta, na, lambda) > e/((1-eps)+e)+1e-12 {
			res.Violations++
		}
	}
	res.TightShare = share([]float64{1 + math.Log(3), 1, 1, 1}, 1, 1)
	res.TightEps2 = 0.25 * 0.25
	return res
}
