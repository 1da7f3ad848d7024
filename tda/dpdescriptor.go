package tda

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// The layout of the DescriptorLen numbers of a DP descriptor (DPDescriptor):
// four persistence landscapes sampled at DPLandscapeSteps public levels,
// then DPDensityRanks order statistics of the density estimate.
const (
	// DPLandscapeSteps is the number of levels t_j = j·T/10 (j = 1..10)
	// each landscape is sampled at.
	DPLandscapeSteps = 10
	// DPH0Lambda1 and DPH0Lambda2 start λ1 and λ2 of the H0 barcode (the
	// essential class capped at level 0), DPH1Lambda1 and DPH1Lambda2
	// those of the H1 barcode.
	DPH0Lambda1 = 0
	DPH0Lambda2 = DPH0Lambda1 + DPLandscapeSteps
	DPH1Lambda1 = DPH0Lambda2 + DPLandscapeSteps
	DPH1Lambda2 = DPH1Lambda1 + DPLandscapeSteps
	// DPDensityOffset starts the DPDensityRanks order statistics of the
	// grid density values (see DPDescriptor).
	DPDensityOffset = DPH1Lambda2 + DPLandscapeSteps
	// DPDensityRanks is the number of density order statistics.
	DPDensityRanks = 8
)

// dpLayoutEnd checks at compile time that the DP layout fills exactly
// DescriptorLen numbers, so the server handles DP descriptors unchanged.
var _ = [1]struct{}{}[DPDensityOffset+DPDensityRanks-DescriptorLen]

// Defaults of DPDescriptorOptions, all public constants.
const (
	// DefaultDPRadius is R: projected rows are clipped to the disc of
	// radius 8 (feature units). On the healthcare federations
	// (eval.Healthcare, seeds 1000–1019) 99.9 % of the projected
	// coordinates lie within ±8.8, so few rows are clipped.
	DefaultDPRadius = 8.0
	// DefaultDPGrid is G: the density is evaluated on a 32×32 grid, a
	// spacing of 2/31 ≈ 0.065, below the default bandwidth.
	DefaultDPGrid = 32
	// DefaultDPBandwidth is h, in units of the unit disc (R = 1), and
	// DefaultDPLandscapeMax is T, the last landscape level. Both were
	// chosen on the healthcare federations of seeds 1000–1019 (never on
	// the seeds reported), among h ∈ {0.08, 0.15, 0.2, 0.25, 0.3, 0.4} and
	// T ∈ {0.3, 0.4, 0.5, 0.6, 1}, as the pair whose server clustering
	// (aggregation.ChooseClusters, M = 2) and site distances best survived
	// noise of multiplier 0.6 and 2 ("tda dp-measure --first-seed 1000").
	// With h = 0.25 the projected healthcare sites have one density mode,
	// max f between 0.35 and 0.55.
	DefaultDPBandwidth    = 0.25
	DefaultDPLandscapeMax = 0.3
	// maxDPGrid bounds G so that the O(G²·m) density and the O(G² log G)
	// persistence stay cheap.
	maxDPGrid = 256
)

// DPDescriptorOptions are the public settings of DPDescriptor. Every field
// must be fixed before the data is seen (it is part of the mechanism); a
// zero field takes its default.
type DPDescriptorOptions struct {
	// M is the public subsample size m that the density is divided by; 0
	// means len(rows). rows may hold fewer than M indices: the missing
	// ones are null records that contribute nothing (the zero-out
	// neighbour the sensitivity is about). M < len(rows) is an error.
	M int
	// Radius is R > 0, the clipping radius of the projected rows in
	// feature units (DefaultDPRadius when 0). It sets the scale of the
	// picture, not the privacy: the sensitivity does not depend on it.
	Radius float64
	// Grid is G in [2, 256], the number of grid vertices per side
	// (DefaultDPGrid when 0).
	Grid int
	// Bandwidth is the kernel bandwidth h > 0 in unit-disc units
	// (DefaultDPBandwidth when 0).
	Bandwidth float64
	// LandscapeMax is T in (0, 1], the last of the landscape levels
	// t_j = j·T/10 (DefaultDPLandscapeMax when 0).
	LandscapeMax float64
}

