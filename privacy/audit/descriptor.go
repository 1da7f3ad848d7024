package audit

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/ptopofl/ptopofl/privacy"
	"github.com/ptopofl/ptopofl/privacy/noise"
	"github.com/ptopofl/ptopofl/tda"
)

// Canary names a record DescriptorMembership tries to detect.
type Canary string

// The canaries of DescriptorMembership.
const (
	// OutlierCanary is a point far outside the data: 5 times the largest
	// norm of D's rows, along a random direction.
	OutlierCanary Canary = "outlier"
	// TypicalCanary is a random row of the population that is not in D:
	// the control.
	TypicalCanary Canary = "typical"
)

// DescriptorCondition names the descriptor a site releases.
type DescriptorCondition string

// The descriptors DescriptorMembership attacks.
const (
	// PaperDescriptor is the paper's descriptor, tda.ComputeDescriptor
	// (exact variant) on a subsample of NSub rows drawn afresh in every
	// trial from a stream the attacker cannot see.
	PaperDescriptor DescriptorCondition = "paper"
	// DPDescriptorCondition is the DP descriptor, tda.DPDescriptor on all
	// rows, released through the Gaussian mechanism for one release at ε
	// and tidied by tda.DPDescriptorVector, as a site under dp record
	// releases it.
	DPDescriptorCondition DescriptorCondition = "dp"
)

// DescriptorConfig configures DescriptorMembership. Zero fields take the
// defaults named on them.
type DescriptorConfig struct {
	// X is D, the site's rows (raw features) without the canary.
	X [][]float64
	// Population holds rows of the site's population that are not in D
	// (a site's test rows, say); the typical canary is one of them. It
	// may be nil when Canaries does not ask for TypicalCanary.
	Population [][]float64
	// Canaries lists the canaries (default both, the typical one only
	// when Population is given) and Conditions the descriptors (default
	// both, the DP one only when Epsilon is set).
	Canaries   []Canary
	Conditions []DescriptorCondition
	// Trials is the number of releases computed in each world, for each
	// canary and condition (default 1,000; at least 8).
	Trials int
	// NSub is the paper descriptor's subsample size (default 80).
	NSub int
	// Epsilon is the ε of one DP descriptor release at Delta (default δ
	// 1e-5); the noise multiplier is z = 1/privacy.GaussianMu(ε, δ).
	Epsilon, Delta float64
	// DP holds the DP descriptor's public options; M is set to |D| + 1,
	// the slots of D and the canary.
	DP tda.DPDescriptorOptions
	// Confidence is the one-sided confidence of the ε lower bounds
	// (default 0.95).
	Confidence float64
	// Seed draws the canaries (and the site secret when Secret is the
	// zero Secret).
	Seed uint64
	// Secret is the site's secret the subsamples and the noise come from;
	// the zero Secret means a fixed one derived from Seed.
	Secret noise.Secret
	// Workers is the number of goroutines computing descriptors (0:
	// GOMAXPROCS). The results do not depend on it.
	Workers int
	// Releases are other releases of the site attacked with the same
	// canaries, worlds and test as the paper's descriptor (package theory
	// compares the descriptor with the site's model and gradient at
	// these matched settings).
	Releases []MatchedRelease
}

// MatchedRelease is a release DescriptorMembership attacks beside the
// descriptors: Compute returns it for rows (D, or D ∪ {canary} with the
// canary last) in one trial of one world (0 without the canary, 1 with).
// A release with randomness of its own draws it from its trial; a
// deterministic one returns the same vector every trial.
type MatchedRelease struct {
	Name    string
	Compute func(rows [][]float64, world, trial int) ([]float64, error)
}

