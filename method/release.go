package method

import (
	"fmt"
	"math"

	"github.com/ptopofl/ptopofl/eval"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/nn"
	"github.com/ptopofl/ptopofl/privacy"
	"github.com/ptopofl/ptopofl/tda"
)

// The purposes of a site's releases under dp record: each names the
// release's noise stream (noise.Key.Purpose) and its line in the site's
// privacy ledger. The values are part of every noise key: changing one
// changes every release a resumed campaign repeats.
const (
	PurposeTrain             = "train"              // DP-GD / DP-SGD noise and Poisson samples
	PurposeMetrics           = "metrics"            // the score counts of the model the site holds
	PurposeUpdateMetrics     = "update-metrics"     // a deep site's score of its own update
	PurposeValidationMetrics = "validation-metrics" // the score counts on the held-out training rows
	PurposeDescriptor        = "descriptor"         // the DP descriptor's noise
	PurposeLabelSummary      = "label-summary"      // the DP label summary's noise
)

// The splits of a site's data a release reads.
const (
	SplitTrain = "train"
	SplitTest  = "test"
)

// SiteRelease is one release a site makes under dp record, as the site's
// ledger charges it and the campaign's plan counts it: its purpose, the
// split whose records it reads and the Gaussian mechanisms it is.
type SiteRelease struct {
	Purpose string
	Split   string
	Event   privacy.Event
}

// TrainRelease is a round's local training on n training records (those
// the site trains on): learn.DPReleases full-batch DP-GD steps at
// dp_noise on every record for a tabular model, nn.DPUse's
// Poisson-subsampled DP-SGD steps for a deep one. ok is false when the
// round takes no noisy step.
func (c Config) TrainRelease(n int) (r SiteRelease, ok bool) {
	r = SiteRelease{Purpose: PurposeTrain, Split: SplitTrain}
	if c.IsDeep() {
		q, steps, z := nn.DPUse(c.Method, c.DeepSite, n)
		r.Event = privacy.Event{Z: z, Q: q, Count: steps}
		return r, steps > 0
	}
	steps := learn.DPReleases(c.Method, c.Site)
	r.Event = privacy.Event{Z: c.DP.Noise, Q: 1, Count: steps}
	return r, steps > 0
}

// DescriptorRelease is the DP descriptor and, under a label-aware
// detector, the label summary: one Gaussian release each at
// dp_descriptor_noise on the training records.
func (c Config) DescriptorRelease() []SiteRelease {
	out := []SiteRelease{{Purpose: PurposeDescriptor, Split: SplitTrain, Event: privacy.Event{Z: c.DP.DescriptorNoise, Q: 1, Count: 1}}}
	if c.LabelAware() {
		out = append(out, SiteRelease{Purpose: PurposeLabelSummary, Split: SplitTrain, Event: privacy.Event{Z: c.DP.DescriptorNoise, Q: 1, Count: 1}})
	}
	return out
}

// MetricsRelease is one metrics release on the test records (purpose
// PurposeMetrics or PurposeUpdateMetrics): a Gaussian at dp_metrics_noise.
func (c Config) MetricsRelease(purpose string) SiteRelease {
	return SiteRelease{Purpose: purpose, Split: SplitTest, Event: privacy.Event{Z: c.DP.MetricsNoise, Q: 1, Count: 1}}
}

// ValidationRelease is one metrics release on the held-out training rows
// (validation_fraction): the same mechanism as the test metrics', at
// dp_validation_noise, charged to the training records.
func (c Config) ValidationRelease() SiteRelease {
	return SiteRelease{Purpose: PurposeValidationMetrics, Split: SplitTrain, Event: privacy.Event{Z: c.DP.ValidationNoise, Q: 1, Count: 1}}
}

// Gaussian is the Gaussian mechanism a site's release draws from its
// secret (privacy/noise.Stream): v ← v + N(0, (z·sensitivity)²·I) on
// noise.Grid's lattice.
type Gaussian interface {
	Gaussian(v []float64, sensitivity, z float64)
}

