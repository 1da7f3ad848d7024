package eval

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// SiteData is one site of a generated federation: its train and test rows
// (raw, unscaled features), their 0/1 labels, and whether the generator
// poisoned its labels.
type SiteData struct {
	Name          string
	XTrain        [][]float64
	YTrain        []int
	XTest         [][]float64
	YTest         []int
	IsAdversarial bool
	// CleanYTrain and CleanYTest are an adversarial site's labels before
	// the flips, row for row, so an evaluation can tell poisoned rows
	// apart; they are nil for honest sites and are never written to the
	// site files.
	CleanYTrain []int
	CleanYTest  []int
	// PositiveRate is the fraction of positive rows the generator aimed
	// for before any label flips (the healthcare "mortality rate" or the
	// benchmark's class imbalance).
	PositiveRate float64
}

// Federation is a generated set of sites with the generator's name and the
// seed that reproduces it.
type Federation struct {
	Generator string
	Seed      uint64
	Features  int
	Sites     []SiteData
	// Shifted holds the post-shift rows of the sites hit by a
	// ContinualShift, in the order of ContinualShift.Sites; it is empty
	// without one.
	Shifted []ShiftedSite
}

// HealthcareOptions are the settings of Healthcare. The defaults are the
// paper's Scenario A (§4.1) as the authors' make_healthcare_federated
// builds it.
type HealthcareOptions struct {
	// Seed drives every random draw.
	Seed uint64
	// Sites is the number of hospitals K.
	Sites int
	// MinSize and MaxSize bound each site's total row count (train and
	// test): sizes are uniform integers in [MinSize, MaxSize).
	MinSize, MaxSize int
	// Features and Informative shape the shared population drawn with
	// MakeClassification (4 redundant columns, FlipY 0.02, ClassSep 1).
	Features, Informative int
	// PoolSize is the size of the shared population sites sample from.
	PoolSize int
	// MinPositiveRate and MaxPositiveRate are the ends of the evenly spaced
	// per-site positive ("mortality") rates, shuffled over the sites.
	MinPositiveRate, MaxPositiveRate float64
	// Adversarial lists the site indices whose labels are flipped.
	Adversarial []int
	// FlipFraction is the fraction of an adversarial site's rows whose
	// label is flipped, before the train/test split.
	FlipFraction float64
	// Shift, when non-nil, adds a continual covariate shift to some sites.
	Shift *ContinualShift
}

// ContinualShift describes a covariate shift that hits some sites after a
// given round, for the topological drift tracking of paper §3.5: the
// site's acquisition changes (a new device, a failing sensor array) so that
// its features collapse towards a random two-dimensional subspace and move.
// The generator then also produces each shifted site's post-shift train and
// test rows: every row x becomes (x·u)u + (x·w)w + x/10 + Magnitude·v, where
// u, w are orthonormal random directions and v a random unit direction per
// site. The labels stay the same; only the feature distribution changes.
//
// A plain translation (or a rescaling) would be invisible to the
// descriptor, which is computed on per-site standardised rows (golden
// README, step 2); the collapse changes the shape of the data, which is
// what persistent homology sees. On the default healthcare sites it moves
// the l2-normalised descriptor by 0.19–0.31, against 0.03–0.10 for half of
// the rows translated by 8 (measured with a fixed subsample).
type ContinualShift struct {
	// Sites lists the indices of the shifted sites.
	Sites []int
	// AfterRound is the last round that sees the original data.
	AfterRound int
	// Magnitude is the length of the mean shift, in raw feature units.
	Magnitude float64
}

// ShiftedSite holds the post-shift rows of a site under a ContinualShift.
type ShiftedSite struct {
	Name       string
	Site       int
	AfterRound int
	XTrain     [][]float64
	XTest      [][]float64
}

