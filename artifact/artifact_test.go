package artifact

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestKeys(t *testing.T) {
	for i, tc := range []struct{ got, want string }{
		{SpecKey("c1"), "campaigns/c1/spec.json"},                                                    // 0: DESIGN §4
		{DescriptorKey("c1", 7, "site-a"), "campaigns/c1/round-0007/descriptors/site-a.parquet"},     // 1: DESIGN §4
		{ModelKey("c1", 0, "s_2"), "campaigns/c1/round-0000/models/s_2.parquet"},                     // 2: DESIGN §4
		{AggregateKey("c1", 12, "cluster-1"), "campaigns/c1/round-0012/aggregate/cluster-1.parquet"}, // 3
		{ManifestKey("c1", 7), "campaigns/c1/round-0007/manifest.json"},                              // 4
		{MetricsKey("c1", 7, "a"), "campaigns/c1/round-0007/metrics/a.parquet"},                      // 5
		{RoundPrefix("c1", 12345), "campaigns/c1/round-12345/"},                                      // 6: wider past 9999
		{SiteStateKey("hc", 3, "client1"), "campaigns/hc/round-0003/state/client1.parquet"},          // 7
		{ControlKey("hc", 3, "client1"), "campaigns/hc/round-0003/control/client1.parquet"},          // 8
		{ClusteringKey("hc", 3), "campaigns/hc/round-0003/clustering.parquet"},                       // 9
		{ServerStateKey("hc", 3), "campaigns/hc/round-0003/server-state.parquet"},                    // 10
		{CampaignPrefix("hc"), "campaigns/hc/"},                                                      // 11
		{SweepSpecKey("grid"), "sweeps/grid/spec.json"},                                              // 12
		{SweepResultsKey("grid"), "sweeps/grid/results.parquet"},                                     // 13: DESIGN §4
		{SweepCurvesKey("grid"), "sweeps/grid/curves.parquet"},                                       // 14
		{SweepPrefix("grid"), "sweeps/grid/"},                                                        // 15
		{SharedStateKey("hc", 3), "campaigns/hc/round-0003/shared-state.parquet"},                    // 16
		{AggregateKey("hc", 3, "client1"), "campaigns/hc/round-0003/aggregate/client1.parquet"},      // 17
	} {
		if tc.got != tc.want {
			t.Errorf("%d: got %q, want %q", i, tc.got, tc.want)
		}
	}
}

func TestParseRoundPrefix(t *testing.T) {
	for i, tc := range []struct {
		key   string
		round int
		ok    bool
	}{
		{ManifestKey("c1", 7), 7, true},          // 0
		{RoundPrefix("c1", 12345), 12345, true},  // 1
		{SpecKey("c1"), 0, false},                // 2: not under a round
		{"campaigns/c1/round-12/x", 0, false},    // 3: fewer than four digits
		{"campaigns/c2/round-0001/x", 0, false},  // 4: another campaign
		{"campaigns/c1/round-00a1/x", 0, false},  // 5: not a number
		{"campaigns/c1/round-0001", 0, false},    // 6: no folder
		{"campaigns/c10/round-0001/x", 0, false}, // 7: a campaign whose name extends c1
	} {
		r, ok := ParseRoundPrefix("c1", tc.key)
		if r != tc.round || ok != tc.ok {
			t.Errorf("%d: ParseRoundPrefix(%q) = %d, %v; want %d, %v", i, tc.key, r, ok, tc.round, tc.ok)
		}
	}
}

