package theory

import (
	"math"
	"math/rand/v2"

	"github.com/ptopofl/ptopofl/aggregation"
	"github.com/ptopofl/ptopofl/tda"
)

// Eq4Result is CheckEq4's outcome: over Pairs pairs of clouds, the
// largest W∞/d_H seen (H0 and H1), how many pairs exceeded the paper's
// W∞ ≤ d_H (Eq. 4) and how many exceeded W∞ ≤ 2·d_H (Chazal et al. 2009,
// Thm 3.1, for the diameter filtration these diagrams use).
type Eq4Result struct {
	Pairs      int     `json:"pairs"`
	WorstRatio float64 `json:"worst_ratio"`
	AboveOne   int     `json:"above_d_h"`
	AboveTwo   int     `json:"above_2_d_h"`
	// Points are every pair's (d_H, W∞) in H0 and H1, for the figure.
	Points []StabilityPoint `json:"points"`
	// Real counts the same on the site-data pairs of Cor. 3.4's check
	// (Cor34Federation.Eq4): how many there were, the largest ratio, and
	// how many were above d_H and 2·d_H.
	RealPairs      int     `json:"real_pairs"`
	RealWorstRatio float64 `json:"real_worst_ratio"`
	RealAboveOne   int     `json:"real_above_d_h"`
	RealAboveTwo   int     `json:"real_above_2_d_h"`
}

// addReal counts the site-data pairs of points into r.
func (r *Eq4Result) addReal(points []StabilityPoint) {
	for _, p := range points {
		if p.Dim == 0 {
			r.RealPairs++
		}
		if p.W > p.DH+1e-12 {
			r.RealAboveOne++
		}
		if p.W > 2*p.DH+1e-12 {
			r.RealAboveTwo++
		}
		if p.DH > 0 {
			r.RealWorstRatio = math.Max(r.RealWorstRatio, p.W/p.DH)
		}
		r.Points = append(r.Points, p)
	}
}

// CheckEq4 measures the stability inequality Eq. 4 on random pairs of
// point clouds in R²: a cloud of 4–12 Gaussian points and a copy with
// every point jittered by up to 0.3 and, every other pair, one point
// dropped. Diagrams are tda.VietorisRips of the Euclidean distances,
// compared by tda.Bottleneck; d_H is tda.Hausdorff.
func CheckEq4(pairs int, seed uint64) (Eq4Result, error) {
	r := rand.New(rand.NewPCG(seed, 4))
	res := Eq4Result{Pairs: pairs}
	for i := range pairs {
		n := 4 + r.IntN(9)
		a, b := make([][]float64, n), make([][]float64, 0, n)
		for j := range a {
			a[j] = []float64{r.NormFloat64(), r.NormFloat64()}
			b = append(b, []float64{a[j][0] + 0.3*(2*r.Float64()-1), a[j][1] + 0.3*(2*r.Float64()-1)})
		}
		if i%2 == 1 {
			b = b[:n-1]
		}
		da, err := ripsDiagram(a)
		if err != nil {
			return res, err
		}
		db, err := ripsDiagram(b)
		if err != nil {
			return res, err
		}
		dh := tda.Hausdorff(a, b)
		for dim, w := range []float64{tda.Bottleneck(da.H0, db.H0), tda.Bottleneck(da.H1, db.H1)} {
			res.Points = append(res.Points, StabilityPoint{Source: "random", Dim: dim, DH: dh, W: w})
			if w > dh+1e-12 {
				res.AboveOne++
			}
			if w > 2*dh+1e-12 {
				res.AboveTwo++
			}
			if dh > 0 {
				res.WorstRatio = math.Max(res.WorstRatio, w/dh)
			}
		}
	}
	return res, nil
}

func ripsDiagram(pts [][]float64) (tda.Diagram, error) {
	m, err := tda.EuclideanDistances(pts)
	if err != nil {
		return tda.Diagram{}, err
	}
	return tda.VietorisRips(m), nil
}

