package activities

import (
	"context"
	"fmt"
	"slices"

	"go.temporal.io/sdk/temporal"

	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/privacy"
)

// budgetSlack is how far above dp_epsilon an ε may come out before the
// budget counts as exceeded: the plan meets the budget exactly in exact
// arithmetic (Gaussian DP composition), and the last bits of a root
// search must not end a campaign.
const budgetSlack = 1e-9

// ChargePrivacy charges round in.Round's planned releases of every site to
// the campaign's ledger (method.Config.RoundCharges: the training steps,
// a descriptor and label summary for in.DescriptorSites, the metrics) and
// returns the new ledger with the manifest's record: each site's ε for the
// round alone and in all, composed by the exact accountant that applies
// (method.Spend). When a site would go beyond dp_epsilon it returns the
// reason instead, and no ledger: the round is not to be dispatched. It
// reads and writes nothing but its input, so a retry gives the same
// answer.
func (s *Server) ChargePrivacy(_ context.Context, in pipeline.ChargePrivacyInput) (pipeline.ChargePrivacyOutput, error) {
	cfg, err := method.Resolve(in.Method, in.Preset, in.Hyperparameters)
	if err != nil {
		return pipeline.ChargePrivacyOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), pipeline.ErrTypeInvalidSpec, nil)
	}
	if !cfg.DP.On {
		return pipeline.ChargePrivacyOutput{}, temporal.NewNonRetryableApplicationError(
			"charge privacy: the campaign does not run under dp record", pipeline.ErrTypeInvalidSpec, nil)
	}
	before := map[string]pipeline.SiteLedger{}
	if in.Ledger != nil {
		for _, l := range in.Ledger.Sites {
			before[l.Site] = l
		}
	}
	round := &pipeline.RoundPrivacy{Delta: cfg.DP.Delta, Budget: cfg.DP.Epsilon, Sites: []pipeline.SitePrivacy{}}
	ledger := &pipeline.PrivacyLedger{Sites: []pipeline.SiteLedger{}}
	for _, site := range in.Records {
		rec := method.SiteRecords{Site: site.Name, Train: site.NTrain, Test: site.NTest}
		ch := cfg.RoundCharges(rec, slices.Contains(in.DescriptorSites, site.Name))
		alone, err := method.Spend(ch, cfg.DP.Delta)
		if err != nil {
			return pipeline.ChargePrivacyOutput{}, nonRetryable(fmt.Errorf("charge privacy: site %s round %d: %w", site.Name, in.Round, err))
		}
		prev := before[site.Name]
		all := method.Charges{
			Train: method.MergeEvents(append(toEvents(prev.Train), ch.Train...)),
			Test:  method.MergeEvents(append(toEvents(prev.Test), ch.Test...)),
		}
		total, err := method.Spend(all, cfg.DP.Delta)
		if err != nil {
			return pipeline.ChargePrivacyOutput{}, nonRetryable(fmt.Errorf("charge privacy: site %s round %d: %w", site.Name, in.Round, err))
		}
		if b := cfg.DP.Epsilon; b > 0 && total.Epsilon.Epsilon > b*(1+budgetSlack) {
			return pipeline.ChargePrivacyOutput{Exceeded: fmt.Sprintf(
				"round %d would take site %s's privacy loss to ε = %.4g, beyond its budget dp_epsilon = %v (δ = %v), so the campaign ends before dispatching it",
				in.Round, site.Name, total.Epsilon.Epsilon, b, cfg.DP.Delta)}, nil
		}
		ledger.Sites = append(ledger.Sites, pipeline.SiteLedger{Site: site.Name, Train: fromEvents(all.Train), Test: fromEvents(all.Test)})
		round.Sites = append(round.Sites, pipeline.SitePrivacy{
			Site: site.Name, EpsilonRound: alone.Epsilon.Epsilon, Epsilon: total.Epsilon.Epsilon,
			EpsilonTrain: total.Train.Epsilon, EpsilonTest: total.Test.Epsilon,
			Accountant: string(total.Epsilon.Accountant),
			Train:      fromEvents(all.Train), Test: fromEvents(all.Test),
		})
	}
	return pipeline.ChargePrivacyOutput{Ledger: ledger, Round: round}, nil
}

func nonRetryable(err error) error {
	return temporal.NewNonRetryableApplicationError(err.Error(), pipeline.ErrTypeInvalidSpec, nil)
}

func toEvents(es []pipeline.PrivacyEvent) []privacy.Event {
	out := make([]privacy.Event, len(es))
	for i, e := range es {
		out[i] = privacy.Event{Z: e.Z, Q: e.Q, Count: e.Count}
	}
	return out
}

func fromEvents(es []privacy.Event) []pipeline.PrivacyEvent {
	out := make([]pipeline.PrivacyEvent, len(es))
	for i, e := range es {
		out[i] = pipeline.PrivacyEvent{Z: e.Z, Q: e.Q, Count: e.Count}
	}
	return out
}