// withDefaults returns o with its zero fields set to their defaults, or an
// error naming the first invalid field.
func (o DPDescriptorOptions) withDefaults() (DPDescriptorOptions, error) {
	if o.Radius == 0 {
		o.Radius = DefaultDPRadius
	}
	if o.Grid == 0 {
		o.Grid = DefaultDPGrid
	}
	if o.Bandwidth == 0 {
		o.Bandwidth = DefaultDPBandwidth
	}
	if o.LandscapeMax == 0 {
		o.LandscapeMax = DefaultDPLandscapeMax
	}
	switch {
	case o.M < 0:
		return o, fmt.Errorf("M = %d is negative; use 0 for len(rows)", o.M)
	case !(o.Radius > 0) || math.IsInf(o.Radius, 0):
		return o, fmt.Errorf("Radius = %v, want a positive finite clipping radius", o.Radius)
	case o.Grid < 2 || o.Grid > maxDPGrid:
		return o, fmt.Errorf("Grid = %d, want 2 to %d vertices per side", o.Grid, maxDPGrid)
	case !(o.Bandwidth > 0) || math.IsInf(o.Bandwidth, 0):
		return o, fmt.Errorf("Bandwidth = %v, want a positive finite bandwidth", o.Bandwidth)
	case !(o.LandscapeMax > 0 && o.LandscapeMax <= 1):
		return o, fmt.Errorf("LandscapeMax = %v, want a level in (0, 1]", o.LandscapeMax)
	}
	return o, nil
}

// DPDescriptorSensitivity returns Δ = √48/m, the L2 sensitivity of
// DPDescriptor's vector under zero-out of one record when the public
// subsample size is m (see DPDescriptor for the proof). It does not depend
// on the other options. It returns an error for m < 1.
func DPDescriptorSensitivity(m int) (float64, error) {
	if m < 1 {
		return 0, fmt.Errorf("tda: DP descriptor sensitivity: m = %d, want at least 1", m)
	}
	return math.Sqrt(DescriptorLen) / float64(m), nil
}