// DefaultHealthcareOptions returns the paper's healthcare scenario: 8
// sites of 60–249 rows, 20 features (10 informative), positive rates
// evenly spaced in [0.10, 0.45], sites 1 and 5 adversarial with 30 % of
// their labels flipped (paper §4.1; golden/paper/README.md).
func DefaultHealthcareOptions(seed uint64) HealthcareOptions {
	return HealthcareOptions{
		Seed: seed, Sites: 8,
		MinSize: 60, MaxSize: 250, // rows
		Features: 20, Informative: 10, PoolSize: 10000,
		MinPositiveRate: 0.10, MaxPositiveRate: 0.45,
		Adversarial: []int{1, 5}, FlipFraction: 0.3,
	}
}

// Validate reports the first invalid setting, naming the field.
func (o HealthcareOptions) Validate() error {
	switch {
	case o.Sites < 1:
		return fmt.Errorf("healthcare options: Sites = %d, want at least 1", o.Sites)
	case o.MinSize < 2 || o.MaxSize <= o.MinSize:
		return fmt.Errorf("healthcare options: sizes [%d, %d), want 2 ≤ MinSize < MaxSize", o.MinSize, o.MaxSize)
	case o.Informative < 2 || o.Informative+4 > o.Features:
		return fmt.Errorf("healthcare options: Informative = %d with Features = %d, want 2 ≤ Informative ≤ Features − 4 (4 redundant columns)",
			o.Informative, o.Features)
	case o.PoolSize < 2:
		return fmt.Errorf("healthcare options: PoolSize = %d, want at least 2", o.PoolSize)
	case !(o.MinPositiveRate >= 0 && o.MaxPositiveRate <= 1 && o.MinPositiveRate <= o.MaxPositiveRate):
		return fmt.Errorf("healthcare options: positive rates [%v, %v], want 0 ≤ MinPositiveRate ≤ MaxPositiveRate ≤ 1",
			o.MinPositiveRate, o.MaxPositiveRate)
	case !(o.FlipFraction >= 0 && o.FlipFraction <= 1):
		return fmt.Errorf("healthcare options: FlipFraction = %v, want a fraction in [0, 1]", o.FlipFraction)
	}
	if err := checkSiteIndices("Adversarial", o.Adversarial, o.Sites); err != nil {
		return fmt.Errorf("healthcare options: %w", err)
	}
	if o.Shift != nil {
		if err := checkSiteIndices("Shift.Sites", o.Shift.Sites, o.Sites); err != nil {
			return fmt.Errorf("healthcare options: %w", err)
		}
		if o.Shift.AfterRound < 0 || math.IsNaN(o.Shift.Magnitude) || math.IsInf(o.Shift.Magnitude, 0) {
			return fmt.Errorf("healthcare options: Shift.AfterRound = %d, Shift.Magnitude = %v, want a non-negative round and a finite magnitude",
				o.Shift.AfterRound, o.Shift.Magnitude)
		}
	}
	return nil
}

func checkSiteIndices(field string, idx []int, sites int) error {
	seen := map[int]bool{}
	for _, k := range idx {
		if k < 0 || k >= sites {
			return fmt.Errorf("%s contains site %d, want 0..%d", field, k, sites-1)
		}
		if seen[k] {
			return fmt.Errorf("%s lists site %d twice", field, k)
		}
		seen[k] = true
	}
	return nil
}

