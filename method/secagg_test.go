package method

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/secagg"
)

// TestSecAggValidation: secure aggregation is refused, naming the method
// and why, for the methods that read single models; its parameters are
// refused without it; dp_noise_split "sum" is refused as not implemented,
// with or without dp record.
func TestSecAggValidation(t *testing.T) {
	on := func(h Hyperparameters) Hyperparameters { h.SecureAggregation = SecAggPlus; return h }
	base := Defaults(Default)
	dp := base
	dp.DP, dp.DPEpsilon = DPRecord, 3
	for i, c := range []struct {
		m    learn.Method
		h    Hyperparameters
		want string // "" accepted
	}{
		{learn.FedAvg, on(base), ""},   // 0
		{learn.PTopoFL, on(base), ""},  // 1
		{learn.SCAFFOLD, on(base), ""}, // 2
		{learn.FedProx, on(base), ""},  // 3
		{learn.PFedMe, on(base), ""},   // 4
		{learn.Median, on(base), "method median is refused, since it sorts"},
		{learn.TrimmedMean, on(base), "method trimmed-mean is refused"}, // 6
		{learn.Krum, on(base), "method krum is refused, since it compares every pair"},
		{learn.FoolsGold, on(base), "method foolsgold is refused"},       // 8
		{learn.NormClip, on(base), "clip at the sites instead"},          // 9
		{learn.LocalOnly, on(base), "local training aggregates nothing"}, // 10
		{learn.FedAvg, func() Hyperparameters { h := base; h.SecAggMinGroup = 4; return h }(), // 11
			`hyperparameters.secagg_min_group = 4: applies only under secure_aggregation "secagg+"`},
		{learn.FedAvg, func() Hyperparameters { h := on(base); h.SecAggMinGroup = 2; return h }(), "secagg_min_group = 2: must be >= 3"},
		{learn.FedAvg, func() Hyperparameters { h := on(base); h.SecAggThreshold = 2.5; return h }(), "secagg_threshold = 2.5"}, // 13
		{learn.FedAvg, func() Hyperparameters { h := on(base); h.SecAggThreshold = 1; return h }(), "secagg_threshold = 1"},
		{learn.FedAvg, func() Hyperparameters { h := on(base); h.SecAggQuantBits = 32; return h }(), "between 8 and 31"}, // 15
		{learn.FedAvg, func() Hyperparameters { h := on(base); h.DPNoiseSplit = DPSplitSum; return h }(), `dp_noise_split = "sum": "sum" (each site adding a share of the noise over the secure sum) is not implemented; use "site"`},
		{learn.PTopoFL, func() Hyperparameters { h := on(dp); h.DPNoiseSplit = DPSplitSum; return h }(), "is not implemented"},
		{learn.FedAvg, func() Hyperparameters { h := on(dp); h.DPNoiseSplit = DPSplitSite; return h }(), ""}, // 18
		{learn.FedAvg, func() Hyperparameters { h := dp; h.DPNoiseSplit = DPSplitSum; return h }(), "is not implemented"},
		{learn.FedAvg, func() Hyperparameters { h := dp; h.DPNoiseSplit = DPSplitSite; return h }(), "applies only under secure_aggregation"}, // 20
		{learn.FedAvg, func() Hyperparameters { h := on(base); h.SecureAggregation = "secagg"; return h }(), `must be "off" or "secagg+"`},
	} {
		err := c.h.Validate(c.m)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%d: %s: %v", i, c.m, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%d: %s: %v, want an error containing %q", i, c.m, err, c.want)
		}
	}
	if err := on(base).ValidateFederation(learn.FedAvg, 2); err == nil || !strings.Contains(err.Error(), "min_sites = 2, below secagg_min_group = 3") {
		t.Fatalf("min_sites 2 under secagg+: %v", err)
	}
	if err := on(base).ValidateFederation(learn.FedAvg, 3); err != nil {
		t.Fatal(err)
	}
}

// TestSecAggQuiet: a spec without secure aggregation encodes as it did
// before the parameters existed (none of their names in its JSON), and
// Resolve gives the off configuration; with it, the defaults are
// Flower's.
func TestSecAggQuiet(t *testing.T) {
	h := Defaults(Default)
	b, _ := json.Marshal(h)
	for _, name := range []string{"secure_aggregation", "secagg_", "dp_noise_split"} {
		if strings.Contains(string(b), name) {
			t.Fatalf("a default spec's JSON holds %q: %s", name, b)
		}
	}
	c, err := Resolve(learn.FedAvg, Default, h)
	if err != nil || c.SecAgg != (SecAggSettings{}) {
		t.Fatalf("off: %+v %v", c.SecAgg, err)
	}
	h.SecureAggregation = SecAggPlus
	c, err = Resolve(learn.FedAvg, Default, h)
	if err != nil {
		t.Fatal(err)
	}
	want := SecAggSettings{On: true, MinGroup: 3, Clip: secagg.DefaultClip, QuantBits: secagg.DefaultQuantBits}
	if c.SecAgg != want {
		t.Fatalf("secagg+ defaults %+v, want %+v", c.SecAgg, want)
	}
}

// TestGroupConfig: the shares and threshold of a group of n sites, by
// secagg_threshold (k = 2⌈log₂ n⌉ + 1 capped at n: 3 → 3, 8 → 7, 50 →
// 13, 200 → 17).
func TestGroupConfig(t *testing.T) {
	for i, c := range []struct {
		n         int
		threshold float64
		k, t      int
	}{
		{3, 0, 3, 2},     // 0: Flower's example, 2 of 3
		{8, 0, 7, 5},     // 1: ⌈14/3⌉
		{200, 0, 17, 12}, // 2: ⌈34/3⌉
		{50, 0.5, 13, 7}, // 3: ⌈6.5⌉
		{8, 0.9, 7, 7},   // 4: ⌈6.3⌉
		{3, 0.1, 3, 2},   // 5: at least 2
		{50, 10, 13, 10}, // 6: a count
		{8, 10, 7, 7},    // 7: capped at k
	} {
		s := SecAggSettings{On: true, Threshold: c.threshold, MinGroup: 3, Clip: 8, QuantBits: 22}
		got := s.GroupConfig(c.n)
		if got.Shares != c.k || got.Threshold != c.t {
			t.Errorf("%d: n = %d, threshold %v: k = %d, t = %d; want %d, %d", i, c.n, c.threshold, got.Shares, got.Threshold, c.k, c.t)
		}
		if _, err := secagg.NewGroup(secagg.Context{Campaign: "c", Round: 1, Group: "g"}, names(c.n), got); err != nil {
			t.Errorf("%d: %v", i, err)
		}
	}
}

func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "s" + strings.Repeat("x", i)
	}
	return out
}
