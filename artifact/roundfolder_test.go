package artifact

import "testing"

// TestRoundFolder: the folder of each kind of round key, with and without
// an attempt folder in front; keys outside the campaign's rounds are not
// read. Expected folders are the key layout of DESIGN §4.
func TestRoundFolder(t *testing.T) {
	for i, tc := range []struct {
		key    string
		round  int
		folder string
		ok     bool
	}{
		{ModelKey("c1", 7, "s1"), 7, "models", true},                               // 0
		{ControlKey("c1", 7, "s1"), 7, "control", true},                            // 1
		{AggregateKey("c1", 2, "global"), 2, "aggregate", true},                    // 2
		{ManifestKey("c1", 3), 3, "", true},                                        // 3: a file in the round itself
		{ServerStateKey("c1", 3), 3, "", true},                                     // 4
		{"campaigns/c1/round-0007/attempt-2/models/s1.parquet", 7, "models", true}, // 5: a later attempt's model
		{"campaigns/c1/round-0007/attempt-2/manifest.json", 7, "", true},           // 6
		{SpecKey("c1"), 0, "", false},                                              // 7: not under a round
		{ModelKey("c2", 7, "s1"), 0, "", false},                                    // 8: another campaign
	} {
		r, f, ok := RoundFolder("c1", tc.key)
		if r != tc.round || f != tc.folder || ok != tc.ok {
			t.Errorf("%d: RoundFolder(%q) = %d, %q, %v; want %d, %q, %v", i, tc.key, r, f, ok, tc.round, tc.folder, tc.ok)
		}
	}
}
