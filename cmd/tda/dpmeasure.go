package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/ptopofl/ptopofl/aggregation"
	"github.com/ptopofl/ptopofl/eval"
	"github.com/ptopofl/ptopofl/tda"
)

const dpMeasureUsage = `usage: tda dp-measure [--seeds 20] [--first-seed 1] [--z 0,0.6,2,3.7] [--format table|json]
                      [--dp-rows 0] [--radius 8] [--grid 32] [--bandwidth 0.25] [--landscape-max 0.3]
                      [--label-radii 11,12,...,20] [--noise-seed 0]

Measures what Gaussian noise on the differentially private descriptor
(tda.DPDescriptor) and label summary (tda.DPLabelRaw, tda.DPLabelBlock) does
to pTopoFL's server on the healthcare federations (eval.Healthcare with the
paper's defaults: 8 sites of 30–219 training rows, 20 features, sites 1 and
5 flip 30 % of their labels), one federation per seed.

Per site it computes the paper's descriptor (80-row subsample seeded by
seed + site) and label-aware summary (tda.LabelledSummary, all rows), and
the DP descriptor and DP label statistics on the DP rows (all training rows
by default, m = n; --dp-rows N draws N of them). For every noise multiplier
z it adds N(0, (zΔ)²) to each released number (a seeded simulation, not a
release), post-processes, and reports:

  - the agreement (adjusted Rand index) of the server's clustering
    (aggregation.ChooseClusters with M = 2 on l2-normalised descriptors)
    of the DP descriptors with that of the noiseless paper descriptors,
    and with that of the noiseless DP descriptors (z = 0);
  - the Spearman rank correlation of the 28 pairwise site distances, with
    the same two references;
  - the labelled detector's detection rate on sites 1 and 5 and its
    false-positive rate on the others (aggregation.LabelScores and
    LabelZScores, τ = 2, γ = 0.5), next to the noiseless LabelledSummary's;
  - Δ, σ = zΔ and the root-mean-square entry of the noiseless DP vector,
    and σ·√96 (the distance noise puts between two copies of one vector)
    over the median distance between two sites' noiseless DP descriptors;
  - for reference, the ARI between the paper's clustering and a
    clustering of the sites by size (1/n) alone;
  - ε at δ = 1e-5 of one release with multiplier z, and of the two
    releases (descriptor and label statistics) together.

The ARI and correlations are means over the seeds; detection counts are
pooled. Options other than the defaults must be chosen on seeds that are
not reported (1000–1019 for the defaults).

flags:
`

// dpDelta is the δ of the ε columns.
const dpDelta = 1e-5

// dpMeasureConfig is what one dp-measure run computes.
type dpMeasureConfig struct {
	Seeds      int
	FirstSeed  uint64
	Z          []float64
	DPRows     int
	Descriptor tda.DPDescriptorOptions
	Label      tda.DPLabelOptions
	NoiseSeed  uint64
}

// dpNoiseRow is the outcome at one noise multiplier.
type dpNoiseRow struct {
	Z float64 `json:"z"`
	// EpsilonOne and EpsilonBoth are ε at δ = 1e-5 of one release and of
	// the descriptor and label releases together; nil (JSON null) for
	// z = 0, which is not private.
	EpsilonOne  *float64 `json:"epsilon_one_release"`
	EpsilonBoth *float64 `json:"epsilon_both_releases"`
	// SigmaDescriptor and SigmaLabel are the median σ = zΔ over sites.
	SigmaDescriptor float64 `json:"sigma_descriptor"`
	SigmaLabel      float64 `json:"sigma_label"`
	// ARIPaper and ARIDP are mean adjusted Rand indices of the clustering
	// with the paper's and with the noiseless DP clustering; SpearmanPaper
	// and SpearmanDP the mean rank correlations of pairwise distances.
	ARIPaper      float64 `json:"ari_vs_paper"`
	ARIDP         float64 `json:"ari_vs_dp_noiseless"`
	SpearmanPaper float64 `json:"spearman_vs_paper"`
	SpearmanDP    float64 `json:"spearman_vs_dp_noiseless"`
	// Detection pools the labelled detector's counts with the DP label
	// block.
	Detection eval.DetectionCounts `json:"detection"`
	Det       float64              `json:"detection_rate"`
	FPR       float64              `json:"false_positive_rate"`
}