// Healthcare generates the paper's Scenario A (§4.1), following the
// authors' make_healthcare_federated recipe (golden/paper/README.md):
//
//  1. site sizes n_k uniform in [MinSize, MaxSize);
//  2. a shared population of PoolSize rows from MakeClassification with
//     Informative informative and 4 redundant columns, FlipY 0.02,
//     ClassSep 1, two clusters per class;
//  3. per-site positive rates evenly spaced over [MinPositiveRate,
//     MaxPositiveRate], then shuffled;
//  4. for each site a mean shift s ~ N(0, 0.5²) and a scale a ~ U(0.7, 1.4)
//     per column; ⌊n_k·rate⌋ positive and the rest negative rows are drawn
//     from the population with replacement (so duplicates occur), positive
//     rows become x·a + s and negative rows x·a + 0.3·s; rows are shuffled;
//  5. on an adversarial site ⌊FlipFraction·n_k⌋ distinct rows get their
//     label flipped, before the split, so its test labels are noisy too;
//  6. max(30, ⌊0.2·n_k⌋) distinct rows, drawn in random order, form the
//     test split; the rest, in their order, form the train split.
//
// Sites are named site0, site1, …. The result is a pure function of opt;
// the random streams are Go's PCG, not numpy's, so seed 42 here is not the
// golden data's seed 42.
func Healthcare(opt HealthcareOptions) (Federation, error) {
	if err := opt.Validate(); err != nil {
		return Federation{}, fmt.Errorf("healthcare scenario: %w", err)
	}
	rng := rand.New(rand.NewPCG(opt.Seed, streamHealthcare))

	sizes := make([]int, opt.Sites)
	for k := range sizes {
		sizes[k] = opt.MinSize + rng.IntN(opt.MaxSize-opt.MinSize)
	}

	pool := DefaultClassificationOptions()
	pool.Samples = opt.PoolSize
	pool.Features = opt.Features
	pool.Informative = opt.Informative
	pool.Redundant = 4
	pool.FlipY = 0.02
	X, y, err := MakeClassification(pool, rng)
	if err != nil {
		return Federation{}, fmt.Errorf("healthcare scenario: population: %w", err)
	}
	pos, neg := splitByLabel(y)
	if len(pos) == 0 || len(neg) == 0 {
		return Federation{}, errors.New("healthcare scenario: population has a single class; raise PoolSize")
	}

	rates := linspace(opt.MinPositiveRate, opt.MaxPositiveRate, opt.Sites)
	rng.Shuffle(len(rates), func(i, j int) { rates[i], rates[j] = rates[j], rates[i] })

	adversarial := indexSet(opt.Adversarial)
	fed := Federation{Generator: "healthcare", Seed: opt.Seed, Features: opt.Features}
	for k := 0; k < opt.Sites; k++ {
		n := sizes[k]
		shift := make([]float64, opt.Features)
		for j := range shift {
			shift[j] = rng.NormFloat64() * 0.5
		}
		scale := make([]float64, opt.Features)
		for j := range scale {
			scale[j] = 0.7 + 0.7*rng.Float64()
		}
		nPos := int(float64(n) * rates[k])
		rows := make([][]float64, 0, n)
		labels := make([]int, 0, n)
		for i := 0; i < nPos; i++ {
			rows = append(rows, affine(X[pos[rng.IntN(len(pos))]], scale, shift, 1))
			labels = append(labels, 1)
		}
		for i := nPos; i < n; i++ {
			rows = append(rows, affine(X[neg[rng.IntN(len(neg))]], scale, shift, 0.3))
			labels = append(labels, 0)
		}
		rows, labels = permuteRows(rows, labels, rng)

		var clean []int
		if adversarial[k] {
			clean = append([]int(nil), labels...)
			for _, i := range distinctIntegers(int(opt.FlipFraction*float64(n)), n, rng) {
				labels[i] = 1 - labels[i]
			}
		}

		nTest := max(30, int(0.2*float64(n)))
		if nTest >= n {
			return Federation{}, fmt.Errorf("healthcare scenario: site %d has %d rows, too few for a %d-row test split; raise MinSize", k, n, nTest)
		}
		site := SiteData{Name: siteName(k), IsAdversarial: adversarial[k], PositiveRate: rates[k]}
		testIdx := distinctIntegers(nTest, n, rng)
		site.XTrain, site.YTrain, site.XTest, site.YTest = splitTest(rows, labels, testIdx)
		if clean != nil {
			_, site.CleanYTrain, _, site.CleanYTest = splitTest(rows, clean, testIdx)
		}
		fed.Sites = append(fed.Sites, site)
	}

	if opt.Shift != nil {
		for _, k := range opt.Shift.Sites {
			c := newCollapse(opt.Features, opt.Shift.Magnitude, rng)
			fed.Shifted = append(fed.Shifted, ShiftedSite{
				Name:       fed.Sites[k].Name,
				Site:       k,
				AfterRound: opt.Shift.AfterRound,
				XTrain:     c.apply(fed.Sites[k].XTrain),
				XTest:      c.apply(fed.Sites[k].XTest),
			})
		}
	}
	return fed, nil
}

