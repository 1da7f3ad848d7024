package method

import (
	"fmt"

	"github.com/ptopofl/ptopofl/eval"
	"github.com/ptopofl/ptopofl/learn"
)

// PreparedSite is a site's standardised data: the scaler is fitted on the
// raw training rows and applied to both splits (expected.json `semantics`).
// RawTrain and RawTest are the same splits unscaled, which a site trains
// and scores on under dp record (Splits).
type PreparedSite struct {
	Train, Test       learn.Data
	Scaler            learn.Scaler
	RawTrain, RawTest learn.Data
	// Val and RawVal are the training rows the site holds out for
	// validation (PrepareSiteValidation), standardised and raw; empty
	// when it holds out none.
	Val, RawVal learn.Data
}

// Splits returns the training and test data a site uses: standardised, or
// under differential privacy (dp) raw. A scaler fitted on the site's rows
// depends on every row, so one record would move every other record's
// clipped gradient and the per-record sensitivity would be lost; a
// consortium whose features differ in scale should bring them to
// comparable ranges before the campaign, by public constants.
func (p PreparedSite) Splits(dp bool) (train, test learn.Data) {
	if dp {
		return p.RawTrain, p.RawTest
	}
	return p.Train, p.Test
}

// PrepareSite fits site's StandardScaler on its raw training rows and
// standardises both splits. Errors name the site and the split.
func PrepareSite(site string, trainX [][]float64, trainY []float64, testX [][]float64, testY []float64) (PreparedSite, error) {
	sc, err := learn.FitStandardScaler(trainX)
	if err != nil {
		return PreparedSite{}, fmt.Errorf("site %s: train: %w", site, err)
	}
	tr, err := sc.Transform(trainX)
	if err != nil {
		return PreparedSite{}, fmt.Errorf("site %s: train: %w", site, err)
	}
	te, err := sc.Transform(testX)
	if err != nil {
		return PreparedSite{}, fmt.Errorf("site %s: test: %w", site, err)
	}
	p := PreparedSite{Train: learn.Data{X: tr, Y: trainY}, Test: learn.Data{X: te, Y: testY}, Scaler: sc,
		RawTrain: learn.Data{X: trainX, Y: trainY}, RawTest: learn.Data{X: testX, Y: testY}}
	if err := p.Train.Validate(); err != nil {
		return PreparedSite{}, fmt.Errorf("site %s: train: %w", site, err)
	}
	if err := p.Test.Validate(); err != nil {
		return PreparedSite{}, fmt.Errorf("site %s: test: %w", site, err)
	}
	return p, nil
}

// EvaluateSiteCounts returns the histogram of a site's test scores for
// params by class (eval.ScoreCounts), which a site releases, noised,
// instead of its AUC and accuracy under differential privacy.
func EvaluateSiteCounts(cfg learn.SiteConfig, params []float64, test learn.Data) ([]float64, error) {
	m := cfg.Model(test.NumFeatures())
	if len(params) != m.NumParams() {
		return nil, fmt.Errorf("evaluate: model has %d parameters, want %d", len(params), m.NumParams())
	}
	c, err := eval.ScoreCounts(learn.Scores(m, params, test.X), test.Y)
	if err != nil {
		return nil, fmt.Errorf("evaluate: %w", err)
	}
	return c, nil
}

// EvaluateSite returns a site's test ROC AUC and accuracy for params
// (scores σ(x·w+b), logit clipped to [−30, 30]).
func EvaluateSite(cfg learn.SiteConfig, params []float64, test learn.Data) (auc, acc float64, err error) {
	m := cfg.Model(test.NumFeatures())
	if len(params) != m.NumParams() {
		return 0, 0, fmt.Errorf("evaluate: model has %d parameters, want %d", len(params), m.NumParams())
	}
	s := learn.Scores(m, params, test.X)
	if auc, err = eval.ROCAUC(s, test.Y); err != nil {
		return 0, 0, fmt.Errorf("evaluate: %w", err)
	}
	if acc, err = eval.Accuracy(s, test.Y); err != nil {
		return 0, 0, fmt.Errorf("evaluate: %w", err)
	}
	return auc, acc, nil
}