// DPDescriptor returns the differentially private variant of the pTopoFL
// descriptor of the site whose raw feature rows are x, computed on the
// rows listed in rows, and Δ, the L2 sensitivity of that vector under
// zero-out of one record (one record of the site replaced by a null record
// that contributes nothing; m stays fixed). DPDescriptor adds no noise:
// the caller releases v + N(0, (zΔ)²·I) for the noise multiplier z of its
// privacy budget, and may post-process the release with
// DPDescriptorVector. The subsample rows must be drawn from a stream the
// server cannot see if the caller wants privacy amplification by
// subsampling; the sensitivity below holds for any fixed rows.
//
// Everything but x and the choice of rows is public and fixed in advance:
// opt, the projection, the grid, the kernel and the levels, so no
// statistic of the data rescales anything (unlike ComputeDescriptor's
// standardisation and 95th-percentile thresholds, whose sensitivity is the
// whole range of the vector; see ../shared/research/privacy.md §3).
//
// The construction, with m = opt.M (len(rows) when 0), R = opt.Radius,
// G = opt.Grid, h = opt.Bandwidth, T = opt.LandscapeMax:
//
//  1. Each row x_i (d features) is projected to the plane by the d×2
//     matrix whose columns are the first two DCT-II basis vectors,
//     1/√d and √(2/d)·cos(π(k+½)/d) for feature k (orthonormal for d ≥ 2;
//     for d = 1 the second column is 0), clipped to the disc of radius R
//     and divided by R, giving a point p_i in the unit disc. The map is
//     fixed and acts on one row at a time.
//  2. A kernel density estimate on the G×G grid of [−1, 1]² (vertex (i, j)
//     at (−1 + 2j/(G−1), −1 + 2i/(G−1))):
//     f(g) = (1/m) Σ_i exp(−‖g − p_i‖²/(2h²)).
//  3. The superlevel-set filtration of f on the fixed Freudenthal
//     triangulation of the grid (each simplex enters at the minimum of f
//     over its vertices, i.e. the lower-star filtration of −f) and its H0
//     and H1 barcodes, bars [lo, hi] in density units. The one essential
//     H0 class, born at max f, is capped at the public level 0; the
//     triangulated square is contractible, so H1 has no essential class.
//  4. Numbers 0–39: λ1 and λ2 (the largest and second largest tents
//     max(0, min(t − lo, hi − t))) of the H0 barcode (0–9 and 10–19) and of
//     the H1 barcode (20–29 and 30–39), each at t_j = j·T/10, j = 1..10
//     (Bubenik 2015 persistence landscapes). See DPH0Lambda1 and the other
//     layout constants.
//  5. Numbers 40–47: the k_i-th largest of the G² grid values of f for
//     k_i = max(1, round(2^i·G²/1024)), i = 0..7 (for G = 32 the 1st, 2nd,
//     4th, …, 128th largest): the density levels above which the top
//     0.1 %, 0.2 %, …, 12.5 % of the grid lies, a translation-invariant
//     profile of how concentrated the site's data is.
//
// Sensitivity, step by step. Let D′ be D with record r zeroed out. If r is
// not among rows, v(D′) = v(D). Otherwise the point multiset loses exactly
// p = p_r (step 1 touches no other row), and:
//
//   - (a) for every grid vertex g, f(g) − f′(g) = exp(−‖g − p‖²/(2h²))/m,
//     which lies in [0, 1/m] because the unnormalised kernel lies in
//     (0, 1]; so ‖f − f′‖∞ ≤ 1/m. (m is public and the same for D and
//     D′.)
//   - (b) A simplex's value, the minimum of f over its vertices, moves by at
//     most ‖f − f′‖∞, so the two filtrations of the same finite complex
//     are 1/m-interleaved and, by the stability theorem (Cohen-Steiner,
//     Edelsbrunner, Harer, "Stability of persistence diagrams", Discrete
//     Comput. Geom. 37 (2007), Main Theorem; for filtrations of a finite
//     complex, Chazal, Cohen-Steiner, Glisse, Guibas, Oudot, "Proximity
//     of persistence modules and their diagrams", SoCG 2009), the
//     bottleneck distance between the H0 diagrams and between the H1
//     diagrams is at most 1/m, essential classes matched to each other.
//   - (c) Each H0 diagram has exactly one essential class (the grid is
//     connected), born at max f and max f′, which differ by at most 1/m;
//     capping both at the same level 0 keeps that matching's cost
//     |max f − max f′| ≤ 1/m, so the capped, all-finite diagrams are still
//     within bottleneck distance 1/m.
//   - (d) Persistence landscapes are 1-Lipschitz from the bottleneck distance
//     to the sup norm, for every k (the stability theorem of Bubenik,
//     "Statistical topological data analysis using persistence landscapes",
//     JMLR 16 (2015), §5): ‖λ_k(D) − λ_k(D′)‖∞ ≤ d_B. So each of numbers
//     0–39 moves by at most 1/m.
//   - (e) The k-th largest entry of a vector is 1-Lipschitz in the sup norm,
//     so each of numbers 40–47 moves by at most ‖f − f′‖∞ ≤ 1/m.
//   - (f) Hence ‖v(D) − v(D′)‖₂ ≤ √(48·(1/m)²) = √48/m = Δ, which is what
//     DPDescriptor returns (DPDescriptorSensitivity).
//
// Neither the clipping radius nor the projection enters the bound: any
// public map applied row by row would do; they only set what the grid
// sees. The brute-force tests (dpdescriptor_test.go) check every step of
// the proof by zeroing out each record of small adversarial clouds and by
// hill-climbing the removed point; the largest change they find is 0.44·Δ.
// The bound may not be attained (it would need all 48 numbers to move by
// 1/m at once), but no smaller one is proven here, and a smaller bound
// without proof would not be a DP guarantee.
//
// DPDescriptor returns an error for invalid options (naming the field), no
// rows in x, rows of different lengths or without features, NaN or
// infinite values, out-of-range or repeated rows, and more rows than M.
// The same inputs always give the same numbers.
func DPDescriptor(x [][]float64, rows []int, opt DPDescriptorOptions) (vec []float64, sensitivity float64, err error) {
	pts, o, err := dpProjectedPoints(x, rows, opt)
	if err != nil {
		return nil, 0, fmt.Errorf("tda: DP descriptor: %w", err)
	}
	f := dpDensity(pts, o)
	return dpDescriptorFromDensity(f, o), math.Sqrt(DescriptorLen) / float64(o.M), nil
}

// dpProjectedPoints validates the inputs of DPDescriptor and returns the
// preprocessed points (step 1) and the options with their defaults and M
// set.
func dpProjectedPoints(x [][]float64, rows []int, opt DPDescriptorOptions) ([][2]float64, DPDescriptorOptions, error) {
	o, err := opt.withDefaults()
	if err != nil {
		return nil, o, err
	}
	if err := validateRows(x); err != nil {
		return nil, o, err
	}
	if err := checkSubsampleRows(rows, len(x)); err != nil {
		return nil, o, err
	}
	if o.M == 0 {
		o.M = len(rows)
	}
	if o.M == 0 {
		return nil, o, errors.New("no rows and M = 0: set M to the public subsample size")
	}
	if len(rows) > o.M {
		return nil, o, fmt.Errorf("%d rows for a subsample of M = %d", len(rows), o.M)
	}
	proj := dpProjection(len(x[0]))
	pts := make([][2]float64, len(rows))
	for k, r := range rows {
		pts[k] = dpPoint(x[r], proj, o.Radius)
	}
	return pts, o, nil
}

