package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/store"
)

// storedManifest is one round manifest as found in S3.
type storedManifest struct {
	Round    int // from the key
	Key      string
	SHA256   string // of the bytes stored at Key
	Manifest pipeline.RoundManifest
	Err      error // the bytes do not decode as a manifest; Manifest is zero
}

// campaignObjects is what a listing of a campaign's prefix holds.
type campaignObjects struct {
	manifests   []storedManifest // round order
	roundKeys   map[int]int      // round → objects under its prefix, manifest included
	specPresent bool
}

// readManifests lists the campaign's prefix and reads every round manifest
// in round order. A manifest that does not decode is returned with Err set;
// an error is returned only when S3 cannot be read.
func readManifests(ctx context.Context, st *store.Store, campaign string) (campaignObjects, error) {
	keys, err := st.List(ctx, artifact.CampaignPrefix(campaign))
	if err != nil {
		return campaignObjects{}, err
	}
	objs := campaignObjects{roundKeys: map[int]int{}}
	for _, k := range keys {
		if k == artifact.SpecKey(campaign) {
			objs.specPresent = true
		}
		r, ok := artifact.ParseRoundPrefix(campaign, k)
		if !ok {
			continue
		}
		objs.roundKeys[r]++
		if k != artifact.ManifestKey(campaign, r) {
			continue
		}
		ref, b, err := st.GetKey(ctx, k)
		if err != nil {
			return campaignObjects{}, err
		}
		sm := storedManifest{Round: r, Key: k, SHA256: ref.SHA256}
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&sm.Manifest); err != nil {
			sm.Err, sm.Manifest = fmt.Errorf("not a round manifest: %w", err), pipeline.RoundManifest{}
		}
		objs.manifests = append(objs.manifests, sm)
	}
	slices.SortFunc(objs.manifests, func(a, b storedManifest) int { return a.Round - b.Round })
	return objs, nil
}

// Kinds of verify problems.
const (
	problemMissingArtifact  = "missing_artifact"  // listed in a manifest, not in S3
	problemChangedArtifact  = "changed_artifact"  // in S3 with other bytes than the manifest says
	problemMissingManifest  = "missing_manifest"  // a round without its manifest
	problemBadManifest      = "bad_manifest"      // does not decode, or names another campaign or round
	problemChainBreak       = "chain_break"       // prev_manifest_sha256 ≠ sha256 of the previous manifest
	problemSpecMismatch     = "spec_mismatch"     // spec_hash ≠ hash of spec.json
	problemUncheckedBucket  = "unchecked_bucket"  // artifact in another bucket than the one verified
	problemTipMismatch      = "tip_mismatch"      // the last manifest differs from the one Temporal recorded
	problemUnreadableObject = "unreadable_object" // S3 answered with an error other than not found
)