// ReleaseDPDescriptor is a site's DP descriptor release: tda.DPDescriptor
// of the rows of x listed in rows out of m public slots (a site passes m =
// len(rows); a slot without a row is a null record, the zero-out
// neighbour), then NoiseDPDescriptor. It returns the release and the noisy
// vector before the tidying (what an auditor may attack: the release is a
// function of it).
func ReleaseDPDescriptor(x [][]float64, rows []int, m int, z float64, st Gaussian) (release, noisy []float64, err error) {
	raw, sens, err := tda.DPDescriptor(x, rows, tda.DPDescriptorOptions{M: m})
	if err != nil {
		return nil, nil, err
	}
	return NoiseDPDescriptor(raw, sens, m, z, st)
}

// NoiseDPDescriptor is the private part of the DP descriptor release: the
// Gaussian mechanism on raw (tda.DPDescriptor's vector, left unchanged) at
// its proven sensitivity √48/m and noise multiplier z, tidied by
// tda.DPDescriptorVector (post-processing). It returns the release and the
// noisy vector.
func NoiseDPDescriptor(raw []float64, sens float64, m int, z float64, st Gaussian) (release, noisy []float64, err error) {
	noisy = append([]float64(nil), raw...)
	st.Gaussian(noisy, sens, z)
	release, err = tda.DPDescriptorVector(noisy, tda.DPDescriptorOptions{M: m})
	return release, noisy, err
}

// ReleaseDPLabelSummary is a site's DP label-summary release:
// tda.DPLabelRaw of the rows listed in rows (labels y) out of m public
// slots, then NoiseDPLabelSummary. It returns the release and the noisy
// counts before the post-processing.
func ReleaseDPLabelSummary(x [][]float64, y []float64, rows []int, m int, z float64, st Gaussian) (release, noisy []float64, err error) {
	raw, sens, err := tda.DPLabelRaw(x, y, rows, tda.DPLabelOptions{M: m})
	if err != nil {
		return nil, nil, err
	}
	return NoiseDPLabelSummary(raw, sens, m, z, st)
}

// NoiseDPLabelSummary is the private part of the label-summary release:
// the Gaussian mechanism on raw (tda.DPLabelRaw's counts, left unchanged)
// at their sensitivity (m − 1)/m² and noise multiplier z, post-processed
// by tda.DPLabelBlock.
func NoiseDPLabelSummary(raw []float64, sens float64, m int, z float64, st Gaussian) (release, noisy []float64, err error) {
	noisy = append([]float64(nil), raw...)
	st.Gaussian(noisy, sens, z)
	release, err = tda.DPLabelBlock(noisy, m)
	return release, noisy, err
}

// ReleaseDPScores is a site's metrics release of a tabular model: the
// histogram of the scores of params on data by class (eval.ScoreCounts,
// L2 sensitivity 1: one record moves one count by one) through the
// Gaussian mechanism at noise multiplier z, and the AUC and accuracy
// computed from the noisy counts over the public len(data.X)
// (post-processing). It returns the noisy counts too.
func ReleaseDPScores(site learn.SiteConfig, params []float64, data learn.Data, z float64, st Gaussian) (auc, acc float64, noisy []float64, err error) {
	noisy, err = EvaluateSiteCounts(site, params, data)
	if err != nil {
		return 0, 0, nil, err
	}
	st.Gaussian(noisy, 1, z)
	return eval.CountsAUC(noisy), eval.CountsAccuracy(noisy, len(data.X)), noisy, nil
}

// ReleaseDPTop1 is a deep site's metrics release: right, the count of the
// n images classified right (sensitivity 1), through the Gaussian
// mechanism at noise multiplier z, over the public n and clamped to
// [0, 1] (post-processing). It returns the noisy count too.
func ReleaseDPTop1(right float64, n int, z float64, st Gaussian) (acc, noisy float64) {
	if n < 1 {
		panic(fmt.Sprintf("method: ReleaseDPTop1 of %d images", n))
	}
	v := []float64{math.Round(right)}
	st.Gaussian(v, 1, z)
	return min(max(v[0]/float64(n), 0), 1), v[0]
}
