package search

import (
	"math"
	"sort"
)

// priorWeight is the weight of the prior kernel, Optuna's TPESampler
// default prior_weight = 1.0.
const priorWeight = 1.0

// parzen is Optuna's _ParzenEstimator (samplers/_tpe/parzen_estimator.py)
// with its defaults (prior_weight 1, consider_magic_clip, no
// consider_endpoints): a mixture of one kernel per observation plus a
// prior kernel, each a product over the dimensions of a truncated normal
// (Uniform, LogUniform in log space, IntRange discretised) or a row of
// categorical weights (Choice).
type parzen struct {
	weights []float64 // mixture weights, summing to 1; the prior's last
	dims    []parzenDim
}

// parzenDim is one dimension of a parzen mixture: kernels k = 0 …
// len(weights)−1.
type parzenDim struct {
	dim Dim
	// mu and sigma are the numerical kernels' centres and bandwidths, in
	// the transformed space (log for log dimensions); low and high bound
	// that space (widened by ½ for integers, then logged).
	mu, sigma []float64
	low, high float64
	// logMass[k] is the log of kernel k's untruncated mass on [low,
	// high], its truncation's normaliser.
	logMass []float64
	// probs[k] is categorical kernel k's distribution over the choices.
	probs [][]float64
}

// newParzen fits a parzen mixture to obs (one row per trial, in trial
// order; a value per dimension, a choice's index for Choice), weighting
// the rows with defaultWeights and the prior with priorWeight, as
// _ParzenEstimator.__init__ does.
func newParzen(dims []Dim, obs [][]float64) parzen {
	n := len(obs)
	var w []float64
	if n == 0 {
		w = []float64{1}
	} else {
		w = append(defaultWeights(n), priorWeight)
	}
	sum := 0.0
	for _, x := range w {
		sum += x
	}
	for i := range w {
		w[i] /= sum
	}
	p := parzen{weights: w, dims: make([]parzenDim, len(dims))}
	for j, d := range dims {
		col := make([]float64, n)
		for i, row := range obs {
			col[i] = row[j]
		}
		if d.Kind == Choice {
			p.dims[j] = categoricalKernels(d, col)
		} else {
			p.dims[j] = numericalKernels(d, col)
		}
	}
	return p
}

// categoricalKernels is _calculate_categorical_distributions: with n > 0
// observations, n + 1 rows (the last the prior) each start at
// prior_weight/(n+1) on every choice, observation i adds 1 to its choice
// in row i, and rows are normalised; with none, one uniform row.
func categoricalKernels(d Dim, obs []float64) parzenDim {
	k := len(d.Choices)
	if len(obs) == 0 {
		row := make([]float64, k)
		for c := range row {
			row[c] = 1 / float64(k)
		}
		return parzenDim{dim: d, probs: [][]float64{row}}
	}
	nk := len(obs) + 1
	probs := make([][]float64, nk)
	for i := range probs {
		row := make([]float64, k)
		for c := range row {
			row[c] = priorWeight / float64(nk)
		}
		if i < len(obs) {
			row[int(obs[i])]++
		}
		sum := 0.0
		for _, x := range row {
			sum += x
		}
		for c := range row {
			row[c] /= sum
		}
		probs[i] = row
	}
	return parzenDim{dim: d, probs: probs}
}

// transformedBounds returns d's bounds in the space its kernels live in:
// widened by ½ (the step over 2) for integers, then logged for log
// dimensions, as _calculate_numerical_distributions does.
func transformedBounds(d Dim) (low, high float64) {
	low, high = d.Lo, d.Hi
	if d.Kind == IntRange {
		low, high = low-0.5, high+0.5
	}
	if d.isLog() {
		low, high = math.Log(low), math.Log(high)
	}
	return low, high
}

func (d Dim) isLog() bool { return d.Kind == LogUniform || (d.Kind == IntRange && d.Log) }

// numericalKernels is _calculate_numerical_distributions: a kernel at
// every observation with bandwidths from parzenBandwidths, plus the prior
// kernel at the middle of the range with the range as its bandwidth.
func numericalKernels(d Dim, obs []float64) parzenDim {
	low, high := transformedBounds(d)
	mu := make([]float64, len(obs), len(obs)+1)
	for i, x := range obs {
		if d.isLog() {
			x = math.Log(x)
		}
		mu[i] = x
	}
	sigma := parzenBandwidths(mu, low, high)
	pd := parzenDim{
		dim: d, low: low, high: high,
		mu:    append(mu, 0.5*(low+high)),
		sigma: append(sigma, high-low),
	}
	pd.logMass = make([]float64, len(pd.mu))
	for k := range pd.mu {
		pd.logMass[k] = logGaussMass((low-pd.mu[k])/pd.sigma[k], (high-pd.mu[k])/pd.sigma[k])
	}
	return pd
}