// checkSubsampleRows checks that rows are distinct indices in [0, n).
func checkSubsampleRows(rows []int, n int) error {
	seen := make(map[int]int, len(rows))
	for k, r := range rows {
		if r < 0 || r >= n {
			return fmt.Errorf("rows[%d] = %d is out of range [0, %d)", k, r, n)
		}
		if prev, dup := seen[r]; dup {
			return fmt.Errorf("rows[%d] = %d repeats rows[%d]", k, r, prev)
		}
		seen[r] = k
	}
	return nil
}

// dpProjection returns the public d×2 projection of step 1: the first two
// DCT-II basis vectors, orthonormal for d ≥ 2. For d = 1 it is [1 0].
func dpProjection(d int) [][2]float64 {
	p := make([][2]float64, d)
	if d == 1 {
		p[0] = [2]float64{1, 0}
		return p
	}
	c0, c1 := 1/math.Sqrt(float64(d)), math.Sqrt(2/float64(d))
	for k := range p {
		p[k] = [2]float64{c0, c1 * math.Cos(math.Pi*(float64(k)+0.5)/float64(d))}
	}
	return p
}

// dpPoint maps one row to the unit disc (step 1): project, clip to radius
// r, divide by r. The row is first divided by its largest magnitude s, so
// that no finite row overflows: the projection of row/s is at most √d long
// and the clipping test compares its norm times s with r.
func dpPoint(row []float64, proj [][2]float64, r float64) [2]float64 {
	s := 0.0
	for _, v := range row {
		s = math.Max(s, math.Abs(v))
	}
	if s == 0 {
		return [2]float64{}
	}
	var y [2]float64
	for k, v := range row {
		y[0] += v / s * proj[k][0]
		y[1] += v / s * proj[k][1]
	}
	n := math.Hypot(y[0], y[1])
	if n == 0 {
		return [2]float64{}
	}
	if n*s > r {
		return [2]float64{y[0] / n, y[1] / n}
	}
	return [2]float64{y[0] * s / r, y[1] * s / r}
}

// dpGridCoordinates returns the G public coordinates −1 + 2j/(G−1) of the
// grid's columns (and rows).
func dpGridCoordinates(g int) []float64 {
	c := make([]float64, g)
	for j := range c {
		c[j] = -1 + 2*float64(j)/float64(g-1)
	}
	c[g-1] = 1
	return c
}

// dpDensity returns f on the grid (step 2), vertex i·G + j at row i
// (second coordinate) and column j (first coordinate). The Gaussian kernel
// factorises, exp(−(Δx² + Δy²)/2h²) = exp(−Δx²/2h²)·exp(−Δy²/2h²), so each
// point costs 2G exponentials and G² products; the sum runs over the
// points in order.
func dpDensity(pts [][2]float64, o DPDescriptorOptions) []float64 {
	g := o.Grid
	coord := dpGridCoordinates(g)
	f := make([]float64, g*g)
	kx, ky := make([]float64, g), make([]float64, g)
	s := 1 / (2 * o.Bandwidth * o.Bandwidth)
	for _, p := range pts {
		for j, c := range coord {
			dx, dy := c-p[0], c-p[1]
			kx[j] = math.Exp(-dx * dx * s)
			ky[j] = math.Exp(-dy * dy * s)
		}
		for i := 0; i < g; i++ {
			row := f[i*g : (i+1)*g]
			for j := range row {
				row[j] += ky[i] * kx[j]
			}
		}
	}
	inv := 1 / float64(o.M)
	for i := range f {
		f[i] *= inv
	}
	return f
}

// dpLevels returns the public landscape levels t_j = j·T/10, j = 1..10.
func dpLevels(t float64) [DPLandscapeSteps]float64 {
	var l [DPLandscapeSteps]float64
	for j := range l {
		l[j] = float64(j+1) * t / DPLandscapeSteps
	}
	return l
}

// dpDensityRanks returns the public ranks k_i = max(1, round(2^i·G²/1024))
// of step 5.
func dpDensityRanks(g int) [DPDensityRanks]int {
	var k [DPDensityRanks]int
	for i := range k {
		k[i] = max(1, int(math.Round(float64(int(1)<<i)*float64(g*g)/1024)))
	}
	return k
}

