package console

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/pipeline"
)

// CampaignRow is one campaign as the campaigns page lists it, and an
// element of GET /api/campaigns. The numbers are the manifests' (the last
// committed round's means, the largest ε any site has spent so far); the
// state is Temporal's.
type CampaignRow struct {
	Campaign   string `json:"campaign"`        // the campaign's name, as `starter status` takes it
	Sweep      string `json:"sweep,omitempty"` // the sweep that ran it; absent for a campaign `starter run` started
	WorkflowID string `json:"workflow_id"`     // its workflow: its name, or "<sweep>/<campaign>" for a sweep's campaign
	Method     string `json:"method"`          // the spec's method
	Preset     string `json:"preset"`          // the spec's preset
	// State is running, paused, stopping, done, stopped or failed
	// (pipeline.State*), or terminated, canceled or timed_out as Temporal
	// closed the workflow; unknown when Temporal no longer holds it.
	State string `json:"state"`
	// StateNote says why a campaign is paused, stopped or failed, or that
	// a running one did not answer the status query (no server worker).
	StateNote     string   `json:"state_note,omitempty"`
	Attempt       int      `json:"attempt"`        // the attempt that wrote the last manifest (1: the first)
	RoundsDone    int      `json:"rounds_done"`    // committed rounds (each round's latest attempt)
	RoundsPlanned int      `json:"rounds_planned"` // the spec's rounds (0 when no spec is stored)
	FinalAUC      *float64 `json:"final_auc"`      // the last committed round's mean AUC over the evaluated sites; null before the first
	FinalAcc      *float64 `json:"final_acc"`      // the same round's mean accuracy
	// Epsilon is the largest ε any site has spent so far under dp record
	// (the last manifest's privacy record); absent when not private.
	Epsilon       *float64 `json:"epsilon,omitempty"`
	EpsilonBudget float64  `json:"epsilon_budget,omitempty"` // dp_epsilon, the budget ε is held to (absent: none)
	// Verify is what is known of the audit record: "chain ok" (every
	// manifest read chains to the one before it), "verified" (a verify the
	// console ran on request passed at the current last manifest), "N
	// problems" (that verify found some), "chain broken: …", or "no
	// manifest".
	Verify  string    `json:"verify"`
	Started time.Time `json:"started,omitzero"` // when its workflow started
	Ended   time.Time `json:"ended,omitzero"`   // when its workflow closed; absent while it runs
}

// CampaignDetail is one campaign's page and GET /api/campaigns/<campaign>:
// its row, every round from the manifests, and the chain of manifests.
type CampaignDetail struct {
	CampaignRow
	Sites   []string     `json:"sites"`             // the federation in spec order
	Rounds  []RoundView  `json:"rounds"`            // each round's latest attempt, in round order
	Privacy *PrivacyView `json:"privacy,omitempty"` // the last privacy record (dp record); per-site ε per round is in rounds[].sites[]
	// Chain lists every manifest, superseded ones included, in round and
	// attempt order, with its sha256 and the one it chains to.
	Chain []ChainLink `json:"chain"`
	// Problems are manifests that could not be read or do not chain; the
	// rounds shown leave those out. Empty when the record reads cleanly.
	Problems []string  `json:"problems"`
	WebUI    string    `json:"web_ui,omitempty"` // the campaign's workflow in the Temporal Web UI; absent when the console does not know the UI
	Updated  time.Time `json:"updated"`          // when the console read this
}

