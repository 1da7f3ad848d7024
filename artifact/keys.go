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
// simply get more digits. It is the prefix of the round's first attempt
// and of every later one (RoundKeys.Prefix).
func RoundPrefix(campaign string, round int) string {
	return fmt.Sprintf("%sround-%04d/", CampaignPrefix(campaign), mustRound(round))
}

// RoundKeys builds the keys of one attempt at one round of a campaign.
// Attempt 0 or 1 is the campaign's first attempt, whose keys are the
// original ones ("campaigns/<campaign>/round-0007/models/<site>.parquet");
// a campaign restarted after a failure or a stop runs its remaining rounds
// as attempt 2, 3, …, whose keys are one folder deeper
// ("campaigns/<campaign>/round-0007/attempt-2/models/<site>.parquet"). So a
// new attempt never overwrites what an earlier one wrote: the failed
// round's manifest and every artifact it lists keep their bytes, and an
// activity of the old attempt still running somewhere cannot overwrite
// the new attempt's objects.
type RoundKeys struct {
	Campaign string
	Round    int
	Attempt  int
}

// Prefix is RoundPrefix for attempt 1, else
// "campaigns/<campaign>/round-0007/attempt-2/".
func (k RoundKeys) Prefix() string {
	p := RoundPrefix(k.Campaign, k.Round)
	if k.Attempt > 1 {
		p += fmt.Sprintf("attempt-%d/", k.Attempt)
	}
	return p
}

// Descriptor is "<prefix>descriptors/<site>.parquet".
func (k RoundKeys) Descriptor(site string) string {
	return k.Prefix() + "descriptors/" + mustName("site", site) + ".parquet"
}

// Model is "<prefix>models/<site>.parquet": the local model a site trained.
func (k RoundKeys) Model(site string) string {
	return k.Prefix() + "models/" + mustName("site", site) + ".parquet"
}

// Init is "<prefix>init/<site>.parquet": the initial model a site's own
// training program made (model "external", round 1), and InitLayout
// "<prefix>init/<site>.json" its tensor layout, both read by the server
// alone, which adopts them as the campaign's InitialModelKey and
// ModelLayoutKey.
func (k RoundKeys) Init(site string) string {
	return k.Prefix() + "init/" + mustName("site", site) + ".parquet"
}

// InitLayout is "<prefix>init/<site>.json" (see Init).
func (k RoundKeys) InitLayout(site string) string {
	return k.Prefix() + "init/" + mustName("site", site) + ".json"
}

// InitialModelKey is "campaigns/<campaign>/initial-model.parquet": the
// model every site of a campaign of model "external" starts from, written
// by the starter (the spec's initial_model) or adopted by the server from
// round 1's init task; every site may read it.
func InitialModelKey(campaign string) string {
	return CampaignPrefix(campaign) + "initial-model.parquet"
}

// InitialModelFileKey is "initial-models/<sha256>.safetensors": a
// safetensors file a campaign file names as its initial model (model
// "external"), stored by the hex sha256 of its bytes, so that every
// campaign that names the same file shares one object. Only the server
// reads it; it panics on a sha256 that is not 64 lower-case hex digits.
func InitialModelFileKey(sha256 string) string {
	if len(sha256) != 64 || strings.Trim(sha256, "0123456789abcdef") != "" {
		panic("artifact: initial model sha256 " + sha256 + " is not 64 lower-case hex digits")
	}
	return "initial-models/" + sha256 + ".safetensors"
}

// ModelLayoutKey is "campaigns/<campaign>/model-layout.json": the tensor
// layout (names, dtypes, shapes) of every model of a campaign of model
// "external", which a site needs to write a flat model as the safetensors
// file its program reads; every site may read it.
func ModelLayoutKey(campaign string) string { return CampaignPrefix(campaign) + "model-layout.json" }

