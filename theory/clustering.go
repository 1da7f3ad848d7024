package theory

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ptopofl/ptopofl/aggregation"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/tda"
)

// FederationSites is one federation as a campaign of the theory experiment
// saw it: the campaign's resolved configuration, and per site its raw
// training rows, the descriptor it sent in round 1 and the seed its
// descriptor's rows were drawn with.
type FederationSites struct {
	Federation string
	Config     method.Config
	Sites      []SiteRows
}

// SiteRows is one site of FederationSites.
type SiteRows struct {
	Name       string
	X          [][]float64
	Descriptor []float64
	// Seed is the seed of the site's descriptor subsample
	// (tda.DescriptorOptions.Seed), as the site derived it.
	Seed uint64
}

// partition is the system's clustering of descriptors desc under cfg:
// aggregation.TopologyStep's first-round labels (l2-normalised descriptors,
// the configured site distance, average linkage, M clusters).
func partition(cfg method.Config, desc [][]float64) ([]int, error) {
	sites := make([]aggregation.SiteResult, len(desc))
	for i, d := range desc {
		sites[i] = aggregation.SiteResult{Descriptor: d, N: 1}
	}
	top, err := aggregation.TopologyStep(aggregation.TopologyInput{Round: 1, Sites: sites, Config: cfg.Server})
	if err != nil {
		return nil, err
	}
	return top.Labels, nil
}

// paperPart returns the paper's DescriptorLen numbers of a descriptor
// (the whole of a 48-number one).
func paperPart(d []float64) []float64 { return d[:min(len(d), tda.DescriptorLen)] }

// Thm33Federation is Thm 3.3 on one federation's real descriptors, in the
// space the system clusters them in (the l2-normalised paper numbers φ̂,
// §3.3 Step 1): the system's partition of them, the margin the theorem
// reads (min distance between descriptors of different clusters), the
// largest η it covers (margin/2, as γ → 0), and the smallest η, as a
// fraction of that, at which a perturbation of every descriptor by at most
// η changed the system's partition (aggregation.ChooseClusters on the
// Euclidean distances, what aggregation.TopologyStep runs in round 1).
type Thm33Federation struct {
	Federation string  `json:"federation"`
	Clusters   int     `json:"clusters"`
	Margin     float64 `json:"margin"`
	MaxWithin  float64 `json:"max_within"`
	// EtaCovered is margin/2: below it the theorem promises the same
	// partition.
	EtaCovered float64 `json:"eta_covered"`
	// Tried counts the perturbations tried at η ≤ EtaCovered; Broken those
	// that changed the partition.
	Tried, Broken int
	// FirstBreak is the smallest η/EtaCovered of the grid at which some
	// perturbation changed the partition (0 when none did, up to the
	// grid's largest, 2).
	FirstBreak float64 `json:"first_break"`
	// RepairedEta is (min between − max within)/4 when positive: the η
	// below which the repaired condition (max within + 4η < min between)
	// holds; 0 when the clusters are not separated so.
	RepairedEta float64 `json:"repaired_eta"`
}

// thm33Grid are the η/EtaCovered tried.
var thm33Grid = []float64{0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 0.99, 1.5, 2}

