package activities

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/privacy/noise"
	"github.com/ptopofl/ptopofl/secagg"
	"github.com/ptopofl/ptopofl/store"
)

// The site's side of secure aggregation (secure_aggregation "secagg+",
// package secagg). Training keeps the model, the control-variate update
// and the method state in the site's keep and advertises the site's keys
// (the first stage); SecAggShare, SecAggMask and SecAggUnmask are the
// other three. Every key, share and mask derives from the site's secret
// and the run's Context (campaign, attempt, round, group), so a retried
// activity sends the same bytes; what leaves the site is its public keys,
// shares encrypted to its neighbours, its masked input and the shares the
// server needs to unmask the sum, never its model.

// secaggPurpose is the purpose of a site's secret seed for group's run
// (noise.Secret.Seed).
func secaggPurpose(group string) string { return "secagg/" + group }

// secaggContext is the run of group in call's round.
func secaggContext(call pipeline.SiteCall, group string) secagg.Context {
	return secagg.Context{Campaign: call.Campaign, Attempt: call.Attempt, Round: call.Round, Group: group}
}

// secaggReady refuses a secure aggregation at a site that lacks its secret
// (its keys derive from it) or its keep (where its model stays).
func (s *Site) secaggReady() error {
	if !s.secret.Valid() || s.keep == nil {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("site %s has no secret directory (its worker runs without --secret-dir), so it cannot take part in a campaign under secure_aggregation %q: its keys derive from its secret and its trained model stays beside it", s.name, method.SecAggPlus),
			pipeline.ErrTypeBadSiteData, nil)
	}
	return nil
}

// checkSecAggTrain refuses a training whose campaign aggregates securely
// but that names no group (its model would be sent in the clear), or
// names one while the campaign does not, and one at a site that cannot
// take part.
func (s *Site) checkSecAggTrain(in pipeline.TrainLocalInput) error {
	if in.Hyperparameters.IsSecAgg() != (in.SecAgg != nil) {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("site %s round %d: the campaign's secure_aggregation is %q but the training call names group %v; the site keeps its model only for a secure aggregation's group", s.name, in.Round, in.Hyperparameters.SecureAggregation, in.SecAgg),
			"BadRequest", nil)
	}
	if in.SecAgg == nil {
		return nil
	}
	return s.secaggReady()
}

// secaggSeed is the seed of the site's keys and masks in group's run.
func (s *Site) secaggSeed(call pipeline.SiteCall, group string) [32]byte {
	return s.secret.Seed(noise.Key{Campaign: call.Campaign, Attempt: call.Attempt, Round: call.Round, Site: s.name, Purpose: secaggPurpose(group)})
}

// secaggRefused is a non-retryable refusal of a stage (pipeline.
// ErrTypeSecAgg): no retry can mend it.
func (s *Site) secaggRefused(call pipeline.SiteCall, format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("site %s round %d: ", s.name, call.Round)+fmt.Sprintf(format, args...), pipeline.ErrTypeSecAgg, nil)
}

// advertise is the first stage, at the end of the site's training: its
// public keys for group's run, and the references of what it kept.
func (s *Site) advertise(call pipeline.SiteCall, group string, model pipeline.ArtifactRef, control *pipeline.ArtifactRef) (*pipeline.SecAggAdvert, error) {
	keys, err := secagg.AdvertisedKeys(secaggContext(call, group), s.name, s.secaggSeed(call, group))
	if err != nil {
		return nil, s.secaggRefused(call, "%v", err)
	}
	if err := s.keep.prune(call.Campaign, call.Round-1); err != nil {
		return nil, fmt.Errorf("site %s: prune its keep: %w", s.name, err)
	}
	return &pipeline.SecAggAdvert{Group: group, Keys: keys, Model: model, Control: control}, nil
}

// keepBytes keeps b at key (a training's output under secure
// aggregation) and returns its reference.
func (s *Site) keepBytes(key string, b []byte, encErr error) (pipeline.ArtifactRef, error) {
	if encErr != nil {
		return pipeline.ArtifactRef{}, encErr
	}
	return s.keep.put(key, b)
}

