package activities

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"go.temporal.io/sdk/temporal"

	"github.com/ptopofl/ptopofl/eval"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/privacy/noise"
	"github.com/ptopofl/ptopofl/tda"
)

// The purposes of a site's secret draws (noise.Key.Purpose). Each release
// draws from its own stream, so that no two releases share noise.
const (
	purposeTrain         = "train"          // DP-GD / DP-SGD noise and Poisson samples
	purposeMetrics       = "metrics"        // the score counts of the model the site holds
	purposeUpdateMetrics = "update-metrics" // a deep site's score of its own update
	purposeDescriptor    = "descriptor"     // the DP descriptor's noise
	purposeLabelSummary  = "label-summary"  // the DP label summary's noise
	purposeSubsample     = "subsample"      // the descriptor's rows, the same in every round
)

// WithSecret gives the site its secret (noise.LoadOrCreateSecret), which
// keys every noise draw and secret subsample of a dp record campaign. A
// site without one refuses such campaigns.
func (s *Site) WithSecret(secret noise.Secret) *Site {
	s.secret = secret
	return s
}

// dpStream returns the stream of one release: keyed by the call's
// campaign, attempt, round and site, the purpose, and the SHA-256 of the
// activity's whole input, so that a retried activity (same input) draws
// the very same noise, and two releases computed from different inputs
// never share it.
func (s *Site) dpStream(call pipeline.SiteCall, purpose string, input any) (*noise.Stream, error) {
	if !s.secret.Valid() {
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("site %s has no secret (its worker runs without --secret-dir), so it cannot take part in a campaign under dp record", s.name),
			pipeline.ErrTypeBadSiteData, nil)
	}
	b, err := json.Marshal(input)
	if err != nil {
		return nil, fmt.Errorf("site %s: digest of the %s input: %w", s.name, purpose, err)
	}
	return s.secret.Stream(noise.Key{
		Campaign: call.Campaign, Attempt: call.Attempt, Round: call.Round, Site: s.name,
		Purpose: purpose, Input: sha256.Sum256(b),
	}), nil
}

// subsampleStream returns the stream of the site's secret descriptor
// subsample: keyed by the campaign and the site alone, so every round and
// attempt draws the same rows (drift measures a change of the data, never
// resampling), and the server, which never sees the secret, cannot tell
// which rows they are.
func (s *Site) subsampleStream(call pipeline.SiteCall) (*noise.Stream, error) {
	if !s.secret.Valid() {
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("site %s has no secret (its worker runs without --secret-dir), so it cannot take part in a campaign under dp record", s.name),
			pipeline.ErrTypeBadSiteData, nil)
	}
	return s.secret.Stream(noise.Key{Campaign: call.Campaign, Site: s.name, Purpose: purposeSubsample}), nil
}

// checkRecords holds the site's record counts against those the
// campaign's privacy plan was made for: with more or fewer rows, the plan's
// sampling rates and δ no longer describe this site.
func (s *Site) checkRecords(call pipeline.SiteCall, nTrain, nTest int, file string) error {
	if call.NTrain == nTrain && call.NTest == nTest {
		return nil
	}
	return pipeline.NewBadSiteDataError(s.name, file, 0,
		"the campaign's privacy plan was made for %d training and %d test records, and the site now has %d and %d; start a new campaign for the new data",
		call.NTrain, call.NTest, nTrain, nTest)
}

// dpScore is score under dp record: the histogram of the test scores by
// class (eval.ScoreCounts, L2 sensitivity 1) is released through the
// Gaussian mechanism with dp_metrics_noise, and the AUC and accuracy are
// computed from the noisy counts (post-processing).
func dpScore(cfg method.Config, test learn.Data, pushed []float64, state learn.SiteState, st *noise.Stream) (pipeline.EvaluateOutput, error) {
	params := learn.EvaluationParams(cfg.Method, pushed, state)
	if params == nil {
		return pipeline.EvaluateOutput{}, fmt.Errorf("method %s evaluates the site's own state, and the site has none", cfg.Method)
	}
	counts, err := method.EvaluateSiteCounts(cfg.Site, params, test)
	if err != nil {
		return pipeline.EvaluateOutput{}, err
	}
	st.Gaussian(counts, 1, cfg.DP.MetricsNoise)
	out := pipeline.EvaluateOutput{AUC: eval.CountsAUC(counts), Accuracy: eval.CountsAccuracy(counts, len(test.X)), NumTest: len(test.X)}
	out.Add(pipeline.ReleaseMetrics, 2)
	return out, nil
}