// dpReport is dp-measure's result.
type dpReport struct {
	Seeds     []uint64 `json:"seeds"`
	DPRows    string   `json:"dp_rows"`
	Options   string   `json:"options"`
	DeltaDesc float64  `json:"median_sensitivity_descriptor"`
	DeltaLab  float64  `json:"median_sensitivity_label"`
	// RMSEntry is the median over sites of the root-mean-square entry of
	// the noiseless DP descriptor; RMSLabel that of the DP label vector.
	RMSEntry float64 `json:"median_rms_entry_descriptor"`
	RMSLabel float64 `json:"median_rms_entry_label"`
	// SiteDistance is the median over seeds and site pairs of the
	// Euclidean distance between two sites' noiseless DP descriptors (before
	// normalisation): the signal the noise must not drown. Two noisy
	// copies of one vector are about σ·√96 apart.
	SiteDistance float64 `json:"median_site_distance_descriptor"`
	// PaperDetection pools the labelled detector's counts with the
	// noiseless tda.LabelledSummary.
	PaperDetection eval.DetectionCounts `json:"paper_detection"`
	PaperDet       float64              `json:"paper_detection_rate"`
	PaperFPR       float64              `json:"paper_false_positive_rate"`
	// PaperVsSize is the mean adjusted Rand index between the paper
	// descriptors' clustering and a clustering of the sites by 1/n alone
	// (the same server function on the one-number vectors 1/n_k): how much
	// of the reference clustering is site size rather than shape.
	PaperVsSize float64      `json:"ari_paper_vs_size"`
	Rows        []dpNoiseRow `json:"rows"`
}

// runDPMeasure implements "tda dp-measure".
func runDPMeasure(args []string, out *bytes.Buffer, stderr io.Writer) error {
	fs := newFlagSet("dp-measure", dpMeasureUsage, stderr)
	seeds := fs.Int("seeds", 20, "number of federations (`count`), seeds first-seed, first-seed+1, …")
	first := fs.Uint64("first-seed", 1, "first federation `seed`")
	zFlag := fs.String("z", "0,0.6,2,3.7", "comma-separated noise `multipliers` z ≥ 0 (σ = zΔ)")
	format := fs.String("format", "table", "output `format`: table or json")
	dpRows := fs.Int("dp-rows", 0, "DP subsample `size` m per site; 0 uses all training rows (m = n)")
	radius := fs.Float64("radius", tda.DefaultDPRadius, "DP descriptor clipping `radius` R of the projected rows")
	grid := fs.Int("grid", tda.DefaultDPGrid, "DP descriptor grid `size` G")
	bandwidth := fs.Float64("bandwidth", tda.DefaultDPBandwidth, "DP descriptor kernel `bandwidth` h (unit-disc units)")
	landscapeMax := fs.Float64("landscape-max", tda.DefaultDPLandscapeMax, "DP descriptor last landscape `level` T")
	radiiFlag := fs.String("label-radii", "", "10 comma-separated increasing `radii` of the DP label summary (default tda.DefaultDPLabelRadii)")
	noiseSeed := fs.Uint64("noise-seed", 0, "`seed` of the simulated noise")
	if _, err := parseArgs(fs, args, 0, "no arguments"); err != nil {
		return err
	}
	if *seeds < 1 {
		return fmt.Errorf("--seeds %d: want at least 1", *seeds)
	}
	if *format != "table" && *format != "json" {
		return fmt.Errorf("--format %q: want table or json", *format)
	}
	if *dpRows < 0 {
		return fmt.Errorf("--dp-rows %d: want 0 (all rows) or a positive size", *dpRows)
	}
	z, err := parseFloatList(*zFlag)
	if err != nil {
		return fmt.Errorf("--z: %w", err)
	}
	for k, v := range z {
		if !(v >= 0) || math.IsInf(v, 0) {
			return fmt.Errorf("--z: entry %d is %v, want a finite multiplier ≥ 0", k+1, v)
		}
	}
	cfg := dpMeasureConfig{
		Seeds: *seeds, FirstSeed: *first, Z: z, DPRows: *dpRows, NoiseSeed: *noiseSeed,
		Descriptor: tda.DPDescriptorOptions{Radius: *radius, Grid: *grid, Bandwidth: *bandwidth, LandscapeMax: *landscapeMax},
	}
	if *radiiFlag != "" {
		if cfg.Label.Radii, err = parseFloatList(*radiiFlag); err != nil {
			return fmt.Errorf("--label-radii: %w", err)
		}
	}
	// Check the options once, before any work, so a bad flag names itself.
	if _, _, err := tda.DPDescriptor([][]float64{{0}}, []int{0}, cfg.Descriptor); err != nil {
		return fmt.Errorf("DP descriptor options: %w", err)
	}
	if _, _, err := tda.DPLabelRaw([][]float64{{0}, {1}}, []float64{0, 1}, []int{0, 1}, cfg.Label); err != nil {
		return fmt.Errorf("DP label options: %w", err)
	}
	rep, err := dpMeasure(cfg)
	if err != nil {
		return err
	}
	if *format == "json" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		out.Write(b)
		out.WriteString("\n")
		return nil
	}
	writeDPTable(out, rep)
	return nil
}

