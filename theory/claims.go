package theory

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/ptopofl/ptopofl/aggregation"
	"github.com/ptopofl/ptopofl/eval"
	"github.com/ptopofl/ptopofl/learn"
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
		for _, w := range []float64{tda.Bottleneck(da.H0, db.H0), tda.Bottleneck(da.H1, db.H1)} {
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

// Thm3Result is CheckThm3's outcome: over Instances random instances,
// how many broke the first bound, and the tight instance that breaks the
// ε² corollary.
type Thm3Result struct {
	Instances  int     `json:"instances"`
	Violations int     `json:"violations"`
	TightShare float64 `json:"tight_share"` // adversaries' weight on the tight instance
	TightEps2  float64 `json:"tight_eps2"`  // ε² there
}

// CheckThm3 checks Thm 3.5 on softmax weights α_k ∝ exp(−λ δ_k), the
// theorem's own setting: the first bound Σ_A α ≤ εe^{−λΔ}/((1−ε) +
// εe^{−λΔ}) on random instances (3–12 sites, up to half adversarial,
// every adversary's δ at least the honest mean plus Δ), and the tight
// instance K = 4, ε = 1/4, honest δ = 1, adversary δ = 1 + ln 3, λ = 1,
// where λΔ = log((1 − ε)/ε) and the adversary's weight is 0.1 > ε².
func CheckThm3(instances int, seed uint64) Thm3Result {
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
	res := Thm3Result{Instances: instances}
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

// Report is `starter experiment theory`: each claim with its verdict and
// the numbers behind it.
type Report struct {
	Eq4         Eq4Result     `json:"eq4"`
	Thm2        Thm2Result    `json:"thm_3_3"`
	Thm3        Thm3Result    `json:"thm_3_5"`
	Thm36       Thm36Result   `json:"thm_3_6"`
	Convergence []Convergence `json:"thm_3_9"`
	Verdicts    []Verdict     `json:"verdicts"`
}

// Verdict is one claim's line of a Report.
type Verdict struct {
	Claim   string `json:"claim"`
	Verdict string `json:"verdict"`
	Numbers string `json:"numbers"`
}

// Judge states each claim's verdict from the measurements: Eq. 4,
// Thm 3.3, Thm 3.5 and, per healthcare seed, Thm 3.9 (runs[0] FedAvg,
// runs[1] the softmax aggregator).
func (rep *Report) Judge() {
	e := rep.Eq4
	v := Verdict{Claim: "Eq. 4: W∞(Dgm X, Dgm Y) ≤ d_H(X, Y)", Verdict: "holds",
		Numbers: fmt.Sprintf("%d random pairs: largest W∞/d_H %.3f; %d diagrams above d_H, %d above 2·d_H", e.Pairs, e.WorstRatio, e.AboveOne, e.AboveTwo)}
	if e.AboveOne > 0 {
		v.Verdict = "fails as printed; holds with the factor 2 of Chazal et al. 2009"
		if e.AboveTwo > 0 {
			v.Verdict = "fails, even with the factor 2"
		}
	}
	rep.Verdicts = append(rep.Verdicts, v)
	t2 := rep.Thm2
	v = Verdict{Claim: "Thm 3.3: margin ≥ 2η + γ keeps average-linkage clusters under moves ≤ η", Verdict: "not refuted",
		Numbers: fmt.Sprintf("0, 10, 20.1 (margin %.1f, η %.1f, γ %.1f): %v → %v; repaired condition (max within + 4η < min between): %d of %d instances changed", t2.Margin, t2.Eta, t2.Gamma, t2.Before, t2.After, t2.Broken, t2.Instances)}
	if t2.Refuted {
		v.Verdict = "fails (counterexample)"
		if t2.Broken == 0 {
			v.Verdict += "; a repaired condition holds"
		}
	}
	rep.Verdicts = append(rep.Verdicts, v)
	t3 := rep.Thm3
	v = Verdict{Claim: "Thm 3.5: adversaries' weight ≤ εe^{−λΔ}/((1−ε)+εe^{−λΔ}), ≤ ε² once λΔ ≥ log((1−ε)/ε)",
		Numbers: fmt.Sprintf("first bound broken on %d of %d instances; tight instance: weight %.4f against ε² = %.4f", t3.Violations, t3.Instances, t3.TightShare, t3.TightEps2)}
	switch {
	case t3.Violations == 0 && t3.TightShare > t3.TightEps2:
		v.Verdict = "first bound holds; the ε² corollary fails"
	case t3.Violations == 0:
		v.Verdict = "holds"
	default:
		v.Verdict = "fails"
	}
	rep.Verdicts = append(rep.Verdicts, v)
	t36 := rep.Thm36
	var fed []string
	above := 0
	for _, h := range t36.Healthcare {
		fed = append(fed, fmt.Sprintf("seed %d: σ² %.4g, weighted %.4g, reduction %.2g, r(α, ‖g−ḡ‖) %+.2f", h.Seed, h.Sigma2, h.Weighted, h.Reduction, h.Correlation))
		if h.Weighted > h.Sigma2 {
			above++
		}
	}
	v = Verdict{Claim: "Thm 3.6: Σα‖g−ḡ_α‖² = Σα‖g−ḡ‖² − ‖ḡ_α−ḡ‖², ≤ σ² when α favours sites near ḡ",
		Numbers: fmt.Sprintf("identity: largest relative error %.1e over %d instances; corollary broken on %d; healthcare (∇F_k at w = 0, Eq. 12's α): %s", t36.WorstIdentity, t36.Instances, t36.CorollaryViolations, strings.Join(fed, "; "))}
	switch {
	case t36.WorstIdentity > 1e-9 || t36.CorollaryViolations > 0:
		v.Verdict = "fails"
	case above > 0:
		v.Verdict = fmt.Sprintf("holds (an identity); its premise fails on %d of %d healthcare federations: the topology weights' variance exceeds σ²", above, len(t36.Healthcare))
	default:
		v.Verdict = "holds (an identity), and the topology weights' variance is below σ² on every healthcare federation measured"
	}
	rep.Verdicts = append(rep.Verdicts, v)
	for i, c := range rep.Convergence {
		if len(c.Runs) < 2 {
			continue
		}
		fed, soft := c.Runs[0], c.Runs[1]
		rate := fed.Rate <= c.TheoremRate && soft.Rate <= c.TheoremRate
		bound := fed.BoundHolds && soft.BoundHolds
		v = Verdict{Claim: fmt.Sprintf("Thm 3.9 (healthcare seed %d): rate (1−μ/L)^τ per round; floor below FedAvg's", i+1),
			Numbers: fmt.Sprintf("rates %.4f, %.4f (theorem %.4f); floors FedAvg %.4g, softmax %.4g; bound's floor %.4g, %.4g", fed.Rate, soft.Rate, c.TheoremRate, fed.Floor, soft.Floor, fed.Bound[len(fed.Bound)-1], soft.Bound[len(soft.Bound)-1])}
		switch {
		case rate && bound && soft.Floor > fed.Floor:
			v.Verdict = "rate and bound hold; the floor claim fails (softmax's is larger)"
		case rate && bound:
			v.Verdict = "holds"
		default:
			v.Verdict = "fails"
		}
		rep.Verdicts = append(rep.Verdicts, v)
	}
}

// HealthcareProblem is the convergence check's federation: eval.Healthcare
// (the paper's Scenario A generator) at seed, each site standardised by
// its own scaler as a pipeline site is, with FedAvg's weights p_k and
// Eq. 12's softmax weights (mean barycentre, λ) from the sites'
// descriptors of their raw training rows.
func HealthcareProblem(seed uint64, lambda float64) ([]Site, []Aggregator, error) {
	fed, err := eval.Healthcare(eval.DefaultHealthcareOptions(seed))
	if err != nil {
		return nil, nil, err
	}
	var sites []Site
	var results []aggregation.SiteResult
	n := 0
	for _, sd := range fed.Sites {
		sc, err := learn.FitStandardScaler(sd.XTrain)
		if err != nil {
			return nil, nil, fmt.Errorf("site %s: %w", sd.Name, err)
		}
		x, err := sc.Transform(sd.XTrain)
		if err != nil {
			return nil, nil, fmt.Errorf("site %s: %w", sd.Name, err)
		}
		y := make([]float64, len(sd.YTrain))
		for i, v := range sd.YTrain {
			y[i] = float64(v)
		}
		sites = append(sites, Site{X: x, Y: y})
		n += len(x)
		d, err := tda.ComputeDescriptor(sd.XTrain, tda.DescriptorOptions{Seed: seed})
		if err != nil {
			return nil, nil, fmt.Errorf("site %s: %w", sd.Name, err)
		}
		results = append(results, aggregation.SiteResult{Descriptor: d.Vector})
	}
	p := make([]float64, len(sites))
	for i, s := range sites {
		p[i] = float64(len(s.X)) / float64(n)
	}
	cfg := aggregation.DefaultConfig()
	cfg.SoftmaxLambda = lambda
	alpha, _, err := aggregation.SoftmaxWeights(results, cfg)
	if err != nil {
		return nil, nil, err
	}
	return sites, []Aggregator{{"fedavg", p}, {"softmax", alpha}}, nil
}

// ConvergenceDefaults are the convergence check's settings: μ0 0.01, τ 5
// steps at 1/L, 300 rounds.
var ConvergenceDefaults = ConvergenceOptions{Mu0: 0.01, Steps: 5, Rounds: 300}

// Measure measures every claim (Eq. 4 on 300 pairs, Thm 3.3 on 200
// instances, Thm 3.5 on 2000, Thm 3.9 on healthcare federations of seeds
// 1 … seeds) and judges them.
func Measure(seeds int) (Report, error) {
	var rep Report
	var err error
	if rep.Eq4, err = CheckEq4(300, 2026); err != nil {
		return rep, err
	}
	rep.Thm2 = CheckThm2(200, 5)
	rep.Thm3 = CheckThm3(2000, 13)
	rep.Thm36 = CheckThm36(2000, 36)
	for seed := 1; seed <= seeds; seed++ {
		sites, aggs, err := HealthcareProblem(uint64(seed), 1)
		if err != nil {
			return rep, fmt.Errorf("theory: healthcare seed %d: %w", seed, err)
		}
		h, err := MeasureThm36(uint64(seed), sites, aggs[1].Alpha, ConvergenceDefaults.Mu0)
		if err != nil {
			return rep, fmt.Errorf("theory: healthcare seed %d: %w", seed, err)
		}
		rep.Thm36.Healthcare = append(rep.Thm36.Healthcare, h)
		c, err := Check(sites, aggs, ConvergenceDefaults)
		if err != nil {
			return rep, fmt.Errorf("theory: healthcare seed %d: %w", seed, err)
		}
		rep.Convergence = append(rep.Convergence, c)
	}
	rep.Judge()
	return rep, nil
}
