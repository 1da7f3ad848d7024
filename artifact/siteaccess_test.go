package artifact

import "testing"

// policyMatch is the S3 policy wildcard match: '*' any run of characters
// ('/' included), '?' one character, anything else itself.
func policyMatch(pattern, key string) bool {
	if pattern == "" {
		return key == ""
	}
	switch pattern[0] {
	case '*':
		for i := 0; i <= len(key); i++ {
			if policyMatch(pattern[1:], key[i:]) {
				return true
			}
		}
		return false
	case '?':
		return key != "" && policyMatch(pattern[1:], key[1:])
	}
	return key != "" && key[0] == pattern[0] && policyMatch(pattern[1:], key[1:])
}

func anyMatch(patterns []string, key string) bool {
	for _, p := range patterns {
		if policyMatch(p, key) {
			return true
		}
	}
	return false
}

// TestSitePatterns checks the patterns against the real keys of keys.go for
// site "a" (and names chosen to trip a careless pattern: "b", a prefix "xa",
// a suffix "a-2"): each key is readable and writable by "a" exactly as the
// comment on the case says.
func TestSitePatterns(t *testing.T) {
	const c = "camp-1"
	cases := []struct {
		key         string
		read, write bool
	}{
		0:  {DescriptorKey(c, 1, "a"), true, true},
		1:  {ModelKey(c, 12, "a"), true, true},
		2:  {SiteStateKey(c, 3, "a"), true, true},
		3:  {ControlKey(c, 3, "a"), true, true},
		4:  {DescriptorKey(c, 1, "b"), false, false},
		5:  {ModelKey(c, 12, "b"), false, false},
		6:  {ModelKey(c, 12, "xa"), false, false},
		7:  {ModelKey(c, 12, "a-2"), false, false},
		8:  {SiteStateKey(c, 3, "b"), false, false},
		9:  {ControlKey(c, 3, "b"), false, false},
		10: {MetricsKey(c, 3, "a"), false, false}, // written by no site activity
		11: {SpecKey(c), true, false},
		12: {AggregateKey(c, 2, "global"), true, false},
		// A cluster model of a campaign written before per-site
		// aggregates: two of them determine a lone site's model.
		13: {AggregateKey(c, 2, "cluster-1"), false, false},
		14: {AggregateKey(c, 2, "a"), true, false},
		15: {AggregateKey(c, 2, "b"), false, false}, // another site's model
		16: {ServerStateKey(c, 2), false, false},    // FoolsGold's per-site histories
		17: {ClusteringKey(c, 2), false, false},
		18: {ManifestKey(c, 2), false, false},
		19: {SweepSpecKey("s"), false, false},
		// A restarted campaign's later attempt writes under round-NNNN/attempt-N/.
		20: {RoundKeys{Campaign: c, Round: 4, Attempt: 2}.Model("a"), true, true},
		21: {RoundKeys{Campaign: c, Round: 4, Attempt: 2}.Model("b"), false, false},
		22: {RoundKeys{Campaign: c, Round: 4, Attempt: 2}.Aggregate("global"), true, false},
		23: {RoundKeys{Campaign: c, Round: 4, Attempt: 2}.Descriptor("a"), true, true},
		// Model "external": a site's own initial model and layout are its
		// own; the adopted ones are every site's.
		24: {RoundKeys{Campaign: c, Round: 1}.Init("a"), true, true},
		25: {RoundKeys{Campaign: c, Round: 1}.InitLayout("a"), true, true},
		26: {RoundKeys{Campaign: c, Round: 1}.Init("b"), false, false},
		27: {RoundKeys{Campaign: c, Round: 1}.InitLayout("b"), false, false},
		28: {InitialModelKey(c), true, false},
		29: {ModelLayoutKey(c), true, false},
		30: {SharedStateKey(c, 2), true, false}, // SCAFFOLD's server control variate
		31: {RoundKeys{Campaign: c, Round: 4, Attempt: 2}.SharedState(), true, false},
		32: {RoundKeys{Campaign: c, Round: 4, Attempt: 2}.ServerState(), false, false},
		33: {RoundKeys{Campaign: c, Round: 4, Attempt: 2}.Aggregate("a"), true, false},
		34: {RoundKeys{Campaign: c, Round: 4, Attempt: 2}.Aggregate("b"), false, false},
		// Secure aggregation: a site writes (and may read back) its own
		// stage messages, and reads only what the server addressed to it.
		35: {RoundKeys{Campaign: c, Round: 3}.SecAggShares("global", "a"), true, true},
		36: {RoundKeys{Campaign: c, Round: 3}.SecAggMasked("cluster-1", "a"), true, true},
		37: {RoundKeys{Campaign: c, Round: 3}.SecAggReveal("global", "a"), true, true},
		38: {RoundKeys{Campaign: c, Round: 3}.SecAggView("global", "a"), true, false},
		39: {RoundKeys{Campaign: c, Round: 3}.SecAggInbox("cluster-0", "a"), true, false},
		40: {RoundKeys{Campaign: c, Round: 3}.SecAggShares("global", "b"), false, false}, // another site's encrypted shares
		41: {RoundKeys{Campaign: c, Round: 3}.SecAggMasked("global", "b"), false, false}, // another site's masked input
		42: {RoundKeys{Campaign: c, Round: 3}.SecAggReveal("global", "b"), false, false},
		43: {RoundKeys{Campaign: c, Round: 3}.SecAggView("global", "b"), false, false},
		44: {RoundKeys{Campaign: c, Round: 3}.SecAggInbox("global", "b"), false, false},
		45: {RoundKeys{Campaign: c, Round: 3}.SecAggInbox("global", "xa"), false, false},
		46: {RoundKeys{Campaign: c, Round: 3}.SecAggPublic("global"), false, false}, // every member's keys: the server's
		47: {RoundKeys{Campaign: c, Round: 3}.SecAggSum("cluster-0"), false, false}, // a group's sum
		48: {RoundKeys{Campaign: c, Round: 3, Attempt: 2}.SecAggInbox("global", "a"), true, false},
		49: {RoundKeys{Campaign: c, Round: 3, Attempt: 2}.SecAggMasked("global", "a"), true, true},
		// Someone else's masked input is its own site's: it cannot be the
		// other's, whatever the pattern's '*' spans.
		50: {RoundKeys{Campaign: c, Round: 3}.SecAggMasked("global", "a-2"), false, false},
	}
	read, write := SiteReadPatterns("a"), SiteWritePatterns("a")
	for i, tc := range cases {
		if got := anyMatch(read, tc.key); got != tc.read {
			t.Errorf("%d: %s: readable %v, want %v", i, tc.key, got, tc.read)
		}
		if got := anyMatch(write, tc.key); got != tc.write {
			t.Errorf("%d: %s: writable %v, want %v", i, tc.key, got, tc.write)
		}
	}
}

