package campaign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/store"
)

// SpecConflictError is a campaign name already taken by a campaign with
// another spec. It wraps ErrInput: nothing was started.
type SpecConflictError struct {
	Campaign string
	Diff     []string // "beta 0.3 → 0.5", in SpecDiff's order
}

func (e *SpecConflictError) Error() string {
	return fmt.Sprintf("campaign %s exists with a different spec: %s; use --new-campaign (or another --campaign name)",
		e.Campaign, strings.Join(e.Diff, ", "))
}

// Unwrap makes the error an input error.
func (e *SpecConflictError) Unwrap() error { return ErrInput }

// SpecDiff lists the settings in which b differs from a, as "name a → b":
// the spec's own fields by their JSON names in declaration order, then the
// hyper-parameters by name. Both specs are compared with their defaults
// applied. The campaign name and the code version are not compared:
// neither is part of what the campaign computes (the name is the key the
// specs were found under, and a rebuilt binary runs the same campaign).
// Everything else is, since it shapes the results or what the campaign
// keeps in S3 (keep_site_models), with one tolerance: a schema set on one
// side only (see specFields).
func SpecDiff(a, b pipeline.CampaignSpec) []string {
	a, b = a.WithDefaults(), b.WithDefaults()
	fa, fb := specFields(a), specFields(b)
	inB := make(map[string]specField, len(fb))
	for _, f := range fb {
		inB[f.name] = f
	}
	var diff []string
	for _, f := range fa {
		g, ok := inB[f.name]
		if !ok {
			g = specField{name: f.name, optional: f.optional}
		}
		if f.optional && (f.value == nil || g.value == nil) {
			continue
		}
		if !reflect.DeepEqual(f.value, g.value) {
			diff = append(diff, fmt.Sprintf("%s %s → %s", f.name, f.text(), g.text()))
		}
	}
	if len(diff) == 0 && !sameIdentity(a, b) {
		// A field specFields does not list yet (TestSpecDiffCoversSpec
		// guards against one): refuse rather than run another campaign
		// under the stored spec's name.
		diff = append(diff, "spec "+identityHash(a)[:12]+" → "+identityHash(b)[:12])
	}
	return diff
}

// sameIdentity reports whether a and b are the same campaign apart from
// their names and SpecDiff's tolerance of a schema set on one side only:
// pipeline.CampaignSpec.SameCampaign under those two exceptions.
func sameIdentity(a, b pipeline.CampaignSpec) bool {
	a.Campaign, b.Campaign = "", ""
	if a.Schema == nil || b.Schema == nil {
		a.Schema, b.Schema = nil, nil
	}
	return a.SameCampaign(b)
}

// identityHash is the spec hash of s without its name and code version.
func identityHash(s pipeline.CampaignSpec) string {
	s.Campaign, s.CodeVersion = "", ""
	return s.SpecHash()
}

// specField is one compared setting of a spec. An optional setting is
// compared only when both specs have it (value not nil).
type specField struct {
	name     string
	value    any
	optional bool
}

// text is the value as a user writes it: a duration as "30m0s", a list or
// a map as JSON, a missing value as "(none)".
func (f specField) text() string {
	switch v := f.value.(type) {
	case nil:
		return "(none)"
	case time.Duration:
		return v.String()
	case string:
		if v == "" {
			return `""`
		}
		return v
	}
	b, err := json.Marshal(f.value)
	if err != nil {
		return fmt.Sprint(f.value)
	}
	return string(b)
}

// specFields flattens s for SpecDiff: always the same names in the same
// order, so that two specs' lists line up.
func specFields(s pipeline.CampaignSpec) []specField {
	sites := s.SiteNames()
	rows := any(nil)
	if len(s.DescriptorRows) > 0 {
		rows = s.DescriptorRows
	}
	// The schema is compared only when both specs have one. A spec stored
	// before schemas existed has none, and `starter run` now reads one from
	// the federation's files (BuildSpec keeps the name it had, for the
	// same reason): refusing it would stop those campaigns from being
	// re-attached or restarted. A starter that cannot see the data (no
	// federation directory, no features: in the file) has none either.
	// Either way the stored spec is the one that runs, checking what it
	// says. Two different schemas are two different data sets: refused.
	schema := any(nil)
	if s.Schema != nil {
		schema = *s.Schema
	}
	fields := []specField{
		{name: "method", value: string(s.Method)},
		{name: "preset", value: s.Preset},
		{name: "rounds", value: s.Rounds},
		{name: "seed", value: s.Seed},
		{name: "sites", value: sites},
		{name: "min_sites", value: s.MinSites},
		{name: "round_deadline", value: s.RoundDeadline},
		{name: "site_activity_timeout", value: s.SiteActivityTimeout},
		{name: "train_heartbeat", value: s.TrainHeartbeat},
		{name: "continue_as_new_every", value: s.ContinueAsNewEvery},
		{name: "bucket", value: s.Bucket},
		{name: "descriptor_rows", value: rows},
		{name: "schema", value: schema, optional: true},
		{name: "keep_site_models", value: s.KeepSiteModels},
		{name: "initial_model", value: initialModel(s.InitialModel)},
	}
	// The hyper-parameters by their JSON names (method.Params' vocabulary).
	var h map[string]any
	b, err := json.Marshal(s.Hyperparameters)
	if err == nil {
		err = json.Unmarshal(b, &h)
	}
	if err != nil {
		return append(fields, specField{name: "hyperparameters", value: fmt.Sprintf("%+v", s.Hyperparameters)})
	}
	// A Quiet parameter at its default is left out of the JSON: it is
	// compared by its value, as the JSON would write it.
	for _, p := range method.Params {
		if _, ok := h[p.Name]; !ok && p.Quiet {
			v := p.Get(s.Hyperparameters)
			if p.Kind == method.Text {
				h[p.Name] = v.Text
			} else {
				h[p.Name] = v.Num
			}
		}
	}
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fields = append(fields, specField{name: k, value: h[k]})
	}
	return fields
}