// BenchmarkOptions are the settings of Benchmark. The defaults are the
// paper's Scenario B (§4.1) as the authors' make_benchmark_federated builds
// it.
type BenchmarkOptions struct {
	// Seed drives every random draw.
	Seed uint64
	// Sites is the number of clients.
	Sites int
	// Samples is the population size; each site gets Samples/Sites rows.
	Samples int
	// Features and Informative shape the population (4 redundant columns,
	// OriginalClasses classes with one cluster each, collapsed to binary).
	Features, Informative int
	// OriginalClasses is the number of classes generated before the binary
	// collapse y ≥ OriginalClasses/2.
	OriginalClasses int
	// MinPositiveRate and MaxPositiveRate bound each site's positive
	// fraction, drawn uniformly (the pathological label skew).
	MinPositiveRate, MaxPositiveRate float64
	// NoiseStd is the standard deviation of the per-site Gaussian noise
	// added to every feature.
	NoiseStd float64
}

// DefaultBenchmarkOptions returns the paper's benchmark scenario: 10 sites
// of 500 rows, 20 features (12 informative), 5 classes collapsed to binary,
// positive fractions uniform in (0.1, 0.9), feature noise 0.3 (paper §4.1;
// golden/paper/README.md).
func DefaultBenchmarkOptions(seed uint64) BenchmarkOptions {
	return BenchmarkOptions{
		Seed: seed, Sites: 10, Samples: 5000,
		Features: 20, Informative: 12, OriginalClasses: 5,
		MinPositiveRate: 0.1, MaxPositiveRate: 0.9,
		NoiseStd: 0.3,
	}
}

// Validate reports the first invalid setting, naming the field.
func (o BenchmarkOptions) Validate() error {
	switch {
	case o.Sites < 1:
		return fmt.Errorf("benchmark options: Sites = %d, want at least 1", o.Sites)
	case o.Samples/max(o.Sites, 1) < 5:
		return fmt.Errorf("benchmark options: Samples = %d gives %d rows per site, want at least 5", o.Samples, o.Samples/o.Sites)
	case o.Informative < 1 || o.Informative+4 > o.Features:
		return fmt.Errorf("benchmark options: Informative = %d with Features = %d, want 1 ≤ Informative ≤ Features − 4 (4 redundant columns)",
			o.Informative, o.Features)
	case o.OriginalClasses < 2:
		return fmt.Errorf("benchmark options: OriginalClasses = %d, want at least 2", o.OriginalClasses)
	case !(o.MinPositiveRate >= 0 && o.MaxPositiveRate <= 1 && o.MinPositiveRate <= o.MaxPositiveRate):
		return fmt.Errorf("benchmark options: positive rates [%v, %v], want 0 ≤ MinPositiveRate ≤ MaxPositiveRate ≤ 1",
			o.MinPositiveRate, o.MaxPositiveRate)
	case !(o.NoiseStd >= 0) || math.IsInf(o.NoiseStd, 0):
		return fmt.Errorf("benchmark options: NoiseStd = %v, want a finite non-negative number", o.NoiseStd)
	}
	return nil
}

