package activities

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/privacy/ledger"
	"github.com/ptopofl/ptopofl/privacy/noise"
	"github.com/ptopofl/ptopofl/siteledger"
	"github.com/ptopofl/ptopofl/tda"
)

// The purposes of a site's secret draws (noise.Key.Purpose). Each release
// draws from its own stream, so that no two releases share noise; the
// releases' purposes are method's, which the site's ledger records.
const (
	purposeTrain         = method.PurposeTrain
	purposeMetrics       = method.PurposeMetrics
	purposeUpdateMetrics = method.PurposeUpdateMetrics
	purposeValidation    = method.PurposeValidationMetrics
	purposeDescriptor    = method.PurposeDescriptor
	purposeLabelSummary  = method.PurposeLabelSummary
	purposeSubsample     = "subsample" // the descriptor's rows, the same in every round
)

// WithSecret gives the site its secret (noise.LoadOrCreateSecret), which
// keys every noise draw and secret subsample of a dp record campaign. A
// site without one refuses such campaigns.
func (s *Site) WithSecret(secret noise.Secret) *Site {
	s.secret = secret
	return s
}

// WithLedger gives the site its privacy ledger (siteledger.Open: the file
// beside its secret, and the budget its operator set): every private
// release is charged to it before its bytes leave the activity, and a
// release beyond the budget is refused. Without one a site keeps no
// account (tests, the in-memory reference run).
func (s *Site) WithLedger(l *siteledger.File) *Site {
	s.ledger = l
	return s
}

// noSecret is the error of a dp record task at a site without a secret.
func (s *Site) noSecret() error {
	return temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("site %s has no secret (its worker runs without --secret-dir), so it cannot take part in a campaign under dp record", s.name),
		pipeline.ErrTypeBadSiteData, nil)
}

// releaseKey names one release: the call's campaign, attempt, round and
// site, the purpose, and the SHA-256 of the activity's whole input, so
// that a retried activity (same input) has the same key, hence the same
// noise and the same ledger ID, and two releases computed from different
// inputs never share them.
func (s *Site) releaseKey(call pipeline.SiteCall, purpose string, input any) (noise.Key, error) {
	if !s.secret.Valid() {
		return noise.Key{}, s.noSecret()
	}
	b, err := json.Marshal(input)
	if err != nil {
		return noise.Key{}, fmt.Errorf("site %s: digest of the %s input: %w", s.name, purpose, err)
	}
	return noise.Key{
		Campaign: call.Campaign, Attempt: call.Attempt, Round: call.Round, Site: s.name,
		Purpose: purpose, Input: sha256.Sum256(b),
	}, nil
}

// dpStream returns the stream of one release (releaseKey).
func (s *Site) dpStream(call pipeline.SiteCall, purpose string, input any) (*noise.Stream, error) {
	k, err := s.releaseKey(call, purpose, input)
	if err != nil {
		return nil, err
	}
	return s.secret.Stream(k), nil
}

// pendingRelease is a release an activity is about to make: what it is
// (method.SiteRelease) and its key.
type pendingRelease struct {
	rel method.SiteRelease
	key noise.Key
}

// pending returns the pending release rel of the activity with input in.
func (s *Site) pending(call pipeline.SiteCall, rel method.SiteRelease, in any) (pendingRelease, error) {
	k, err := s.releaseKey(call, rel.Purpose, in)
	return pendingRelease{rel: rel, key: k}, err
}

// splitDigests are the digests of the data a site's releases read: the
// training and the test split's file(s).
type splitDigests struct{ train, test string }

func (d splitDigests) of(split string) string {
	if split == method.SplitTest {
		return d.test
	}
	return d.train
}