// DescriptorMembership runs the distinguishing test of
// ../../../shared/research/privacy.md §5(b) against a site's topological
// descriptor: can an attacker who knows the site's data D and a canary
// record tell from one descriptor release whether the canary was among the
// site's records? For each canary and condition it computes Trials
// releases in each world, with fresh randomness each time, and reports the
// attack's ROC over them (one MembershipResult each, canary-major, named
// "descriptor/<condition>/<canary>"), then the same for each of
// cfg.Releases ("release/<name>/<canary>"), scored as the paper's
// descriptor is.
//
// The worlds. For the DP descriptor they are the neighbours its guarantee
// is about: D ∪ {canary} against D with the canary's slot a null record
// (tda.DPDescriptor on D's rows with M = |D| + 1). For the paper's
// descriptor a null record has no meaning (it would be visible in the
// subsample's count of pairs whenever drawn), so the world without is the
// site without the record: D, against D ∪ {canary}, each subsampled to
// NSub rows by a secret stream. The attacker cannot see the subsample, so
// the canary is in it with probability NSub/(|D| + 1): that caps the
// attack's TPR at low FPR.
//
// The attacker is the strongest reasonable one: it knows D and the canary.
//   - DP descriptor: it computes the two noiseless vectors v₁ (with) and
//     v₀ (without) and scores a release y by the log likelihood ratio of
//     Gaussian noise around them, ‖y − v₀‖² − ‖y − v₁‖² (up to the factor
//     1/(2σ²), which does not change the ROC): the Neyman–Pearson test of
//     the raw release, applied to the post-processed one. Its AUC is at
//     most Φ(μ/√2) for μ = ‖v₁ − v₀‖/σ ≤ 1/z.
//   - Paper descriptor (and the Releases): the subsample is random, so it
//     simulates: it fits
//     a normal distribution per coordinate and world (mean, variance
//     floored at 10⁻⁶ of the pooled variance plus 10⁻¹²) to the first half
//     of each world's trials and scores the other half by the summed log
//     likelihood ratio of the coordinates (naive Bayes); the ROC is over
//     the second halves.
//
// EpsilonLowerBound is computed from the scored trials (SelectNormal for
// the DP descriptor, whose score is normal before the clamping of
// post-processing, SelectEmpirical for the paper's).
//
// What to expect, on a healthcare site of 200 training rows: the outlier,
// when subsampled, gives itself away in the paper's descriptor (TPR near
// the 0.40 the subsample allows, at 0.1 % FPR), the typical record barely;
// in the DP descriptor the outlier is clipped to the edge of the disc,
// where the kernel density of the grid hardly sees it (it moves the vector
// by 0.0003·Δ), while a typical record moves it by 0.15·Δ, so its attack's
// μ is 0.15/z.
//
// Cost: a paper descriptor on 80 rows of 20 features takes about 1.5 ms
// (Vietoris–Rips H1), so the default 1,000 releases of two worlds take
// about 1.5 s per canary on 2 cores; a DP release takes microseconds after
// the two noiseless descriptors (O(32²·|D|) each). It returns an error,
// naming the field, for invalid rows or settings.
func DescriptorMembership(cfg DescriptorConfig) ([]MembershipResult, error) {
	cfg.Trials = orDefault(cfg.Trials, 1000)
	cfg.NSub = orDefault(cfg.NSub, 80)
	cfg.Delta = orDefault(cfg.Delta, DefaultDelta)
	cfg.Confidence = orDefault(cfg.Confidence, DefaultConfidence)
	if cfg.Canaries == nil {
		cfg.Canaries = []Canary{OutlierCanary}
		if len(cfg.Population) > 0 {
			cfg.Canaries = append(cfg.Canaries, TypicalCanary)
		}
	}
	if cfg.Conditions == nil {
		cfg.Conditions = []DescriptorCondition{PaperDescriptor}
		if cfg.Epsilon > 0 {
			cfg.Conditions = append(cfg.Conditions, DPDescriptorCondition)
		}
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	rng := pcg(cfg.Seed, streamCanary)
	var out []MembershipResult
	for ci, kind := range cfg.Canaries {
		canary, err := cfg.canary(kind, rng)
		if err != nil {
			return nil, err
		}
		with := append(slices.Clone(cfg.X), canary)
		for _, cond := range cfg.Conditions {
			var r MembershipResult
			var err error
			if cond == PaperDescriptor {
				r, err = cfg.paperTest(with, ci)
			} else {
				r, err = cfg.dpTest(with, ci)
			}
			if err != nil {
				return nil, fmt.Errorf("audit: descriptor membership, %s canary, %s descriptor: %w", kind, cond, err)
			}
			r.Attack = fmt.Sprintf("descriptor/%s/%s", cond, kind)
			out = append(out, r)
		}
		for _, rel := range cfg.Releases {
			r, err := cfg.vectorTest(with, func(x [][]float64, world, trial int) ([]float64, error) {
				return rel.Compute(x, world, trial)
			})
			if err != nil {
				return nil, fmt.Errorf("audit: release %s, %s canary: %w", rel.Name, kind, err)
			}
			r.Attack = fmt.Sprintf("release/%s/%s", rel.Name, kind)
			out = append(out, r)
		}
	}
	return out, nil
}

func (c DescriptorConfig) validate() error {
	if len(c.X) < 2 {
		return fmt.Errorf("audit: DescriptorConfig.X has %d rows: want at least 2", len(c.X))
	}
	nf := len(c.X[0])
	for _, set := range []struct {
		name string
		rows [][]float64
	}{{"X", c.X}, {"Population", c.Population}} {
		name := set.name
		for i, row := range set.rows {
			if len(row) != nf || nf == 0 {
				return fmt.Errorf("audit: DescriptorConfig.%s row %d has %d features, X row 0 has %d (want at least 1)", name, i, len(row), nf)
			}
			for j, v := range row {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return fmt.Errorf("audit: DescriptorConfig.%s row %d feature %d is %v", name, i, j, v)
				}
			}
		}
	}
	for _, k := range c.Canaries {
		switch {
		case k == TypicalCanary && len(c.Population) == 0:
			return errors.New("audit: DescriptorConfig.Canaries asks for the typical canary: give Population, rows not in X")
		case k != TypicalCanary && k != OutlierCanary:
			return fmt.Errorf("audit: DescriptorConfig.Canaries: %q: want %q or %q", k, OutlierCanary, TypicalCanary)
		}
	}
	for _, d := range c.Conditions {
		switch {
		case d == DPDescriptorCondition && !(c.Epsilon > 0):
			return errors.New("audit: DescriptorConfig.Conditions asks for the DP descriptor: set Epsilon")
		case d != DPDescriptorCondition && d != PaperDescriptor:
			return fmt.Errorf("audit: DescriptorConfig.Conditions: %q: want %q or %q", d, PaperDescriptor, DPDescriptorCondition)
		case d == DPDescriptorCondition:
			// DPDescriptorVector checks the public options (M aside).
			if _, err := tda.DPDescriptorVector(make([]float64, tda.DescriptorLen), c.DP); err != nil {
				return fmt.Errorf("audit: DescriptorConfig.DP: %w", err)
			}
		}
	}
	switch {
	case c.Trials < 8:
		return fmt.Errorf("audit: DescriptorConfig.Trials = %d: want at least 8 a world", c.Trials)
	case c.NSub < 2:
		return fmt.Errorf("audit: DescriptorConfig.NSub = %d: want at least 2", c.NSub)
	case !(c.Epsilon >= 0) || math.IsInf(c.Epsilon, 1):
		return fmt.Errorf("audit: DescriptorConfig.Epsilon = %v: want a finite ε ≥ 0", c.Epsilon)
	case !(c.Delta > 0 && c.Delta < 1):
		return fmt.Errorf("audit: DescriptorConfig.Delta = %v: want δ in (0, 1)", c.Delta)
	case !(c.Confidence > 0.5 && c.Confidence < 1):
		return fmt.Errorf("audit: DescriptorConfig.Confidence = %v: want a number in (0.5, 1)", c.Confidence)
	}
	return nil
}