// Benchmark generates the paper's Scenario B (§4.1), following the
// authors' make_benchmark_federated recipe (golden/paper/README.md):
//
//  1. a population of Samples rows from MakeClassification with Informative
//     informative and 4 redundant columns, OriginalClasses classes of one
//     cluster each, and labels collapsed to y ≥ OriginalClasses/2;
//  2. for each site a positive fraction f ~ U(MinPositiveRate,
//     MaxPositiveRate) and m = Samples/Sites rows, ⌊m·f⌋ positive and the
//     rest negative, drawn from the population with replacement;
//  3. N(0, NoiseStd²) noise added to every feature, rows shuffled;
//  4. the first ⌊0.8·m⌋ rows train, the rest test.
//
// Sites are named site0, site1, …; none is adversarial.
func Benchmark(opt BenchmarkOptions) (Federation, error) {
	if err := opt.Validate(); err != nil {
		return Federation{}, fmt.Errorf("benchmark scenario: %w", err)
	}
	rng := rand.New(rand.NewPCG(opt.Seed, streamBenchmark))

	pop := DefaultClassificationOptions()
	pop.Samples = opt.Samples
	pop.Features = opt.Features
	pop.Informative = opt.Informative
	pop.Redundant = 4
	pop.Classes = opt.OriginalClasses
	pop.ClustersPerClass = 1
	X, y, err := MakeClassification(pop, rng)
	if err != nil {
		return Federation{}, fmt.Errorf("benchmark scenario: population: %w", err)
	}
	for i := range y {
		if y[i] >= opt.OriginalClasses/2 {
			y[i] = 1
		} else {
			y[i] = 0
		}
	}
	pos, neg := splitByLabel(y)
	if len(pos) == 0 || len(neg) == 0 {
		return Federation{}, errors.New("benchmark scenario: population has a single class; raise Samples")
	}

	fed := Federation{Generator: "benchmark", Seed: opt.Seed, Features: opt.Features}
	m := opt.Samples / opt.Sites
	for k := 0; k < opt.Sites; k++ {
		frac := opt.MinPositiveRate + (opt.MaxPositiveRate-opt.MinPositiveRate)*rng.Float64()
		nPos := int(float64(m) * frac)
		rows := make([][]float64, 0, m)
		labels := make([]int, 0, m)
		for i := 0; i < nPos; i++ {
			rows = append(rows, append([]float64(nil), X[pos[rng.IntN(len(pos))]]...))
			labels = append(labels, 1)
		}
		for i := nPos; i < m; i++ {
			rows = append(rows, append([]float64(nil), X[neg[rng.IntN(len(neg))]]...))
			labels = append(labels, 0)
		}
		for _, row := range rows {
			for j := range row {
				row[j] += rng.NormFloat64() * opt.NoiseStd
			}
		}
		rows, labels = permuteRows(rows, labels, rng)
		split := int(0.8 * float64(m))
		fed.Sites = append(fed.Sites, SiteData{
			Name:         siteName(k),
			XTrain:       rows[:split],
			YTrain:       labels[:split],
			XTest:        rows[split:],
			YTest:        labels[split:],
			PositiveRate: frac,
		})
	}
	return fed, nil
}

// The PCG stream constants keep the two generators' random sequences apart
// for the same seed ("hc" and "bm" in ASCII).
const (
	streamHealthcare = 0x6863
	streamBenchmark  = 0x626d
)

func siteName(k int) string { return fmt.Sprintf("site%d", k) }

func splitByLabel(y []int) (pos, neg []int) {
	for i, v := range y {
		if v == 1 {
			pos = append(pos, i)
		} else {
			neg = append(neg, i)
		}
	}
	return pos, neg
}

// linspace returns n evenly spaced values from a to b inclusive, as
// numpy.linspace: a single value is a, and the last value is b exactly.
func linspace(a, b float64, n int) []float64 {
	out := make([]float64, n)
	if n == 1 {
		out[0] = a
		return out
	}
	step := (b - a) / float64(n-1)
	for i := range out {
		out[i] = a + float64(i)*step
	}
	out[n-1] = b
	return out
}