// parzenBandwidths is compute_sigmas in _calculate_numerical_distributions
// with consider_endpoints = False and consider_magic_clip = True, as
// Optuna defines it since 4.9 (earlier releases counted the prior's
// centre among the neighbours; Optuna commit c1267c3f removed it). Sorted,
// and with low and high as the outer neighbours, each centre's bandwidth
// is the larger gap to its two neighbours; but with two centres or more,
// the lowest takes the gap to the second lowest and the highest the gap to
// the second highest (the endpoints are not considered). Bandwidths are
// then clipped to [(high−low)/min(100, 1+n_kernels), high−low], where
// n_kernels = len(mu) + 1 counts the prior (the "magic clip").
//
// Optuna sorts with numpy's default (unstable) argsort; a stable sort is
// used here, which can matter only for tied centres under unequal weights.
func parzenBandwidths(mu []float64, low, high float64) []float64 {
	n := len(mu)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return mu[order[a]] < mu[order[b]] })
	e := make([]float64, n+2) // sorted centres with the endpoints
	e[0], e[n+1] = low, high
	for k, i := range order {
		e[k+1] = mu[i]
	}
	s := make([]float64, n)
	for k := range s {
		s[k] = math.Max(e[k+1]-e[k], e[k+2]-e[k+1])
	}
	if n >= 2 {
		s[0] = e[2] - e[1]
		s[n-1] = e[n] - e[n-1]
	}
	maxSigma := high - low
	minSigma := (high - low) / math.Min(100, 1+float64(n+1))
	sigma := make([]float64, n)
	for k, i := range order {
		sigma[i] = math.Min(math.Max(s[k], minSigma), maxSigma)
	}
	return sigma
}

// defaultWeights is Optuna's default_weights(n): n ones for n < 25;
// otherwise numpy.linspace(1/n, 1, n − 25) for the oldest n − 25
// observations followed by 25 ones, so that recent trials count fully.
func defaultWeights(n int) []float64 {
	w := make([]float64, n)
	for i := range w {
		w[i] = 1
	}
	if n < 25 {
		return w
	}
	ramp, start := n-25, 1/float64(n)
	switch ramp {
	case 0:
	case 1:
		w[0] = start
	default:
		// numpy.linspace: i·step + start, with the last point set to stop.
		step := (1 - start) / float64(ramp-1)
		for i := 0; i < ramp-1; i++ {
			w[i] = float64(float64(i)*step) + start
		}
		w[ramp-1] = 1
	}
	return w
}

// sample draws size points from p as
// _MixtureOfProductDistribution.sample does: a kernel per point by the
// mixture weights (numpy's choice: the first kernel whose cumulative
// weight exceeds a uniform draw), then each categorical dimension from its
// kernel's row, then each numerical one from its kernel's truncated normal
// by inversion; log dimensions are exp'd and integers rounded (half to
// even, numpy.round) and clipped to [lo, hi]. x[i][j] is point i's value in
// dimension j (a choice's index for Choice).
func (p parzen) sample(r *rng, size int) [][]float64 {
	cdf := make([]float64, len(p.weights))
	acc := 0.0
	for k, w := range p.weights {
		acc += w
		cdf[k] = acc
	}
	active := make([]int, size)
	for i := range active {
		u := r.float64() * cdf[len(cdf)-1]
		k := sort.Search(len(cdf), func(k int) bool { return cdf[k] > u })
		active[i] = min(k, len(cdf)-1)
	}
	x := make([][]float64, size)
	for i := range x {
		x[i] = make([]float64, len(p.dims))
	}
	for j, pd := range p.dims {
		if pd.dim.Kind != Choice {
			continue
		}
		for i, k := range active {
			u, acc, c := r.float64(), 0.0, 0
			row := pd.probs[min(k, len(pd.probs)-1)]
			for c = 0; c < len(row)-1; c++ {
				if acc += row[c]; !(acc < u) {
					break
				}
			}
			x[i][j] = float64(c)
		}
	}
	for j, pd := range p.dims {
		if pd.dim.Kind == Choice {
			continue
		}
		d := pd.dim
		for i, k := range active {
			mu, sigma := pd.mu[k], pd.sigma[k]
			z := truncNormPPF(r.float64(), (pd.low-mu)/sigma, (pd.high-mu)/sigma)
			v := z*sigma + mu
			if d.isLog() {
				v = math.Exp(v)
			}
			if d.Kind == IntRange {
				v = d.Lo + math.RoundToEven(v-d.Lo)
			}
			x[i][j] = clamp(v, d.Lo, d.Hi)
		}
	}
	return x
}

// logPDF returns the log density (log mass for integers and choices) of p
// at each point of x, as _MixtureOfProductDistribution.log_pdf does: per
// kernel the log weight plus the sum over dimensions, then a log-sum-exp
// over the kernels. A log dimension's density is taken in log space
// (without the Jacobian, which cancels in l(x)/g(x)); an integer's mass is
// the kernel's mass on [x − ½, x + ½] over its mass on [low, high].
func (p parzen) logPDF(x [][]float64) []float64 {
	out := make([]float64, len(x))
	lw := make([]float64, len(p.weights))
	for i, pt := range x {
		for k, w := range p.weights {
			lw[k] = math.Log(w)
			for j, pd := range p.dims {
				lw[k] += pd.logPDF(k, pt[j])
			}
		}
		out[i] = logSumExp(lw)
	}
	return out
}

