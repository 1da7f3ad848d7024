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
	// Campaign is the campaign's name, as `starter status` takes it.
	Campaign string `json:"campaign"`
	// Sweep is the sweep that ran the campaign; absent for a campaign
	// `starter run` started.
	Sweep string `json:"sweep,omitempty"`
	// WorkflowID is the campaign's workflow: its name, or
	// "<sweep>/<campaign>" for a sweep's campaign.
	WorkflowID string `json:"workflow_id"`
	Method     string `json:"method"`
	Preset     string `json:"preset"`
	// State is running, paused, stopping, done, stopped or failed
	// (pipeline.State*), or terminated, canceled or timed_out as Temporal
	// closed the workflow; unknown when Temporal no longer holds it.
	State string `json:"state"`
	// StateNote says why a campaign is paused, stopped or failed, or that
	// a running one did not answer the status query (no server worker).
	StateNote string `json:"state_note,omitempty"`
	// Attempt is the attempt that wrote the last manifest (1: the first).
	Attempt int `json:"attempt"`
	// RoundsDone counts the committed rounds (their latest attempts);
	// RoundsPlanned is the spec's rounds (0 when no spec is stored).
	RoundsDone    int `json:"rounds_done"`
	RoundsPlanned int `json:"rounds_planned"`
	// FinalAUC and FinalAcc are the last committed round's mean AUC and
	// accuracy over the evaluated sites; null before the first round.
	FinalAUC *float64 `json:"final_auc"`
	FinalAcc *float64 `json:"final_acc"`
	// Epsilon is the largest ε any site has spent so far under dp record
	// (the last manifest's privacy record), EpsilonBudget the campaign's
	// budget dp_epsilon; absent when the campaign is not private.
	Epsilon       *float64 `json:"epsilon,omitempty"`
	EpsilonBudget float64  `json:"epsilon_budget,omitempty"`
	// Verify is what is known of the audit record: "chain ok" (every
	// manifest read chains to the one before it), "verified" (a verify the
	// console ran on request passed at the current last manifest), "N
	// problems" (that verify found some), "chain broken: …", or "no
	// manifest".
	Verify  string    `json:"verify"`
	Started time.Time `json:"started,omitzero"`
	Ended   time.Time `json:"ended,omitzero"`
}

// CampaignDetail is one campaign's page and GET /api/campaigns/<campaign>:
// its row, every round from the manifests, and the chain of manifests.
type CampaignDetail struct {
	CampaignRow
	// Sites is the federation in spec order.
	Sites []string `json:"sites"`
	// Rounds are the rounds' latest attempts, in round order.
	Rounds []RoundView `json:"rounds"`
	// Privacy is the campaign's privacy record (dp record); absent
	// otherwise. Each round's per-site ε is in Rounds[].Sites[].
	Privacy *PrivacyView `json:"privacy,omitempty"`
	// Chain lists every manifest, superseded ones included, in round and
	// attempt order, with its sha256 and the one it chains to.
	Chain []ChainLink `json:"chain"`
	// Problems are manifests that could not be read or do not chain; the
	// rounds shown leave those out. Empty when the record reads cleanly.
	Problems []string `json:"problems"`
	// WebUI is the campaign's workflow in the Temporal Web UI; absent
	// when the console was not told where the UI is.
	WebUI string `json:"web_ui,omitempty"`
	// Updated is when the console read this.
	Updated time.Time `json:"updated"`
}