// RoundView is one round of a campaign, from its manifest.
type RoundView struct {
	Round           int                 `json:"round"`                    // the round
	Attempt         int                 `json:"attempt"`                  // the attempt that committed it (1: the first)
	Outcome         string              `json:"outcome"`                  // committed or failed
	FailureReason   string              `json:"failure_reason,omitempty"` // which phase fell below the quorum, for a failed round
	Participants    []string            `json:"participants"`             // the sites that completed every phase
	Dropped         []pipeline.SiteDrop `json:"dropped"`                  // the sites that left, with the phase and why
	Flagged         []string            `json:"flagged"`                  // the sites the drift check flagged
	MaxDrift        float64             `json:"max_drift"`                // the largest Δ_k (Eq. 9) of any site, as `starter history` prints it
	MeanAUC         float64             `json:"mean_auc"`                 // the unweighted mean AUC over the evaluated sites (auc_r)
	MeanAcc         float64             `json:"mean_acc"`                 // the unweighted mean accuracy (acc_r)
	ValAUC          *float64            `json:"val_auc,omitempty"`        // the mean validation AUC; absent without validation_fraction
	ValAcc          *float64            `json:"val_acc,omitempty"`        // the mean validation accuracy
	Missing         []string            `json:"missing,omitempty"`        // a mean no evaluated site reported (model external)
	ReleasedNumbers int                 `json:"released_numbers"`         // how many numbers the sites released in all
	Sites           []SiteRound         `json:"sites"`                    // every site of the federation, in spec order
	Manifest        string              `json:"manifest"`                 // the manifest's S3 address
	ManifestURL     string              `json:"manifest_url"`             // the console's address of its bytes
	SHA256          string              `json:"sha256"`                   // the sha256 of those bytes
	PrevSHA256      string              `json:"prev_sha256"`              // the previous round's manifest's sha256, as this one records it
}

// SiteRound is one site in one round, from the manifest.
type SiteRound struct {
	Site            string             `json:"site"`                       // the site
	Participated    bool               `json:"participated"`               // it completed every phase
	DropPhase       string             `json:"drop_phase,omitempty"`       // where it left the round
	DropReason      string             `json:"drop_reason,omitempty"`      // why it left
	Cluster         *int               `json:"cluster,omitempty"`          // its cluster (methods that cluster)
	Trust           *float64           `json:"trust,omitempty"`            // its trust score
	Drift           *float64           `json:"drift,omitempty"`            // its Δ_k (Eq. 9)
	Flagged         bool               `json:"flagged"`                    // the drift check flagged it
	AUC             *float64           `json:"auc,omitempty"`              // its model's AUC on its test split
	Acc             *float64           `json:"acc,omitempty"`              // its model's accuracy on its test split
	ValAUC          *float64           `json:"val_auc,omitempty"`          // the AUC on its validation rows
	ValAcc          *float64           `json:"val_acc,omitempty"`          // the accuracy on its validation rows
	Released        []pipeline.Release `json:"released"`                   // what it released, kind and count
	ReleasedNumbers int                `json:"released_numbers"`           // how many numbers in all
	Epsilon         *float64           `json:"epsilon,omitempty"`          // the ε it has spent so far (dp record)
	EpsilonRound    *float64           `json:"epsilon_round,omitempty"`    // the ε of this round's releases
	EpsilonBudget   *float64           `json:"epsilon_budget,omitempty"`   // the most ε it may spend
	LifetimeEpsilon *float64           `json:"lifetime_epsilon,omitempty"` // its lifetime ε after the round, from its own ledger (every campaign, sweep and experiment on its data); absent when it reported none
	LifetimeBudget  *float64           `json:"lifetime_budget,omitempty"`  // its operator's lifetime limit (absent: none, or not reported)
}

// PrivacyView is a private campaign's privacy record as its last
// manifest holds it.
type PrivacyView struct {
	Delta   float64 `json:"delta"`   // the δ every ε is at
	Budget  float64 `json:"budget"`  // dp_epsilon (0: none)
	Epsilon float64 `json:"epsilon"` // the largest ε of any site so far
}

// ChainLink is one manifest of the chain.
type ChainLink struct {
	Round       int    `json:"round"`        // its round
	Attempt     int    `json:"attempt"`      // its attempt (1: the first)
	Key         string `json:"key"`          // its key in the bucket
	ManifestURL string `json:"manifest_url"` // the console's address of its bytes
	SHA256      string `json:"sha256"`       // their sha256
	PrevSHA256  string `json:"prev_sha256"`  // the previous round's manifest's sha256 it records
	// Linked says PrevSHA256 is the sha256 of the previous round's latest
	// manifest ("" for round 1); false is a break verify reports.
	Linked     bool `json:"linked"`
	Superseded bool `json:"superseded"` // a later attempt at the round replaced it
}

