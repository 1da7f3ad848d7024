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
// local models, method state and control-variate updates, in any campaign
// and round. Evaluation results travel back in the activity's output, not
// through S3.
func SiteWritePatterns(site string) []string {
	n := mustName("site", site)
	return []string{
		"campaigns/*/round-*/descriptors/" + n + ".parquet", // DescriptorKey
		"campaigns/*/round-*/models/" + n + ".parquet",      // ModelKey
		"campaigns/*/round-*/state/" + n + ".parquet",       // SiteStateKey
		"campaigns/*/round-*/control/" + n + ".parquet",     // ControlKey
	}
}

// SiteReadPatterns are the keys site's worker may read: what it wrote
// itself (a round reads the state and descriptor of an earlier one), the
// campaign spec, the models sent to it (the global model, every
// "cluster-<c>" model, and an aggregate under its own name) and the
// server state (SCAFFOLD's control variate travels in it).
func SiteReadPatterns(site string) []string {
	n := mustName("site", site)
	return append(SiteWritePatterns(site),
		"campaigns/*/spec.json",                           // SpecKey
		"campaigns/*/round-*/aggregate/global.parquet",    // AggregateKey(…, "global")
		"campaigns/*/round-*/aggregate/cluster-*.parquet", // AggregateKey(…, "cluster-<c>")
		"campaigns/*/round-*/aggregate/"+n+".parquet",     // AggregateKey(…, site)
		"campaigns/*/round-*/server-state.parquet",        // ServerStateKey
	)
}