// canary returns the canary of kind k, drawn from rng.
func (c DescriptorConfig) canary(k Canary, rng *rand.Rand) ([]float64, error) {
	nf := len(c.X[0])
	if k == OutlierCanary {
		var largest float64
		for _, row := range c.X {
			var s float64
			for _, v := range row {
				s += v * v
			}
			largest = math.Max(largest, math.Sqrt(s))
		}
		u := make([]float64, nf)
		var norm float64
		for norm == 0 {
			for j := range u {
				u[j] = rng.NormFloat64()
				norm += u[j] * u[j]
			}
		}
		scale := 5 * math.Max(largest, 1e-12) / math.Sqrt(norm)
		for j := range u {
			u[j] *= scale
		}
		return u, nil
	}
	start := rng.IntN(len(c.Population))
	for k := range c.Population {
		row := c.Population[(start+k)%len(c.Population)]
		if !slices.ContainsFunc(c.X, func(x []float64) bool { return slices.Equal(x, row) }) {
			return slices.Clone(row), nil
		}
	}
	return nil, errors.New("audit: DescriptorConfig.Population: every row is also a row of X; the typical canary must not be in D")
}

// paperTest is the distinguishing test against the paper's descriptor,
// with (D ∪ {canary}, the canary last) and without it (D).
func (c DescriptorConfig) paperTest(with [][]float64, canaryIndex int) (MembershipResult, error) {
	secret := siteSecret(c.Secret, c.Seed)
	return c.vectorTest(with, func(x [][]float64, world, trial int) ([]float64, error) {
		name := "without"
		if world == 1 {
			name = "with"
		}
		st := secret.Stream(noise.Key{
			Campaign: "audit/descriptor", Round: trial, Site: name, Purpose: "subsample",
			Input: keyInput(c.Seed, uint64(canaryIndex)),
		})
		rows := st.Sample(len(x), min(c.NSub, len(x)))
		d, err := tda.ComputeDescriptor(x, tda.DescriptorOptions{Variant: tda.VariantExact, Rows: rows})
		return d.Vector, err
	})
}