// CheckThm33Real perturbs a federation's real descriptors by at most η and
// re-clusters them with the system's clustering: for each η on a grid of
// fractions of the margin/2 the theorem covers, every pair of sites in
// different clusters moved towards each other by η (the move the
// counterexample makes), every site moved alone towards the nearest site
// of each other cluster, and draws random moves of norm η for every site.
func CheckThm33Real(fs FederationSites, draws int, seed uint64) (Thm33Federation, error) {
	k := len(fs.Sites)
	paper, sent := make([][]float64, k), make([][]float64, k)
	for i, s := range fs.Sites {
		paper[i], sent[i] = paperPart(s.Descriptor), s.Descriptor
	}
	desc := aggregation.NormalizeDescriptors(paper)
	cluster := func(points [][]float64) []int {
		return aggregation.ChooseClusters(aggregation.EuclideanMatrix(points), fs.Config.Server.M, fs.Config.Server.MaxAutoClusters)
	}
	p0 := cluster(desc)
	if sys, err := partition(fs.Config, sent); err != nil || !samePartition(sys, p0) {
		return Thm33Federation{}, fmt.Errorf("theory: %s: the clustering of the normalised descriptors (%v) is not the system's (%v, %v)", fs.Federation, p0, sys, err)
	}
	res := Thm33Federation{Federation: fs.Federation, Clusters: numLabels(p0), Margin: math.Inf(1)}
	for i := range desc {
		for j := i + 1; j < k; j++ {
			d := euclid(desc[i], desc[j])
			if p0[i] == p0[j] {
				res.MaxWithin = math.Max(res.MaxWithin, d)
			} else {
				res.Margin = math.Min(res.Margin, d)
			}
		}
	}
	if res.Clusters < 2 {
		res.Margin = 0
		return res, nil
	}
	res.EtaCovered = res.Margin / 2
	res.RepairedEta = math.Max(0, (res.Margin-res.MaxWithin)/4)
	r := rand.New(rand.NewPCG(seed, 33))
	moved := func(moves map[int][]float64) []int {
		out := make([][]float64, k)
		for i, d := range desc {
			out[i] = d
			if u, ok := moves[i]; ok {
				out[i] = append([]float64(nil), d...)
				for j, v := range u {
					out[i][j] += v
				}
			}
		}
		return cluster(out)
	}
	towards := func(from, to int, eta float64) []float64 {
		a, b := desc[from], desc[to]
		n := euclid(a, b)
		u := make([]float64, len(a))
		for j := range u {
			u[j] = eta * (b[j] - a[j]) / n
		}
		return u
	}
	for _, f := range thm33Grid {
		eta := f * res.EtaCovered
		var trials []map[int][]float64
		for i := range k {
			for j := range k {
				if p0[i] == p0[j] {
					continue
				}
				if i < j {
					trials = append(trials, map[int][]float64{i: towards(i, j, eta), j: towards(j, i, eta)})
				}
			}
			// Alone towards the nearest site of each other cluster.
			nearest := map[int]int{}
			for j := range k {
				if p0[j] == p0[i] {
					continue
				}
				if n, ok := nearest[p0[j]]; !ok || euclid(desc[i], desc[j]) < euclid(desc[i], desc[n]) {
					nearest[p0[j]] = j
				}
			}
			for c := range res.Clusters {
				if j, ok := nearest[c]; ok {
					trials = append(trials, map[int][]float64{i: towards(i, j, eta)})
				}
			}
		}
		for range draws {
			m := map[int][]float64{}
			for i := range k {
				u := make([]float64, len(desc[i]))
				n := 0.0
				for j := range u {
					u[j] = r.NormFloat64()
					n += u[j] * u[j]
				}
				n = math.Sqrt(n)
				for j := range u {
					u[j] *= eta / n
				}
				m[i] = u
			}
			trials = append(trials, m)
		}
		broke := false
		for _, tr := range trials {
			changed := !samePartition(moved(tr), p0)
			if f <= 1 {
				res.Tried++
				if changed {
					res.Broken++
				}
			}
			broke = broke || changed
		}
		if broke && res.FirstBreak == 0 {
			res.FirstBreak = f
		}
	}
	return res, nil
}

func numLabels(l []int) int {
	n := 0
	for _, v := range l {
		n = max(n, v+1)
	}
	return n
}

func euclid(a, b []float64) float64 { return math.Sqrt(sqDist(a, b)) }

// Cor34Federation is Cor. 3.4 on one federation's real data: each site's
// training rows moved by at most ρ (every row by a random vector of norm
// ρ, so d_H ≤ ρ), its descriptor recomputed as the site computes it, and
// all sites re-clustered by the system.
type Cor34Federation struct {
	Federation string `json:"federation"`
	// Gamma is γ: the smallest bottleneck distance (max over H0, H1)
	// between the diagrams of two sites in different clusters (0 for one
	// cluster).
	Gamma float64 `json:"gamma"`
	// CDiagram is the largest W∞(Dgm Φ(X), Dgm Φ(X'))/d_H(X, X') seen
	// (the stability constant c of the diagrams the system computes, on
	// standardised subsamples); CVector the largest ‖φ(X') − φ(X)‖/d_H of
	// the 48 numbers a site sends, CNormalised the same of the normalised
	// φ̂ the clustering reads.
	CDiagram    float64 `json:"c_diagram"`
	CVector     float64 `json:"c_vector"`
	CNormalised float64 `json:"c_normalised"`
	// Radius is the corollary's γ/(2c) with c = CDiagram.
	Radius float64 `json:"radius"`
	// Rho lists the perturbation sizes tried, Changed how many of the
	// draws at each changed the partition.
	Rho     []float64 `json:"rho"`
	Draws   int       `json:"draws"`
	Changed []int     `json:"changed"`
	// FirstChange is the smallest ρ that changed the partition (0: none).
	FirstChange float64 `json:"first_change"`
	// RadiusChanged counts the draws at ρ = Radius (after the grid) that
	// changed the partition: the corollary says none.
	RadiusChanged int `json:"radius_changed"`
	// Eq4 are the (d_H, W∞) pairs of the raw subsamples' Vietoris–Rips
	// diagrams (H0 and H1) under the same perturbations: Eq. 4 on real
	// data.
	Eq4 []StabilityPoint `json:"eq4"`
}

// StabilityPoint is one pair of point clouds of the Eq. 4 check.
type StabilityPoint struct {
	Source string  `json:"source"` // "random" or "site data"
	Dim    int     `json:"dim"`
	DH     float64 `json:"d_h"`
	W      float64 `json:"w_inf"`
}

// cor34Rho are the data perturbations tried, in the units of the raw
// features (the healthcare generator's are of order 1).
var cor34Rho = []float64{0.001, 0.01, 0.05, 0.1, 0.2, 0.5}