// getSiteState reads the site's method state: from its keep when the
// reference is to a kept object (secure aggregation), else from S3.
func (s *Site) getSiteState(ctx context.Context, ref *pipeline.ArtifactRef) (learn.SiteState, error) {
	if !pipeline.IsKept(ref) {
		return getSiteState(ctx, s.store, ref)
	}
	if s.keep == nil {
		return learn.SiteState{}, s.secaggReady()
	}
	b, err := s.keep.get(*ref)
	if err != nil {
		return learn.SiteState{}, err
	}
	recs, err := store.DecodeVectors(b)
	if err != nil {
		return learn.SiteState{}, fmt.Errorf("site %s: kept %s: %w", s.name, ref.Key, err)
	}
	if len(recs) != 1 || recs[0].Kind != kindSiteState {
		return learn.SiteState{}, fmt.Errorf("site %s: kept %s holds no site state", s.name, ref.Key)
	}
	v := recs[0].Vectors
	return learn.SiteState{Local: v[vecLocal], Control: v[vecControl], Personal: v[vecPersonal]}, nil
}

// getDoc reads the JSON document at ref through the store's cache (its
// sha256 checked on the first read): a site reads its view in each of the
// three stages and its inbox in two.
func (s *Site) getDoc(ctx context.Context, ref pipeline.ArtifactRef, v any) error {
	b, err := s.store.GetCached(ctx, ref)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", ref.Key, err)
	}
	return nil
}

// secaggMember reads the site's view of group's run (the server's
// ArtifactRef, checked), holds it against the call and the campaign's
// hyper-parameters, and returns the site's member of the run with its
// neighbours' keys.
func (s *Site) secaggMember(ctx context.Context, call pipeline.SiteCall, group string, viewRef pipeline.ArtifactRef) (*secagg.Member, pipeline.SecAggViewDoc, error) {
	if err := s.secaggReady(); err != nil {
		return nil, pipeline.SecAggViewDoc{}, err
	}
	if call.Site != s.name {
		return nil, pipeline.SecAggViewDoc{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("site %s: asked to run for site %q; check the task queue routing", s.name, call.Site), "WrongSite", nil)
	}
	var doc pipeline.SecAggViewDoc
	if err := s.getDoc(ctx, viewRef, &doc); err != nil {
		return nil, pipeline.SecAggViewDoc{}, fmt.Errorf("site %s: its view of group %s: %w", s.name, group, err)
	}
	v := doc.View
	want := secaggContext(call, group)
	if v.Context != want || v.Self.Name != s.name {
		return nil, pipeline.SecAggViewDoc{}, s.secaggRefused(call, "the view it was sent is of run %+v for %s, not of run %+v for itself", v.Context, v.Self.Name, want)
	}
	cfg, err := method.Resolve(call.Method, call.Preset, call.Hyperparameters)
	if err != nil {
		return nil, pipeline.SecAggViewDoc{}, temporal.NewNonRetryableApplicationError(err.Error(), pipeline.ErrTypeInvalidSpec, err)
	}
	// The configuration follows from the campaign's parameters and the
	// group's size: a view that says otherwise (fewer share holders, a
	// lower threshold) is refused.
	gc := cfg.SecAgg.GroupConfig(v.Size)
	if v.Config.Shares != gc.Shares || v.Config.Threshold != gc.Threshold || v.Config.Clip != gc.Clip ||
		v.Config.QuantBits != gc.QuantBits || v.Config.ModulusBits != max(gc.ModulusBits, secagg.DefaultModulusBits) {
		return nil, pipeline.SecAggViewDoc{}, s.secaggRefused(call, "group %s: the view's configuration %+v is not the campaign's for a group of %d (%+v)", group, v.Config, v.Size, gc)
	}
	m, err := v.Member(s.secaggSeed(call, group))
	if err != nil {
		return nil, pipeline.SecAggViewDoc{}, s.secaggRefused(call, "%v", err)
	}
	return m, doc, nil
}