// Thm2Result is CheckThm2's outcome: the counterexample to the paper's
// Thm 3.3 (three descriptors on a line) and the repaired condition's
// random instances.
type Thm2Result struct {
	// Counterexample: descriptors 0, 10, 20.1 with η = 0.1 and γ = 9.9
	// satisfy the margin (10.1 ≥ 2η + γ), yet moving 10 to 10.1 changes
	// the partition from Before to After.
	Margin        float64 `json:"margin"`
	Eta, Gamma    float64
	Before, After []int
	Refuted       bool `json:"refuted"`
	// Instances random clustered instances satisfied max within + 4η <
	// min between; Broken of them changed partition after moves ≤ η.
	Instances int `json:"instances"`
	Broken    int `json:"broken"`
}

// CheckThm2 checks Thm 3.3: the counterexample, and instances random
// instances in R³ (2–4 clusters of 2–6 points, centres 40 apart) of the
// repaired condition max within-cluster distance + 4η < min
// between-cluster distance, each moved by random vectors of norm η =
// 0.99 × (min between − max within)/4 and re-clustered by average linkage.
func CheckThm2(instances int, seed uint64) Thm2Result {
	res := Thm2Result{Eta: 0.1, Gamma: 9.9}
	line := func(x []float64) [][]float64 {
		pts := make([][]float64, len(x))
		for i, v := range x {
			pts[i] = []float64{v}
		}
		return aggregation.EuclideanMatrix(pts)
	}
	x := []float64{0, 10, 20.1}
	res.Margin = math.Min(x[2]-x[0], x[2]-x[1])
	res.Before = aggregation.AverageLinkage(line(x), 2)
	res.After = aggregation.AverageLinkage(line([]float64{0, 10 + res.Eta, 20.1}), 2)
	res.Refuted = res.Margin >= 2*res.Eta+res.Gamma-1e-12 && !samePartition(res.Before, res.After)

	r := rand.New(rand.NewPCG(seed, 8))
	for range instances {
		m := 2 + r.IntN(3)
		var pts [][]float64
		var truth []int
		for g := range m {
			centre := []float64{40 * float64(g), 10 * r.Float64(), 10 * r.Float64()}
			for range 2 + r.IntN(5) {
				p := make([]float64, 3)
				for j := range p {
					p[j] = centre[j] + 3*r.NormFloat64()
				}
				pts, truth = append(pts, p), append(truth, g)
			}
		}
		dist := aggregation.EuclideanMatrix(pts)
		within, between := 0.0, math.Inf(1)
		for i := range pts {
			for j := range pts {
				if i == j {
					continue
				}
				if truth[i] == truth[j] {
					within = math.Max(within, dist[i][j])
				} else {
					between = math.Min(between, dist[i][j])
				}
			}
		}
		if within >= between {
			continue
		}
		res.Instances++
		eta := 0.99 * (between - within) / 4
		moved := make([][]float64, len(pts))
		for i, p := range pts {
			dir := []float64{r.NormFloat64(), r.NormFloat64(), r.NormFloat64()}
			n := math.Sqrt(dir[0]*dir[0] + dir[1]*dir[1] + dir[2]*dir[2])
			moved[i] = []float64{p[0] + eta*dir[0]/n, p[1] + eta*dir[1]/n, p[2] + eta*dir[2]/n}
		}
		if !samePartition(aggregation.AverageLinkage(dist, m), truth) ||
			!samePartition(aggregation.AverageLinkage(aggregation.EuclideanMatrix(moved), m), truth) {
			res.Broken++
		}
	}
	return res
}

// samePartition reports whether two labelings group the items alike,
// whatever the label ids.
func samePartition(a, b []int) bool {
	for i := range a {
		for j := range a {
			if (a[i] == a[j]) != (b[i] == b[j]) {
				return false
			}
		}
	}
	return true
}