// dpDescriptorFromDensity computes steps 3–5 from the grid density f.
func dpDescriptorFromDensity(f []float64, o DPDescriptorOptions) []float64 {
	v := make([]float64, DescriptorLen)
	bc := superlevelPersistence(newGridComplex(o.Grid), f)
	h0 := bc.withEssential(0)
	for j, t := range dpLevels(o.LandscapeMax) {
		v[DPH0Lambda1+j], v[DPH0Lambda2+j] = landscapeTop2(h0, t)
		v[DPH1Lambda1+j], v[DPH1Lambda2+j] = landscapeTop2(bc.H1, t)
	}
	sorted := slices.Clone(f)
	slices.Sort(sorted)
	for i, k := range dpDensityRanks(o.Grid) {
		v[DPDensityOffset+i] = sorted[len(sorted)-k]
	}
	return v
}

// DPDescriptorVector post-processes a noisy DP descriptor (DPDescriptor's
// vector plus Gaussian noise) into the vector a site sends the server, by
// the Euclidean projection onto the set of vectors DPDescriptor can
// return that the layout makes easy to describe; post-processing costs no
// privacy. With t_j the public levels of opt:
//
//   - each landscape pair (λ1(t_j), λ2(t_j)) is projected onto λ1 ≥ λ2
//     (both replaced by their mean when λ1 < λ2) and then clamped to
//     [0, min(t_j, 1 − t_j)], the range of a tent over bars inside [0, 1]
//     (the density never exceeds 1);
//   - the eight density order statistics are made non-increasing by
//     isotonic regression (pool adjacent violators) and clamped to [0, 1].
//
// Each step is the projection onto a convex set that holds the noiseless
// vector (the clamp after the isotonic step keeps it a projection because
// the bounds are the same for every coordinate), so the result is never
// farther from the noiseless vector, in L2, than the noisy one was. The
// noise stays in the result: DPDescriptorVector only removes what is
// impossible.
//
// It returns an error for a length other than DescriptorLen, a non-finite
// entry (naming it) or invalid options.
func DPDescriptorVector(noisyRaw []float64, opt DPDescriptorOptions) ([]float64, error) {
	o, err := opt.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("tda: DP descriptor vector: %w", err)
	}
	if len(noisyRaw) != DescriptorLen {
		return nil, fmt.Errorf("tda: DP descriptor vector: %d numbers, want %d", len(noisyRaw), DescriptorLen)
	}
	for k, x := range noisyRaw {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("tda: DP descriptor vector: entry %d is %v", k, x)
		}
	}
	v := slices.Clone(noisyRaw)
	for j, t := range dpLevels(o.LandscapeMax) {
		top := math.Min(t, 1-t)
		for _, first := range []int{DPH0Lambda1, DPH1Lambda1} {
			a, b := &v[first+j], &v[first+DPLandscapeSteps+j]
			if *a < *b {
				m := (*a + *b) / 2
				*a, *b = m, m
			}
			*a = dpClamp(*a, 0, top)
			*b = dpClamp(*b, 0, top)
		}
	}
	dens := v[DPDensityOffset : DPDensityOffset+DPDensityRanks]
	isotonicNonIncreasing(dens)
	for i := range dens {
		dens[i] = dpClamp(dens[i], 0, 1)
	}
	return v, nil
}

// dpClamp returns x limited to [lo, hi].
func dpClamp(x, lo, hi float64) float64 { return math.Min(math.Max(x, lo), hi) }

// isotonicNonIncreasing replaces v in place by its least-squares
// projection onto non-increasing sequences (pool adjacent violators,
// Barlow et al., "Statistical Inference under Order Restrictions", 1972).
func isotonicNonIncreasing(v []float64) {
	type block struct {
		sum float64
		n   int
	}
	var st []block
	for _, x := range v {
		st = append(st, block{x, 1})
		// A non-increasing fit needs each block's mean ≥ the next one's.
		for len(st) > 1 {
			a, b := st[len(st)-2], st[len(st)-1]
			if a.sum/float64(a.n) >= b.sum/float64(b.n) {
				break
			}
			st = st[:len(st)-2]
			st = append(st, block{a.sum + b.sum, a.n + b.n})
		}
	}
	i := 0
	for _, b := range st {
		m := b.sum / float64(b.n)
		for k := 0; k < b.n; k++ {
			v[i] = m
			i++
		}
	}
}