// SecAggShare is the second stage: the site's shares of its secrets,
// encrypted to each of its neighbours that advertised keys, written to
// artifact.RoundKeys.SecAggShares. Too few advertisers among its share
// holders is a refusal (pipeline.ErrTypeSecAgg): its secrets could not be
// reconstructed, so its input could never be unmasked.
func (s *Site) SecAggShare(ctx context.Context, in pipeline.SecAggShareInput) (pipeline.SecAggShareOutput, error) {
	m, doc, err := s.secaggMember(ctx, in.SiteCall, in.Group, in.View)
	if err != nil {
		return pipeline.SecAggShareOutput{}, err
	}
	out, err := m.ShareKeys(doc.Keys)
	if errors.Is(err, secagg.ErrTooFew) {
		return pipeline.SecAggShareOutput{}, s.secaggRefused(in.SiteCall, "%v", err)
	}
	if err != nil {
		return pipeline.SecAggShareOutput{}, s.secaggRefused(in.SiteCall, "%v", err)
	}
	ref, err := s.store.PutJSON(ctx, in.Keys().SecAggShares(in.Group, s.name), pipeline.SecAggSharesDoc{From: s.name, To: out})
	if err != nil {
		return pipeline.SecAggShareOutput{}, fmt.Errorf("site %s: %w", s.name, err)
	}
	return pipeline.SecAggShareOutput{Shares: ref}, nil
}

// secaggMaskRecord is what a site records of its masked input in a run
// (keep): the digest of the request and of the bytes it sent, so that it
// never sends a second, different masked input for the same run.
type secaggMaskRecord struct {
	Request string `json:"request"`
	Masked  string `json:"masked"`
}

// secaggRevealRecord is what a site records of its reveal in a run
// (keep), before it reveals: the survivors and dropped it was told of. A
// later request with other lists is refused, so that no retry, crash or
// server can make it reveal both secrets of one neighbour.
type secaggRevealRecord struct {
	Survivors []string `json:"survivors"`
	Dropped   []string `json:"dropped"`
}

// recordKey is the key of the site's record of kind ("masked",
// "revealed") in call's run of group.
func recordKey(call pipeline.SiteCall, kind, group string) string {
	return fmt.Sprintf("secagg-records/%s/attempt-%d/round-%04d/%s/%s.json", call.Campaign, max(call.Attempt, 1), call.Round, group, kind)
}