// vectorTest is the simulated distinguishing test of a release computed
// by release (with the canary: world 1, the rows of with; without: world
// 0, all but the last): Trials releases per world, a normal fit per
// coordinate and world on the first halves, the summed log likelihood
// ratio on the second halves.
func (c DescriptorConfig) vectorTest(with [][]float64, release func(x [][]float64, world, trial int) ([]float64, error)) (MembershipResult, error) {
	var vecs [2][][]float64 // vecs[1]: with the canary
	for world := range 2 {
		x := with[:len(with)-1]
		if world == 1 {
			x = with
		}
		vecs[world] = make([][]float64, c.Trials)
		err := parallel(c.Trials, c.Workers, func(trial int) error {
			v, err := release(x, world, trial)
			vecs[world][trial] = v
			return err
		})
		if err != nil {
			return MembershipResult{}, err
		}
	}
	for world := range 2 {
		for _, v := range vecs[world] {
			if len(v) != len(vecs[0][0]) || len(v) == 0 {
				return MembershipResult{}, fmt.Errorf("releases of %d and %d numbers: want one length, at least 1", len(v), len(vecs[0][0]))
			}
		}
	}
	h := c.Trials / 2
	fitIn, fitOut := fitNormals(vecs[1][:h]), fitNormals(vecs[0][:h])
	floorVariances(fitIn, fitOut)
	var scores, labels []float64
	var byWorld [2][]float64
	for world := range 2 {
		for _, v := range vecs[world][h:] {
			s := fitIn.logLikelihood(v) - fitOut.logLikelihood(v)
			scores = append(scores, s)
			labels = append(labels, float64(world))
			byWorld[world] = append(byWorld[world], s)
		}
	}
	var r MembershipResult
	if err := summarise(&r, scores, labels); err != nil {
		return MembershipResult{}, err
	}
	b, err := EpsilonLowerBound(byWorld[1], byWorld[0], c.Delta, c.Confidence, SelectEmpirical)
	if err != nil {
		return MembershipResult{}, err
	}
	r.EpsilonLowerBound = b.Epsilon
	return r, nil
}

