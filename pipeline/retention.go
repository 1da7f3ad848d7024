package pipeline

import "fmt"

// PrunedRoles are the manifest roles of the artifacts a retention policy
// deletes: what sites upload each round at the size of a model (their
// local model and SCAFFOLD's control-variate update). Only the round's own
// Aggregate reads them, so no later round, no resumed campaign and no
// method's state needs them once the round is committed. Everything else
// stays: aggregates and server state (what later rounds start from), site
// state and descriptors (a site that misses rounds carries an older one
// forward), clustering, metrics and manifests.
var PrunedRoles = []string{RoleLocalModel, RoleControl}

// Pruning is what a round's retention step deletes once the round's
// manifest is committed: the PrunedRoles artifacts of round Round, which
// its own manifest still lists with their sha256. It is recorded in the
// manifest of the round that prunes, so that verify can tell an artifact
// the policy deleted from one that was lost.
type Pruning struct {
	// KeepRounds is the policy (CampaignSpec.KeepSiteModels): the site
	// uploads of the last KeepRounds rounds stay.
	KeepRounds int      `json:"keep_rounds"`
	Round      int      `json:"round"` // whose artifacts are deleted
	Roles      []string `json:"roles"` // PrunedRoles at the time
}

// PruningAt returns what round deletes under the policy keep (the number of
// most recent rounds whose site uploads stay; 0 keeps everything): after
// round r commits, round r-keep's uploads go, so that rounds r-keep+1 … r
// remain. It returns nil when nothing goes (keep = 0, or r <= keep). Each
// round prunes exactly one earlier round, so a campaign of R rounds ends
// with the uploads of its last min(keep, R) rounds, and a retried or
// replayed round deletes the same keys again, which is harmless.
func PruningAt(keep, round int) *Pruning {
	if keep <= 0 || round <= keep {
		return nil
	}
	return &Pruning{KeepRounds: keep, Round: round - keep, Roles: append([]string(nil), PrunedRoles...)}
}

// Prunes reports whether p deletes the artifact with role role of round
// round.
func (p *Pruning) Prunes(round int, role string) bool {
	if p == nil || round != p.Round {
		return false
	}
	for _, r := range p.Roles {
		if r == role {
			return true
		}
	}
	return false
}

// validateKeepSiteModels checks CampaignSpec.KeepSiteModels.
func validateKeepSiteModels(keep int) error {
	if keep < 0 {
		return fmt.Errorf("keep_site_models = %d: must be >= 0 (0 keeps every round's site models)", keep)
	}
	return nil
}