// parseFloatList parses comma-separated numbers.
func parseFloatList(s string) ([]float64, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("empty list")
	}
	parts := strings.Split(s, ",")
	v := make([]float64, len(parts))
	for k, p := range parts {
		x, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || math.IsNaN(x) {
			return nil, fmt.Errorf("entry %d %q is not a number", k+1, p)
		}
		v[k] = x
	}
	return v, nil
}

// dpSite holds one site's noiseless inputs.
type dpSite struct {
	m           int
	raw, lraw   []float64
	delta, dlab float64
}

// dpMeasure runs the measurement of cfg.
func dpMeasure(cfg dpMeasureConfig) (dpReport, error) {
	rep := dpReport{DPRows: "all training rows (m = n)"}
	if cfg.DPRows > 0 {
		rep.DPRows = fmt.Sprintf("%d rows per site (all if fewer)", cfg.DPRows)
	}
	d := cfg.Descriptor
	rep.Options = fmt.Sprintf("R=%g G=%d h=%g T=%g label radii=%v", d.Radius, d.Grid, d.Bandwidth, d.LandscapeMax, cfg.Label.Radii)
	if cfg.Label.Radii == nil {
		rep.Options = fmt.Sprintf("R=%g G=%d h=%g T=%g label radii=%v", d.Radius, d.Grid, d.Bandwidth, d.LandscapeMax, tda.DefaultDPLabelRadii)
	}
	type rowAcc struct {
		ariP, ariD, rhoP, rhoD float64
		det                    eval.DetectionCounts
		sigD, sigL             []float64
	}
	acc := make([]rowAcc, len(cfg.Z))
	var deltas, dlabs, rms, rmsL, siteDist []float64
	cluster := func(desc [][]float64) ([][]float64, []int) {
		dist := aggregation.EuclideanMatrix(aggregation.NormalizeDescriptors(desc))
		return dist, aggregation.ChooseClusters(dist, 2, aggregation.DefaultConfig().MaxAutoClusters)
	}
	for s := 0; s < cfg.Seeds; s++ {
		seed := cfg.FirstSeed + uint64(s)
		rep.Seeds = append(rep.Seeds, seed)
		fed, err := eval.Healthcare(eval.DefaultHealthcareOptions(seed))
		if err != nil {
			return rep, fmt.Errorf("seed %d: %w", seed, err)
		}
		k := len(fed.Sites)
		paper := make([][]float64, k)
		paperLab := make([][]float64, k)
		sites := make([]dpSite, k)
		adversarial := make([]bool, k)
		for i, st := range fed.Sites {
			adversarial[i] = st.IsAdversarial
			y := make([]float64, len(st.YTrain))
			for j, l := range st.YTrain {
				y[j] = float64(l)
			}
			pd, err := tda.ComputeDescriptor(st.XTrain, tda.DescriptorOptions{NSub: 80, Seed: seed + uint64(i)})
			if err != nil {
				return rep, fmt.Errorf("seed %d site %d: %w", seed, i, err)
			}
			paper[i] = pd.Vector
			if paperLab[i], err = tda.LabelledSummary(st.XTrain, y, tda.LabelledOptions{Seed: seed + uint64(i)}); err != nil {
				return rep, fmt.Errorf("seed %d site %d: %w", seed, i, err)
			}
			rows := dpSubsample(len(st.XTrain), cfg.DPRows, seed, uint64(i))
			var site dpSite
			site.m = len(rows)
			if site.raw, site.delta, err = tda.DPDescriptor(st.XTrain, rows, cfg.Descriptor); err != nil {
				return rep, fmt.Errorf("seed %d site %d: %w", seed, i, err)
			}
			if site.lraw, site.dlab, err = tda.DPLabelRaw(st.XTrain, y, rows, cfg.Label); err != nil {
				return rep, fmt.Errorf("seed %d site %d: %w", seed, i, err)
			}
			sites[i] = site
			deltas = append(deltas, site.delta)
			dlabs = append(dlabs, site.dlab)
			rms = append(rms, rootMeanSquare(site.raw))
			rmsL = append(rmsL, rootMeanSquare(site.lraw))
		}
		paperDist, paperLabels := cluster(paper)
		size := make([][]float64, k)
		for i, st := range fed.Sites {
			size[i] = []float64{1 / float64(len(st.XTrain))}
		}
		sizeDist := aggregation.EuclideanMatrix(size)
		rep.PaperVsSize += adjustedRandIndex(paperLabels, aggregation.ChooseClusters(sizeDist, 2, aggregation.DefaultConfig().MaxAutoClusters))
		c, err := labelledDetections(paperLab, adversarial)
		if err != nil {
			return rep, fmt.Errorf("seed %d: %w", seed, err)
		}
		rep.PaperDetection = rep.PaperDetection.Add(c)

		// The noiseless DP reference, post-processed as the noisy ones are.
		dp0 := make([][]float64, k)
		for i, site := range sites {
			if dp0[i], err = tda.DPDescriptorVector(site.raw, cfg.Descriptor); err != nil {
				return rep, fmt.Errorf("seed %d site %d: %w", seed, i, err)
			}
		}
		dp0Dist, dp0Labels := cluster(dp0)
		for i := range sites {
			for j := i + 1; j < k; j++ {
				siteDist = append(siteDist, euclidean(sites[i].raw, sites[j].raw))
			}
		}
		for zi, z := range cfg.Z {
			// One noise stream per (seed, z); sites draw in order.
			rng := rand.New(rand.NewPCG(cfg.NoiseSeed^seed, uint64(zi)))
			desc := make([][]float64, k)
			blocks := make([][]float64, k)
			for i, site := range sites {
				noisy := addGaussian(site.raw, z*site.delta, rng)
				if desc[i], err = tda.DPDescriptorVector(noisy, cfg.Descriptor); err != nil {
					return rep, fmt.Errorf("seed %d site %d: %w", seed, i, err)
				}
				noisyL := addGaussian(site.lraw, z*site.dlab, rng)
				if blocks[i], err = tda.DPLabelBlock(noisyL, site.m); err != nil {
					return rep, fmt.Errorf("seed %d site %d: %w", seed, i, err)
				}
				acc[zi].sigD = append(acc[zi].sigD, z*site.delta)
				acc[zi].sigL = append(acc[zi].sigL, z*site.dlab)
			}
			dist, labels := cluster(desc)
			acc[zi].ariP += adjustedRandIndex(labels, paperLabels)
			acc[zi].ariD += adjustedRandIndex(labels, dp0Labels)
			acc[zi].rhoP += spearman(upperTriangle(dist), upperTriangle(paperDist))
			acc[zi].rhoD += spearman(upperTriangle(dist), upperTriangle(dp0Dist))
			c, err := labelledDetections(blocks, adversarial)
			if err != nil {
				return rep, fmt.Errorf("seed %d z %g: %w", seed, z, err)
			}
			acc[zi].det = acc[zi].det.Add(c)
		}
	}
	n := float64(cfg.Seeds)
	rep.DeltaDesc, rep.DeltaLab = medianOf(deltas), medianOf(dlabs)
	rep.RMSEntry, rep.RMSLabel = medianOf(rms), medianOf(rmsL)
	rep.SiteDistance = medianOf(siteDist)
	rep.PaperVsSize /= n
	rep.PaperDet, rep.PaperFPR = rep.PaperDetection.DetectionRate(), rep.PaperDetection.FalsePositiveRate()
	for zi, z := range cfg.Z {
		a := acc[zi]
		row := dpNoiseRow{
			Z: z, SigmaDescriptor: medianOf(a.sigD), SigmaLabel: medianOf(a.sigL),
			ARIPaper: a.ariP / n, ARIDP: a.ariD / n, SpearmanPaper: a.rhoP / n, SpearmanDP: a.rhoD / n,
			Detection: a.det, Det: a.det.DetectionRate(), FPR: a.det.FalsePositiveRate(),
		}
		if z > 0 {
			// Two Gaussian releases with multiplier z compose to one
			// with multiplier z/√2 (μ-GDP: μ² adds up).
			one, both := gaussianEpsilon(1/z, dpDelta), gaussianEpsilon(math.Sqrt2/z, dpDelta)
			row.EpsilonOne, row.EpsilonBoth = &one, &both
		}
		rep.Rows = append(rep.Rows, row)
	}
	return rep, nil
}