// logPDF returns kernel k's log density (or mass) at v in dimension pd.
func (pd parzenDim) logPDF(k int, v float64) float64 {
	d := pd.dim
	if d.Kind == Choice {
		return math.Log(pd.probs[min(k, len(pd.probs)-1)][int(v)])
	}
	mu, sigma := pd.mu[k], pd.sigma[k]
	a, b := (pd.low-mu)/sigma, (pd.high-mu)/sigma
	if d.Kind == IntRange {
		left, right := v-0.5, v+0.5
		if d.Log {
			left, right = math.Log(left), math.Log(right)
		}
		return logGaussMass((left-mu)/sigma, (right-mu)/sigma) - pd.logMass[k]
	}
	if d.isLog() {
		v = math.Log(v)
	}
	z := (v - mu) / sigma
	if z < a || z > b {
		return math.Inf(-1)
	}
	return -z*z/2 - lnSqrt2Pi - pd.logMass[k] - math.Log(sigma)
}

func logSumExp(x []float64) float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = math.Max(m, v)
	}
	if math.IsInf(m, -1) {
		return m
	}
	s := 0.0
	for _, v := range x {
		s += math.Exp(v - m)
	}
	return math.Log(s) + m
}

// The truncated normal below is Optuna's port of SciPy
// (samplers/_tpe/_truncnorm.py): the standard normal CDF ndtr, its log,
// the log mass of an interval, and the quantile by Newton's method on
// log ndtr.

const lnSqrt2Pi = 0.91893853320467274178032973640561764 // log √(2π)

// ndtr is the standard normal CDF (_ndtr_single).
func ndtr(a float64) float64 {
	x := a / math.Sqrt2
	switch {
	case x < -1/math.Sqrt2:
		return 0.5 * math.Erfc(-x)
	case x < 1/math.Sqrt2:
		return 0.5 + 0.5*math.Erf(x)
	}
	return 1 - 0.5*math.Erfc(x)
}

// logNdtr is log ndtr(a) (_log_ndtr_single), with the asymptotic series
// below −20.
func logNdtr(a float64) float64 {
	if a > 6 {
		return -ndtr(-a)
	}
	if a > -20 {
		return math.Log(ndtr(a))
	}
	logLHS := -0.5*a*a - math.Log(-a) - 0.5*math.Log(2*math.Pi)
	last, rhs, numerator, denomFactor := 0.0, 1.0, 1.0, 1.0
	denomCons := 1 / (a * a)
	sign := 1.0
	for i := 1; math.Abs(last-rhs) > 0x1p-52; i++ {
		last = rhs
		sign = -sign
		denomFactor *= denomCons
		numerator *= float64(2*i - 1)
		rhs += sign * numerator * denomFactor
	}
	return logLHS + math.Log(rhs)
}

// logGaussMass is the log of the standard normal mass on [a, b]
// (_log_gauss_mass), computed in the left tail for accuracy.
func logGaussMass(a, b float64) float64 {
	switch {
	case b <= 0:
		return logDiff(logNdtr(b), logNdtr(a))
	case a > 0:
		return logDiff(logNdtr(-a), logNdtr(-b))
	}
	return math.Log1p(-ndtr(a) - ndtr(-b))
}

func logDiff(lp, lq float64) float64 { return lp + math.Log1p(-math.Exp(lq-lp)) }

func logAddExp(x, y float64) float64 {
	m := math.Max(x, y)
	if math.IsInf(m, -1) {
		return m
	}
	return m + math.Log(math.Exp(x-m)+math.Exp(y-m))
}

// ndtriExp returns x with log ndtr(x) = y (_ndtri_exp): a closed-form
// first guess, then up to 100 Newton steps to a relative 1e-8.
func ndtriExp(y float64) float64 {
	flipped := y > -1e-2
	z := y
	if flipped {
		z = math.Log(-math.Expm1(y))
	}
	var x float64
	if z < -5 {
		x = -math.Sqrt(-2 * (z + lnSqrt2Pi))
	} else {
		x = -math.Sqrt(3) / math.Pi * math.Log(math.Expm1(-z))
	}
	for range 100 {
		l := logNdtr(x)
		dx := (l - z) * math.Exp(l-(-0.5*x*x-lnSqrt2Pi))
		x -= dx
		if math.Abs(dx) < 1e-8*math.Abs(x) {
			break
		}
	}
	if flipped {
		x = -x
	}
	return x
}

// truncNormPPF returns the q-quantile of the standard normal truncated to
// [a, b] (ppf), working in the left tail: for a < 0 it solves
// ndtr(c) = ndtr(a) + q·mass, otherwise the mirrored problem.
func truncNormPPF(q, a, b float64) float64 {
	switch {
	case a == b:
		return math.NaN()
	case q == 0:
		return a
	case q == 1:
		return b
	}
	logMass := logGaussMass(a, b)
	var c float64
	if a < 0 {
		c = ndtriExp(logAddExp(logNdtr(a), math.Log(q)+logMass))
	} else {
		c = -ndtriExp(logAddExp(logNdtr(-b), math.Log1p(-q)+logMass))
	}
	return math.Min(math.Max(c, a), b)
}