// TestRoundKeys: a round's first attempt has the original keys, a later
// one the same keys one folder deeper; ParseManifestKey reads both back
// and nothing else. Expected strings written out by hand from DESIGN §4.
func TestRoundKeys(t *testing.T) {
	for i, tc := range []struct {
		got, want string
	}{
		{RoundKeys{"c1", 7, 0}.Model("s1"), "campaigns/c1/round-0007/models/s1.parquet"},                          // 0: zero is the first attempt
		{RoundKeys{"c1", 7, 1}.Manifest(), ManifestKey("c1", 7)},                                                  // 1
		{RoundKeys{"c1", 7, 2}.Manifest(), "campaigns/c1/round-0007/attempt-2/manifest.json"},                     // 2
		{RoundKeys{"c1", 7, 3}.Descriptor("s1"), "campaigns/c1/round-0007/attempt-3/descriptors/s1.parquet"},      // 3
		{RoundKeys{"c1", 7, 2}.Aggregate("global"), "campaigns/c1/round-0007/attempt-2/aggregate/global.parquet"}, // 4
		{RoundKeys{"c1", 7, 2}.Clustering(), "campaigns/c1/round-0007/attempt-2/clustering.parquet"},              // 5
		{RoundKeys{"c1", 7, 2}.ServerState(), "campaigns/c1/round-0007/attempt-2/server-state.parquet"},           // 6
		{RoundKeys{"c1", 7, 2}.SiteState("s1"), "campaigns/c1/round-0007/attempt-2/state/s1.parquet"},             // 7
		{RoundKeys{"c1", 7, 2}.Control("s1"), "campaigns/c1/round-0007/attempt-2/control/s1.parquet"},             // 8
		{RoundKeys{"c1", 7, 2}.Metrics("s1"), "campaigns/c1/round-0007/attempt-2/metrics/s1.parquet"},             // 9
		{RoundKeys{"c1", 7, 2}.SharedState(), "campaigns/c1/round-0007/attempt-2/shared-state.parquet"},           // 10
	} {
		if tc.got != tc.want {
			t.Errorf("%d: got %s, want %s", i, tc.got, tc.want)
		}
	}
	for i, tc := range []struct {
		key            string
		round, attempt int
		ok             bool
	}{
		{ManifestKey("c1", 7), 7, 1, true},                                                  // 0
		{RoundKeys{"c1", 7, 12}.Manifest(), 7, 12, true},                                    // 1
		{RoundKeys{"c1", 7, 2}.Model("s"), 0, 0, false},                                     // 2: not a manifest
		{"campaigns/c1/round-0007/attempt-1/manifest.json", 0, 0, false},                    // 3: attempt 1 has no folder
		{"campaigns/c1/round-0007/attempt-02/manifest.json", 0, 0, false},                   // 4: not the canonical number
		{"campaigns/c1/round-0007/attempt-/manifest.json", 0, 0, false},                     // 5
		{"campaigns/c1/round-0007/attempt-2x/manifest.json", 0, 0, false},                   // 6
		{"campaigns/c1/round-0007/attempt-99999999999999999999/manifest.json", 0, 0, false}, // 7: overflow
		{"campaigns/c2/round-0007/manifest.json", 0, 0, false},                              // 8: another campaign
	} {
		r, a, ok := ParseManifestKey("c1", tc.key)
		if r != tc.round || a != tc.attempt || ok != tc.ok {
			t.Errorf("%d: ParseManifestKey(%q) = %d, %d, %v; want %d, %d, %v", i, tc.key, r, a, ok, tc.round, tc.attempt, tc.ok)
		}
	}
}

func TestValidateName(t *testing.T) {
	for i, tc := range []struct {
		name string
		ok   bool
	}{
		{"a", true},                                // 0
		{"site-01", true},                          // 1
		{"Hospital_B.v2", true},                    // 2
		{"9lives", true},                           // 3: a digit may start a name
		{strings.Repeat("x", MaxNameLen), true},    // 4: the longest
		{strings.Repeat("x", MaxNameLen+1), false}, // 5: one too long
		{"", false},                                // 6
		{".", false},                               // 7
		{"..", false},                              // 8
		{".hidden", false},                         // 9
		{"-flag", false},                           // 10: read as a flag by a command line
		{"_x", false},                              // 11
		{"a/b", false},                             // 12: a key separator
		{"a b", false},                             // 13
		{"é", false},                               // 14: not ASCII
		{"site\n", false},                          // 15: a trailing newline
	} {
		err := ValidateName(tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("%d: ValidateName(%q) = %v, want ok %v", i, tc.name, err, tc.ok)
		}
	}
}

