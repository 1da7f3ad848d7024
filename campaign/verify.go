package campaign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/store"
)

// StoredManifest is one round manifest as found in S3.
type StoredManifest struct {
	Round    int // from the key
	Attempt  int // from the key: 1 for the first attempt's key
	Key      string
	SHA256   string // of the bytes stored at Key
	Manifest pipeline.RoundManifest
	Err      error // the bytes do not decode as a manifest; Manifest is zero
}

// Objects is what a listing of a campaign's prefix holds.
type Objects struct {
	Manifests   []StoredManifest // round order, then attempt order
	RoundKeys   map[int]int      // round → objects under its prefix, manifest included
	SpecPresent bool
}

// Effective splits the manifests into the record of each round, the one of
// its latest attempt, in round order, and the ones later attempts
// superseded.
func (o Objects) Effective() (effective, superseded []StoredManifest) {
	for i, m := range o.Manifests {
		if i+1 < len(o.Manifests) && o.Manifests[i+1].Round == m.Round {
			superseded = append(superseded, m)
		} else {
			effective = append(effective, m)
		}
	}
	return effective, superseded
}

// ReadManifests lists the campaign's prefix and reads every round manifest
// in round order. A manifest that does not decode is returned with Err set;
// an error is returned only when S3 cannot be read.
func ReadManifests(ctx context.Context, st *store.Store, campaign string) (Objects, error) {
	return ReadManifestsCached(ctx, st, campaign, nil)
}

// ManifestCache keeps the manifests ReadManifestsCached has read, by key,
// so that a reader that reads the same campaigns again and again (the
// console, while a campaign runs) fetches only the manifests that are new
// or whose size the listing shows changed. A manifest is written once and
// never changed, so the cache holds what S3 holds unless someone rewrites
// a manifest with bytes of the same length: verify, which re-reads every
// object, is the check for that, and never uses a cache. It is safe for
// concurrent use.
type ManifestCache struct {
	mu sync.Mutex
	m  map[string]StoredManifest // key → as read, with its size below
	sz map[string]int64
}

// NewManifestCache returns an empty cache.
func NewManifestCache() *ManifestCache {
	return &ManifestCache{m: map[string]StoredManifest{}, sz: map[string]int64{}}
}

func (c *ManifestCache) get(key string, size int64) (StoredManifest, bool) {
	if c == nil {
		return StoredManifest{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	sm, ok := c.m[key]
	return sm, ok && c.sz[key] == size
}

func (c *ManifestCache) put(key string, size int64, sm StoredManifest) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[key], c.sz[key] = sm, size
}

// ReadManifestsCached is ReadManifests reading through cache (nil: no
// cache): a manifest listed with the size it had when cached is not
// fetched again.
func ReadManifestsCached(ctx context.Context, st *store.Store, campaign string, cache *ManifestCache) (Objects, error) {
	listed, err := st.ListSizes(ctx, artifact.CampaignPrefix(campaign))
	if err != nil {
		return Objects{}, err
	}
	objs := Objects{RoundKeys: map[int]int{}}
	for _, o := range listed {
		k := o.Key
		if k == artifact.SpecKey(campaign) {
			objs.SpecPresent = true
		}
		r, ok := artifact.ParseRoundPrefix(campaign, k)
		if !ok {
			continue
		}
		objs.RoundKeys[r]++
		_, attempt, ok := artifact.ParseManifestKey(campaign, k)
		if !ok {
			continue
		}
		if sm, ok := cache.get(k, o.Size); ok {
			objs.Manifests = append(objs.Manifests, sm)
			continue
		}
		ref, b, err := st.GetKey(ctx, k)
		if err != nil {
			return Objects{}, err
		}
		sm := StoredManifest{Round: r, Attempt: attempt, Key: k, SHA256: ref.SHA256}
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&sm.Manifest); err != nil {
			sm.Err, sm.Manifest = fmt.Errorf("not a round manifest: %w", err), pipeline.RoundManifest{}
		}
		cache.put(k, ref.Size, sm)
		objs.Manifests = append(objs.Manifests, sm)
	}
	slices.SortFunc(objs.Manifests, func(a, b StoredManifest) int {
		if a.Round != b.Round {
			return a.Round - b.Round
		}
		return a.Attempt - b.Attempt
	})
	return objs, nil
}

