package audit

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"gonum.org/v1/gonum/mathext"

	"github.com/ptopofl/ptopofl/eval"
)

// ClopperPearson returns the exact two-sided confidence interval [lo, hi]
// at level confidence for the success probability p of a binomial with k
// successes in n trials (Clopper & Pearson, "The use of confidence or
// fiducial limits illustrated in the case of the binomial", Biometrika
// 1934):
//
//	lo = B⁻¹((1 − confidence)/2; k, n − k + 1)   (0 when k = 0),
//	hi = B⁻¹((1 + confidence)/2; k + 1, n − k)   (1 when k = n),
//
// with B⁻¹ the quantile of the beta distribution (gonum's InvRegIncBeta).
// Each end alone is a one-sided bound at level (1 + confidence)/2: the
// one-sided 95 % upper bound is ClopperPearson(k, n, 0.90)'s hi. It returns
// NaN, NaN when n < 1, k is outside [0, n] or confidence is not in (0, 1).
func ClopperPearson(k, n int, confidence float64) (lo, hi float64) {
	if n < 1 || k < 0 || k > n || !(confidence > 0 && confidence < 1) {
		return math.NaN(), math.NaN()
	}
	tail := (1 + confidence) / 2
	return lowerBound(k, n, tail), upperBound(k, n, tail)
}

// upperBound is the one-sided Clopper–Pearson upper bound on p at level
// conf from k successes in n trials.
func upperBound(k, n int, conf float64) float64 {
	if k >= n {
		return 1
	}
	return mathext.InvRegIncBeta(float64(k+1), float64(n-k), conf)
}

// lowerBound is the one-sided Clopper–Pearson lower bound on p at level
// conf from k successes in n trials.
func lowerBound(k, n int, conf float64) float64 {
	if k <= 0 {
		return 0
	}
	return mathext.InvRegIncBeta(float64(k), float64(n-k+1), 1-conf)
}

// DistinguishingBound is the result of EpsilonLowerBound: the test it
// chose and the bound that test gives.
type DistinguishingBound struct {
	// Epsilon is ε_LB ≥ 0, the lower bound on ε.
	Epsilon float64
	// Threshold is the test: a trial is called "with" when its score is
	// at least Threshold.
	Threshold float64
	// Positives and Negatives are the trials of the world with and the
	// world without that the bound was computed on (those not used to
	// choose the threshold); FalseNegatives and FalsePositives are the
	// test's errors on them.
	Positives, Negatives           int
	FalseNegatives, FalsePositives int
	// FNRUpper and FPRUpper are their one-sided Clopper–Pearson upper
	// bounds at the confidence asked for.
	FNRUpper, FPRUpper float64
}

// maxThresholds bounds the candidate thresholds EpsilonLowerBound tries on
// the trials it chooses the threshold on.
const maxThresholds = 4000

// Selection is how EpsilonLowerBound chooses its test's threshold on the
// first part of the trials.
type Selection int

const (
	// SelectEmpirical takes the threshold whose Clopper–Pearson bound on
	// the first halves is largest, among up to 4,000 evenly spaced order
	// statistics of their scores (in the middle of a gap where several
	// tie). It assumes nothing about the scores, but in the tails, where
	// the best thresholds of a strong mechanism lie, the first halves'
	// counts are few and noisy and the winner is often a lucky one (the
	// bound then falls on the second halves).
	SelectEmpirical Selection = iota
	// SelectNormal fits a normal distribution to each world's first
	// tenth (mean and standard deviation; a fit needs far fewer trials
	// than a bound, so the other nine tenths are left to the bound) and
	// takes the threshold whose bound would be largest on the rest if the
	// scores were those normals (the expected error counts, rounded,
	// through Clopper–Pearson), on a grid of 4,001 thresholds spanning
	// both fits ±8 standard deviations. It is the right choice for
	// statistics that are normal by construction, such as AuditDPGD's: it
	// finds the tail threshold without chasing noise. A poor fit only
	// picks a worse threshold; the bound stays valid.
	SelectNormal
)