// CheckCor34Real perturbs every site's raw training rows of fs by ρ for
// each ρ of a grid, draws times, recomputes the descriptors with the
// site's options (tda.ComputeDescriptor, the campaign's variant and n_sub,
// the site's seed) and re-clusters; it measures the stability constants c
// that the corollary assumes and the radius γ/(2c) it promises.
func CheckCor34Real(fs FederationSites, draws int, seed uint64) (Cor34Federation, error) {
	k := len(fs.Sites)
	res := Cor34Federation{Federation: fs.Federation, Rho: cor34Rho, Draws: draws, Changed: make([]int, len(cor34Rho)), Gamma: math.Inf(1)}
	opt := func(s SiteRows) tda.DescriptorOptions {
		return tda.DescriptorOptions{Variant: fs.Config.Descriptor, NSub: fs.Config.NSub, Seed: s.Seed}
	}
	base := make([]tda.Descriptor, k)
	desc := make([][]float64, k)
	for i, s := range fs.Sites {
		d, err := tda.ComputeDescriptor(s.X, opt(s))
		if err != nil {
			return res, fmt.Errorf("theory: %s site %s: %w", fs.Federation, s.Name, err)
		}
		if !equalFloats(d.Vector, paperPart(s.Descriptor)) {
			return res, fmt.Errorf("theory: %s site %s: the descriptor recomputed from its rows differs from the one it sent", fs.Federation, s.Name)
		}
		base[i] = d
		desc[i] = s.Descriptor
	}
	p0, err := partition(fs.Config, desc)
	if err != nil {
		return res, fmt.Errorf("theory: %s: %w", fs.Federation, err)
	}
	for i := range k {
		for j := i + 1; j < k; j++ {
			if p0[i] != p0[j] {
				w := math.Max(tda.Bottleneck(base[i].H0, base[j].H0), tda.Bottleneck(base[i].H1, base[j].H1))
				res.Gamma = math.Min(res.Gamma, w)
			}
		}
	}
	r := rand.New(rand.NewPCG(seed, 34))
	// perturb moves every site's rows by rho, re-clusters, and reports
	// whether the partition changed; eq4 records Eq. 4's points.
	perturb := func(rho float64, eq4 bool) (bool, error) {
		moved := make([][]float64, k)
		for i, s := range fs.Sites {
			x := make([][]float64, len(s.X))
			for a, row := range s.X {
				u := make([]float64, len(row))
				n := 0.0
				for j := range u {
					u[j] = r.NormFloat64()
					n += u[j] * u[j]
				}
				n = math.Sqrt(n)
				x[a] = make([]float64, len(row))
				for j, v := range row {
					x[a][j] = v + rho*u[j]/n
				}
			}
			d, err := tda.ComputeDescriptor(x, opt(s))
			if err != nil {
				return false, fmt.Errorf("theory: %s site %s: %w", fs.Federation, s.Name, err)
			}
			moved[i] = append(append([]float64(nil), d.Vector...), s.Descriptor[len(d.Vector):]...)
			dh := tda.Hausdorff(s.X, x)
			if dh == 0 {
				continue
			}
			w := math.Max(tda.Bottleneck(base[i].H0, d.H0), tda.Bottleneck(base[i].H1, d.H1))
			res.CDiagram = math.Max(res.CDiagram, w/dh)
			res.CVector = math.Max(res.CVector, euclid(base[i].Vector, d.Vector)/dh)
			res.CNormalised = math.Max(res.CNormalised, euclid(tda.NormalizeDescriptor(base[i].Vector), tda.NormalizeDescriptor(d.Vector))/dh)
			// Eq. 4 on the raw rows of the site's subsample.
			if eq4 && i == 0 {
				a, b := pick(s.X, base[i].Rows), pick(x, base[i].Rows)
				da, err := ripsDiagram(a)
				if err != nil {
					return false, err
				}
				db, err := ripsDiagram(b)
				if err != nil {
					return false, err
				}
				dhs := tda.Hausdorff(a, b)
				res.Eq4 = append(res.Eq4, StabilityPoint{"site data", 0, dhs, tda.Bottleneck(da.H0, db.H0)},
					StabilityPoint{"site data", 1, dhs, tda.Bottleneck(da.H1, db.H1)})
			}
		}
		p, err := partition(fs.Config, moved)
		if err != nil {
			return false, fmt.Errorf("theory: %s: %w", fs.Federation, err)
		}
		return !samePartition(p, p0), nil
	}
	for ri, rho := range cor34Rho {
		for range draws {
			changed, err := perturb(rho, true)
			if err != nil {
				return res, err
			}
			if changed {
				res.Changed[ri]++
				if res.FirstChange == 0 {
					res.FirstChange = rho
				}
			}
		}
	}
	if math.IsInf(res.Gamma, 1) {
		res.Gamma = 0 // one cluster: no two sites differ by a cluster
	}
	if res.CDiagram > 0 && res.Gamma > 0 {
		res.Radius = res.Gamma / (2 * res.CDiagram)
		for range draws {
			changed, err := perturb(res.Radius, false)
			if err != nil {
				return res, err
			}
			if changed {
				res.RadiusChanged++
			}
		}
	}
	return res, nil
}

func pick(x [][]float64, rows []int) [][]float64 {
	out := make([][]float64, len(rows))
	for i, r := range rows {
		out[i] = x[r]
	}
	return out
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