// checkPrivacy holds the privacy records of a campaign's manifests to what
// the ledger guarantees: in the order rounds were charged (attempt, then
// round), each site's cumulative ε never decreases, never falls below the
// round's own ε, and never exceeds the budget (dp_epsilon), since a round
// that would exceed it is never dispatched.
func checkPrivacy(manifests []StoredManifest) []Problem {
	ordered := slices.Clone(manifests)
	slices.SortStableFunc(ordered, func(a, b StoredManifest) int {
		if a.Attempt != b.Attempt {
			return a.Attempt - b.Attempt
		}
		return a.Round - b.Round
	})
	var out []Problem
	last := map[string]float64{}
	for _, sm := range ordered {
		p := sm.Manifest.Privacy
		if sm.Err != nil || p == nil {
			continue
		}
		for _, s := range p.Sites {
			switch {
			case p.Budget > 0 && s.Epsilon > p.Budget*(1+1e-9):
				out = append(out, Problem{Round: sm.Round, Kind: ProblemPrivacy, Key: sm.Key, Site: s.Site,
					Detail: fmt.Sprintf("site %s's ε %.6g exceeds the budget %g", s.Site, s.Epsilon, p.Budget)})
			case s.Epsilon < last[s.Site]*(1-1e-12):
				out = append(out, Problem{Round: sm.Round, Kind: ProblemPrivacy, Key: sm.Key, Site: s.Site,
					Detail: fmt.Sprintf("site %s's ε %.6g is below the %.6g an earlier manifest recorded: the ledger lost releases", s.Site, s.Epsilon, last[s.Site])})
			case s.Epsilon < s.EpsilonRound*(1-1e-12) || s.Epsilon < s.EpsilonTrain*(1-1e-12) || s.Epsilon < s.EpsilonTest*(1-1e-12):
				out = append(out, Problem{Round: sm.Round, Kind: ProblemPrivacy, Key: sm.Key, Site: s.Site,
					Detail: fmt.Sprintf("site %s's ε %.6g is below a part of it (round %.6g, training %.6g, test %.6g)", s.Site, s.Epsilon, s.EpsilonRound, s.EpsilonTrain, s.EpsilonTest)})
			}
			last[s.Site] = max(last[s.Site], s.Epsilon)
		}
	}
	return out
}

// Kinds of verify problems.
const (
	ProblemMissingArtifact  = "missing_artifact"  // listed in a manifest, not in S3
	ProblemChangedArtifact  = "changed_artifact"  // in S3 with other bytes than the manifest says
	ProblemMissingManifest  = "missing_manifest"  // a round without its manifest
	ProblemBadManifest      = "bad_manifest"      // does not decode, or names another campaign or round
	ProblemChainBreak       = "chain_break"       // prev_manifest_sha256 ≠ sha256 of the previous manifest
	ProblemSpecMismatch     = "spec_mismatch"     // spec_hash ≠ hash of spec.json
	ProblemUncheckedBucket  = "unchecked_bucket"  // artifact in another bucket than the one verified
	ProblemTipMismatch      = "tip_mismatch"      // the last manifest differs from the one Temporal recorded
	ProblemUnreadableObject = "unreadable_object" // S3 answered with an error other than not found
	ProblemNotSuperseded    = "not_superseded"    // an earlier attempt's manifest no later attempt names as superseded
	ProblemPrivacy          = "privacy"           // a site's ε beyond the budget, or lower than an earlier manifest's
)

// Problem is one thing wrong with a campaign's audit record.
type Problem struct {
	Round    int    `json:"round"` // 0: the campaign's spec
	Kind     string `json:"kind"`
	Key      string `json:"key"`
	Role     string `json:"role,omitempty"` // artifact role in the manifest
	Site     string `json:"site,omitempty"`
	Name     string `json:"name,omitempty"`
	Listed   string `json:"listed_as,omitempty"` // "input" or "output"
	Expected string `json:"expected_sha256,omitempty"`
	Got      string `json:"got_sha256,omitempty"`
	Detail   string `json:"detail"`
}

