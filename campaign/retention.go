package campaign

import (
	"fmt"
	"slices"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/pipeline"
)

// PrunedArtifacts is what verify found deleted by the campaign's retention
// policy (pipeline.Pruning) for one role: artifacts the manifests list with
// their sha256 and that are no longer in S3 because a later manifest
// records that the policy pruned their round. They are not problems; an
// artifact missing for any other reason still is.
type PrunedArtifacts struct {
	Role       string `json:"role"`        // pipeline.RoleLocalModel or RoleControl
	Artifacts  int    `json:"artifacts"`   // distinct keys
	FirstRound int    `json:"first_round"` // of the pruned artifacts
	LastRound  int    `json:"last_round"`
	KeepRounds int    `json:"keep_rounds"` // the policy that pruned them
}

// Text is the line verify prints, e.g. "48 local models of rounds 1–12
// pruned by the retention policy (keep the last 3 rounds); their sha256
// stay in the manifests".
func (p PrunedArtifacts) Text() string {
	rounds := fmt.Sprintf("round %d", p.FirstRound)
	if p.LastRound != p.FirstRound {
		rounds = fmt.Sprintf("rounds %d–%d", p.FirstRound, p.LastRound)
	}
	what, s := roleNoun(p.Role), "s"
	if p.Artifacts == 1 {
		s = ""
	}
	keep := "the last round"
	if p.KeepRounds != 1 {
		keep = fmt.Sprintf("the last %d rounds", p.KeepRounds)
	}
	return fmt.Sprintf("%d %s%s of %s pruned by the retention policy (keep %s); their sha256 stay in the manifests",
		p.Artifacts, what, s, rounds, keep)
}

// roleNoun names the artifacts of a prunable role in verify's text.
func roleNoun(role string) string {
	switch role {
	case pipeline.RoleLocalModel:
		return "site model"
	case pipeline.RoleControl:
		return "control-variate update"
	}
	return role + " artifact"
}

// prunings indexes the retention steps the manifests record by the round
// they pruned.
type prunings map[int]*pipeline.Pruning

// collectPrunings gathers the prunings the manifests record. Only
// manifests that decoded count: a pruning is believed because a chained
// manifest says so (verify checks the chain).
func collectPrunings(manifests []StoredManifest) prunings {
	pp := prunings{}
	for _, sm := range manifests {
		if p := sm.Manifest.Pruned; sm.Err == nil && p != nil {
			pp[p.Round] = p
		}
	}
	return pp
}

// prunes reports whether the artifact rec of campaign, missing from S3, was
// deleted by a recorded retention step: its key is under the pruned round
// and its role is one the step pruned.
func (pp prunings) prunes(campaign string, rec pipeline.ArtifactRecord) (*pipeline.Pruning, bool) {
	round, ok := artifact.ParseRoundPrefix(campaign, rec.Ref.Key)
	if !ok {
		return nil, false
	}
	p := pp[round]
	return p, p.Prunes(round, rec.Role)
}

// prunedTally gathers the pruned artifacts by role, each key once.
type prunedTally struct {
	seen   map[string]bool
	byRole map[string]*PrunedArtifacts
}

// add counts rec, pruned by p, once per key.
func (t *prunedTally) add(campaign string, rec pipeline.ArtifactRecord, p *pipeline.Pruning) {
	if t.seen == nil {
		t.seen, t.byRole = map[string]bool{}, map[string]*PrunedArtifacts{}
	}
	if t.seen[rec.Ref.Key] {
		return
	}
	t.seen[rec.Ref.Key] = true
	g := t.byRole[rec.Role]
	if g == nil {
		g = &PrunedArtifacts{Role: rec.Role, FirstRound: p.Round, LastRound: p.Round, KeepRounds: p.KeepRounds}
		t.byRole[rec.Role] = g
	}
	g.Artifacts++
	g.FirstRound, g.LastRound = min(g.FirstRound, p.Round), max(g.LastRound, p.Round)
}

// list is the tally in the order of pipeline.PrunedRoles.
func (t *prunedTally) list() []PrunedArtifacts {
	var out []PrunedArtifacts
	for _, role := range pipeline.PrunedRoles {
		if g := t.byRole[role]; g != nil {
			out = append(out, *g)
		}
	}
	return slices.Clip(out)
}

// keys is how many distinct keys were found pruned.
func (t *prunedTally) keys() int { return len(t.seen) }

// prunedCount is the number of pruned artifacts over all roles.
func prunedCount(pp []PrunedArtifacts) int {
	n := 0
	for _, p := range pp {
		n += p.Artifacts
	}
	return n
}