// EpsilonLowerBound returns an empirical lower bound on the ε of an
// (ε, δ)-DP mechanism from the scores of a distinguishing test, higher
// meaning "the canary was in": with holds the scores of independent
// trials in the world with the canary, without those of the world without
// it. It follows Jagielski, Ullman, Oprea ("Auditing differentially
// private machine learning: how private is private SGD?", NeurIPS 2020),
// with the hypothesis-testing view of DP of Kairouz, Oh, Viswanath (ICML
// 2015): any (ε, δ)-DP mechanism forces every test to have
//
//	FPR + e^ε·FNR ≥ 1 − δ   and   FNR + e^ε·FPR ≥ 1 − δ,
//
// so with one-sided Clopper–Pearson upper bounds FPR⁺ and FNR⁺ at level
// confidence,
//
//	ε_LB = max(ln((1 − δ − FNR⁺)/FPR⁺), ln((1 − δ − FPR⁺)/FNR⁺)), or 0.
//
// To keep the bound honest the threshold is chosen on the first part of
// each list (the first half for SelectEmpirical, the first tenth for
// SelectNormal) and the bound is computed on the rest alone, so the
// choice cannot overfit the trials it is judged on; the trials must be
// independent and in no particular order. Both error rates hold at the
// confidence asked for, so the bound holds with probability at least
// 2·confidence − 1 (0.90 for the usual 0.95). Clopper–Pearson caps the
// bound: with no false positive among m trials FPR⁺ = 1 − (1 −
// confidence)^(1/m) ≈ 3/m, so ε_LB is at most about ln(m/3). And at δ =
// 1e-5 a threshold test recovers only part of a Gaussian mechanism's ε
// from m trials a world: by the exact normal error rates at the best
// threshold, 0.57·ε, 0.63·ε and 0.57·ε for ε = 1, 3 and 8 with m =
// 50,000, 0.62·ε, 0.67·ε and 0.60·ε with m = 90,000, and 0.67·ε, 0.71·ε
// and 0.63·ε with m = 180,000.
//
// It costs O(m log m) for m trials (about 75 ms for 200,000 a world) and
// a few beta quantiles: the threshold search computes them only for
// candidates whose cheap optimistic bound beats the best so far. It returns
// an error when either list has fewer than 4 scores, a score is NaN, δ is
// not in [0, 1), confidence not in (0, 1) or sel unknown.
func EpsilonLowerBound(with, without []float64, delta, confidence float64, sel Selection) (DistinguishingBound, error) {
	switch {
	case len(with) < 4 || len(without) < 4:
		return DistinguishingBound{}, fmt.Errorf("audit: ε lower bound: %d and %d trials, want at least 4 in each world", len(with), len(without))
	case !(delta >= 0 && delta < 1):
		return DistinguishingBound{}, fmt.Errorf("audit: ε lower bound: δ = %v, want a number in [0, 1)", delta)
	case !(confidence > 0 && confidence < 1):
		return DistinguishingBound{}, fmt.Errorf("audit: ε lower bound: confidence %v, want a number in (0, 1)", confidence)
	case sel != SelectEmpirical && sel != SelectNormal:
		return DistinguishingBound{}, fmt.Errorf("audit: ε lower bound: unknown selection %d", sel)
	}
	for _, s := range [][]float64{with, without} {
		for i, v := range s {
			if math.IsNaN(v) {
				return DistinguishingBound{}, fmt.Errorf("audit: ε lower bound: score %d is NaN", i)
			}
		}
	}
	frac := 0.5
	if sel == SelectNormal {
		frac = 0.1
	}
	selIn, evalIn := sortedSplit(with, frac)
	selOut, evalOut := sortedSplit(without, frac)
	var t float64
	if sel == SelectNormal {
		t = normalThreshold(selIn, selOut, len(evalIn), len(evalOut), delta, confidence)
	} else {
		t = empiricalThreshold(selIn, selOut, delta, confidence)
	}
	b := boundAt(evalIn, evalOut, t, delta, confidence)
	b.Epsilon = max(b.Epsilon, 0)
	return b, nil
}

// empiricalThreshold is SelectEmpirical's choice on the sorted first
// halves in and out. Where a run of consecutive candidates ties for the
// best bound (a gap between the worlds' scores), it takes the middle of
// the gap, from the candidate below the run to the run's last, rather than
// its edge, which the second halves' scores would cross more often.
func empiricalThreshold(in, out []float64, delta, conf float64) float64 {
	pooled := append(slices.Clone(in), out...)
	slices.Sort(pooled)
	pooled = slices.Compact(pooled)
	step := max(1, len(pooled)/maxThresholds)
	var cands []candidate
	for i := 0; i < len(pooled); i += step {
		t := pooled[i]
		cands = append(cands, candidate{t: t, fn: sort.SearchFloat64s(in, t), fp: len(out) - sort.SearchFloat64s(out, t)})
	}
	eps := bestBounds(cands, len(in), len(out), delta, conf)
	best, first, last := math.Inf(-1), 0, 0
	for i, e := range eps {
		switch {
		case e > best:
			best, first, last = e, i, i
		case e == best && last == i-1:
			last = i
		}
	}
	if first == 0 {
		return cands[last].t
	}
	return (cands[first-1].t + cands[last].t) / 2
}