// SecAggMask is the third stage: the site's update θ − θ_start (its kept
// model less the model it was sent; the model itself when it started from
// its own initialisation), times the weight the server decided from counts
// and descriptors, followed by its control-variate update times its
// control weight (SCAFFOLD), quantised and masked
// (secagg.Member.MaskInput), written to artifact.RoundKeys.SecAggMasked.
// The output's releases say that the model (and control variate) reached the
// server only inside the group's sum.
func (s *Site) SecAggMask(ctx context.Context, in pipeline.SecAggMaskInput) (pipeline.SecAggMaskOutput, error) {
	m, doc, err := s.secaggMember(ctx, in.SiteCall, in.Group, in.View)
	if err != nil {
		return pipeline.SecAggMaskOutput{}, err
	}
	if !(in.Weight > 0) || in.ControlWeight < 0 {
		return pipeline.SecAggMaskOutput{}, s.secaggRefused(in.SiteCall, "weights %v and %v: want a positive weight", in.Weight, in.ControlWeight)
	}
	req, err := json.Marshal(in)
	if err != nil {
		return pipeline.SecAggMaskOutput{}, err
	}
	reqSum := sha256.Sum256(req)
	// The neighbours whose shares were delivered are those whose shares
	// the server forwarded to this site: each pair of them masks with
	// each other, and only with each other.
	var inbox pipeline.SecAggInboxDoc
	if err := s.getDoc(ctx, in.Inbox, &inbox); err != nil {
		return pipeline.SecAggMaskOutput{}, fmt.Errorf("site %s: its inbox: %w", s.name, err)
	}
	if inbox.To != s.name {
		return pipeline.SecAggMaskOutput{}, s.secaggRefused(in.SiteCall, "the inbox it was sent is %s's", inbox.To)
	}
	shared := []string{s.name}
	for from := range inbox.From {
		shared = append(shared, from)
	}
	slices.Sort(shared)
	var out pipeline.SecAggMaskOutput
	y, rel, err := s.weightedInput(ctx, in, m, doc, shared)
	out.Released = rel
	if err != nil {
		return pipeline.SecAggMaskOutput{}, err
	}
	b := secagg.EncodeMasked(y, doc.View.Config.ModulusBits)
	sum := sha256.Sum256(b)
	rec := secaggMaskRecord{Request: hex.EncodeToString(reqSum[:]), Masked: hex.EncodeToString(sum[:])}
	key := recordKey(in.SiteCall, "masked", in.Group)
	prev, err := s.keep.record(key)
	if err != nil {
		return pipeline.SecAggMaskOutput{}, fmt.Errorf("site %s: its record of masked inputs: %w", s.name, err)
	}
	if prev != nil {
		var p secaggMaskRecord
		if err := json.Unmarshal(prev, &p); err != nil {
			return pipeline.SecAggMaskOutput{}, fmt.Errorf("site %s: its record %s: %w", s.name, key, err)
		}
		if p != rec {
			// Two different masked inputs of one run would differ by the
			// difference of the inputs, masks aside.
			return pipeline.SecAggMaskOutput{}, s.secaggRefused(in.SiteCall, "group %s: it already sent another masked input in this run (sha256 %.12s), and sends no second", in.Group, p.Masked)
		}
	} else {
		rb, _ := json.Marshal(rec)
		if _, err := s.keep.put(key, rb); err != nil {
			return pipeline.SecAggMaskOutput{}, err
		}
	}
	if out.Masked, err = s.store.Put(ctx, in.Keys().SecAggMasked(in.Group, s.name), b); err != nil {
		return pipeline.SecAggMaskOutput{}, fmt.Errorf("site %s: %w", s.name, err)
	}
	return out, nil
}

// weightedInput is the site's masked input: Weight·(θ − θ_start) and ControlWeight·Δc, quantised by the member.
func (s *Site) weightedInput(ctx context.Context, in pipeline.SecAggMaskInput, m *secagg.Member, doc pipeline.SecAggViewDoc, shared []string) ([]uint64, pipeline.Released, error) {
	var rel pipeline.Released
	kept, err := s.keep.get(in.Model)
	if err != nil {
		return nil, rel, err
	}
	rec, err := store.DecodeModel(kept)
	if err != nil {
		return nil, rel, fmt.Errorf("site %s: kept model %s: %w", s.name, in.Model.Key, err)
	}
	theta := rec.Params
	var start []float64
	if in.StartModel != nil {
		if start, err = s.store.GetModelParamsCached(ctx, *in.StartModel); err != nil {
			return nil, rel, fmt.Errorf("site %s: %w", s.name, err)
		}
		if len(start) != len(theta) {
			return nil, rel, s.secaggRefused(in.SiteCall, "its model has %d parameters, the model it started from %d", len(theta), len(start))
		}
	}
	x := make([]float64, len(theta), len(theta)*2)
	for j, v := range theta {
		if start != nil {
			v -= start[j]
		}
		x[j] = in.Weight * v
	}
	rel.Released = append(rel.Released, pipeline.Release{Kind: pipeline.ReleaseModel, Numbers: len(theta), Within: in.Group})
	if in.Control != nil {
		b, err := s.keep.get(*in.Control)
		if err != nil {
			return nil, rel, err
		}
		recs, err := store.DecodeVectors(b)
		if err != nil || len(recs) != 1 || recs[0].Vectors[vecControl] == nil {
			return nil, rel, fmt.Errorf("site %s: kept control variate %s: %v", s.name, in.Control.Key, err)
		}
		c := recs[0].Vectors[vecControl]
		for _, v := range c {
			x = append(x, in.ControlWeight*v)
		}
		rel.Released = append(rel.Released, pipeline.Release{Kind: pipeline.ReleaseControl, Numbers: len(c), Within: in.Group})
	}
	y, clipped, err := m.MaskInput(x, doc.Keys, shared)
	if err != nil {
		return nil, rel, s.secaggRefused(in.SiteCall, "%v", err)
	}
	if clipped > 0 && activity.IsActivity(ctx) {
		// The site's own log: the count says how much of the update the
		// clipping range cut, which the server need not learn.
		activity.GetLogger(ctx).Warn("secure aggregation clipped coordinates of the weighted update",
			"site", s.name, "round", in.Round, "group", in.Group, "clipped", clipped, "of", len(x), "secagg_clip", doc.View.Config.Clip)
	}
	return y, rel, nil
}

