package store

import (
	"fmt"
	"strings"

	"github.com/ptopofl/ptopofl/pipeline"
)

// MaxNameLen bounds campaign, sweep, site and cluster names used in keys.
const MaxNameLen = 128

// ValidateName reports whether name can be one segment of an object key:
// 1 to MaxNameLen characters from [A-Za-z0-9._-], not starting with a dot.
// Names come from users (campaign files, federation directories), so check
// them with ValidateName where they enter; the key functions panic on an
// invalid name because by then it is a programming error.
func ValidateName(name string) error {
	if name == "" {
		return fmt.Errorf("name is empty")
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf("name %.20q... is longer than %d characters", name, MaxNameLen)
	}
	if name[0] == '.' {
		return fmt.Errorf("name %q starts with a dot", name)
	}
	for i, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
		if !ok {
			return fmt.Errorf("name %q has %q at byte %d; use letters, digits, '.', '_' or '-'", name, r, i)
		}
	}
	return nil
}

func mustName(what, name string) string {
	if err := ValidateName(name); err != nil {
		panic("store: invalid " + what + ": " + err.Error())
	}
	return name
}

func mustRound(round int) int {
	if round < 0 {
		panic(fmt.Sprintf("store: negative round %d", round))
	}
	return round
}

// The keys below are pipeline's (DESIGN §4), one definition for the
// activities and the store, with the names checked here: a key function
// panics on an invalid name.

// CampaignPrefix is "campaigns/<campaign>/", the prefix of every key of a campaign.
func CampaignPrefix(campaign string) string {
	return pipeline.CampaignPrefix(mustName("campaign", campaign))
}

// SpecKey is "campaigns/<campaign>/spec.json".
func SpecKey(campaign string) string { return pipeline.SpecKey(mustName("campaign", campaign)) }

// RoundPrefix is "campaigns/<campaign>/round-0007/": rounds are zero-padded to
// four digits so that keys sort by round up to round 9999.
func RoundPrefix(campaign string, round int) string {
	return pipeline.RoundPrefix(mustName("campaign", campaign), mustRound(round))
}

// DescriptorKey is "campaigns/<campaign>/round-0007/descriptors/<site>.parquet".
func DescriptorKey(campaign string, round int, site string) string {
	return pipeline.DescriptorKey(mustName("campaign", campaign), mustRound(round), mustName("site", site))
}

// ModelKey is "campaigns/<campaign>/round-0007/models/<site>.parquet": the
// local model a site trained in the round.
func ModelKey(campaign string, round int, site string) string {
	return pipeline.ModelKey(mustName("campaign", campaign), mustRound(round), mustName("site", site))
}

// AggregateKey is "campaigns/<campaign>/round-0007/aggregate/<target>.parquet":
// the model sent back to a cluster or a site after aggregation.
func AggregateKey(campaign string, round int, target string) string {
	return pipeline.AggregateKey(mustName("campaign", campaign), mustRound(round), mustName("aggregate target", target))
}

// MetricsKey is "campaigns/<campaign>/round-0007/metrics/<site>.parquet": one
// site's evaluation in the round.
func MetricsKey(campaign string, round int, site string) string {
	return RoundPrefix(campaign, round) + "metrics/" + mustName("site", site) + ".parquet"
}

// ManifestKey is "campaigns/<campaign>/round-0007/manifest.json", the audit
// record of the round.
func ManifestKey(campaign string, round int) string {
	return pipeline.ManifestKey(mustName("campaign", campaign), mustRound(round))
}

// ParseRoundPrefix returns the round of a key under RoundPrefix, and false
// for a key that is not under a round.
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
