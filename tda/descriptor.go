package tda

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
)

// DescriptorLen is 48, the length of the pTopoFL topological descriptor:
// two Betti curves of 20 values and eight scalar summaries.
const DescriptorLen = 48

const (
	// bettiSteps is the Betti-curve resolution L of the paper.
	bettiSteps = 20
	// defaultNSub is the paper's subsample size.
	defaultNSub = 80
	// triangleKeep is the number of pairs the paper-era H1 keeps.
	triangleKeep = 20
	// tMaxPercentile is the percentile of all deaths that ends the Betti
	// curves.
	tMaxPercentile = 95
	// triangleThresholdPercentile is the percentile of the positive
	// distances below which a triangle's middle edge must lie.
	triangleThresholdPercentile = 75
	// stdEpsilon keeps a constant column from dividing by zero.
	stdEpsilon = 1e-8
	// entropyEpsilon keeps ln finite for a zero-persistence pair.
	entropyEpsilon = 1e-12
	// triangleMinGap is the smallest e3−e2 the paper-era H1 keeps.
	triangleMinGap = 1e-8
	// normEpsilon keeps NormalizeDescriptor finite for a zero vector.
	normEpsilon = 1e-8
)

// Descriptor variants.
const (
	// VariantExact takes H1 from the Vietoris–Rips persistence of the
	// subsample (VietorisRips).
	VariantExact = "exact"
	// VariantTriangle takes H1 from the paper-era triangle statistic, which
	// is not homology but is what the paper's numbers use.
	VariantTriangle = "triangle"
)

// DescriptorOptions selects the H1 variant and the rows of a descriptor.
type DescriptorOptions struct {
	// Variant is VariantExact ("exact", the default when empty) or
	// VariantTriangle ("triangle"); anything else is an error.
	Variant string
	// NSub is the subsample size, 80 when 0. A site with n ≤ NSub rows
	// uses all of them in file order. A negative NSub is an error.
	NSub int
	// Seed seeds the deterministic subsample (see ComputeDescriptor).
	Seed uint64
	// Rows, when non-nil, lists the row indices to use, in this order, and
	// overrides NSub and Seed. Every index must be in range and appear
	// once; a non-nil empty Rows is an error.
	Rows []int
}

// Descriptor is a site's pTopoFL topological descriptor together with the
// diagrams it summarises.
type Descriptor struct {
	// Vector holds the DescriptorLen numbers, laid out as
	// [bc0 (20), bc1 (20), H0ent, H1ent, A0, A1, nPers0, nPers1, count0, count1].
	Vector []float64
	// H0 holds the n−1 Kruskal pairs {0, w} in Kruskal order, including the
	// zero-length ones of duplicate rows. The infinite class is left out.
	H0 []Pair
	// H1 holds, for the exact variant, the Vietoris–Rips H1 pairs sorted
	// by (Birth, Death); for the triangle variant, the kept pairs in the
	// order they are kept.
	H1 []Pair
	// TMax is the last Betti-curve threshold: the 95th percentile of all
	// H0 and H1 deaths, or 0 when there are none.
	TMax float64
	// Rows lists the rows of x that were used, in the order used.
	Rows []int
}