func indexSet(idx []int) map[int]bool {
	s := make(map[int]bool, len(idx))
	for _, k := range idx {
		s[k] = true
	}
	return s
}

// affine returns x·scale + f·shift as a new row.
func affine(x, scale, shift []float64, f float64) []float64 {
	out := make([]float64, len(x))
	for j := range x {
		out[j] = x[j]*scale[j] + shift[j]*f
	}
	return out
}

func permuteRows(rows [][]float64, labels []int, rng *rand.Rand) ([][]float64, []int) {
	perm := rng.Perm(len(rows))
	r2 := make([][]float64, len(rows))
	l2 := make([]int, len(rows))
	for i, p := range perm {
		r2[i], l2[i] = rows[p], labels[p]
	}
	return r2, l2
}

// splitTest puts the rows listed in test (in that order) into the test
// split and the others, in increasing index order, into the train split.
func splitTest(rows [][]float64, labels []int, test []int) (xTr [][]float64, yTr []int, xTe [][]float64, yTe []int) {
	inTest := make([]bool, len(rows))
	for _, i := range test {
		inTest[i] = true
		xTe = append(xTe, rows[i])
		yTe = append(yTe, labels[i])
	}
	for i := range rows {
		if !inTest[i] {
			xTr = append(xTr, rows[i])
			yTr = append(yTr, labels[i])
		}
	}
	return xTr, yTr, xTe, yTe
}

func randomUnitVector(d int, rng *rand.Rand) []float64 {
	v := make([]float64, d)
	norm := 0.0
	for norm == 0 {
		for j := range v {
			v[j] = rng.NormFloat64()
			norm += v[j] * v[j]
		}
	}
	norm = math.Sqrt(norm)
	for j := range v {
		v[j] /= norm
	}
	return v
}

// collapse is the feature map of a ContinualShift.
type collapse struct {
	u, w, move []float64
}

// newCollapse draws u, then w orthogonalised against u (Gram–Schmidt), then
// the direction of the move, scaled to magnitude.
func newCollapse(dim int, magnitude float64, rng *rand.Rand) collapse {
	u := randomUnitVector(dim, rng)
	w := randomUnitVector(dim, rng)
	dot := 0.0
	for j := range u {
		dot += u[j] * w[j]
	}
	norm := 0.0
	for j := range w {
		w[j] -= dot * u[j]
		norm += w[j] * w[j]
	}
	norm = math.Sqrt(norm)
	for j := range w {
		w[j] /= norm
	}
	move := randomUnitVector(dim, rng)
	for j := range move {
		move[j] *= magnitude
	}
	return collapse{u: u, w: w, move: move}
}

// apply returns the shifted copy of rows.
func (c collapse) apply(rows [][]float64) [][]float64 {
	out := make([][]float64, len(rows))
	for i, r := range rows {
		pu, pw := 0.0, 0.0
		for j := range r {
			pu += r[j] * c.u[j]
			pw += r[j] * c.w[j]
		}
		o := make([]float64, len(r))
		for j := range r {
			o[j] = pu*c.u[j] + pw*c.w[j] + r[j]/10 + c.move[j]
		}
		out[i] = o
	}
	return out
}

// Flipped is the number of the site's rows, train and test together, whose
// label the generator flipped.
func (s SiteData) Flipped() int {
	return countDiffering(s.YTrain, s.CleanYTrain) + countDiffering(s.YTest, s.CleanYTest)
}

// countDiffering counts the positions where a and clean differ; a nil clean
// means no flips.
func countDiffering(a, clean []int) int {
	n := 0
	for i := range clean {
		if a[i] != clean[i] {
			n++
		}
	}
	return n
}

// SiteNames returns the federation's site names in order.
func (f Federation) SiteNames() []string {
	names := make([]string, len(f.Sites))
	for i, s := range f.Sites {
		names[i] = s.Name
	}
	return names
}