// gaussianEpsilon returns the smallest ε for which the Gaussian mechanism
// with μ = Δ/σ is (ε, δ)-DP, by bisection on the exact trade-off of the
// analytic Gaussian mechanism (Balle and Wang, "Improving the Gaussian
// mechanism for differential privacy", ICML 2018, Theorem 8):
//
//	δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2),
//
// which decreases in ε. For the μ of this command (z ≥ 0.1, ε below 100)
// neither term overflows. It is kept here, rather than shared, because it
// only labels a measurement.
func gaussianEpsilon(mu, delta float64) float64 {
	phi := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	d := func(eps float64) float64 { return phi(-eps/mu+mu/2) - math.Exp(eps)*phi(-eps/mu-mu/2) }
	if d(0) <= delta {
		return 0
	}
	lo, hi := 0.0, 1.0
	for d(hi) > delta {
		lo, hi = hi, 2*hi
		if hi > 1e3 {
			return math.Inf(1)
		}
	}
	for i := 0; i < 100 && hi-lo > 1e-12*hi; i++ {
		mid := (lo + hi) / 2
		if d(mid) > delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// dpSubsample returns the DP rows of a site with n rows: all of them in
// order when size is 0 or at least n, otherwise size rows drawn without
// replacement by a partial Fisher–Yates shuffle seeded by (seed, site). A
// deployment draws them from a stream the server cannot see; a seeded one
// stands in for it in this simulation.
func dpSubsample(n, size int, seed, site uint64) []int {
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	if size == 0 || size >= n {
		return perm
	}
	r := rand.New(rand.NewPCG(seed, site^0x9e3779b97f4a7c15))
	for i := 0; i < size; i++ {
		j := i + r.IntN(n-i)
		perm[i], perm[j] = perm[j], perm[i]
	}
	return perm[:size]
}

// addGaussian returns v + N(0, σ²) per entry.
func addGaussian(v []float64, sigma float64, rng *rand.Rand) []float64 {
	out := slices.Clone(v)
	if sigma == 0 {
		return out
	}
	for i := range out {
		out[i] += sigma * rng.NormFloat64()
	}
	return out
}

// labelledDetections runs the labelled detector on the label blocks with
// the server's defaults and counts its flags against the truth.
func labelledDetections(blocks [][]float64, adversarial []bool) (eval.DetectionCounts, error) {
	cfg := aggregation.DefaultConfig()
	g, err := aggregation.LabelScores(blocks)
	if err != nil {
		return eval.DetectionCounts{}, err
	}
	z := aggregation.LabelZScores(g, cfg.Tau, cfg.LabelGap)
	trust := aggregation.TrustFromZ(z, cfg.TrustMin, cfg.TrustMax)
	return eval.CountDetections(aggregation.Flags(z, trust, cfg.Tau, 0), adversarial), nil
}

// adjustedRandIndex returns the adjusted Rand index of two labelings of
// the same items (Hubert and Arabie, "Comparing partitions", J. Classif. 2
// (1985)): (Σ C(n_ij,2) − E)/(½(Σ C(a_i,2) + Σ C(b_j,2)) − E) with
// E = Σ C(a_i,2)·Σ C(b_j,2)/C(n,2). When the denominator is 0 (both
// labelings trivial in the same way) it returns 1 for identical partitions
// and 0 otherwise.
func adjustedRandIndex(a, b []int) float64 {
	if len(a) != len(b) {
		panic("dp-measure: labelings of different lengths")
	}
	c2 := func(x int) float64 { return float64(x) * float64(x-1) / 2 }
	joint := map[[2]int]int{}
	ra, rb := map[int]int{}, map[int]int{}
	for i := range a {
		joint[[2]int{a[i], b[i]}]++
		ra[a[i]]++
		rb[b[i]]++
	}
	var index, sa, sb float64
	for _, v := range joint {
		index += c2(v)
	}
	for _, v := range ra {
		sa += c2(v)
	}
	for _, v := range rb {
		sb += c2(v)
	}
	expected := sa * sb / c2(len(a))
	den := (sa+sb)/2 - expected
	if den == 0 {
		if index == sa && index == sb {
			return 1
		}
		return 0
	}
	return (index - expected) / den
}

// upperTriangle returns the entries above the diagonal, row by row.
func upperTriangle(d [][]float64) []float64 {
	var v []float64
	for i := range d {
		v = append(v, d[i][i+1:]...)
	}
	return v
}

// spearman returns Spearman's rank correlation of x and y (Pearson's
// correlation of their ranks, ties given their mean rank), or 0 when either
// has no spread.
func spearman(x, y []float64) float64 {
	rx, ry := ranks(x), ranks(y)
	mx, my := meanOf(rx), meanOf(ry)
	var sxy, sxx, syy float64
	for i := range rx {
		dx, dy := rx[i]-mx, ry[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return 0
	}
	return sxy / math.Sqrt(sxx*syy)
}

// ranks returns the 1-based ranks of v, ties sharing their mean rank.
func ranks(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case v[a] < v[b]:
			return -1
		case v[a] > v[b]:
			return 1
		}
		return 0
	})
	r := make([]float64, len(v))
	for i := 0; i < len(idx); {
		j := i
		for j < len(idx) && v[idx[j]] == v[idx[i]] {
			j++
		}
		for k := i; k < j; k++ {
			r[idx[k]] = float64(i+j+1) / 2
		}
		i = j
	}
	return r
}