// ComputeDescriptor returns the pTopoFL descriptor of the site whose raw
// feature rows are x, following ../shared/golden/paper/README.md step by
// step so that it reproduces the paper's reference numbers:
//
//  1. Pick rows (below) and standardise each column of them as
//     (x − mean)/(std + 1e-8) with the population std; the column sums run
//     over the rows in order, as numpy's axis-0 reduction does.
//  2. Take Euclidean distances (EuclideanDistances).
//  3. H0: Kruskal over all pairs i < j sorted by (w, i, j); each of the n−1
//     tree edges gives a pair {0, w}, zero-length ones included.
//  4. H1: see VariantExact and VariantTriangle; the triangle statistic takes
//     thr = 75th percentile of the positive entries of the full n×n
//     distance matrix (both (i,j) and (j,i)), visits i < j < k
//     lexicographically, keeps (e2, e3) of the sorted edge lengths
//     e1 ≤ e2 ≤ e3 when e2 < thr and e3 − e2 > 1e-8, stable-sorts the kept
//     pairs by e3 − e2 descending and keeps the first 20.
//  5. t_max is numpy's 95th percentile of all deaths (percentileSorted);
//     the thresholds are t_j = j·(t_max/19) with t_19 = t_max, as
//     np.linspace(0, t_max, 20) computes them; bc_d[j] counts the pairs of
//     H_d with birth ≤ t_j < death.
//  6. With pers = death − birth: entropy −Σ p·ln(p + 1e-12), p = pers/Σpers
//     (0 for no pairs or Σpers = 0); amplitude sqrt(Σ pers²); nPers the
//     number of pers above numpy's median (0 for no pairs); count the
//     number of pairs. The sums follow the reference's order to the bit
//     where it is known (summarise): the variants differ only in the
//     entropy's last few ulp.
//
// Rows: with opt.Rows nil, a site with n ≤ NSub rows uses all rows in
// order; otherwise the rows are the first NSub entries of a partial
// Fisher–Yates shuffle of 0..n−1 (for i = 0..NSub−1, swap entry i with entry
// i + r.IntN(n−i)) driven by r = rand.New(rand.NewPCG(opt.Seed, 0)), in the
// order drawn. The same x and options always give the same descriptor.
//
// A site with one row has no pairs and a zero vector; with two rows it has
// one H0 pair and no H1. ComputeDescriptor returns an error for no rows,
// rows of different lengths or without features, NaN or infinite values,
// an unknown variant, a negative NSub, out-of-range or repeated Rows, and
// features so large that standardising them overflows.
func ComputeDescriptor(x [][]float64, opt DescriptorOptions) (Descriptor, error) {
	variant := opt.Variant
	if variant == "" {
		variant = VariantExact
	}
	if variant != VariantExact && variant != VariantTriangle {
		return Descriptor{}, fmt.Errorf("tda: descriptor variant %q is unknown; use %q or %q", opt.Variant, VariantExact, VariantTriangle)
	}
	if err := validateRows(x); err != nil {
		return Descriptor{}, fmt.Errorf("tda: descriptor: %w", err)
	}
	rows, err := descriptorRows(len(x), opt)
	if err != nil {
		return Descriptor{}, fmt.Errorf("tda: descriptor: %w", err)
	}
	z, err := standardise(x, rows)
	if err != nil {
		return Descriptor{}, fmt.Errorf("tda: descriptor: %w", err)
	}
	// Every standardised value is finite and at most √n in magnitude, so
	// the distances are finite too and EuclideanDistances cannot fail.
	dm, err := EuclideanDistances(z)
	if err != nil {
		return Descriptor{}, fmt.Errorf("descriptor: %w", err)
	}
	d := Descriptor{Rows: rows, H0: kruskalH0(dm)}
	switch variant {
	case VariantExact:
		d.H1 = slices.Clone(VietorisRips(dm).H1)
	case VariantTriangle:
		d.H1 = triangleH1(dm)
	}
	d.TMax = deathPercentile(d.H0, d.H1, tMaxPercentile)
	d.Vector = descriptorVector(d.H0, d.H1, d.TMax, variant == VariantTriangle)
	return d, nil
}

// NormalizeDescriptor returns v/(‖v‖ + 1e-8), the normalised descriptor
// f_k = φ_k/(‖φ_k‖ + 1e-8) the server compares. ‖v‖ is the Euclidean norm,
// summed left to right; v is not modified. A zero vector stays zero.
func NormalizeDescriptor(v []float64) []float64 {
	s := 0.0
	for _, x := range v {
		s += float64(x * x)
	}
	den := math.Sqrt(s) + normEpsilon
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = x / den
	}
	return out
}

