package store

import (
	"fmt"
	"testing"
)

func TestKeys(t *testing.T) {
	for i, tc := range []struct{ got, want string }{
		{SpecKey("c1"), "campaigns/c1/spec.json"},                                                // 0: DESIGN §4
		{DescriptorKey("c1", 7, "site-a"), "campaigns/c1/round-0007/descriptors/site-a.parquet"}, // 1
		{ModelKey("c1", 0, "s_2"), "campaigns/c1/round-0000/models/s_2.parquet"},                 // 2
		{AggregateKey("c1", 12, "cluster-1"), "campaigns/c1/round-0012/aggregate/cluster-1.parquet"},
		{ManifestKey("c1", 7), "campaigns/c1/round-0007/manifest.json"},
		{MetricsKey("c1", 7, "a"), "campaigns/c1/round-0007/metrics/a.parquet"},
		{RoundPrefix("c1", 12345), "campaigns/c1/round-12345/"}, // wider than 4 digits past 9999
	} {
		if tc.got != tc.want {
			t.Errorf("%d: got %q, want %q", i, tc.got, tc.want)
		}
	}
	for i, tc := range []struct {
		key   string
		round int
		ok    bool
	}{
		{ManifestKey("c1", 7), 7, true},
		{RoundPrefix("c1", 12345), 12345, true},
		{SpecKey("c1"), 0, false},
		{"campaigns/c1/round-12/x", 0, false},
		{"campaigns/c2/round-0001/x", 0, false},
	} {
		r, ok := ParseRoundPrefix("c1", tc.key)
		if r != tc.round || ok != tc.ok {
			t.Errorf("%d: ParseRoundPrefix(%q) = %d, %v; want %d, %v", i, tc.key, r, ok, tc.round, tc.ok)
		}
	}
}

func TestValidateName(t *testing.T) {
	for _, ok := range []string{"a", "site-01", "Hospital_B.v2"} {
		if err := ValidateName(ok); err != nil {
			t.Errorf("ValidateName(%q) = %v, want nil", ok, err)
		}
	}
	long := make([]byte, MaxNameLen+1)
	for i := range long {
		long[i] = 'x'
	}
	for _, bad := range []string{"", ".", "..", ".hidden", "a/b", "a b", "é", string(long)} {
		if err := ValidateName(bad); err == nil {
			t.Errorf("ValidateName(%q) = nil, want an error", bad)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("DescriptorKey with a site containing '/' did not panic")
		}
	}()
	DescriptorKey("c", 1, "../x")
}

func ExampleDescriptorKey() {
	fmt.Println(DescriptorKey("heart-2025", 7, "hospital-a"))
	fmt.Println(ManifestKey("heart-2025", 7))
	// Output:
	// campaigns/heart-2025/round-0007/descriptors/hospital-a.parquet
	// campaigns/heart-2025/round-0007/manifest.json
}