// charge charges the releases an activity is about to make to the site's
// ledger, all at once and before any of their bytes leave the activity
// (written to the store or returned): a release already in the ledger (a
// retried activity's: same key, same data) costs nothing; releases beyond
// the operator's budget are refused with a non-retryable
// ErrTypePrivacyBudget error, and nothing is released. It returns the
// site's lifetime privacy loss afterwards (nil for a site that keeps no
// ledger). A ledger that cannot be written is a retryable error: nothing
// leaves the site uncharged.
func (s *Site) charge(ctx context.Context, call pipeline.SiteCall, data splitDigests, rels []pendingRelease) (*pipeline.SiteLifetime, error) {
	if s.ledger == nil || len(rels) == 0 {
		return nil, nil
	}
	rs := make([]ledger.Release, len(rels))
	for i, p := range rels {
		rs[i] = ledger.Release{
			ID: s.secret.ReleaseID(p.key), Data: data.of(p.rel.Split), Split: p.rel.Split,
			Campaign: call.Campaign, Attempt: max(call.Attempt, 1), Round: call.Round, Purpose: p.rel.Purpose,
			Mechanism: ledger.Gaussian, Params: ledger.GaussianParams(p.rel.Event),
		}
	}
	lt, err := s.ledger.Charge(rs)
	var ex *ledger.ExceededError
	if errors.As(err, &ex) {
		return nil, pipeline.NewPrivacyBudgetError(s.name, "campaign %s round %d: %v (its ledger %s); the site takes no part in the round",
			call.Campaign, call.Round, ex, s.ledger.Path())
	}
	if err != nil {
		return nil, err
	}
	if err := s.hold(ctx, HoldCharged, call); err != nil {
		return nil, err
	}
	return lifetimeOf(lt), nil
}

// The points of a private release where WithHold's hook is called.
const (
	// HoldCharged: the releases are charged to the ledger, and nothing
	// has left the activity yet.
	HoldCharged = "charged"
	// HoldReleased: a model or descriptor was written to the store, and
	// the activity has not returned yet.
	HoldReleased = "released"
)

// WithHold sets a hook the site calls at HoldCharged and HoldReleased in
// every private release, for fault tests (worker --fault-hold): a test
// kills the worker while the hook holds the activity there. An error of
// the hook fails the activity. Never set in production.
func (s *Site) WithHold(hook func(ctx context.Context, point string, call pipeline.SiteCall) error) *Site {
	s.holdHook = hook
	return s
}

func (s *Site) hold(ctx context.Context, point string, call pipeline.SiteCall) error {
	if s.holdHook == nil {
		return nil
	}
	return s.holdHook(ctx, point, call)
}

func lifetimeOf(lt siteledger.Lifetime) *pipeline.SiteLifetime {
	out := &pipeline.SiteLifetime{Epsilon: lt.Epsilon, Delta: lt.Delta}
	if lt.Budget != nil {
		b := lt.Budget.Epsilon
		out.Budget = &b
	}
	return out
}

// refuseUnprivate refuses, at a site whose operator set a privacy budget,
// a task of a campaign that does not run under dp record: its releases
// would be exact values, which no ε bounds.
func (s *Site) refuseUnprivate(call pipeline.SiteCall) error {
	if s.ledger == nil || s.ledger.Budget() == nil || call.Hyperparameters.IsDP() {
		return nil
	}
	return pipeline.NewPrivacyBudgetError(s.name,
		"campaign %s does not run under dp record, so its releases would be exact values that no ε bounds, and the site's operator limits its lifetime privacy loss to ε = %g (δ = %g); run it with hyperparameters dp: record",
		call.Campaign, s.ledger.Budget().Epsilon, s.ledger.Budget().Delta)
}