// sitePrivacy is the one place that reads what a manifest records of a
// site's privacy (pipeline.RoundPrivacy): ε so far, this round's, and the
// budget it is held to. A manifest that records a budget per site (a
// site's own limit) is read here too, so every page follows.
type sitePrivacy struct {
	epsilon, round, budget float64
	hasBudget              bool
	lifetime               *pipeline.SiteLifetime
}

func privacyOf(m pipeline.RoundManifest) map[string]sitePrivacy {
	p := m.Privacy
	if p == nil {
		return nil
	}
	out := make(map[string]sitePrivacy, len(p.Sites))
	for _, s := range p.Sites {
		out[s.Site] = sitePrivacy{epsilon: s.Epsilon, round: s.EpsilonRound, budget: p.Budget, hasBudget: p.Budget > 0, lifetime: s.Lifetime}
	}
	return out
}

// manifestURL is the console's address of the manifest at key (which
// is under campaigns/).
func manifestURL(key string) string { return "/" + key }

func ptr[T any](v T) *T { return &v }

// finite returns a pointer to v, or nil when v is NaN or infinite (JSON
// has no such numbers).
func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// summarise fills row's numbers and verdict from the campaign's manifests
// (read from bucket), and its method and preset when no spec said them.
// verified is the verify the console ran for the campaign on request, if
// any.
func summarise(row *CampaignRow, objs campaign.Objects, bucket string, verified *campaign.VerifyReport) {
	effective, _ := objs.Effective()
	row.RoundsDone, row.Attempt = 0, 0
	row.FinalAUC, row.FinalAcc, row.Epsilon, row.EpsilonBudget = nil, nil, nil, 0
	for _, sm := range effective {
		if sm.Err != nil {
			continue
		}
		m := sm.Manifest
		row.Attempt = max(m.Attempt, 1)
		if row.Method == "" {
			row.Method, row.Preset = string(m.Method), m.Preset
		}
		if m.Privacy != nil {
			row.Epsilon, row.EpsilonBudget = ptr(m.Privacy.Epsilon()), m.Privacy.Budget
		}
		if m.Outcome == pipeline.OutcomeCommitted {
			row.RoundsDone++
			row.FinalAUC, row.FinalAcc = ptr(m.Mean.AUC), ptr(m.Mean.Accuracy)
		}
	}
	_, chainErr := campaign.HistoryOf(objs, bucket)
	tip := ""
	if n := len(effective); n > 0 {
		tip = effective[n-1].SHA256
	}
	switch {
	case len(objs.Manifests) == 0:
		row.Verify = "no manifest"
	case verified != nil && verified.Tip == tip && verified.OK:
		row.Verify = "verified"
	case verified != nil && verified.Tip == tip:
		row.Verify = plural(len(verified.Problems), "problem")
	case chainErr != nil:
		row.Verify = "chain broken: " + chainErr.Error()
	default:
		row.Verify = "chain ok"
	}
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// buildCampaign is a campaign's page from its row (already summarised),
// its federation (the spec's sites, nil when no spec is stored) and its
// manifests.
func buildCampaign(row CampaignRow, sites []string, objs campaign.Objects, bucket string) CampaignDetail {
	d := CampaignDetail{CampaignRow: row, Sites: sites, Rounds: []RoundView{}, Chain: []ChainLink{}, Problems: []string{}}
	effective, _ := objs.Effective()
	if d.Sites == nil {
		for i := len(effective) - 1; i >= 0; i-- {
			if effective[i].Err == nil {
				d.Sites = effective[i].Manifest.Sites
				break
			}
		}
	}
	latest := map[string]bool{}
	prev := map[int]string{} // round → sha256 of its latest manifest
	for _, sm := range effective {
		latest[sm.Key] = true
		prev[sm.Round] = sm.SHA256
	}
	for _, sm := range objs.Manifests {
		link := ChainLink{Round: sm.Round, Attempt: sm.Attempt, Key: sm.Key, ManifestURL: manifestURL(sm.Key),
			SHA256: sm.SHA256, PrevSHA256: sm.Manifest.PrevManifestSHA256, Superseded: !latest[sm.Key]}
		link.Linked = sm.Err == nil && link.PrevSHA256 == prev[sm.Round-1]
		if sm.Err != nil {
			d.Problems = append(d.Problems, fmt.Sprintf("round %d: %s: %v", sm.Round, sm.Key, sm.Err))
		} else if !link.Linked {
			d.Problems = append(d.Problems, fmt.Sprintf("round %d: %s records prev_manifest_sha256 %q, not the sha256 of round %d's manifest %q", sm.Round, sm.Key, link.PrevSHA256, sm.Round-1, prev[sm.Round-1]))
		}
		d.Chain = append(d.Chain, link)
	}
	for _, sm := range effective {
		if sm.Err != nil {
			continue
		}
		d.Rounds = append(d.Rounds, roundView(sm, d.Sites, bucket))
		if p := sm.Manifest.Privacy; p != nil {
			d.Privacy = &PrivacyView{Delta: p.Delta, Budget: p.Budget, Epsilon: p.Epsilon()}
		}
	}
	return d
}

// roundView is one round from its manifest, sites in the order given.
func roundView(sm campaign.StoredManifest, sites []string, bucket string) RoundView {
	m := sm.Manifest
	r := RoundView{
		Round: m.Round, Attempt: max(m.Attempt, 1), Outcome: m.Outcome, FailureReason: m.FailureReason,
		Participants: nonNil(m.Participants), Dropped: nonNil(m.Dropped), Flagged: nonNil(m.Flagged),
		MeanAUC: m.Mean.AUC, MeanAcc: m.Mean.Accuracy, ValAUC: m.Mean.ValAUC, ValAcc: m.Mean.ValAccuracy, Missing: m.Mean.Missing,
		Manifest: "s3://" + bucket + "/" + sm.Key, ManifestURL: manifestURL(sm.Key), SHA256: sm.SHA256, PrevSHA256: m.PrevManifestSHA256,
	}
	priv := privacyOf(m)
	order := sites
	for _, s := range m.Sites { // a site the spec does not list still shows
		if !slices.Contains(order, s) {
			order = append(slices.Clip(order), s)
		}
	}
	for _, site := range order {
		s := SiteRound{Site: site, Participated: slices.Contains(m.Participants, site), Flagged: slices.Contains(m.Flagged, site), Released: []pipeline.Release{}}
		if i := slices.IndexFunc(m.Dropped, func(x pipeline.SiteDrop) bool { return x.Site == site }); i >= 0 {
			s.DropPhase, s.DropReason = m.Dropped[i].Phase, m.Dropped[i].Reason
		}
		if i := slices.IndexFunc(m.Clusters, func(x pipeline.SiteCluster) bool { return x.Site == site }); i >= 0 {
			c := m.Clusters[i]
			s.Cluster, s.Trust, s.Drift = ptr(c.Cluster), ptr(c.Trust), ptr(c.Drift)
			s.Flagged = s.Flagged || c.Flagged
			r.MaxDrift = max(r.MaxDrift, c.Drift)
		}
		if i := slices.IndexFunc(m.Metrics, func(x pipeline.SiteMetrics) bool { return x.Site == site }); i >= 0 {
			x := m.Metrics[i]
			if !slices.Contains(x.Missing, "auc") {
				s.AUC = ptr(x.AUC)
			}
			if !slices.Contains(x.Missing, "accuracy") {
				s.Acc = ptr(x.Accuracy)
			}
			s.ValAUC, s.ValAcc = x.ValAUC, x.ValAccuracy
		}
		if i := slices.IndexFunc(m.Released, func(x pipeline.SiteReleases) bool { return x.Site == site }); i >= 0 {
			s.Released = m.Released[i].Items
			_, s.ReleasedNumbers = campaign.ReleasedText(s.Released)
			r.ReleasedNumbers += s.ReleasedNumbers
		}
		if p, ok := priv[site]; ok {
			s.Epsilon, s.EpsilonRound = ptr(p.epsilon), ptr(p.round)
			if p.hasBudget {
				s.EpsilonBudget = ptr(p.budget)
			}
			if l := p.lifetime; l != nil {
				s.LifetimeEpsilon, s.LifetimeBudget = ptr(l.Epsilon), l.Budget
			}
		}
		r.Sites = append(r.Sites, s)
	}
	return r
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