// candidate is a threshold and its error counts.
type candidate struct {
	t      float64
	fn, fp int
}

// bestBounds returns boundOf's ε for every candidate that could be the
// best, and −Inf for the others: it visits the candidates by decreasing
// optimisticBound and stops once that is below the best bound found, so
// it computes few of the (slow, for large n) beta quantiles.
func bestBounds(cands []candidate, nIn, nOut int, delta, conf float64) []float64 {
	opt := make([]float64, len(cands))
	order := make([]int, len(cands))
	eps := make([]float64, len(cands))
	for i, c := range cands {
		opt[i] = optimisticBound(c.fn, nIn, c.fp, nOut, delta, conf)
		order[i] = i
		eps[i] = math.Inf(-1)
	}
	sort.SliceStable(order, func(a, b int) bool { return opt[order[a]] > opt[order[b]] })
	best := math.Inf(-1)
	for _, i := range order {
		if opt[i] < best || math.IsInf(opt[i], -1) {
			break
		}
		c := cands[i]
		eps[i] = boundOf(c.fn, nIn, c.fp, nOut, c.t, delta, conf).Epsilon
		best = math.Max(best, eps[i])
	}
	return eps
}

// normalThreshold is SelectNormal's choice from the first tenths in and
// out, for the rest's nIn and nOut trials.
func normalThreshold(in, out []float64, nIn, nOut int, delta, conf float64) float64 {
	m1, v1 := meanVar(in)
	m0, v0 := meanVar(out)
	s1, s0 := math.Sqrt(v1), math.Sqrt(v0)
	if !(s1 > 0 && s0 > 0) {
		return empiricalThreshold(in, out, delta, conf)
	}
	lo := math.Min(m1-8*s1, m0-8*s0)
	hi := math.Max(m1+8*s1, m0+8*s0)
	cands := make([]candidate, maxThresholds+1)
	for i := range cands {
		t := lo + (hi-lo)*float64(i)/maxThresholds
		cands[i] = candidate{
			t:  t,
			fn: int(math.Round(float64(nIn) * 0.5 * math.Erfc(-(t-m1)/(s1*math.Sqrt2)))),
			fp: int(math.Round(float64(nOut) * 0.5 * math.Erfc((t-m0)/(s0*math.Sqrt2)))),
		}
	}
	best, bestT := math.Inf(-1), (m0+m1)/2
	for i, e := range bestBounds(cands, nIn, nOut, delta, conf) {
		if e > best {
			best, bestT = e, cands[i].t
		}
	}
	return bestT
}

// sortedSplit returns the first ⌊frac·len(s)⌋ (at least 2) entries of s
// and the rest, each sorted.
func sortedSplit(s []float64, frac float64) (first, second []float64) {
	h := max(2, int(frac*float64(len(s))))
	first, second = slices.Clone(s[:h]), slices.Clone(s[h:])
	slices.Sort(first)
	slices.Sort(second)
	return first, second
}

// boundAt is the Jagielski et al. bound of the test "with when score ≥ t"
// on the sorted score lists in and out (which may be −Inf when neither
// form is positive).
func boundAt(in, out []float64, t, delta, conf float64) DistinguishingBound {
	fn := sort.SearchFloat64s(in, t) // scores < t
	fp := len(out) - sort.SearchFloat64s(out, t)
	return boundOf(fn, len(in), fp, len(out), t, delta, conf)
}

// boundOf is boundAt from the error counts.
func boundOf(fn, nIn, fp, nOut int, t, delta, conf float64) DistinguishingBound {
	b := DistinguishingBound{
		Threshold: t, Positives: nIn, Negatives: nOut,
		FalseNegatives: fn, FalsePositives: fp,
		FNRUpper: upperBound(fn, nIn, conf), FPRUpper: upperBound(fp, nOut, conf),
	}
	b.Epsilon = math.Max(logRatio(1-delta-b.FNRUpper, b.FPRUpper), logRatio(1-delta-b.FPRUpper, b.FNRUpper))
	return b
}

// optimisticBound is a cheap upper estimate of boundOf's ε: each
// Clopper–Pearson upper bound is replaced by something no larger, the
// larger of k/n and the bound for k = 0, 1 − (1 − conf)^(1/n) (the bound
// grows with k). The threshold searches compute the beta quantiles only
// where it beats the best so far.
func optimisticBound(fn, nIn, fp, nOut int, delta, conf float64) float64 {
	fnr := math.Max(float64(fn)/float64(nIn), -math.Expm1(math.Log1p(-conf)/float64(nIn)))
	fpr := math.Max(float64(fp)/float64(nOut), -math.Expm1(math.Log1p(-conf)/float64(nOut)))
	return math.Max(logRatio(1-delta-fnr, fpr), logRatio(1-delta-fpr, fnr))
}

