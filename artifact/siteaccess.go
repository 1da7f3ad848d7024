package artifact

// What a site's worker may read and write, as S3 policy resource patterns
// over the keys of keys.go: '*' matches any run of characters, '/'
// included, as in AWS and MinIO policies. They are the one source of the
// per-site policy of the local stack (internal/devstack) and of the
// deployment guide (deploy/temporal/README.md).
//
// Every pattern ends in a key's last segment ("/models/<site>.parquet"), so
// it matches that site's object of that kind in any campaign and round and
// never another site's: names cannot hold '/'.

// SiteWritePatterns are the keys site's activities write: its descriptors,
// local models, method state and control-variate updates, and the initial
// model its own program made (model "external"), in any campaign and
// round. Evaluation results travel back in the activity's output, not
// through S3.
func SiteWritePatterns(site string) []string {
	n := mustName("site", site)
	return []string{
		"campaigns/*/round-*/descriptors/" + n + ".parquet",  // DescriptorKey
		"campaigns/*/round-*/models/" + n + ".parquet",       // ModelKey
		"campaigns/*/round-*/state/" + n + ".parquet",        // SiteStateKey
		"campaigns/*/round-*/control/" + n + ".parquet",      // ControlKey
		"campaigns/*/round-*/init/" + n + ".parquet",         // RoundKeys.Init
		"campaigns/*/round-*/init/" + n + ".json",            // RoundKeys.InitLayout
		"campaigns/*/round-*/secagg/*/shares/" + n + ".json", // RoundKeys.SecAggShares
		"campaigns/*/round-*/secagg/*/masked/" + n + ".bin",  // RoundKeys.SecAggMasked
		"campaigns/*/round-*/secagg/*/reveal/" + n + ".json", // RoundKeys.SecAggReveal
	}
}

// SiteReadPatterns are the keys site's worker may read: what it wrote
// itself (a round reads the state and descriptor of an earlier one), the
// campaign spec, the models sent to it (the global model and the aggregate
// under its own name), the shared server state (SCAFFOLD's control
// variate c), a campaign's initial model and model layout (model
// "external"), and under secure aggregation what the server addressed to
// it: its view of its group (its neighbours' names, indices and public
// keys) and its inbox of shares its neighbours encrypted to it, which
// only it can open.
//
// Nothing else of the server's: not the server state (FoolsGold's per-site
// update histories), not the clustering or the manifests, and not the
// "cluster-<c>" models of campaigns written before sites read only their
// own aggregates: with the public β and cluster sizes, two blended cluster
// models determine each cluster's own model (paper Eq. 7), which is a
// site's own model when it is alone in its cluster. Nor, under secure
// aggregation, another site's masked input, shares or reveal, the group's
// public keys or its sum. Of what the server
// writes, a site reads only the global model and objects addressed to it
// by name; internal/workers TestSiteReadsOnlyItsOwn checks, as every site
// over real HTTP, that nothing it may read holds or determines another
// site's vector.
func SiteReadPatterns(site string) []string {
	n := mustName("site", site)
	return append(SiteWritePatterns(site),
		"campaigns/*/spec.json",                         // SpecKey
		"campaigns/*/round-*/aggregate/global.parquet",  // AggregateKey(…, "global")
		"campaigns/*/round-*/aggregate/"+n+".parquet",   // AggregateKey(…, site)
		"campaigns/*/round-*/shared-state.parquet",      // SharedStateKey
		"campaigns/*/initial-model.parquet",             // InitialModelKey
		"campaigns/*/model-layout.json",                 // ModelLayoutKey
		"campaigns/*/round-*/secagg/*/view/"+n+".json",  // RoundKeys.SecAggView
		"campaigns/*/round-*/secagg/*/inbox/"+n+".json", // RoundKeys.SecAggInbox
	)
}

// MatchPattern reports whether key matches the S3 policy resource pattern
// pattern: '*' matches any run of characters ('/' included, possibly
// none), '?' any one character, and every other character itself, over
// the whole key. It is the matching of AWS and MinIO policies (and of
// versitygw's auth.matchPattern), written here so that a process can
// answer "may this site read that key" as the bucket policy built from
// SiteReadPatterns would, without asking the server.
//
// The scan is the usual one for a single kind of star: on a mismatch
// after a star, the star takes one more character of the key and the
// match resumes after it, so the cost is O(len(pattern)·len(key)) at
// worst.
func MatchPattern(pattern, key string) bool {
	p, k := 0, 0
	star, mark := -1, 0
	for k < len(key) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == key[k]):
			p++
			k++
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, k
			p++
		case star >= 0:
			p = star + 1
			mark++
			k = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// SiteMayRead reports whether key matches one of SiteReadPatterns(site):
// whether the local stack's bucket policy lets site's S3 identity read
// it. site must be a valid name.
func SiteMayRead(site, key string) bool {
	for _, p := range SiteReadPatterns(site) {
		if MatchPattern(p, key) {
			return true
		}
	}
	return false
}
