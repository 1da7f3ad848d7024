package artifact

import (
	"fmt"
	"strings"
)

// The object keys of DESIGN §4, every one of them. Activities write their
// outputs to these deterministic keys, so a retried activity overwrites its
// own earlier attempt and nothing else. The strings are pinned by tests and
// by the keys already in buckets: never change one.

// CampaignPrefix is "campaigns/<campaign>/", the prefix of every key of a campaign.
func CampaignPrefix(campaign string) string {
	return "campaigns/" + mustName("campaign", campaign) + "/"
}

// SpecKey is "campaigns/<campaign>/spec.json".
func SpecKey(campaign string) string { return CampaignPrefix(campaign) + "spec.json" }

// MaxRound is the last round whose keys sort by round: rounds are
// zero-padded to four digits, and round 10000 would sort before round 2000.
// pipeline.CampaignSpec.Validate rejects campaigns with more rounds.
const MaxRound = 9999

// RoundPrefix is "campaigns/<campaign>/round-0007/": rounds are zero-padded
// to four digits, so keys sort by round up to MaxRound; later rounds
// simply get more digits.
func RoundPrefix(campaign string, round int) string {
	return fmt.Sprintf("%sround-%04d/", CampaignPrefix(campaign), mustRound(round))
}

// DescriptorKey is "campaigns/<campaign>/round-0007/descriptors/<site>.parquet".
func DescriptorKey(campaign string, round int, site string) string {
	return RoundPrefix(campaign, round) + "descriptors/" + mustName("site", site) + ".parquet"
}

// ModelKey is "campaigns/<campaign>/round-0007/models/<site>.parquet": the
// local model a site trained in the round.
func ModelKey(campaign string, round int, site string) string {
	return RoundPrefix(campaign, round) + "models/" + mustName("site", site) + ".parquet"
}

// AggregateKey is "campaigns/<campaign>/round-0007/aggregate/<target>.parquet":
// the model sent back after aggregation, where target is a cluster
// ("cluster-1"), a site, or "global".
func AggregateKey(campaign string, round int, target string) string {
	return RoundPrefix(campaign, round) + "aggregate/" + mustName("aggregate target", target) + ".parquet"
}

// MetricsKey is "campaigns/<campaign>/round-0007/metrics/<site>.parquet": one
// site's evaluation in the round.
func MetricsKey(campaign string, round int, site string) string {
	return RoundPrefix(campaign, round) + "metrics/" + mustName("site", site) + ".parquet"
}

// SiteStateKey is "campaigns/<campaign>/round-0007/state/<site>.parquet": the
// method's per-site state (local, control and personal vectors) after the
// site's training in the round.
func SiteStateKey(campaign string, round int, site string) string {
	return RoundPrefix(campaign, round) + "state/" + mustName("site", site) + ".parquet"
}

// ControlKey is "campaigns/<campaign>/round-0007/control/<site>.parquet": a
// site's SCAFFOLD control-variate update of the round.
func ControlKey(campaign string, round int, site string) string {
	return RoundPrefix(campaign, round) + "control/" + mustName("site", site) + ".parquet"
}

// ClusteringKey is "campaigns/<campaign>/round-0007/clustering.parquet": the
// server's clustering, trust scores and drift of the round.
func ClusteringKey(campaign string, round int) string {
	return RoundPrefix(campaign, round) + "clustering.parquet"
}

// ServerStateKey is "campaigns/<campaign>/round-0007/server-state.parquet":
// the server's method state (global model, control variate) after the round.
func ServerStateKey(campaign string, round int) string {
	return RoundPrefix(campaign, round) + "server-state.parquet"
}

// ManifestKey is "campaigns/<campaign>/round-0007/manifest.json", the audit
// record of the round.
func ManifestKey(campaign string, round int) string {
	return RoundPrefix(campaign, round) + "manifest.json"
}

// ParseRoundPrefix returns the round of a key under RoundPrefix(campaign, …),
// and false for a key that is not under a round of that campaign.
func ParseRoundPrefix(campaign, key string) (int, bool) {
	rest, ok := strings.CutPrefix(key, CampaignPrefix(campaign)+"round-")
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(rest, "/")
	if !ok || len(num) < 4 {
		return 0, false
	}
	r := 0
	for _, c := range num {
		if c < '0' || c > '9' {
			return 0, false
		}
		r = r*10 + int(c-'0')
	}
	return r, true
}

// SweepPrefix is "sweeps/<sweep>/".
func SweepPrefix(sweep string) string { return "sweeps/" + mustName("sweep", sweep) + "/" }

// SweepSpecKey is "sweeps/<sweep>/spec.json".
func SweepSpecKey(sweep string) string { return SweepPrefix(sweep) + "spec.json" }

// SweepResultsKey is "sweeps/<sweep>/results.parquet": one row per campaign.
func SweepResultsKey(sweep string) string { return SweepPrefix(sweep) + "results.parquet" }

// SweepCurvesKey is "sweeps/<sweep>/curves.parquet": one row per campaign and round.
func SweepCurvesKey(sweep string) string { return SweepPrefix(sweep) + "curves.parquet" }

// RoundFolder returns the round of a key under a round of campaign and the
// folder it sits in within the round ("models" for ModelKey, "control" for
// ControlKey, "" for a file directly in the round such as ManifestKey). A
// leading "attempt-<n>/" folder, where a restarted campaign may keep a
// round's later attempts, is passed over, so the folder is the artifact's
// kind either way. ok is false for a key not under a round of campaign.
func RoundFolder(campaign, key string) (round int, folder string, ok bool) {
	round, ok = ParseRoundPrefix(campaign, key)
	if !ok {
		return 0, "", false
	}
	rest := strings.TrimPrefix(key, RoundPrefix(campaign, round))
	if first, inner, nested := strings.Cut(rest, "/"); nested && strings.HasPrefix(first, "attempt-") {
		rest = inner
	}
	folder, _, nested := strings.Cut(rest, "/")
	if !nested {
		folder = ""
	}
	return round, folder, true
}