// SecAggUnmask is the fourth stage: the site's shares of its surviving
// neighbours' self-mask secrets and of its dropped neighbours' mask
// secrets (secagg.Member.Unmask), from the shares its neighbours sent it
// (its inbox), written to artifact.RoundKeys.SecAggReveal. Before it
// reveals anything it records the lists it was given (keep); a later
// request for the run with other lists is refused, whatever the attempt,
// so that no neighbour's two secrets are ever both revealed.
func (s *Site) SecAggUnmask(ctx context.Context, in pipeline.SecAggUnmaskInput) (pipeline.SecAggUnmaskOutput, error) {
	m, doc, err := s.secaggMember(ctx, in.SiteCall, in.Group, in.View)
	if err != nil {
		return pipeline.SecAggUnmaskOutput{}, err
	}
	var inbox pipeline.SecAggInboxDoc
	if err := s.getDoc(ctx, in.Inbox, &inbox); err != nil {
		return pipeline.SecAggUnmaskOutput{}, fmt.Errorf("site %s: its inbox: %w", s.name, err)
	}
	if inbox.To != s.name {
		return pipeline.SecAggUnmaskOutput{}, s.secaggRefused(in.SiteCall, "the inbox it was sent is %s's", inbox.To)
	}
	rec := secaggRevealRecord{Survivors: slices.Sorted(slices.Values(in.Survivors)), Dropped: slices.Sorted(slices.Values(in.Dropped))}
	if rec.Dropped == nil {
		rec.Dropped = []string{}
	}
	rb, _ := json.Marshal(rec)
	key := recordKey(in.SiteCall, "revealed", in.Group)
	prev, err := s.keep.record(key)
	if err != nil {
		return pipeline.SecAggUnmaskOutput{}, fmt.Errorf("site %s: its record of reveals: %w", s.name, err)
	}
	if prev != nil && !bytes.Equal(prev, rb) {
		return pipeline.SecAggUnmaskOutput{}, s.secaggRefused(in.SiteCall,
			"group %s: it already revealed shares in this run for other survivors and dropped (%s), and reveals for no others", in.Group, prev)
	}
	if prev == nil {
		if _, err := s.keep.put(key, rb); err != nil {
			return pipeline.SecAggUnmaskOutput{}, err
		}
	}
	r, err := m.Unmask(doc.Keys, inbox.From, in.Survivors, in.Dropped)
	if err != nil {
		return pipeline.SecAggUnmaskOutput{}, s.secaggRefused(in.SiteCall, "%v", err)
	}
	ref, err := s.store.PutJSON(ctx, in.Keys().SecAggReveal(in.Group, s.name), r)
	if err != nil {
		return pipeline.SecAggUnmaskOutput{}, fmt.Errorf("site %s: %w", s.name, err)
	}
	return pipeline.SecAggUnmaskOutput{Reveal: ref}, nil
}