// ClaimSpec records spec as the campaign's spec.json when the campaign has
// none, and returns the spec the campaign runs with: spec itself, or the
// one stored when it differs from spec only in its code version (a spec
// stored by an older binary, which the manifests' spec_hash names).
// spec.json is written once and never overwritten. A stored spec that
// differs in anything else is a *SpecConflictError naming the fields.
func (s *Service) ClaimSpec(ctx context.Context, spec pipeline.CampaignSpec) (pipeline.CampaignSpec, error) {
	key := artifact.SpecKey(spec.Campaign)
	for try := 0; ; try++ {
		var stored pipeline.CampaignSpec
		_, err := s.Store.GetJSONKey(ctx, key, &stored)
		switch {
		case err == nil:
			if diff := SpecDiff(stored, spec); len(diff) > 0 {
				return spec, &SpecConflictError{Campaign: spec.Campaign, Diff: diff}
			}
			return stored, nil
		case !errors.Is(err, store.ErrNotFound):
			return spec, fmt.Errorf("campaign %s: read its spec %s: %w", spec.Campaign, key, err)
		}
		_, err = s.Store.PutJSONIfAbsentOrSame(ctx, key, spec)
		if err == nil {
			return spec, nil
		}
		// Another starter stored a spec between the read and the write:
		// compare with that one.
		if !errors.Is(err, store.ErrConflict) || try > 0 {
			return spec, fmt.Errorf("campaign %s: record its spec %s: %w", spec.Campaign, key, err)
		}
	}
}

// maxNewCampaigns bounds the names NewCampaign tries.
const maxNewCampaigns = 1000

// NewCampaign is spec under the first of the names "<campaign>",
// "<campaign>-2", "<campaign>-3", … that is free or already holds the same
// spec, for `starter run --new-campaign`: the name is derived from what is
// in the store, so running the same command again re-attaches to the
// campaign the first run started instead of starting yet another.
func (s *Service) NewCampaign(ctx context.Context, spec pipeline.CampaignSpec) (pipeline.CampaignSpec, error) {
	base := spec.Campaign
	for n := 1; n <= maxNewCampaigns; n++ {
		if n > 1 {
			spec.Campaign = fmt.Sprintf("%s-%d", base, n)
		}
		if err := artifact.ValidateName(spec.Campaign); err != nil {
			return spec, inputErrorf("--new-campaign: %s: %v; choose a shorter --campaign name", spec.Campaign, err)
		}
		var stored pipeline.CampaignSpec
		_, err := s.Store.GetJSONKey(ctx, artifact.SpecKey(spec.Campaign), &stored)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return spec, nil
		case err != nil:
			return spec, fmt.Errorf("campaign %s: read its spec: %w", spec.Campaign, err)
		case len(SpecDiff(stored, spec)) == 0:
			return spec, nil
		}
	}
	return spec, inputErrorf("--new-campaign: %s-2 … %s-%d are all taken; choose another --campaign name", base, base, maxNewCampaigns)
}

// Attempt is how Execute started or found a campaign's workflow.
type Attempt struct {
	Run client.WorkflowRun
	// Number is the attempt: 1 for a campaign's first run, n+1 for a run
	// started after attempt n failed or stopped; 0 when the run is one
	// already running or done that Execute re-attached to.
	Number int
	// From is the round the new attempt starts with.
	From int
	// Previous says how the previous attempt ended ("failed", "stopped",
	// "terminated", …), for a new attempt after the first.
	Previous string
}

// Note is the line a new attempt after the first is announced with.
func (a Attempt) Note(campaign string) string {
	if a.Number < 2 {
		return ""
	}
	committed := "no round was committed"
	switch {
	case a.From == 2:
		committed = "round 1 stays committed"
	case a.From > 2:
		committed = fmt.Sprintf("rounds 1–%d stay committed", a.From-1)
	}
	return fmt.Sprintf("campaign %s: attempt %d %s; starting attempt %d from round %d (%s)",
		campaign, a.Number-1, a.Previous, a.Number, a.From, committed)
}

// resumeQueryTimeout bounds the resume query of a closed run, which a
// worker answers by replaying the run's history.
const resumeQueryTimeout = time.Minute

