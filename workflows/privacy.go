package workflows

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
)

// descriptorSites returns the sites among active (in spec order) that
// compute their descriptor in round n: all of them in round 1, when the
// previous drift check asked for a recheck, and every drift_check_every
// rounds; otherwise only those that have no descriptor yet. Under dp
// record a drift check's recheck does not count: the privacy plan paid for
// the schedule (method.DescriptorRound), not for rounds the data's own
// drift would choose. The round computes exactly these, and the campaign
// charges exactly these before dispatching the round.
func descriptorSites(spec pipeline.CampaignSpec, n int, carry pipeline.RoundCarry, active []string) []string {
	if !method.NeedsDescriptors(spec.Method) {
		return nil
	}
	h := spec.Hyperparameters
	have := siteRefs(carry.Descriptors)
	recompute := method.DescriptorRound(spec.Method, h, n) || (carry.RecheckDescriptors && !h.IsDP())
	return filter(active, func(s string) bool { return recompute || have[s] == nil })
}

// chargePrivacy charges round n's releases of every site to the
// campaign's privacy ledger before the round is dispatched (dp record),
// by the ChargePrivacy server activity, which does the accounting (a
// workflow does no float arithmetic). Charged before, not after: a round
// that crashes, fails or is repeated by a later attempt has released
// (part of) what it was charged for, and a new attempt resumes from the
// state this charge is in. It returns the round's privacy record for the
// manifest, or, when the charges would exceed the budget, a reason in one
// sentence and no record: the round is then not dispatched.
func (c *campaign) chargePrivacy(ctx workflow.Context, n int) (*pipeline.RoundPrivacy, string, error) {
	spec := c.spec
	in := pipeline.ChargePrivacyInput{
		ServerCall: pipeline.ServerCall{
			Campaign: spec.Campaign, Round: n, Method: spec.Method, Preset: spec.Preset,
			Hyperparameters: spec.Hyperparameters, Bucket: spec.Bucket, CampaignSeed: spec.Seed,
			Sites: spec.SiteNames(), Attempt: c.attempt,
		},
		Records:         spec.Sites,
		DescriptorSites: descriptorSites(spec, n, c.st.Carry, spec.SiteNames()),
		Ledger:          c.st.Privacy,
	}
	var out pipeline.ChargePrivacyOutput
	actx := workflow.WithLocalActivityOptions(ctx, serverLocalActivityOptions())
	if err := workflow.ExecuteLocalActivity(actx, pipeline.ActivityChargePrivacy, in).Get(ctx, &out); err != nil {
		return nil, "", fmt.Errorf("round %d: charge privacy: %w", n, err)
	}
	if out.Exceeded != "" {
		return nil, out.Exceeded, nil
	}
	c.st.Privacy = out.Ledger
	c.st.LastPrivacy = out.Round
	return out.Round, "", nil
}