// dpTest is the distinguishing test against the DP descriptor, with
// (every row of with, M = len(with)) and without the canary (its slot a
// null record).
func (c DescriptorConfig) dpTest(with [][]float64, canaryIndex int) (MembershipResult, error) {
	mu, err := privacy.GaussianMu(c.Epsilon, c.Delta)
	if err != nil {
		return MembershipResult{}, err
	}
	if !(mu > 0) {
		return MembershipResult{}, fmt.Errorf("ε = %v at δ = %v: no Gaussian noise is that private", c.Epsilon, c.Delta)
	}
	z := 1 / mu
	spent, err := privacy.Epsilon([]privacy.Event{{Z: z, Q: 1, Count: 1}}, c.Delta, privacy.GDP)
	if err != nil {
		return MembershipResult{}, err
	}
	opt := c.DP
	opt.M = len(with)
	all := make([]int, len(with))
	for i := range all {
		all[i] = i
	}
	var clean [2][]float64
	var sens float64
	if clean[1], sens, err = tda.DPDescriptor(with, all, opt); err != nil {
		return MembershipResult{}, err
	}
	if clean[0], _, err = tda.DPDescriptor(with, all[:len(all)-1], opt); err != nil {
		return MembershipResult{}, err
	}
	secret := siteSecret(c.Secret, c.Seed)
	var byWorld [2][]float64
	for world := range 2 {
		name := "without"
		if world == 1 {
			name = "with"
		}
		byWorld[world] = make([]float64, c.Trials)
		err := parallel(c.Trials, c.Workers, func(trial int) error {
			raw := slices.Clone(clean[world])
			secret.Stream(noise.Key{
				Campaign: "audit/descriptor", Round: trial, Site: name, Purpose: "descriptor",
				Input: keyInput(c.Seed, uint64(canaryIndex)),
			}).Gaussian(raw, sens, z)
			y, err := tda.DPDescriptorVector(raw, opt)
			if err != nil {
				return err
			}
			var s float64
			for j, v := range y {
				d0, d1 := v-clean[0][j], v-clean[1][j]
				s += d0*d0 - d1*d1
			}
			byWorld[world][trial] = s
			return nil
		})
		if err != nil {
			return MembershipResult{}, err
		}
	}
	scores := append(slices.Clone(byWorld[0]), byWorld[1]...)
	labels := make([]float64, len(scores))
	for i := c.Trials; i < len(labels); i++ {
		labels[i] = 1
	}
	r := MembershipResult{NoiseMultiplier: z, Epsilon: spent.Epsilon}
	if err := summarise(&r, scores, labels); err != nil {
		return MembershipResult{}, err
	}
	b, err := EpsilonLowerBound(byWorld[1], byWorld[0], c.Delta, c.Confidence, SelectNormal)
	if err != nil {
		return MembershipResult{}, err
	}
	r.EpsilonLowerBound = b.Epsilon
	return r, nil
}

// normals is a per-coordinate normal fit: a mean and a variance for each
// coordinate.
type normals struct{ mean, variance []float64 }

// fitNormals fits the mean and the (population) variance of every
// coordinate of vs.
func fitNormals(vs [][]float64) normals {
	d := len(vs[0])
	f := normals{mean: make([]float64, d), variance: make([]float64, d)}
	for _, v := range vs {
		for j, x := range v {
			f.mean[j] += x
		}
	}
	for j := range f.mean {
		f.mean[j] /= float64(len(vs))
	}
	for _, v := range vs {
		for j, x := range v {
			f.variance[j] += (x - f.mean[j]) * (x - f.mean[j])
		}
	}
	for j := range f.variance {
		f.variance[j] /= float64(len(vs))
	}
	return f
}

// floorVariances raises each coordinate's variance in a and b to at least
// 10⁻⁶ of their pooled variance (the mean of the two variances plus the
// squared half-difference of the means) plus 10⁻¹², the same floor for
// both, so that a coordinate constant in both worlds adds nothing and one
// constant in each but different separates them.
func floorVariances(a, b normals) {
	for j := range a.variance {
		dm := (a.mean[j] - b.mean[j]) / 2
		pooled := (a.variance[j]+b.variance[j])/2 + dm*dm
		floor := 1e-6*pooled + 1e-12
		a.variance[j] = math.Max(a.variance[j], floor)
		b.variance[j] = math.Max(b.variance[j], floor)
	}
}

// logLikelihood returns Σ_j ln N(v_j; mean_j, variance_j).
func (f normals) logLikelihood(v []float64) float64 {
	var s float64
	for j, x := range v {
		d := x - f.mean[j]
		s += -d*d/(2*f.variance[j]) - 0.5*math.Log(2*math.Pi*f.variance[j])
	}
	return s
}