// validateRows checks that x is a non-empty matrix of finite numbers.
func validateRows(x [][]float64) error {
	if len(x) == 0 {
		return errors.New("no rows")
	}
	d := len(x[0])
	if d == 0 {
		return errors.New("row 0 has no features")
	}
	for i, row := range x {
		if len(row) != d {
			return fmt.Errorf("row %d has %d features, row 0 has %d", i, len(row), d)
		}
		for k, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("row %d feature %d is %v; remove or impute it", i, k, v)
			}
		}
	}
	return nil
}

// descriptorRows returns the rows a descriptor of an n-row site uses.
func descriptorRows(n int, opt DescriptorOptions) ([]int, error) {
	if opt.Rows != nil {
		if len(opt.Rows) == 0 {
			return nil, errors.New("Rows is empty; pass nil to subsample")
		}
		seen := make([]bool, n)
		for k, r := range opt.Rows {
			if r < 0 || r >= n {
				return nil, fmt.Errorf("Rows[%d] = %d is out of range [0, %d)", k, r, n)
			}
			if seen[r] {
				return nil, fmt.Errorf("Rows[%d] = %d is repeated", k, r)
			}
			seen[r] = true
		}
		return slices.Clone(opt.Rows), nil
	}
	nsub := opt.NSub
	if nsub < 0 {
		return nil, fmt.Errorf("NSub = %d is negative", nsub)
	}
	if nsub == 0 {
		nsub = defaultNSub
	}
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	if n <= nsub {
		return perm, nil
	}
	r := rand.New(rand.NewPCG(opt.Seed, 0))
	for i := 0; i < nsub; i++ {
		j := i + r.IntN(n-i)
		perm[i], perm[j] = perm[j], perm[i]
	}
	return perm[:nsub:nsub], nil
}

// standardise returns the rows of x picked by rows with each column
// replaced by (x − mean)/(std + 1e-8), std the population standard
// deviation. The sums run over the rows in order, which is how numpy
// reduces a C-ordered array along axis 0, so the result matches
// (X - X.mean(0)) / (X.std(0) + 1e-8) bit for bit. It returns an error if a
// column's values are so large that this overflows.
func standardise(x [][]float64, rows []int) ([][]float64, error) {
	n, d := len(rows), len(x[0])
	mean := make([]float64, d)
	for _, r := range rows {
		for k, v := range x[r] {
			mean[k] += v
		}
	}
	for k := range mean {
		mean[k] /= float64(n)
	}
	ss := make([]float64, d)
	for _, r := range rows {
		for k, v := range x[r] {
			c := v - mean[k]
			ss[k] += float64(c * c)
		}
	}
	den := make([]float64, d)
	for k := range den {
		den[k] = math.Sqrt(ss[k]/float64(n)) + stdEpsilon
	}
	z := make([][]float64, n)
	flat := make([]float64, n*d)
	for i, r := range rows {
		z[i] = flat[i*d : (i+1)*d : (i+1)*d]
		for k, v := range x[r] {
			s := (v - mean[k]) / den[k]
			if math.IsNaN(s) || math.IsInf(s, 0) {
				return nil, fmt.Errorf("feature %d overflows float64 when standardised (row %d); rescale it", k, r)
			}
			z[i][k] = s
		}
	}
	return z, nil
}

// kruskalH0 returns the n−1 pairs {0, w} of Kruskal's algorithm over all
// pairs i < j sorted by (w, i, j), in the order the tree edges are accepted.
// Unlike Diagram.H0 it keeps zero-length pairs and leaves out the infinite
// class, as the paper's descriptor does.
func kruskalH0(dm *DistanceMatrix) []Pair {
	tree := kruskalTree(sortedEdges(dm), dm.N())
	pairs := make([]Pair, len(tree))
	for k, e := range tree {
		pairs[k] = Pair{Birth: 0, Death: e.w}
	}
	return pairs
}

// weightedEdge is an edge {i < j} of the Vietoris–Rips 1-skeleton and its
// length.
type weightedEdge struct {
	w    float64
	i, j int32
}