// TestMatchPattern holds MatchPattern equal to the recursive definition
// policyMatch on every pattern of up to 5 characters over {a, b, *, ?} and
// every key of up to 6 characters over {a, b} (brute force: 1,365 patterns
// × 127 keys), and SiteMayRead equal to SiteReadPatterns through
// policyMatch on the real keys of a few sites.
func TestMatchPattern(t *testing.T) {
	var patterns, keys []string
	var gen func(prefix string, alphabet string, n int, out *[]string)
	gen = func(prefix, alphabet string, n int, out *[]string) {
		*out = append(*out, prefix)
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			gen(prefix+string(c), alphabet, n-1, out)
		}
	}
	gen("", "ab*?", 5, &patterns)
	gen("", "ab", 6, &keys)
	bad := 0
	for _, p := range patterns {
		for _, k := range keys {
			if got, want := MatchPattern(p, k), policyMatch(p, k); got != want {
				if bad++; bad <= 5 {
					t.Errorf("MatchPattern(%q, %q) = %v, want %v", p, k, got, want)
				}
			}
		}
	}
	sites := []string{"a", "b", "xa", "a-2", "site.7"}
	for _, site := range sites {
		for _, other := range sites {
			for _, key := range []string{
				ModelKey("c", 3, other), DescriptorKey("c", 1, other), SiteStateKey("c", 2, other), ControlKey("c", 2, other),
				AggregateKey("c", 2, other), AggregateKey("c", 2, "global"), AggregateKey("c", 2, "cluster-1"),
				SpecKey("c"), ServerStateKey("c", 4), SharedStateKey("c", 4), ManifestKey("c", 4), ClusteringKey("c", 4), SweepSpecKey("s"),
			} {
				if got, want := SiteMayRead(site, key), anyMatch(SiteReadPatterns(site), key); got != want {
					t.Errorf("SiteMayRead(%q, %q) = %v, want %v", site, key, got, want)
				}
			}
		}
	}
}