// Aggregate is "<prefix>aggregate/<target>.parquet": a model sent back
// after aggregation, where target is "global" (GlobalTarget: the model of
// a method that sends every site the same one) or a site (the model that
// site starts its next round from: its cluster's blend under pTopoFL, its
// own under local training). Members of one cluster get byte-identical
// copies, so their manifest records share one sha256. Campaigns written
// before sites read only their own aggregates also have "cluster-<c>"
// targets (ClusterTargetPrefix), which now only the server reads.
func (k RoundKeys) Aggregate(target string) string {
	return k.Prefix() + "aggregate/" + mustName("aggregate target", target) + ".parquet"
}

// Metrics is "<prefix>metrics/<site>.parquet": one site's evaluation.
func (k RoundKeys) Metrics(site string) string {
	return k.Prefix() + "metrics/" + mustName("site", site) + ".parquet"
}

// SiteState is "<prefix>state/<site>.parquet": the method's per-site state
// (local, control and personal vectors) after the site's training.
func (k RoundKeys) SiteState(site string) string {
	return k.Prefix() + "state/" + mustName("site", site) + ".parquet"
}

// Control is "<prefix>control/<site>.parquet": a site's SCAFFOLD
// control-variate update.
func (k RoundKeys) Control(site string) string {
	return k.Prefix() + "control/" + mustName("site", site) + ".parquet"
}

// Clustering is "<prefix>clustering.parquet": the server's clustering,
// trust scores and drift.
func (k RoundKeys) Clustering() string { return k.Prefix() + "clustering.parquet" }

// ServerState is "<prefix>server-state.parquet": the server's method state
// after the round (the global model, SCAFFOLD's control variate,
// FoolsGold's per-site update histories), which only the server reads.
// (Campaigns written before SharedState existed let every site read it.)
func (k RoundKeys) ServerState() string { return k.Prefix() + "server-state.parquet" }

// SharedState is "<prefix>shared-state.parquet": the part of the server's
// method state every site reads (SCAFFOLD's server control variate c),
// holding no vector of any one site.
func (k RoundKeys) SharedState() string { return k.Prefix() + "shared-state.parquet" }

// The objects of a round's secure aggregation (secure_aggregation
// "secagg+"), one folder per aggregation group: "<prefix>secagg/<group>/".
// Sites write their stage's messages under their own names (SecAggShares,
// SecAggMasked, SecAggReveal) and read only what the server addressed to
// them (SecAggView, SecAggInbox); the server alone reads the rest.

// SecAggPublic is "<prefix>secagg/<group>/public.json": the group's members,
// configuration and every member's advertised public keys, written by the
// server.
func (k RoundKeys) SecAggPublic(group string) string {
	return k.secagg(group) + "public.json"
}

// SecAggView is "<prefix>secagg/<group>/view/<site>.json": what site needs
// of its group (its neighbours, their indices and public keys), written by
// the server, read by site alone.
func (k RoundKeys) SecAggView(group, site string) string {
	return k.secagg(group) + "view/" + mustName("site", site) + ".json"
}

// SecAggShares is "<prefix>secagg/<group>/shares/<site>.json": the shares
// site encrypted to each of its neighbours, written by site, read by the
// server, which forwards each to its recipient (SecAggInbox).
func (k RoundKeys) SecAggShares(group, site string) string {
	return k.secagg(group) + "shares/" + mustName("site", site) + ".json"
}

// SecAggInbox is "<prefix>secagg/<group>/inbox/<site>.json": the encrypted
// shares site's neighbours sent it, written by the server, read by site
// alone.
func (k RoundKeys) SecAggInbox(group, site string) string {
	return k.secagg(group) + "inbox/" + mustName("site", site) + ".json"
}

// SecAggMasked is "<prefix>secagg/<group>/masked/<site>.bin": site's masked
// input, written by site, read by the server.
func (k RoundKeys) SecAggMasked(group, site string) string {
	return k.secagg(group) + "masked/" + mustName("site", site) + ".bin"
}