// sortedEdges returns every edge i < j of dm sorted by (w, i, j).
func sortedEdges(dm *DistanceMatrix) []weightedEdge {
	n := dm.N()
	edges := make([]weightedEdge, 0, n*(n-1)/2)
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			edges = append(edges, weightedEdge{dm.At(i, j), int32(i), int32(j)})
		}
	}
	slices.SortFunc(edges, func(a, b weightedEdge) int {
		if c := cmp.Compare(a.w, b.w); c != 0 {
			return c
		}
		if c := cmp.Compare(a.i, b.i); c != 0 {
			return c
		}
		return cmp.Compare(a.j, b.j)
	})
	return edges
}

// kruskalTree returns the edges Kruskal's algorithm accepts, with
// union-find, from edges in the order given (sortedEdges' order for the
// minimum spanning tree), among n points: n−1 of them for n ≥ 1 connected
// points, none for fewer than 2.
func kruskalTree(edges []weightedEdge, n int) []weightedEdge {
	if n < 2 {
		return []weightedEdge{}
	}
	parent := make([]int32, n)
	for i := range parent {
		parent[i] = int32(i)
	}
	find := func(v int32) int32 {
		for parent[v] != v {
			parent[v] = parent[parent[v]]
			v = parent[v]
		}
		return v
	}
	tree := make([]weightedEdge, 0, n-1)
	for _, e := range edges {
		a, b := find(e.i), find(e.j)
		if a == b {
			continue
		}
		parent[a] = b
		tree = append(tree, e)
		if len(tree) == n-1 {
			break
		}
	}
	return tree
}

// triangleH1 returns the paper-era H1 pairs (see ComputeDescriptor, step 4).
func triangleH1(dm *DistanceMatrix) []Pair {
	n := dm.N()
	full := make([]float64, n*n)
	pos := make([]float64, 0, n*(n-1)/2)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			w := dm.At(i, j)
			full[i*n+j] = w
			if j < i && w > 0 {
				pos = append(pos, w)
			}
		}
	}
	kept := make([]Pair, 0, triangleKeep)
	if n < 3 || len(pos) == 0 {
		return kept
	}
	// The full matrix holds every positive distance twice, so its sorted
	// positive entries are the sorted lower triangle with each value
	// repeated: entry k of the former is entry k/2 of the latter.
	slices.Sort(pos)
	thr := percentileAt(2*len(pos), func(k int) float64 { return pos[k/2] }, triangleThresholdPercentile)
	// floor is the persistence a new pair must beat once kept is full.
	floor := math.Inf(-1)
	for i := 0; i < n; i++ {
		rowI := full[i*n : (i+1)*n]
		for j := i + 1; j < n; j++ {
			rowJ := full[j*n : (j+1)*n]
			eij := rowI[j]
			for k := j + 1; k < n; k++ {
				// The middle and the longest of the three lengths, without
				// branches (no NaN can occur, and every distance is ≥ +0).
				a, b, c := eij, rowI[k], rowJ[k]
				lo, hi := min(a, b), max(a, b)
				e2, e3 := max(lo, min(hi, c)), max(hi, c)
				gap := e3 - e2
				if !(e2 < thr) || !(gap > triangleMinGap) || !(gap > floor) {
					continue
				}
				keepTop(&kept, Pair{Birth: e2, Death: e3})
				if len(kept) == triangleKeep {
					floor = kept[triangleKeep-1].Death - kept[triangleKeep-1].Birth
				}
			}
		}
	}
	return kept
}

// keepTop inserts p into kept, which holds at most triangleKeep pairs in the
// order a stable sort by persistence, descending, would give: p goes after
// every pair whose persistence is at least its own, because pairs arrive in
// lexicographic triangle order and a stable sort keeps ties in that order.
func keepTop(kept *[]Pair, p Pair) {
	k := *kept
	pp := p.Death - p.Birth
	if len(k) == triangleKeep && !(pp > k[len(k)-1].Death-k[len(k)-1].Birth) {
		return
	}
	at := sort.Search(len(k), func(i int) bool { return k[i].Death-k[i].Birth < pp })
	if len(k) < triangleKeep {
		k = append(k, Pair{})
	}
	copy(k[at+1:], k[at:len(k)-1])
	k[at] = p
	*kept = k
}