func meanOf(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// medianOf returns the median of v (mean of the middle two for an even
// count), 0 for none.
func medianOf(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func euclidean(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		d := a[i] - b[i]
		s += d * d
	}
	return math.Sqrt(s)
}

func rootMeanSquare(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s / float64(len(v)))
}

// writeDPTable writes rep as two Markdown tables.
func writeDPTable(out *bytes.Buffer, rep dpReport) {
	fmt.Fprintf(out, "healthcare federations, seeds %d–%d (%d); DP rows: %s; %s\n",
		rep.Seeds[0], rep.Seeds[len(rep.Seeds)-1], len(rep.Seeds), rep.DPRows, rep.Options)
	fmt.Fprintf(out, "median Δ: descriptor %.4g, label %.4g; median RMS entry of the noiseless DP vector: descriptor %.4g, label %.4g\n",
		rep.DeltaDesc, rep.DeltaLab, rep.RMSEntry, rep.RMSLabel)
	fmt.Fprintf(out, "median distance between two sites' noiseless DP descriptors: %.4g (noise puts two copies of one vector σ·√96 apart)\n", rep.SiteDistance)
	fmt.Fprintf(out, "ARI between the paper descriptors' clustering and a clustering of the sites by 1/n alone: %.3f\n\n", rep.PaperVsSize)
	eps := func(e *float64) string {
		if e == nil {
			return "∞"
		}
		return fmt.Sprintf("%.2f", *e)
	}
	fmt.Fprintln(out, "| z | ε one release | ε both | σ desc (median) | σ/RMS entry | σ·√96/site distance | ARI vs paper | ARI vs DP z=0 | ρ vs paper | ρ vs DP z=0 |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rep.Rows {
		fmt.Fprintf(out, "| %g | %s | %s | %.4f | %.2f | %.2f | %.3f | %.3f | %.3f | %.3f |\n",
			r.Z, eps(r.EpsilonOne), eps(r.EpsilonBoth), r.SigmaDescriptor, r.SigmaDescriptor/rep.RMSEntry,
			r.SigmaDescriptor*math.Sqrt(96)/rep.SiteDistance,
			r.ARIPaper, r.ARIDP, r.SpearmanPaper, r.SpearmanDP)
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, "| label summary | σ label (median) | σ/RMS entry | detection (sites 1, 5) | false positives (others) |")
	fmt.Fprintln(out, "|---|---|---|---|---|")
	fmt.Fprintf(out, "| paper LabelledSummary, no noise | — | — | %.3f (%d/%d) | %.3f (%d/%d) |\n",
		rep.PaperDet, rep.PaperDetection.TP, rep.PaperDetection.TP+rep.PaperDetection.FN,
		rep.PaperFPR, rep.PaperDetection.FP, rep.PaperDetection.FP+rep.PaperDetection.TN)
	for _, r := range rep.Rows {
		fmt.Fprintf(out, "| DP, z = %g (ε %s) | %.5f | %.2f | %.3f (%d/%d) | %.3f (%d/%d) |\n",
			r.Z, eps(r.EpsilonOne), r.SigmaLabel, r.SigmaLabel/rep.RMSLabel,
			r.Det, r.Detection.TP, r.Detection.TP+r.Detection.FN,
			r.FPR, r.Detection.FP, r.Detection.FP+r.Detection.TN)
	}
}