// SecAggReveal is "<prefix>secagg/<group>/reveal/<site>.json": the shares
// site revealed for unmasking, written by site, read by the server.
func (k RoundKeys) SecAggReveal(group, site string) string {
	return k.secagg(group) + "reveal/" + mustName("site", site) + ".json"
}

// SecAggSum is "<prefix>secagg/<group>/sum.parquet": the group's unmasked
// sum, written by the server.
func (k RoundKeys) SecAggSum(group string) string {
	return k.secagg(group) + "sum.parquet"
}

func (k RoundKeys) secagg(group string) string {
	return k.Prefix() + "secagg/" + mustName("aggregation group", group) + "/"
}

// Manifest is "<prefix>manifest.json", the audit record of the attempt at
// the round.
func (k RoundKeys) Manifest() string { return k.Prefix() + "manifest.json" }

// maxAttempt bounds the attempt numbers ParseManifestKey reads, so that a
// long run of digits cannot overflow.
const maxAttempt = 1_000_000

// firstAttempt is the keys of a round's first attempt.
func firstAttempt(campaign string, round int) RoundKeys {
	return RoundKeys{Campaign: campaign, Round: round, Attempt: 1}
}

// DescriptorKey is "campaigns/<campaign>/round-0007/descriptors/<site>.parquet"
// (the first attempt's; RoundKeys for the others, as for every key below).
func DescriptorKey(campaign string, round int, site string) string {
	return firstAttempt(campaign, round).Descriptor(site)
}

// ModelKey is "campaigns/<campaign>/round-0007/models/<site>.parquet": the
// local model a site trained in the round.
func ModelKey(campaign string, round int, site string) string {
	return firstAttempt(campaign, round).Model(site)
}

// AggregateKey is "campaigns/<campaign>/round-0007/aggregate/<target>.parquet":
// a model sent back after aggregation, where target is "global" or a site
// (RoundKeys.Aggregate).
func AggregateKey(campaign string, round int, target string) string {
	return firstAttempt(campaign, round).Aggregate(target)
}

// MetricsKey is "campaigns/<campaign>/round-0007/metrics/<site>.parquet": one
// site's evaluation in the round.
func MetricsKey(campaign string, round int, site string) string {
	return firstAttempt(campaign, round).Metrics(site)
}

// SiteStateKey is "campaigns/<campaign>/round-0007/state/<site>.parquet": the
// method's per-site state (local, control and personal vectors) after the
// site's training in the round.
func SiteStateKey(campaign string, round int, site string) string {
	return firstAttempt(campaign, round).SiteState(site)
}

// ControlKey is "campaigns/<campaign>/round-0007/control/<site>.parquet": a
// site's SCAFFOLD control-variate update of the round.
func ControlKey(campaign string, round int, site string) string {
	return firstAttempt(campaign, round).Control(site)
}

// ClusteringKey is "campaigns/<campaign>/round-0007/clustering.parquet": the
// server's clustering, trust scores and drift of the round.
func ClusteringKey(campaign string, round int) string {
	return firstAttempt(campaign, round).Clustering()
}

// ServerStateKey is "campaigns/<campaign>/round-0007/server-state.parquet":
// the server's method state after the round, read by the server alone.
func ServerStateKey(campaign string, round int) string {
	return firstAttempt(campaign, round).ServerState()
}

// SharedStateKey is "campaigns/<campaign>/round-0007/shared-state.parquet":
// the part of the server's method state every site reads.
func SharedStateKey(campaign string, round int) string {
	return firstAttempt(campaign, round).SharedState()
}

// ManifestKey is "campaigns/<campaign>/round-0007/manifest.json", the audit
// record of the round's first attempt.
func ManifestKey(campaign string, round int) string {
	return firstAttempt(campaign, round).Manifest()
}