// Text is the problem on one line, for the text output of verify.
func (p Problem) Text() string {
	where := "spec    "
	if p.Round > 0 {
		where = fmt.Sprintf("round %d", p.Round)
	}
	what := p.Key
	if p.Role != "" {
		owner := p.Site + p.Name
		if owner != "" {
			owner = " " + owner
		}
		what += fmt.Sprintf(" (%s%s, %s)", p.Role, owner, p.Listed)
	}
	return fmt.Sprintf("%s  %-17s %s: %s", where, p.Kind, what, p.Detail)
}

// VerifyReport is what `verify --format json` prints.
type VerifyReport struct {
	Campaign   string `json:"campaign"`
	OK         bool   `json:"ok"`
	Rounds     int    `json:"rounds"`     // manifests read
	Artifacts  int    `json:"artifacts"`  // distinct keys re-hashed
	References int    `json:"references"` // artifact records checked (a key may be listed by several rounds)
	SpecHash   string `json:"spec_hash,omitempty"`
	LastRound  int    `json:"last_round"` // round of the last manifest
	// Attempts is the highest attempt that wrote a manifest (1 for a
	// campaign never restarted); Superseded counts the manifests of earlier
	// attempts that later ones replaced (each checked like the others).
	Attempts   int    `json:"attempts"`
	Superseded int    `json:"superseded"`
	Tip        string `json:"tip_sha256,omitempty"` // sha256 of the last manifest
	TipChecked bool   `json:"tip_checked"`          // the tip matched the last manifest Temporal recorded
	// TipSkipped says why the tip was not compared with Temporal's record
	// (Temporal did not answer, the campaign reported no manifest yet, ...);
	// empty when it was compared.
	TipSkipped string    `json:"tip_skipped,omitempty"`
	Problems   []Problem `json:"problems"`
	// Pruned lists, by role, the artifacts the campaign's retention policy
	// deleted (recorded in the manifests), which are not problems; they
	// are not counted in Artifacts.
	Pruned []PrunedArtifacts `json:"pruned,omitempty"`
	// Privacy is the privacy record of the last manifest of a dp record
	// campaign (every site's ε so far); checkPrivacy holds every manifest's
	// record to the budget and to the ones before it.
	Privacy *pipeline.RoundPrivacy `json:"privacy,omitempty"`
}

// Summary counts what was verified and says whether the last manifest was
// held against Temporal's record ("verified 3 rounds, 20 artifacts; last
// manifest matches Temporal's record"), so that a check that could not run
// is never mistaken for one that passed.
func (r VerifyReport) Summary() string {
	s := fmt.Sprintf("verified %d rounds, %d artifacts", r.Rounds, r.Artifacts)
	if n := prunedCount(r.Pruned); n > 0 {
		s += fmt.Sprintf(" (and %d pruned by the retention policy)", n)
	}
	if r.Attempts > 1 {
		plural := "s"
		if r.Superseded == 1 {
			plural = ""
		}
		s += fmt.Sprintf(", across %d attempts (%d superseded manifest%s)", r.Attempts, r.Superseded, plural)
	}
	switch {
	case r.TipChecked:
		s += "; last manifest matches Temporal's record"
	case r.TipSkipped != "":
		s += "; last manifest not checked against Temporal: " + r.TipSkipped
	}
	return s
}

// CheckTipStatus runs CheckTip with the status Temporal gave, or records in
// rep.TipSkipped why it cannot: statusErr is the error of asking Temporal
// for the campaign's status (it may not hold the campaign any more, or no
// worker answered the query).
func CheckTipStatus(rep *VerifyReport, st pipeline.CampaignStatus, statusErr error) {
	switch {
	case statusErr != nil:
		rep.TipSkipped = fmt.Sprintf("Temporal did not answer (%v); the chain in S3 was checked on its own", statusErr)
	case st.LastManifest == nil:
		rep.TipSkipped = "Temporal reports no committed round for the campaign"
	default:
		CheckTip(rep, *st.LastManifest)
	}
}