// dpTop1 releases a deep site's top-1 accuracy under dp record: the count
// of test images classified right (sensitivity 1) through the Gaussian
// mechanism with dp_metrics_noise, over the public number of test images,
// clamped to [0, 1]. The AUC is not released (0).
func dpTop1(cfg method.Config, acc float64, n int, st *noise.Stream) pipeline.EvaluateOutput {
	right := []float64{math.Round(acc * float64(n))}
	st.Gaussian(right, 1, cfg.DP.MetricsNoise)
	out := pipeline.EvaluateOutput{Accuracy: min(max(right[0]/float64(n), 0), 1), NumTest: n}
	out.Add(pipeline.ReleaseMetrics, 1)
	return out
}

// stateNumbers counts the numbers of a site state checkpoint.
func stateNumbers(st learn.SiteState) int { return len(st.Control) + len(st.Personal) + len(st.Local) }

// dpDescriptorRows bounds the rows a DP descriptor reads: its sensitivity
// is √48/m for m rows (tda.DPDescriptorSensitivity), so it reads as many as
// it affordably can (the density on the grid costs O(G²·m)), not n_sub.
const dpDescriptorRows = 10000

// dpDescriptor is ComputeDescriptor under dp record for a site whose
// training rows (raw features, or a deep site's penultimate activations)
// are x with labels y: the rows come from the site's secret subsample
// (the first min(n, 10,000) of a secret shuffle, the same in every round:
// every row at sites of up to 10,000),
// the descriptor is tda.DPDescriptor's, released through the Gaussian
// mechanism with its proven sensitivity and dp_descriptor_noise, then
// tidied by tda.DPDescriptorVector (post-processing); under a label-aware
// detector the label summary follows, from tda.DPLabelRaw on the first
// min(n, label_n_sub) rows of the same secret shuffle, released the same
// way and post-processed by tda.DPLabelBlock. Nothing of it depends on the
// campaign seed the server knows.
func (s *Site) dpDescriptor(in pipeline.ComputeDescriptorInput, cfg method.Config, x [][]float64, y []float64) (tda.Descriptor, int, error) {
	sub, err := s.subsampleStream(in.SiteCall)
	if err != nil {
		return tda.Descriptor{}, 0, err
	}
	n := len(x)
	rows := sub.Sample(n, min(n, dpDescriptorRows))
	opt := tda.DPDescriptorOptions{M: len(rows)}
	raw, sens, err := tda.DPDescriptor(x, rows, opt)
	if err != nil {
		return tda.Descriptor{}, 0, err
	}
	st, err := s.dpStream(in.SiteCall, purposeDescriptor, in)
	if err != nil {
		return tda.Descriptor{}, 0, err
	}
	st.Gaussian(raw, sens, cfg.DP.DescriptorNoise)
	vec, err := tda.DPDescriptorVector(raw, opt)
	if err != nil {
		return tda.Descriptor{}, 0, err
	}
	if !cfg.LabelAware() {
		return tda.Descriptor{Vector: vec}, 0, nil
	}
	labelRows := sub.Sample(n, min(n, cfg.LabelNSub))
	lopt := tda.DPLabelOptions{M: len(labelRows)}
	lraw, lsens, err := tda.DPLabelRaw(x, y, labelRows, lopt)
	if err != nil {
		return tda.Descriptor{}, 0, err
	}
	lst, err := s.dpStream(in.SiteCall, purposeLabelSummary, in)
	if err != nil {
		return tda.Descriptor{}, 0, err
	}
	lst.Gaussian(lraw, lsens, cfg.DP.DescriptorNoise)
	block, err := tda.DPLabelBlock(lraw, len(labelRows))
	if err != nil {
		return tda.Descriptor{}, 0, err
	}
	return tda.Descriptor{Vector: append(vec, block...)}, len(block), nil
}

// dpDescriptorError passes a Temporal error (no secret) through and makes
// any other a BadSiteData error about the site's training file: the
// descriptor's computation failed on the site's data.
func dpDescriptorError(site, file string, err error) error {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return err
	}
	return pipeline.NewBadSiteDataError(site, file, 0, "descriptor: %v", err)
}