// StartAttempt starts the campaign's workflow or re-attaches to it: a run
// in progress or done is re-attached to; a campaign that never ran starts
// its first attempt; one whose last run failed, stopped, was terminated,
// cancelled or timed out starts its next attempt from its last committed
// round (CampaignWorkflow's "Attempts"). spec must be the stored spec
// (ClaimSpec).
func (s *Service) StartAttempt(ctx context.Context, spec pipeline.CampaignSpec) (Attempt, error) {
	id := spec.Campaign
	desc, err := s.Client.DescribeWorkflowExecution(ctx, id, "")
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		run, err := s.Start(ctx, spec)
		return Attempt{Run: run, Number: 1, From: 1}, err
	}
	if err != nil {
		return Attempt{}, fmt.Errorf("campaign %s: describe its workflow: %w", id, err)
	}
	info := desc.GetWorkflowExecutionInfo()
	runID := info.GetExecution().GetRunId()
	previous := strings.ToLower(strings.TrimPrefix(info.GetStatus().String(), "WORKFLOW_EXECUTION_STATUS_"))
	switch info.GetStatus() {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW:
		return Attempt{Run: s.Client.GetWorkflow(ctx, id, runID)}, nil
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		var out pipeline.CampaignWorkflowOutput
		run := s.Client.GetWorkflow(ctx, id, runID)
		if err := run.Get(ctx, &out); err != nil || out.State != pipeline.StateStopped {
			return Attempt{Run: run}, nil
		}
		previous = pipeline.StateStopped
	}
	return s.nextAttempt(ctx, spec, runID, previous)
}

// nextAttempt starts the attempt after the closed run runID of the campaign.
func (s *Service) nextAttempt(ctx context.Context, spec pipeline.CampaignSpec, runID, previous string) (Attempt, error) {
	id := spec.Campaign
	qctx, cancel := context.WithTimeout(ctx, resumeQueryTimeout)
	defer cancel()
	v, err := s.Client.QueryWorkflow(qctx, id, runID, pipeline.QueryResume)
	var rp pipeline.ResumePoint
	if err == nil {
		err = v.Get(&rp)
	}
	if err != nil {
		return Attempt{}, fmt.Errorf("campaign %s %s and cannot be restarted yet: no server worker told where it stopped (%v); start a server worker on task queue %s and run it again",
			id, previous, err, pipeline.ServerTaskQueue)
	}
	st := rp.State
	st.Paused, st.PauseReason, st.Stopping, st.StopReason = false, "", false, ""
	if st.NextRound < 1 {
		st.NextRound = 1
	}
	a := Attempt{Number: rp.Attempt + 1, From: st.NextRound, Previous: previous}
	if st.NextRound > spec.Rounds {
		// Every round is committed: the campaign is over, nothing to resume.
		a.Run, a.Number = s.Client.GetWorkflow(ctx, id, runID), 0
		return a, nil
	}
	supersedes, err := s.latestManifest(ctx, id, st.NextRound)
	if err != nil {
		return Attempt{}, err
	}
	opts := client.StartWorkflowOptions{
		ID:        id,
		TaskQueue: s.campaignQueue(),
		// The closed run may have completed (stopped); a run started by
		// another starter in the meantime is attached to instead.
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}
	in := pipeline.CampaignWorkflowInput{Spec: spec, State: &st, Attempt: a.Number, Supersedes: supersedes, ColocatedQueue: s.ColocatedQueue}
	a.Run, err = s.Client.ExecuteWorkflow(ctx, opts, pipeline.CampaignWorkflowName, in)
	if err != nil {
		return Attempt{}, fmt.Errorf("campaign %s: start attempt %d from round %d: %w", id, a.Number, a.From, err)
	}
	return a, nil
}

// latestManifest is the manifest of round of the latest attempt that wrote
// one, or nil when none did.
func (s *Service) latestManifest(ctx context.Context, campaign string, round int) (*pipeline.ArtifactRef, error) {
	keys, err := s.Store.List(ctx, artifact.RoundPrefix(campaign, round))
	if err != nil {
		return nil, fmt.Errorf("campaign %s: list round %d: %w", campaign, round, err)
	}
	best, bestKey := 0, ""
	for _, k := range keys {
		if r, a, ok := artifact.ParseManifestKey(campaign, k); ok && r == round && a > best {
			best, bestKey = a, k
		}
	}
	if bestKey == "" {
		return nil, nil
	}
	ref, _, err := s.Store.GetKey(ctx, bestKey)
	if err != nil {
		return nil, fmt.Errorf("campaign %s: read %s: %w", campaign, bestKey, err)
	}
	return &ref, nil
}

// announce prints a's note, if any, to w (nil: nowhere).
func announce(w io.Writer, campaign string, a Attempt) {
	if note := a.Note(campaign); note != "" && w != nil {
		fmt.Fprintln(w, note)
	}
}

// initialModel is the compared value of a spec's initial_model: the sha256
// of the file, "" for none.
func initialModel(m *pipeline.InitialModel) string {
	if m == nil {
		return ""
	}
	return m.SHA256
}
