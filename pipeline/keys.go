package pipeline

import "fmt"

// Deterministic object keys (DESIGN §4). Activities write their outputs to
// these keys so that a retried activity overwrites its own earlier attempt
// and nothing else.

// CampaignPrefix is "campaigns/<campaign>/".
func CampaignPrefix(campaign string) string { return "campaigns/" + campaign + "/" }

// SpecKey is "campaigns/<campaign>/spec.json".
func SpecKey(campaign string) string { return CampaignPrefix(campaign) + "spec.json" }

// RoundPrefix is "campaigns/<campaign>/round-0007/".
func RoundPrefix(campaign string, round int) string {
	return fmt.Sprintf("%sround-%04d/", CampaignPrefix(campaign), round)
}

// DescriptorKey is "campaigns/<campaign>/round-0007/descriptors/<site>.parquet".
func DescriptorKey(campaign string, round int, site string) string {
	return RoundPrefix(campaign, round) + "descriptors/" + site + ".parquet"
}

// ModelKey is "campaigns/<campaign>/round-0007/models/<site>.parquet", a
// site's local model after training in that round.
func ModelKey(campaign string, round int, site string) string {
	return RoundPrefix(campaign, round) + "models/" + site + ".parquet"
}

// AggregateKey is "campaigns/<campaign>/round-0007/aggregate/<name>.parquet",
// where name is a cluster ("cluster-1"), a site, or "global".
func AggregateKey(campaign string, round int, name string) string {
	return RoundPrefix(campaign, round) + "aggregate/" + name + ".parquet"
}

// ManifestKey is "campaigns/<campaign>/round-0007/manifest.json".
func ManifestKey(campaign string, round int) string {
	return RoundPrefix(campaign, round) + "manifest.json"
}