// CheckTip compares the last manifest verified with the one the campaign's
// workflow recorded when it committed its last round.
func CheckTip(rep *VerifyReport, last pipeline.ArtifactRef) {
	round, ok := artifact.ParseRoundPrefix(rep.Campaign, last.Key)
	switch {
	case !ok:
		rep.TipSkipped = fmt.Sprintf("Temporal recorded %s, not a manifest of campaign %s", last.Key, rep.Campaign)
	case round < rep.LastRound:
		// The campaign is running ahead of its status; nothing to compare.
		rep.TipSkipped = fmt.Sprintf("the campaign has committed round %d since Temporal reported round %d; run verify again when it is idle", rep.LastRound, round)
	case round > rep.LastRound:
		for _, p := range rep.Problems {
			if p.Kind == ProblemMissingManifest && p.Key == last.Key {
				return
			}
		}
		rep.Problems = append(rep.Problems, Problem{
			Round: round, Kind: ProblemMissingManifest, Key: last.Key, Expected: last.SHA256,
			Detail: fmt.Sprintf("Temporal recorded round %d's manifest with sha256 %s; S3 has manifests up to round %d only", round, short(last.SHA256), rep.LastRound),
		})
		rep.OK = false
	case last.SHA256 != rep.Tip:
		rep.Problems = append(rep.Problems, Problem{
			Round: round, Kind: ProblemTipMismatch, Key: last.Key, Expected: last.SHA256, Got: rep.Tip,
			Detail: fmt.Sprintf("Temporal recorded the last manifest with sha256 %s, S3 holds %s", short(last.SHA256), short(rep.Tip)),
		})
		rep.OK = false
	default:
		rep.TipChecked = true
	}
}

// artifactUse is one artifact record of one manifest.
type artifactUse struct {
	round  int
	listed string
	rec    pipeline.ArtifactRecord
}

// fetched is what S3 holds at a key.
type fetched struct {
	ref artifact.Ref
	err error
}

