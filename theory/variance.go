package theory

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ptopofl/ptopofl/aggregation"
	"github.com/ptopofl/ptopofl/learn"
)

// IdentityResult is the check of Thm 3.6's displayed equation,
// Σα‖g−ḡ_α‖² = Σα‖g−ḡ‖² − ‖ḡ_α−ḡ‖²: the parallel-axis identity, true of
// any vectors and any weights that sum to 1. It cannot fail; it is shown
// on random instances only to say so with a number.
type IdentityResult struct {
	Instances int `json:"instances"`
	// WorstIdentity is the largest |lhs − rhs| / max(1, |lhs|).
	WorstIdentity float64 `json:"worst_identity"`
}

// thm36Sides returns both sides of Thm 3.6's identity for gradients g and
// weights alpha (Σα = 1), and σ² of uniform weights.
func thm36Sides(g [][]float64, alpha []float64) (lhs, rhs, sigma2 float64) {
	k := len(g)
	lhs = spread(g, alpha)
	u := uniform(k)
	mean := weightedMean(g, u)
	meanA := weightedMean(g, alpha)
	for i, gi := range g {
		rhs += alpha[i] * sqDist(gi, mean)
		sigma2 += sqDist(gi, mean) / float64(k)
	}
	rhs -= sqDist(meanA, mean)
	return lhs, rhs, sigma2
}

func weightedMean(g [][]float64, w []float64) []float64 {
	m := make([]float64, len(g[0]))
	for k, gk := range g {
		for j, v := range gk {
			m[j] += w[k] * v
		}
	}
	return m
}

// CheckIdentity evaluates Thm 3.6's identity on instances random instances
// (2–12 vectors of dimension 1–8, weights from a Dirichlet(1)).
func CheckIdentity(instances int, seed uint64) IdentityResult {
	res := IdentityResult{Instances: instances}
	r := rand.New(rand.NewPCG(seed, 36))
	for range instances {
		k, d := 2+r.IntN(11), 1+r.IntN(8)
		g := make([][]float64, k)
		for i := range g {
			g[i] = make([]float64, d)
			for j := range g[i] {
				g[i][j] = 4 * r.NormFloat64()
			}
		}
		alpha := make([]float64, k)
		sum := 0.0
		for i := range alpha {
			alpha[i] = r.ExpFloat64()
			sum += alpha[i]
		}
		for i := range alpha {
			alpha[i] /= sum
		}
		lhs, rhs, _ := thm36Sides(g, alpha)
		res.WorstIdentity = math.Max(res.WorstIdentity, math.Abs(lhs-rhs)/math.Max(1, math.Abs(lhs)))
	}
	return res
}

// Thm36Round is Thm 3.6's consequence measured on one round of a campaign:
// the sites' gradient estimates g_k are their updates θ_k − θ_k^start
// (τ local steps: −lr times a sum of gradients), α the consensus weights
// the aggregation applied (read off the models).
type Thm36Round struct {
	Campaign string `json:"campaign"`
	Setting  string `json:"setting"`
	Round    int    `json:"round"`
	// Sigma2 is σ² = (1/K)Σ‖g_k − ḡ‖², Weighted Σα_k‖g_k − ḡ_α‖² and
	// Reduction ‖ḡ_α − ḡ‖².
	Sigma2    float64 `json:"sigma2"`
	Weighted  float64 `json:"weighted"`
	Reduction float64 `json:"reduction"`
	// Correlation is Pearson's r between α_k and ‖g_k − ḡ‖. The premise
	// ("up-weights clients whose gradients are closer to the global
	// mean") is r < 0; the consequence is Weighted ≤ Sigma2.
	Correlation float64 `json:"correlation"`
	Premise     bool    `json:"premise"`
	Holds       bool    `json:"holds"`
}

// MeasureThm36 measures Thm 3.6's premise and consequence on every round of
// run whose start models are known (from round 2).
func MeasureThm36(run CampaignRun) ([]Thm36Round, error) {
	if err := run.check(); err != nil {
		return nil, err
	}
	var out []Thm36Round
	for _, r := range run.Rounds {
		if r.Start == nil {
			continue
		}
		alpha, _, err := r.consensusWeights()
		if err != nil {
			return nil, fmt.Errorf("theory: campaign %s round %d: %w", run.Campaign, r.Round, err)
		}
		g := make([][]float64, len(r.Local))
		for i := range g {
			if len(r.Start[i]) != len(r.Local[i]) {
				return nil, fmt.Errorf("theory: campaign %s round %d site %d: start model of %d parameters, local of %d", run.Campaign, r.Round, i, len(r.Start[i]), len(r.Local[i]))
			}
			g[i] = make([]float64, len(r.Local[i]))
			for j := range g[i] {
				g[i][j] = r.Local[i][j] - r.Start[i][j]
			}
		}
		lhs, _, sigma2 := thm36Sides(g, alpha)
		mean := weightedMean(g, uniform(len(g)))
		dist := make([]float64, len(g))
		for i := range g {
			dist[i] = math.Sqrt(sqDist(g[i], mean))
		}
		t := Thm36Round{Campaign: run.Campaign, Setting: run.Setting, Round: r.Round, Sigma2: sigma2, Weighted: lhs,
			Reduction: sqDist(weightedMean(g, alpha), mean), Correlation: pearson(alpha, dist)}
		t.Premise = t.Correlation < 0
		t.Holds = t.Weighted <= t.Sigma2
		out = append(out, t)
	}
	return out, nil
}

