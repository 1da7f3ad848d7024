package theory

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Thm36Result is the check of Thm 3.6 (heterogeneity variance reduction):
// the identity Σα‖g−ḡ_α‖² = Σα‖g−ḡ‖² − ‖ḡ_α−ḡ‖² on random instances, its
// corollary (weights that favour sites closer to ḡ give Σα‖g−ḡ_α‖² ≤ σ²,
// σ² = (1/K)Σ‖g−ḡ‖²), and, on healthcare federations, whether Eq. 12's
// topology weights are such weights.
type Thm36Result struct {
	Instances int `json:"instances"`
	// WorstIdentity is the largest |lhs − rhs| / max(1, |lhs|) of the
	// identity over the instances.
	WorstIdentity float64 `json:"worst_identity"`
	// CorollaryViolations counts instances whose weights decrease with
	// ‖g_k − ḡ‖ yet give a weighted variance above σ².
	CorollaryViolations int               `json:"corollary_violations"`
	Healthcare          []Thm36Federation `json:"healthcare"`
}

// Thm36Federation is Thm 3.6 measured on one healthcare federation: the
// sites' gradients ∇F_k at the first round's model (w = 0) and Eq. 12's
// softmax weights α of the convergence check.
type Thm36Federation struct {
	Seed uint64 `json:"seed"`
	// Sigma2 is σ², the uniform weights' variance (1/K)Σ‖g_k − ḡ‖².
	Sigma2 float64 `json:"sigma2"`
	// Weighted is Σ α_k‖g_k − ḡ_α‖², the topology weights' variance.
	Weighted float64 `json:"weighted"`
	// Reduction is ‖ḡ_α − ḡ‖², the theorem's gain term.
	Reduction float64 `json:"reduction"`
	// Correlation is Pearson's r between α_k and ‖g_k − ḡ‖: the corollary's
	// premise ("up-weights clients whose gradients are closer to the
	// global mean") is a negative r.
	Correlation float64 `json:"correlation"`
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

// CheckThm36 checks Thm 3.6's identity on instances random instances (2–12
// gradients of dimension 1–8, weights from a Dirichlet(1)) and its
// corollary on the same gradients with weights made to decrease with
// ‖g_k − ḡ‖ (the instance's weights sorted against the distances).
func CheckThm36(instances int, seed uint64) Thm36Result {
	res := Thm36Result{Instances: instances}
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
		lhs, rhs, sigma2 := thm36Sides(g, alpha)
		res.WorstIdentity = math.Max(res.WorstIdentity, math.Abs(lhs-rhs)/math.Max(1, math.Abs(lhs)))
		// The corollary: the largest weight to the site nearest ḡ.
		mean := weightedMean(g, uniform(k))
		order := make([]int, k)
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int { return cmpFloat(sqDist(g[a], mean), sqDist(g[b], mean)) })
		sorted := slices.Clone(alpha)
		slices.SortFunc(sorted, func(a, b float64) int { return cmpFloat(b, a) })
		mono := make([]float64, k)
		for rank, i := range order {
			mono[i] = sorted[rank]
		}
		if lhs, _, _ := thm36Sides(g, mono); lhs > sigma2*(1+1e-12) {
			res.CorollaryViolations++
		}
	}
	return res
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// MeasureThm36 measures Thm 3.6 on the sites of a healthcare federation
// with Eq. 12's weights alpha: each site's gradient ∇F_k at w = 0 (the
// first round's model; μ0 of the convergence check), σ², the weighted
// variance, the reduction term and the correlation of α_k with ‖g_k − ḡ‖.
func MeasureThm36(seed uint64, sites []Site, alpha []float64, mu0 float64) (Thm36Federation, error) {
	if len(sites) != len(alpha) || len(sites) < 2 {
		return Thm36Federation{}, fmt.Errorf("theory: %d sites and %d weights: want as many, at least 2", len(sites), len(alpha))
	}
	d := len(sites[0].X[0]) + 1
	g := make([][]float64, len(sites))
	w := make([]float64, d)
	for i, s := range sites {
		g[i] = make([]float64, d)
		siteGrad(s, w, mu0, g[i])
	}
	lhs, _, sigma2 := thm36Sides(g, alpha)
	mean := weightedMean(g, uniform(len(g)))
	dist := make([]float64, len(g))
	for i := range g {
		dist[i] = math.Sqrt(sqDist(g[i], mean))
	}
	return Thm36Federation{Seed: seed, Sigma2: sigma2, Weighted: lhs,
		Reduction: sqDist(weightedMean(g, alpha), mean), Correlation: pearson(alpha, dist)}, nil
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