// subsampleStream returns the stream of the site's secret descriptor
// subsample: keyed by the campaign and the site alone, so every round and
// attempt draws the same rows (drift measures a change of the data, never
// resampling), and the server, which never sees the secret, cannot tell
// which rows they are.
func (s *Site) subsampleStream(call pipeline.SiteCall) (*noise.Stream, error) {
	if !s.secret.Valid() {
		return nil, s.noSecret()
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
// Gaussian mechanism with dp_metrics_noise (method.ReleaseDPScores), and
// the AUC and accuracy are computed from the noisy counts
// (post-processing); with held-out rows val, their counts likewise with
// dp_validation_noise from the stream val draws on.
func dpScore(cfg method.Config, test, val learn.Data, pushed []float64, state learn.SiteState, st, valSt *noise.Stream) (pipeline.EvaluateOutput, error) {
	params := learn.EvaluationParams(cfg.Method, pushed, state)
	if params == nil {
		return pipeline.EvaluateOutput{}, fmt.Errorf("method %s evaluates the site's own state, and the site has none", cfg.Method)
	}
	auc, acc, _, err := method.ReleaseDPScores(cfg.Site, params, test, cfg.DP.MetricsNoise, st)
	if err != nil {
		return pipeline.EvaluateOutput{}, err
	}
	out := pipeline.EvaluateOutput{AUC: auc, Accuracy: acc, NumTest: len(test.X)}
	out.Add(pipeline.ReleaseMetrics, 2)
	if len(val.X) == 0 {
		return out, nil
	}
	vauc, vacc, _, err := method.ReleaseDPScores(cfg.Site, params, val, cfg.DP.ValidationNoise, valSt)
	if err != nil {
		return pipeline.EvaluateOutput{}, fmt.Errorf("validation: %w", err)
	}
	out.ValAUC, out.ValAccuracy, out.NumVal = &vauc, &vacc, len(val.X)
	out.Add(pipeline.ReleaseMetrics, 2)
	return out, nil
}

// dpTop1 releases a deep site's top-1 accuracy under dp record: the count
// of test images classified right (sensitivity 1) through the Gaussian
// mechanism with dp_metrics_noise (method.ReleaseDPTop1), over the public
// number of test images, clamped to [0, 1]. The AUC is not released (0).
func dpTop1(cfg method.Config, acc float64, n int, st *noise.Stream) pipeline.EvaluateOutput {
	a, _ := method.ReleaseDPTop1(acc*float64(n), n, cfg.DP.MetricsNoise, st)
	out := pipeline.EvaluateOutput{Accuracy: a, NumTest: n}
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
// every row at sites of up to 10,000), the descriptor is released by
// method.ReleaseDPDescriptor (tda.DPDescriptor through the Gaussian
// mechanism with its proven sensitivity and dp_descriptor_noise, tidied
// by tda.DPDescriptorVector); under a label-aware detector the label
// summary follows, by method.ReleaseDPLabelSummary on the first
// min(n, label_n_sub) rows of the same secret shuffle. Nothing of it
// depends on the campaign seed the server knows. It returns the
// descriptor, the length of its label block and the releases made, for
// the ledger.
func (s *Site) dpDescriptor(in pipeline.ComputeDescriptorInput, cfg method.Config, x [][]float64, y []float64) (tda.Descriptor, int, []pendingRelease, error) {
	sub, err := s.subsampleStream(in.SiteCall)
	if err != nil {
		return tda.Descriptor{}, 0, nil, err
	}
	rels := cfg.DescriptorRelease()
	pend := make([]pendingRelease, len(rels))
	for i, r := range rels {
		if pend[i], err = s.pending(in.SiteCall, r, in); err != nil {
			return tda.Descriptor{}, 0, nil, err
		}
	}
	n := len(x)
	rows := sub.Sample(n, min(n, dpDescriptorRows))
	vec, _, err := method.ReleaseDPDescriptor(x, rows, len(rows), cfg.DP.DescriptorNoise, s.secret.Stream(pend[0].key))
	if err != nil {
		return tda.Descriptor{}, 0, nil, err
	}
	if !cfg.LabelAware() {
		return tda.Descriptor{Vector: vec}, 0, pend, nil
	}
	labelRows := sub.Sample(n, min(n, cfg.LabelNSub))
	block, _, err := method.ReleaseDPLabelSummary(x, y, labelRows, len(labelRows), cfg.DP.DescriptorNoise, s.secret.Stream(pend[1].key))
	if err != nil {
		return tda.Descriptor{}, 0, nil, err
	}
	return tda.Descriptor{Vector: append(vec, block...)}, len(block), pend, nil
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