// ParseManifestKey returns the round and attempt of a manifest key of
// campaign (RoundKeys.Manifest: attempt 1 for
// "campaigns/<campaign>/round-0007/manifest.json", 2 for
// ".../round-0007/attempt-2/manifest.json"), and false for any other key.
func ParseManifestKey(campaign, key string) (round, attempt int, ok bool) {
	round, ok = ParseRoundPrefix(campaign, key)
	if !ok {
		return 0, 0, false
	}
	rest := strings.TrimPrefix(key, RoundPrefix(campaign, round))
	if rest == "manifest.json" {
		return round, 1, true
	}
	num, ok := strings.CutPrefix(rest, "attempt-")
	if !ok {
		return 0, 0, false
	}
	num, ok = strings.CutSuffix(num, "/manifest.json")
	if !ok {
		return 0, 0, false
	}
	if attempt, ok = parseAttempt(num); !ok {
		return 0, 0, false
	}
	return round, attempt, true
}

// parseAttempt reads the number of an "attempt-<n>" folder: decimal
// digits without a leading zero, at least 2 (attempt 1 has no folder) and
// at most maxAttempt.
func parseAttempt(num string) (int, bool) {
	if num == "" || num[0] == '0' {
		return 0, false
	}
	attempt := 0
	for _, c := range num {
		if c < '0' || c > '9' || attempt > maxAttempt/10 {
			return 0, false
		}
		attempt = attempt*10 + int(c-'0')
	}
	return attempt, attempt >= 2
}

// ParseRoundKeys returns the RoundKeys whose Prefix a key of campaign is
// under: the round and attempt of "campaigns/<campaign>/round-0007/…"
// (attempt 1) or "…/round-0007/attempt-2/…" (attempt 2), so that the keys
// of other objects of the same attempt at the same round can be built
// from one of them. ok is false for a key not under a round of campaign.
func ParseRoundKeys(campaign, key string) (keys RoundKeys, ok bool) {
	round, ok := ParseRoundPrefix(campaign, key)
	if !ok {
		return RoundKeys{}, false
	}
	keys = RoundKeys{Campaign: campaign, Round: round, Attempt: 1}
	rest := strings.TrimPrefix(key, RoundPrefix(campaign, round))
	if first, _, nested := strings.Cut(rest, "/"); nested {
		if num, isAttempt := strings.CutPrefix(first, "attempt-"); isAttempt {
			if keys.Attempt, ok = parseAttempt(num); !ok {
				return RoundKeys{}, false
			}
		}
	}
	return keys, true
}

// AggregateTarget returns the target of an aggregate key of campaign
// (RoundKeys.Aggregate: "global", a site, or in campaigns written before
// sites read only their own aggregates "cluster-<c>"), and false for any
// other key.
func AggregateTarget(campaign, key string) (string, bool) {
	keys, ok := ParseRoundKeys(campaign, key)
	if !ok {
		return "", false
	}
	name, ok := strings.CutPrefix(key, keys.Prefix()+"aggregate/")
	if !ok {
		return "", false
	}
	name, ok = strings.CutSuffix(name, ".parquet")
	if !ok || ValidateName(name) != nil {
		return "", false
	}
	return name, true
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

// PausedStateKey is where a campaign paused at an adaptive sweep's rung
// keeps the state it resumes from (pipeline.CampaignState, JSON): outside
// every round's prefix, so no manifest lists it.
func PausedStateKey(campaign string, round int) string {
	return fmt.Sprintf("%spaused-%04d.json", CampaignPrefix(campaign), round)
}

// SweepSearchKey is an adaptive sweep's record of trials and actions
// (pipeline.SearchRecord).
func SweepSearchKey(sweep string) string { return SweepPrefix(sweep) + "search.json" }

// SweepReportKey is "sweeps/<sweep>/report/<file>": an adaptive sweep's
// report (report.md, report.html, its figures), rewritten as the sweep
// goes.
func SweepReportKey(sweep, file string) string {
	return SweepPrefix(sweep) + "report/" + mustName("report file", file)
}

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