// RoundView is one round of a campaign, from its manifest.
type RoundView struct {
	Round         int    `json:"round"`
	Attempt       int    `json:"attempt"`
	Outcome       string `json:"outcome"`
	FailureReason string `json:"failure_reason,omitempty"`
	// Participants completed every phase; Dropped left, with the phase
	// and why.
	Participants []string            `json:"participants"`
	Dropped      []pipeline.SiteDrop `json:"dropped"`
	Flagged      []string            `json:"flagged"`
	// MaxDrift is the largest Δ_k (Eq. 9) of any site this round, as
	// `starter history` prints it.
	MaxDrift float64 `json:"max_drift"`
	// MeanAUC and MeanAcc are the round's unweighted means over its
	// evaluated sites (auc_r, acc_r); ValAUC and ValAcc the validation
	// means, absent without validation_fraction.
	MeanAUC float64  `json:"mean_auc"`
	MeanAcc float64  `json:"mean_acc"`
	ValAUC  *float64 `json:"val_auc,omitempty"`
	ValAcc  *float64 `json:"val_acc,omitempty"`
	// Missing names a mean no evaluated site reported (model external).
	Missing []string `json:"missing,omitempty"`
	// ReleasedNumbers is how many numbers the sites released in all.
	ReleasedNumbers int `json:"released_numbers"`
	// Sites is every site of the federation in spec order.
	Sites []SiteRound `json:"sites"`
	// Manifest is the manifest's S3 address, ManifestURL the console's
	// address of its bytes, SHA256 their hash, PrevSHA256 the previous
	// round's manifest's hash it records.
	Manifest    string `json:"manifest"`
	ManifestURL string `json:"manifest_url"`
	SHA256      string `json:"sha256"`
	PrevSHA256  string `json:"prev_sha256"`
}

// SiteRound is one site in one round, from the manifest.
type SiteRound struct {
	Site         string `json:"site"`
	Participated bool   `json:"participated"`
	// DropPhase and DropReason say where and why the site left the round.
	DropPhase  string `json:"drop_phase,omitempty"`
	DropReason string `json:"drop_reason,omitempty"`
	// Cluster, Trust and Drift are what clustering and the drift check
	// said of the site (absent for methods without them).
	Cluster *int     `json:"cluster,omitempty"`
	Trust   *float64 `json:"trust,omitempty"`
	Drift   *float64 `json:"drift,omitempty"`
	Flagged bool     `json:"flagged"`
	// AUC and Acc score the site's model on its test split; ValAUC and
	// ValAcc on its validation rows.
	AUC    *float64 `json:"auc,omitempty"`
	Acc    *float64 `json:"acc,omitempty"`
	ValAUC *float64 `json:"val_auc,omitempty"`
	ValAcc *float64 `json:"val_acc,omitempty"`
	// Released is what the site released in the round, ReleasedNumbers
	// how many numbers in all.
	Released        []pipeline.Release `json:"released"`
	ReleasedNumbers int                `json:"released_numbers"`
	// Epsilon is the ε the site has spent so far and EpsilonRound this
	// round's, under dp record; EpsilonBudget the most it may spend.
	Epsilon       *float64 `json:"epsilon,omitempty"`
	EpsilonRound  *float64 `json:"epsilon_round,omitempty"`
	EpsilonBudget *float64 `json:"epsilon_budget,omitempty"`
}

// PrivacyView is a private campaign's privacy record as its last
// manifest holds it.
type PrivacyView struct {
	Delta float64 `json:"delta"`
	// Budget is dp_epsilon (0: none).
	Budget float64 `json:"budget"`
	// Epsilon is the largest ε of any site so far.
	Epsilon float64 `json:"epsilon"`
}

// ChainLink is one manifest of the chain.
type ChainLink struct {
	Round       int    `json:"round"`
	Attempt     int    `json:"attempt"`
	Key         string `json:"key"`
	ManifestURL string `json:"manifest_url"`
	SHA256      string `json:"sha256"`
	PrevSHA256  string `json:"prev_sha256"`
	// Linked says PrevSHA256 is the sha256 of the previous round's latest
	// manifest ("" for round 1); false is a break verify reports.
	Linked bool `json:"linked"`
	// Superseded says a later attempt at the round replaced it.
	Superseded bool `json:"superseded"`
}

// sitePrivacy is the one place that reads what a manifest records of a
// site's privacy (pipeline.RoundPrivacy): ε so far, this round's, and the
// budget it is held to. A manifest that records a budget per site (a
// site's own limit) is read here too, so every page follows.
type sitePrivacy struct {
	epsilon, round, budget float64
	hasBudget              bool
}

func privacyOf(m pipeline.RoundManifest) map[string]sitePrivacy {
	p := m.Privacy
	if p == nil {
		return nil
	}
	out := make(map[string]sitePrivacy, len(p.Sites))
	for _, s := range p.Sites {
		out[s.Site] = sitePrivacy{epsilon: s.Epsilon, round: s.EpsilonRound, budget: p.Budget, hasBudget: p.Budget > 0}
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