// logRatio is ln(a/b), or −Inf when a ≤ 0.
func logRatio(a, b float64) float64 {
	if !(a > 0) {
		return math.Inf(-1)
	}
	return math.Log(a / b)
}

// TPRAtFPR returns the largest true-positive rate of the tests "member when
// score ≥ τ" whose false-positive rate is at most fpr, over every
// threshold τ (tied scores are called together, so a tie is never split):
// the TPR at a fixed low FPR that Carlini et al. (2022) argue a
// membership attack should be judged by. labels are 1 for members and 0
// for non-members. It returns an error as eval.ROCAUC does, when one class
// is missing, or when fpr is not in [0, 1].
func TPRAtFPR(scores, labels []float64, fpr float64) (float64, error) {
	r, err := rocSummary(scores, labels, []float64{fpr})
	if err != nil {
		return 0, err
	}
	return r[0], nil
}

// rocSummary returns TPRAtFPR for each of fprs, in one sweep.
func rocSummary(scores, labels []float64, fprs []float64) ([]float64, error) {
	if len(scores) != len(labels) {
		return nil, fmt.Errorf("audit: %d scores and %d labels", len(scores), len(labels))
	}
	var pos, neg float64
	for i, y := range labels {
		switch {
		case math.IsNaN(scores[i]):
			return nil, fmt.Errorf("audit: score %d is NaN", i)
		case y == 1:
			pos++
		case y == 0:
			neg++
		default:
			return nil, fmt.Errorf("audit: label %d is %v, want 0 or 1", i, y)
		}
	}
	if pos == 0 || neg == 0 {
		return nil, errors.New("audit: the scores need members and non-members")
	}
	for _, f := range fprs {
		if !(f >= 0 && f <= 1) {
			return nil, fmt.Errorf("audit: false-positive rate %v, want a number in [0, 1]", f)
		}
	}
	idx := make([]int, len(scores))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return scores[idx[a]] > scores[idx[b]] })
	out := make([]float64, len(fprs))
	var tp, fp float64
	for i := 0; i < len(idx); {
		j := i
		for j < len(idx) && scores[idx[j]] == scores[idx[i]] {
			if labels[idx[j]] == 1 {
				tp++
			} else {
				fp++
			}
			j++
		}
		for k, f := range fprs {
			if fp/neg <= f {
				out[k] = tp / pos
			}
		}
		i = j
	}
	return out, nil
}

// MembershipResult is how well a membership attack told members (or the
// world with the canary) from non-members, over all the (model, record)
// pairs or trials it scored.
type MembershipResult struct {
	// Attack names what was attacked: "lira",
	// "descriptor/<condition>/<canary>" or "release/<name>/<canary>".
	Attack string
	// AUC is the area under the ROC curve (eval.ROCAUC): 0.5 is chance.
	AUC float64
	// TPRAt01Percent and TPRAt1Percent are the true-positive rates at
	// false-positive rates of 0.1 % and 1 % (TPRAtFPR); chance gives 0.001
	// and 0.01.
	TPRAt01Percent, TPRAt1Percent float64
	// Positives and Negatives count the scored members (trials with the
	// canary) and non-members (trials without).
	Positives, Negatives int
	// NoiseMultiplier and Epsilon describe the attacked release: its
	// noise multiplier and the accountant's ε at the δ of the experiment
	// (0 for a release without DP). LiRA leaves them to the caller (the
	// adapters report theirs).
	NoiseMultiplier, Epsilon float64
	// EpsilonLowerBound is EpsilonLowerBound's ε_LB from the trials, for
	// the descriptor tests, whose trials are independent; 0 for LiRA,
	// whose pairs share models.
	EpsilonLowerBound float64
}

// summarise fills the ROC figures of r from the scores and 0/1 labels.
func summarise(r *MembershipResult, scores, labels []float64) error {
	auc, err := eval.ROCAUC(scores, labels)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	tpr, err := rocSummary(scores, labels, []float64{0.001, 0.01})
	if err != nil {
		return err
	}
	r.AUC, r.TPRAt01Percent, r.TPRAt1Percent = auc, tpr[0], tpr[1]
	r.Positives, r.Negatives = 0, 0
	for _, y := range labels {
		if y == 1 {
			r.Positives++
		} else {
			r.Negatives++
		}
	}
	return nil
}

// median returns the median of v (the mean of the middle two for an even
// length); v is not modified. It is NaN for an empty v.
func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	h := len(s) / 2
	if len(s)%2 == 1 {
		return s[h]
	}
	return (s[h-1] + s[h]) / 2
}