// TestValidateNameText pins the message: CampaignSpec.Validate wraps it and
// workflows record that text in their histories.
func TestValidateNameText(t *testing.T) {
	got := ValidateName("a b").Error()
	want := `"a b": must be 1-64 characters of A-Z a-z 0-9 . _ - starting with a letter or digit`
	if got != want {
		t.Errorf("ValidateName text %q, want %q", got, want)
	}
}

// TestValidateSiteName: a site may not be named like an aggregate the
// server writes for others ("global", "cluster-<anything>", in any case),
// nor so that a pattern every site reads matches its objects
// ("shared-state", "initial-model", …), and every name it accepts keeps
// each of the site's objects unreadable by another site.
func TestValidateSiteName(t *testing.T) {
	const clusterErr = `names starting with "cluster-" are reserved for pTopoFL's cluster models (aggregate/cluster-<c>.parquet); rename the site`
	const sharedErr = `which the pattern of a server object shared by every site matches; rename the site`
	for i, tc := range []struct {
		name string
		want string // the error's end; "" for a valid name
	}{
		{"site0", ""},    // 0
		{"globally", ""}, // 1: a longer name
		{"clusters", ""}, // 2: no "cluster-" prefix
		{"cluster0", ""}, // 3
		{"my-cluster-0", ""},
		{"global", `"global": reserved for the global model (aggregate/global.parquet); rename the site`}, // 5
		{"Global", `"Global": reserved for the global model (aggregate/global.parquet); rename the site`}, // 6: one file on a case-insensitive disk
		{"cluster-0", `"cluster-0": ` + clusterErr},
		{"cluster-site", `"cluster-site": ` + clusterErr}, // 8
		{"CLUSTER-1", `"CLUSTER-1": ` + clusterErr},
		{"a b", "starting with a letter or digit"}, // 10: ValidateName's rule first
		// 11-14: "campaigns/*/round-*/shared-state.parquet" and
		// "campaigns/*/initial-model.parquet" match this site's
		// models/<site>.parquet; "campaigns/*/spec.json" and
		// "…/model-layout.json" its init/<site>.json.
		{"shared-state", sharedErr},
		{"Initial-Model", sharedErr},
		{"spec", sharedErr},
		{"model-layout", sharedErr},
		{"server-state", ""}, // 15: only the server reads server-state.parquet now
		{"a", ""},            // 16: the name checkSiteName compares with
	} {
		err := ValidateSiteName(tc.name)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%d: ValidateSiteName(%q) = %v, want nil", i, tc.name, err)
		case tc.want != "" && (err == nil || !strings.HasSuffix(err.Error(), tc.want)):
			t.Errorf("%d: ValidateSiteName(%q) = %v, want an error ending %q", i, tc.name, err, tc.want)
		}
		// What the rule protects: another site cannot read any object
		// kept under a valid site's name.
		if err == nil {
			for _, key := range siteKeys(tc.name) {
				if anyMatch(SiteReadPatterns("other"), key) {
					t.Errorf("%d: site %q accepted, but %s is readable by every site", i, tc.name, key)
				}
			}
		}
	}
	if !anyMatch(SiteReadPatterns("other"), AggregateKey("c", 1, GlobalTarget)) {
		t.Errorf("%q is reserved, yet not readable by every site: the rule no longer matches the policy", GlobalTarget)
	}
}