// deathPercentile returns numpy's percentile q of the deaths of h0 and h1
// together, or 0 when there are none.
func deathPercentile(h0, h1 []Pair, q float64) float64 {
	deaths := make([]float64, 0, len(h0)+len(h1))
	for _, p := range h0 {
		deaths = append(deaths, p.Death)
	}
	for _, p := range h1 {
		deaths = append(deaths, p.Death)
	}
	if len(deaths) == 0 {
		return 0
	}
	slices.Sort(deaths)
	return percentileSorted(deaths, q)
}

// bettiThresholds returns np.linspace(0, tMax, bettiSteps): j·step with
// step = tMax/(L−1), and the last threshold tMax itself.
func bettiThresholds(tMax float64) [bettiSteps]float64 {
	var t [bettiSteps]float64
	step := tMax / (bettiSteps - 1)
	for j := range t {
		if step == 0 {
			// numpy's branch for an underflowing step: j/(L−1)·tMax.
			t[j] = float64(j) / (bettiSteps - 1) * tMax
		} else {
			t[j] = float64(j) * step
		}
	}
	t[bettiSteps-1] = tMax
	return t
}

// descriptorVector lays out the 48 numbers of h0, h1 and tMax;
// sequentialEntropy selects the entropy's summation order (summarise).
func descriptorVector(h0, h1 []Pair, tMax float64, sequentialEntropy bool) []float64 {
	v := make([]float64, DescriptorLen)
	t := bettiThresholds(tMax)
	for d, pairs := range [2][]Pair{h0, h1} {
		for j, tj := range t {
			c := 0
			for _, p := range pairs {
				if p.Birth <= tj && tj < p.Death {
					c++
				}
			}
			v[d*bettiSteps+j] = float64(c)
		}
		s := summarise(pairs, sequentialEntropy)
		base := 2 * bettiSteps
		v[base+d] = s.entropy
		v[base+2+d] = s.amplitude
		v[base+4+d] = float64(s.nPers)
		v[base+6+d] = float64(len(pairs))
	}
	return v
}

// diagramSummary holds the scalar summaries of one dimension.
type diagramSummary struct {
	entropy, amplitude float64
	nPers              int
}

// summarise returns the entropy, amplitude and nPers of pairs, taken in the
// order given. The amplitude's Σ pers² is numpy's pairwise sum. The entropy
// sums (Σ pers and Σ p·ln(p + 1e-12)) run left to right when sequential is
// set, and as numpy's pairwise sums otherwise. The two reference
// implementations behind ../shared/golden/paper differ here: the paper-era
// code (triangle) sums left to right, which reproduces 34 of its 36
// entropies bit for bit against 12 for pairwise sums; the exact variant's
// reference sums pairwise, reproducing 28 of 36 against 6 (counted with the
// C library's log; math.Log can differ from it by an ulp, which accounts
// for most of the rest).
func summarise(pairs []Pair, sequential bool) diagramSummary {
	var s diagramSummary
	if len(pairs) == 0 {
		return s
	}
	sum := pairwiseSum
	if sequential {
		sum = sequentialSum
	}
	pers := make([]float64, len(pairs))
	for i, p := range pairs {
		pers[i] = p.Death - p.Birth
	}
	work := make([]float64, len(pers))
	if total := sum(pers); total != 0 {
		for i, x := range pers {
			p := x / total
			work[i] = float64(p * math.Log(p+entropyEpsilon))
		}
		s.entropy = -sum(work)
	}
	for i, x := range pers {
		work[i] = float64(x * x)
	}
	s.amplitude = math.Sqrt(pairwiseSum(work))
	copy(work, pers)
	slices.Sort(work)
	med := medianSorted(work)
	for _, x := range pers {
		if x > med {
			s.nPers++
		}
	}
	return s
}