// VerifyRecord checks a campaign's audit record. The error is for S3
// failing; everything wrong with the record is in the report's Problems.
func VerifyRecord(ctx context.Context, st *store.Store, campaign string, parallel int) (VerifyReport, error) {
	rep := VerifyReport{Campaign: campaign, Problems: []Problem{}}
	objs, err := ReadManifests(ctx, st, campaign)
	if err != nil {
		return rep, err
	}
	if len(objs.Manifests) == 0 && len(objs.RoundKeys) == 0 {
		return rep, fmt.Errorf("campaign %s: nothing under s3://%s/%s", campaign, st.Bucket(), artifact.CampaignPrefix(campaign))
	}
	add := func(p Problem) { rep.Problems = append(rep.Problems, p) }

	// The spec, if stored: every manifest's spec_hash must be its hash.
	specHash := ""
	if objs.SpecPresent {
		var spec pipeline.CampaignSpec
		if _, err := st.GetJSONKey(ctx, artifact.SpecKey(campaign), &spec); err != nil {
			add(Problem{Kind: ProblemBadManifest, Key: artifact.SpecKey(campaign), Detail: err.Error()})
		} else {
			specHash = spec.WithDefaults().SpecHash()
			rep.SpecHash = specHash
		}
	}

	// Rounds with objects but no manifest, and gaps in the rounds.
	effective, superseded := objs.Effective()
	have := map[int]bool{}
	last := 0
	for _, m := range objs.Manifests {
		have[m.Round] = true
		last = max(last, m.Round)
		rep.Attempts = max(rep.Attempts, m.Attempt)
	}
	rep.Superseded = len(superseded)
	for r := range objs.RoundKeys {
		last = max(last, r)
	}
	for r := 1; r <= last; r++ {
		if have[r] {
			continue
		}
		detail := "no manifest: the round was never committed, or its manifest was deleted"
		if n := objs.RoundKeys[r]; n > 0 {
			detail = fmt.Sprintf("no manifest, though %d objects are under the round (deleted, or the round is still running)", n)
		}
		add(Problem{Round: r, Kind: ProblemMissingManifest, Key: artifact.ManifestKey(campaign, r), Detail: detail})
	}

	// The chain, and each manifest's own claims. The chain runs through
	// each round's latest attempt; a superseded manifest chains to the
	// same previous round (a new attempt resumes after the last committed
	// round) and must be named, with its sha256, by the manifest of the
	// next attempt at its round.
	var uses []artifactUse
	prev := map[int]string{} // round → sha256 of its effective manifest
	for _, m := range effective {
		prev[m.Round] = m.SHA256
	}
	named := map[string]StoredManifest{} // key → the manifest naming it as superseded
	for _, sm := range objs.Manifests {
		if s := sm.Manifest.Supersedes; sm.Err == nil && s != nil {
			named[s.Key] = sm
		}
	}
	for _, sm := range superseded {
		by, ok := named[sm.Key]
		switch {
		case !ok:
			add(Problem{Round: sm.Round, Kind: ProblemNotSuperseded, Key: sm.Key, Got: sm.SHA256,
				Detail: fmt.Sprintf("attempt %d's manifest of round %d is not named by a later attempt's manifest of the round", sm.Attempt, sm.Round)})
		case by.Manifest.Supersedes.SHA256 != sm.SHA256:
			add(Problem{Round: sm.Round, Kind: ProblemChainBreak, Key: sm.Key, Expected: by.Manifest.Supersedes.SHA256, Got: sm.SHA256,
				Detail: fmt.Sprintf("attempt %d's manifest of round %d superseded it with sha256 %s, it hashes to %s: it changed after it was superseded",
					max(by.Manifest.Attempt, 1), sm.Round, short(by.Manifest.Supersedes.SHA256), short(sm.SHA256))})
		}
	}
	rep.Rounds = len(effective)
	for _, sm := range objs.Manifests {
		m := sm.Manifest
		if sm.Err != nil {
			add(Problem{Round: sm.Round, Kind: ProblemBadManifest, Key: sm.Key, Got: sm.SHA256, Detail: sm.Err.Error()})
			continue
		}
		if m.Campaign != campaign || m.Round != sm.Round || max(m.Attempt, 1) != sm.Attempt {
			add(Problem{Round: sm.Round, Kind: ProblemBadManifest, Key: sm.Key, Got: sm.SHA256,
				Detail: fmt.Sprintf("the manifest says campaign %q round %d attempt %d", m.Campaign, m.Round, max(m.Attempt, 1))})
		}
		if s := m.Supersedes; s != nil {
			found := false // the key of an earlier attempt at the round (its hash is checked above)
			for _, o := range objs.Manifests {
				found = found || (o.Round == sm.Round && o.Attempt < sm.Attempt && o.Key == s.Key)
			}
			if !found {
				add(Problem{Round: sm.Round, Kind: ProblemChainBreak, Key: sm.Key, Expected: s.SHA256,
					Detail: fmt.Sprintf("supersedes %s, which is not an earlier attempt's manifest of round %d in S3", s.Key, sm.Round)})
			}
		}
		switch want, ok := prev[sm.Round-1]; {
		case sm.Round == 1 && m.PrevManifestSHA256 != "":
			add(Problem{Round: 1, Kind: ProblemChainBreak, Key: sm.Key, Got: m.PrevManifestSHA256,
				Detail: "round 1 names a previous manifest " + short(m.PrevManifestSHA256) + "; the chain starts at round 1"})
		case sm.Round > 1 && ok && m.PrevManifestSHA256 != want:
			add(Problem{Round: sm.Round, Kind: ProblemChainBreak, Key: sm.Key, Expected: want, Got: m.PrevManifestSHA256,
				Detail: fmt.Sprintf("prev_manifest_sha256 %s, but round %d's manifest hashes to %s: round %d's manifest changed after round %d was committed, or this one was altered",
					short(m.PrevManifestSHA256), sm.Round-1, short(want), sm.Round-1, sm.Round)})
		}
		if specHash != "" && m.SpecHash != specHash {
			add(Problem{Round: sm.Round, Kind: ProblemSpecMismatch, Key: artifact.SpecKey(campaign), Expected: m.SpecHash, Got: specHash,
				Detail: fmt.Sprintf("the manifest's spec_hash is %s, spec.json hashes to %s", short(m.SpecHash), short(specHash))})
		}
		for _, rec := range m.Inputs {
			uses = append(uses, artifactUse{round: sm.Round, listed: "input", rec: rec})
		}
		for _, rec := range m.Outputs {
			uses = append(uses, artifactUse{round: sm.Round, listed: "output", rec: rec})
		}
	}
	if n := len(effective); n > 0 {
		rep.Tip, rep.LastRound = effective[n-1].SHA256, effective[n-1].Round
		rep.Privacy = effective[n-1].Manifest.Privacy
	}
	for _, p := range checkPrivacy(objs.Manifests) {
		add(p)
	}
	for _, p := range checkSecAgg(ctx, st, effective) {
		add(p)
	}

	// Re-hash every distinct key once, a few at a time.
	var keys []string
	seen := map[string]bool{}
	for _, u := range uses {
		if u.rec.Ref.Bucket != "" && u.rec.Ref.Bucket != st.Bucket() {
			continue
		}
		if !seen[u.rec.Ref.Key] {
			seen[u.rec.Ref.Key] = true
			keys = append(keys, u.rec.Ref.Key)
		}
	}
	pruned := collectPrunings(objs.Manifests)
	var tally prunedTally
	got := fetchAll(ctx, st, keys, parallel)
	if ctx.Err() != nil {
		return rep, ctx.Err()
	}
	rep.Artifacts = len(keys)
	for _, u := range uses {
		rep.References++
		ref := u.rec.Ref
		p := Problem{Round: u.round, Key: ref.Key, Role: u.rec.Role, Site: u.rec.Site, Name: u.rec.Name, Listed: u.listed, Expected: ref.SHA256}
		if ref.Bucket != "" && ref.Bucket != st.Bucket() {
			p.Kind, p.Detail = ProblemUncheckedBucket, fmt.Sprintf("in bucket %s; verify reads bucket %s (--bucket)", ref.Bucket, st.Bucket())
			add(p)
			continue
		}
		f := got[ref.Key]
		if by, ok := pruned.prunes(campaign, u.rec); ok && errors.Is(f.err, store.ErrNotFound) {
			tally.add(campaign, u.rec, by)
			continue
		}
		switch {
		case errors.Is(f.err, store.ErrNotFound):
			p.Kind, p.Detail = ProblemMissingArtifact, "not in S3; the manifest lists sha256 "+short(ref.SHA256)
		case f.err != nil:
			p.Kind, p.Detail = ProblemUnreadableObject, f.err.Error()
		case f.ref.SHA256 != ref.SHA256 || f.ref.Size != ref.Size:
			p.Kind, p.Got = ProblemChangedArtifact, f.ref.SHA256
			p.Detail = fmt.Sprintf("the manifest lists sha256 %s (%d bytes), S3 holds %s (%d bytes)", short(ref.SHA256), ref.Size, short(f.ref.SHA256), f.ref.Size)
		default:
			continue
		}
		add(p)
	}
	rep.Pruned = tally.list()
	rep.Artifacts -= tally.keys()
	slices.SortStableFunc(rep.Problems, func(a, b Problem) int { return a.Round - b.Round })
	rep.OK = len(rep.Problems) == 0
	return rep, nil
}

// fetchAll re-hashes the objects at keys, parallel at a time.
func fetchAll(ctx context.Context, st *store.Store, keys []string, parallel int) map[string]fetched {
	out := make(map[string]fetched, len(keys))
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, parallel)
	for _, k := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			ref, _, err := st.GetKey(ctx, k)
			mu.Lock()
			out[k] = fetched{ref: ref, err: err}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// short is the first 12 hex digits of a sha256, for text output.
func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	if sha == "" {
		return `""`
	}
	return sha
}