func TestKeyPanicsOnInvalidName(t *testing.T) {
	for i, f := range []func(){
		func() { DescriptorKey("c", 1, "../x") },
		func() { SpecKey("") },
		func() { RoundPrefix("c", -1) },
		func() { SweepPrefix("a/b") },
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.HasPrefix(r.(string), "artifact: ") {
					t.Errorf("%d: recovered %v, want an artifact panic", i, r)
				}
			}()
			f()
		}()
	}
}

// TestRefJSON pins the encoding of a Ref: it is inside every workflow
// history and every manifest, whose sha256 chain depends on its bytes.
func TestRefJSON(t *testing.T) {
	r := Ref{Bucket: "ptopofl", Key: ManifestKey("hc", 1), SHA256: "ab01", Size: 42}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"bucket":"ptopofl","key":"campaigns/hc/round-0001/manifest.json","sha256":"ab01","size":42}`
	if string(b) != want {
		t.Errorf("JSON %s, want %s", b, want)
	}
	if got := r.String(); got != "s3://ptopofl/campaigns/hc/round-0001/manifest.json" {
		t.Errorf("String() = %q", got)
	}
	if r.IsZero() || !(Ref{}).IsZero() {
		t.Error("IsZero is wrong")
	}
}

// TestParseRoundKeys: the RoundKeys of the folder a key is in, for every
// kind of round key of a first and a later attempt, so that a sibling's
// key is built from it; AggregateTarget reads an aggregate key's target
// back and refuses every other key. Expected values from the key layout
// of DESIGN §4.
func TestParseRoundKeys(t *testing.T) {
	for i, tc := range []struct {
		key    string
		want   RoundKeys
		ok     bool
		target string // AggregateTarget; "" for not an aggregate key
	}{
		{AggregateKey("c1", 7, "cluster-1"), RoundKeys{"c1", 7, 1}, true, "cluster-1"},                        // 0: an old cluster model
		{RoundKeys{"c1", 7, 2}.Aggregate("s1"), RoundKeys{"c1", 7, 2}, true, "s1"},                            // 1
		{RoundKeys{"c1", 7, 12}.ServerState(), RoundKeys{"c1", 7, 12}, true, ""},                              // 2
		{ServerStateKey("c1", 3), RoundKeys{"c1", 3, 1}, true, ""},                                            // 3
		{ModelKey("c1", 3, "global"), RoundKeys{"c1", 3, 1}, true, ""},                                        // 4: a model, not an aggregate
		{"campaigns/c1/round-0007/attempt-1/aggregate/g.parquet", RoundKeys{}, false, ""},                     // 5: attempt 1 has no folder
		{"campaigns/c1/round-0007/attempt-02/aggregate/g.parquet", RoundKeys{}, false, ""},                    // 6
		{SpecKey("c1"), RoundKeys{}, false, ""},                                                               // 7
		{AggregateKey("c2", 7, "global"), RoundKeys{}, false, ""},                                             // 8: another campaign
		{"campaigns/c1/round-0007/aggregate/x/y.parquet", RoundKeys{"c1", 7, 1}, true, ""},                    // 9: not a name
		{"campaigns/c1/round-0007/aggregate/global.json", RoundKeys{"c1", 7, 1}, true, ""},                    // 10
		{"campaigns/c1/round-0007/attempt-3/aggregate/global.parquet", RoundKeys{"c1", 7, 3}, true, "global"}, // 11
	} {
		got, ok := ParseRoundKeys("c1", tc.key)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%d: ParseRoundKeys(%q) = %+v, %v; want %+v, %v", i, tc.key, got, ok, tc.want, tc.ok)
		}
		target, isAgg := AggregateTarget("c1", tc.key)
		if target != tc.target || isAgg != (tc.target != "") {
			t.Errorf("%d: AggregateTarget(%q) = %q, %v; want %q", i, tc.key, target, isAgg, tc.target)
		}
		if ok && tc.target != "" && got.Aggregate(tc.target) != tc.key {
			t.Errorf("%d: %q does not round-trip: %s", i, tc.key, got.Aggregate(tc.target))
		}
	}
}