// Prop311Round is Prop. 3.11 on one round: the sites' exact local
// gradients ∇F_k(w) at the round's consensus start model w (package
// learn's objective on the rows each site trains on), B² =
// (1/K)Σ‖∇F_k − ∇F‖² with ∇F = Σ p_k ∇F_k (p_k = n_k/n, Eq. 1), and
// B²_α = Σα_k‖∇F_k − ∇F_α‖² for the consensus weights the aggregation
// applied (read off the models) and for Eq. 12's softmax weights
// (aggregation.SoftmaxWeights on the round's descriptors).
type Prop311Round struct {
	Campaign     string  `json:"campaign"`
	Setting      string  `json:"setting"`
	Round        int     `json:"round"`
	B2           float64 `json:"b2"`
	BAlpha2      float64 `json:"b_alpha2"`
	BSoftmax2    float64 `json:"b_softmax2"`
	Holds        bool    `json:"holds"`
	HoldsSoftmax bool    `json:"holds_softmax"`
}

// MeasureProp311 measures Prop. 3.11 on every round of run whose start
// models are known; train holds each site's training rows as it trains
// on them (standardised), in site order.
func MeasureProp311(run CampaignRun, train []learn.Data) ([]Prop311Round, error) {
	if err := run.check(); err != nil {
		return nil, err
	}
	if len(train) != len(run.Sites) {
		return nil, fmt.Errorf("theory: campaign %s: %d training sets for %d sites", run.Campaign, len(train), len(run.Sites))
	}
	nf := train[0].NumFeatures()
	m := run.Config.Site.Model(nf)
	total := 0.0
	for _, d := range train {
		total += float64(len(d.X))
	}
	p := make([]float64, len(train))
	for i, d := range train {
		p[i] = float64(len(d.X)) / total
	}
	var out []Prop311Round
	for _, r := range run.Rounds {
		if r.Start == nil {
			continue
		}
		alpha, _, err := r.consensusWeights()
		if err != nil {
			return nil, fmt.Errorf("theory: campaign %s round %d: %w", run.Campaign, r.Round, err)
		}
		w := make([]float64, m.NumParams())
		for _, s := range r.Start {
			if len(s) != len(w) {
				return nil, fmt.Errorf("theory: campaign %s round %d: start model of %d parameters, the model has %d", run.Campaign, r.Round, len(s), len(w))
			}
			for j, v := range s {
				w[j] += v / float64(len(r.Start))
			}
		}
		grads := make([][]float64, len(train))
		for i, d := range train {
			grads[i] = make([]float64, len(w))
			m.MeanGradient(w, d, grads[i])
		}
		full := weightedMean(grads, p)
		b2 := 0.0
		for _, g := range grads {
			b2 += sqDist(g, full) / float64(len(grads))
		}
		sites := make([]aggregation.SiteResult, len(r.Descriptors))
		for i, d := range r.Descriptors {
			sites[i] = aggregation.SiteResult{Descriptor: d, N: len(train[i].X)}
		}
		soft, _, err := aggregation.SoftmaxWeights(sites, run.Config.Server)
		if err != nil {
			return nil, fmt.Errorf("theory: campaign %s round %d: softmax weights: %w", run.Campaign, r.Round, err)
		}
		t := Prop311Round{Campaign: run.Campaign, Setting: run.Setting, Round: r.Round, B2: b2,
			BAlpha2: spread(grads, alpha), BSoftmax2: spread(grads, soft)}
		t.Holds, t.HoldsSoftmax = t.BAlpha2 <= t.B2, t.BSoftmax2 <= t.B2
		out = append(out, t)
	}
	return out, nil
}

// pearson is Pearson's correlation of a and b (0 when either is constant).
func pearson(a, b []float64) float64 {
	n := float64(len(a))
	var ma, mb float64
	for i := range a {
		ma += a[i] / n
		mb += b[i] / n
	}
	var sab, saa, sbb float64
	for i := range a {
		sab += (a[i] - ma) * (b[i] - mb)
		saa += (a[i] - ma) * (a[i] - ma)
		sbb += (b[i] - mb) * (b[i] - mb)
	}
	if saa == 0 || sbb == 0 {
		return 0
	}
	return sab / math.Sqrt(saa*sbb)
}

// RoundCounts counts rounds where a premise and a claim held.
type RoundCounts struct {
	Setting string `json:"setting,omitempty"`
	Rounds  int    `json:"rounds"`
	Premise int    `json:"premise"`
	Holds   int    `json:"holds"`
	// HoldsWithPremise counts the rounds where both held.
	HoldsWithPremise int `json:"holds_with_premise"`
}

// CountThm36 counts Thm 3.6's rounds.
func CountThm36(rs []Thm36Round) RoundCounts {
	var c RoundCounts
	for _, r := range rs {
		c.Rounds++
		if r.Premise {
			c.Premise++
		}
		if r.Holds {
			c.Holds++
		}
		if r.Premise && r.Holds {
			c.HoldsWithPremise++
		}
	}
	return c
}