// verifyProblem is one thing wrong with a campaign's audit record.
type verifyProblem struct {
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

func (p verifyProblem) text() string {
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

// verifyReport is what `verify --format json` prints.
type verifyReport struct {
	Campaign   string          `json:"campaign"`
	OK         bool            `json:"ok"`
	Rounds     int             `json:"rounds"`     // manifests read
	Artifacts  int             `json:"artifacts"`  // distinct keys re-hashed
	References int             `json:"references"` // artifact records checked (a key may be listed by several rounds)
	SpecHash   string          `json:"spec_hash,omitempty"`
	LastRound  int             `json:"last_round"`           // round of the last manifest
	Tip        string          `json:"tip_sha256,omitempty"` // sha256 of the last manifest
	TipChecked bool            `json:"tip_checked"`          // the tip matched the last manifest Temporal recorded
	Problems   []verifyProblem `json:"problems"`
}

func (r verifyReport) summary() string {
	return fmt.Sprintf("verified %d rounds, %d artifacts", r.Rounds, r.Artifacts)
}

// runVerify re-hashes every artifact the campaign's manifests list and
// checks the chain of manifest hashes (DESIGN §4). Every problem is printed
// with its round and key; any problem exits with status 1.
func runVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var conn connFlags
	conn.register(fs)
	parallel := fs.Int("parallel", 4, "objects fetched at once")
	campaign, err := oneCampaignArg(fs, args)
	if err != nil {
		return err
	}
	if err := conn.check(); err != nil {
		return err
	}
	if err := artifact.ValidateName(campaign); err != nil {
		return inputErrorf("campaign: %v", err)
	}
	if *parallel < 1 {
		return inputErrorf("--parallel %d: want >= 1", *parallel)
	}
	e, err := conn.connect(ctx, stderr)
	if err != nil {
		return err
	}
	defer e.Close()
	rep, err := verifyCampaign(ctx, e.store, campaign, *parallel)
	if err != nil {
		return err
	}
	// The chain protects every manifest but the last; the campaign's
	// Temporal record names the last one with its sha256, when Temporal
	// still has it.
	if st, err := campaignStatus(ctx, e.client, campaign); err == nil && st.LastManifest != nil {
		checkTip(&rep, *st.LastManifest)
	}
	if conn.format == "json" {
		if err := json.NewEncoder(stdout).Encode(rep); err != nil {
			return err
		}
	} else {
		for _, p := range rep.Problems {
			fmt.Fprintln(stdout, p.text())
		}
		if rep.OK {
			fmt.Fprintln(stdout, rep.summary())
		}
	}
	if !rep.OK {
		noun := "problems"
		if len(rep.Problems) == 1 {
			noun = "problem"
		}
		return fmt.Errorf("campaign %s: %d %s in its audit record (%s)", campaign, len(rep.Problems), noun, rep.summary())
	}
	return nil
}

// checkTip compares the last manifest verified with the one the campaign's
// workflow recorded when it committed its last round.
func checkTip(rep *verifyReport, last pipeline.ArtifactRef) {
	round, ok := artifact.ParseRoundPrefix(rep.Campaign, last.Key)
	switch {
	case !ok || round < rep.LastRound:
		return // the campaign is running ahead of its status; nothing to compare
	case round > rep.LastRound:
		for _, p := range rep.Problems {
			if p.Kind == problemMissingManifest && p.Key == last.Key {
				return
			}
		}
		rep.Problems = append(rep.Problems, verifyProblem{
			Round: round, Kind: problemMissingManifest, Key: last.Key, Expected: last.SHA256,
			Detail: fmt.Sprintf("Temporal recorded round %d's manifest with sha256 %s; S3 has manifests up to round %d only", round, short(last.SHA256), rep.LastRound),
		})
		rep.OK = false
	case last.SHA256 != rep.Tip:
		rep.Problems = append(rep.Problems, verifyProblem{
			Round: round, Kind: problemTipMismatch, Key: last.Key, Expected: last.SHA256, Got: rep.Tip,
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

// verifyCampaign checks a campaign's audit record. The error is for S3
// failing; everything wrong with the record is in the report's Problems.
func verifyCampaign(ctx context.Context, st *store.Store, campaign string, parallel int) (verifyReport, error) {
	rep := verifyReport{Campaign: campaign, Problems: []verifyProblem{}}
	objs, err := readManifests(ctx, st, campaign)
	if err != nil {
		return rep, err
	}
	if len(objs.manifests) == 0 && len(objs.roundKeys) == 0 {
		return rep, fmt.Errorf("campaign %s: nothing under s3://%s/%s", campaign, st.Bucket(), artifact.CampaignPrefix(campaign))
	}
	add := func(p verifyProblem) { rep.Problems = append(rep.Problems, p) }

	// The spec, if stored: every manifest's spec_hash must be its hash.
	specHash := ""
	if objs.specPresent {
		var spec pipeline.CampaignSpec
		if _, err := st.GetJSONKey(ctx, artifact.SpecKey(campaign), &spec); err != nil {
			add(verifyProblem{Kind: problemBadManifest, Key: artifact.SpecKey(campaign), Detail: err.Error()})
		} else {
			specHash = spec.WithDefaults().SpecHash()
			rep.SpecHash = specHash
		}
	}

	// Rounds with objects but no manifest, and gaps in the rounds.
	have := map[int]bool{}
	last := 0
	for _, m := range objs.manifests {
		have[m.Round] = true
		last = max(last, m.Round)
	}
	for r := range objs.roundKeys {
		last = max(last, r)
	}
	for r := 1; r <= last; r++ {
		if have[r] {
			continue
		}
		detail := "no manifest: the round was never committed, or its manifest was deleted"
		if n := objs.roundKeys[r]; n > 0 {
			detail = fmt.Sprintf("no manifest, though %d objects are under the round (deleted, or the round is still running)", n)
		}
		add(verifyProblem{Round: r, Kind: problemMissingManifest, Key: artifact.ManifestKey(campaign, r), Detail: detail})
	}

	// The chain, and each manifest's own claims.
	var uses []artifactUse
	prev := map[int]string{} // round → sha256 of its manifest
	for _, m := range objs.manifests {
		prev[m.Round] = m.SHA256
	}
	for _, sm := range objs.manifests {
		rep.Rounds++
		m := sm.Manifest
		if sm.Err != nil {
			add(verifyProblem{Round: sm.Round, Kind: problemBadManifest, Key: sm.Key, Got: sm.SHA256, Detail: sm.Err.Error()})
			continue
		}
		if m.Campaign != campaign || m.Round != sm.Round {
			add(verifyProblem{Round: sm.Round, Kind: problemBadManifest, Key: sm.Key, Got: sm.SHA256,
				Detail: fmt.Sprintf("the manifest says campaign %q round %d", m.Campaign, m.Round)})
		}
		switch want, ok := prev[sm.Round-1]; {
		case sm.Round == 1 && m.PrevManifestSHA256 != "":
			add(verifyProblem{Round: 1, Kind: problemChainBreak, Key: sm.Key, Got: m.PrevManifestSHA256,
				Detail: "round 1 names a previous manifest " + short(m.PrevManifestSHA256) + "; the chain starts at round 1"})
		case sm.Round > 1 && ok && m.PrevManifestSHA256 != want:
			add(verifyProblem{Round: sm.Round, Kind: problemChainBreak, Key: sm.Key, Expected: want, Got: m.PrevManifestSHA256,
				Detail: fmt.Sprintf("prev_manifest_sha256 %s, but round %d's manifest hashes to %s: round %d's manifest changed after round %d was committed, or this one was altered",
					short(m.PrevManifestSHA256), sm.Round-1, short(want), sm.Round-1, sm.Round)})
		}
		if specHash != "" && m.SpecHash != specHash {
			add(verifyProblem{Round: sm.Round, Kind: problemSpecMismatch, Key: artifact.SpecKey(campaign), Expected: m.SpecHash, Got: specHash,
				Detail: fmt.Sprintf("the manifest's spec_hash is %s, spec.json hashes to %s", short(m.SpecHash), short(specHash))})
		}
		for _, rec := range m.Inputs {
			uses = append(uses, artifactUse{round: sm.Round, listed: "input", rec: rec})
		}
		for _, rec := range m.Outputs {
			uses = append(uses, artifactUse{round: sm.Round, listed: "output", rec: rec})
		}
	}
	if n := len(objs.manifests); n > 0 {
		rep.Tip, rep.LastRound = objs.manifests[n-1].SHA256, objs.manifests[n-1].Round
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
	got := fetchAll(ctx, st, keys, parallel)
	if ctx.Err() != nil {
		return rep, ctx.Err()
	}
	rep.Artifacts = len(keys)
	for _, u := range uses {
		rep.References++
		ref := u.rec.Ref
		p := verifyProblem{Round: u.round, Key: ref.Key, Role: u.rec.Role, Site: u.rec.Site, Name: u.rec.Name, Listed: u.listed, Expected: ref.SHA256}
		if ref.Bucket != "" && ref.Bucket != st.Bucket() {
			p.Kind, p.Detail = problemUncheckedBucket, fmt.Sprintf("in bucket %s; verify reads bucket %s (--bucket)", ref.Bucket, st.Bucket())
			add(p)
			continue
		}
		f := got[ref.Key]
		switch {
		case errors.Is(f.err, store.ErrNotFound):
			p.Kind, p.Detail = problemMissingArtifact, "not in S3; the manifest lists sha256 "+short(ref.SHA256)
		case f.err != nil:
			p.Kind, p.Detail = problemUnreadableObject, f.err.Error()
		case f.ref.SHA256 != ref.SHA256 || f.ref.Size != ref.Size:
			p.Kind, p.Got = problemChangedArtifact, f.ref.SHA256
			p.Detail = fmt.Sprintf("the manifest lists sha256 %s (%d bytes), S3 holds %s (%d bytes)", short(ref.SHA256), ref.Size, short(f.ref.SHA256), f.ref.Size)
		default:
			continue
		}
		add(p)
	}
	slices.SortStableFunc(rep.Problems, func(a, b verifyProblem) int { return a.Round - b.Round })
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
