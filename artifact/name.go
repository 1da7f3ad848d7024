package artifact

import (
	"fmt"
	"strings"
)

// MaxNameLen is the longest campaign, site, sweep, federation or aggregate
// target name, in bytes.
//
// It is 64, not 128, for three reasons. Every campaign and site name that
// ever entered the pipeline was already held to 64 by
// CampaignSpec.Validate, so 64 rejects no stored name; 128 was only the
// store's looser check at key time, which let through names no campaign
// could hold. A name is repeated inside longer identifiers with their own
// limits: the round workflow ID "<sweep>/<campaign>/round-0007", the task
// queue "ptopofl-site-<site>" and keys such as
// "campaigns/<campaign>/round-0007/aggregate/<site>.parquet" stay far below
// Temporal's 1,000-byte IDs and S3's 1,024-byte keys with two names of 64.
// And the names of a sweep's campaigns are built to fit 64 (see
// pipeline.SweepSpec.Campaigns), which is readable in a terminal column.
const MaxNameLen = 64

// ValidateName reports whether name may be a campaign, site, sweep,
// federation or aggregate target name: 1 to MaxNameLen characters of
// A-Z a-z 0-9 . _ -, starting with a letter or a digit. The first character
// rules out ".", ".." and hidden files, and "-" that a command line would
// read as a flag; the alphabet is safe in an S3 key, a file name, a task
// queue and a workflow ID without escaping.
//
// The error quotes the name but not the field it came from; callers prefix
// the field, e.g. fmt.Errorf("campaign %w", err).
func ValidateName(name string) error {
	ok := len(name) >= 1 && len(name) <= MaxNameLen && isAlnum(name[0])
	for i := 1; ok && i < len(name); i++ {
		c := name[i]
		ok = isAlnum(c) || c == '.' || c == '_' || c == '-'
	}
	if !ok {
		return fmt.Errorf("%q: must be 1-%d characters of A-Z a-z 0-9 . _ - starting with a letter or digit", name, MaxNameLen)
	}
	return nil
}

// The aggregate targets the server writes for more than one site
// (RoundKeys.Aggregate): the global model of a method that sends every
// site the same one, and the cluster models ("cluster-0", …) pTopoFL wrote
// before each site got its cluster's model under its own name.
const (
	GlobalTarget        = "global"
	ClusterTargetPrefix = "cluster-"
)

// ValidateSiteName is ValidateName for a site, which also may not be named
// so that one of its objects shares a key with an object of the server or
// is matched by a pattern that lets every site read (SiteReadPatterns).
// Under local training a site's own model is sent back as the aggregate
// under its name, so a site named "global" would share a key with the
// global model; one named "cluster-0" with the cluster model of a
// campaign written before per-site aggregates; and one named
// "shared-state" or "initial-model" would have its local model, state and
// descriptor matched by the patterns "campaigns/*/round-*/shared-state.parquet"
// and "campaigns/*/initial-model.parquet", whose '*' spans '/'. Case is
// ignored: a local stack on a case-insensitive file system stores
// "Global.parquet" and "global.parquet" as one file.
func ValidateSiteName(name string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	lower := strings.ToLower(name)
	switch {
	case lower == GlobalTarget:
		return fmt.Errorf("%q: reserved for the global model (aggregate/%s.parquet); rename the site", name, GlobalTarget)
	case strings.HasPrefix(lower, ClusterTargetPrefix):
		return fmt.Errorf("%q: names starting with %q are reserved for pTopoFL's cluster models (aggregate/%s<c>.parquet); rename the site", name, ClusterTargetPrefix, ClusterTargetPrefix)
	}
	other := "a"
	if lower == other {
		other = "b"
	}
	for _, n := range []string{name, lower} {
		for _, key := range siteKeys(n) {
			if SiteMayRead(other, key) {
				return fmt.Errorf("%q: another site could read %s, which the pattern of a server object shared by every site matches; rename the site", name, key)
			}
		}
	}
	return nil
}

// siteKeys are examples of every kind of key written for site: what it
// writes and the aggregate under its name, in a first and a later attempt.
func siteKeys(site string) []string {
	var keys []string
	for _, k := range []RoundKeys{{Campaign: "c", Round: 1, Attempt: 1}, {Campaign: "c", Round: 1, Attempt: 2}} {
		keys = append(keys, k.Descriptor(site), k.Model(site), k.SiteState(site), k.Control(site),
			k.Init(site), k.InitLayout(site), k.Aggregate(site), k.Metrics(site))
	}
	return keys
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func mustName(what, name string) string {
	if err := ValidateName(name); err != nil {
		panic("artifact: invalid " + what + " name " + err.Error())
	}
	return name
}

func mustRound(round int) int {
	if round < 0 {
		panic(fmt.Sprintf("artifact: negative round %d", round))
	}
	return round
}
