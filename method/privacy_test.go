package method

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/privacy"
)

// TestQuietParamsKeepSpecEncoding: a campaign that uses none of the
// privacy parameters encodes its hyper-parameters exactly as before they
// existed, so the spec hash every manifest names does not change; a Quiet
// parameter set to its default stores zero, and reads back the default.
func TestQuietParamsKeepSpecEncoding(t *testing.T) {
	for _, preset := range Presets {
		b, err := json.Marshal(Defaults(preset))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"site_distance", `"dp"`, "dp_epsilon", "dp_delta", "dp_noise", "dp_clip", "dp_descriptor_noise", "dp_metrics_noise", "dp_descriptor_share", "dp_validation_noise", "dp_validation_share"} {
			if strings.Contains(string(b), name) {
				t.Errorf("preset %s: defaults encode %s: %s", preset, name, b)
			}
		}
	}
	var h Hyperparameters
	for i, c := range []struct {
		name string
		set  Value
		raw  func(Hyperparameters) any
		get  Value
	}{
		{"dp", text(DPOff), func(h Hyperparameters) any { return h.DP }, text(DPOff)},                                      // 0: the default stores ""
		{"dp", text(DPRecord), func(h Hyperparameters) any { return h.DP }, text(DPRecord)},                                // 1
		{"site_distance", text(SiteEuclidean), func(h Hyperparameters) any { return h.SiteDistance }, text(SiteEuclidean)}, // 2
		{"dp_delta", num(1e-5), func(h Hyperparameters) any { return h.DPDelta }, num(1e-5)},                               // 3
		{"dp_delta", num(1e-6), func(h Hyperparameters) any { return h.DPDelta }, num(1e-6)},                               // 4
		{"dp_clip", num(DefaultDPClip), func(h Hyperparameters) any { return h.DPClip }, num(DefaultDPClip)},               // 5
	} {
		p, ok := Lookup(c.name)
		if !ok || !p.Quiet {
			t.Fatalf("%d: %s is not a Quiet parameter", i, c.name)
		}
		if err := p.Set(&h, c.set); err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		raw := c.raw(h)
		wantZero := c.set == p.Default
		if isZero := raw == "" || raw == 0.0; isZero != wantZero {
			t.Errorf("%d: %s = %v stored %v, want zero only for the default %v", i, c.name, c.set, raw, p.Default)
		}
		if got := p.Get(h); got != c.get {
			t.Errorf("%d: %s reads %v, want %v", i, c.name, got, c.get)
		}
	}
}

func healthcareSites() []SiteRecords {
	// The healthcare federation of seed 42's training and test sizes
	// (eval.Healthcare: n_k in [60, 250), test max(30, ⌊0.2 n_k⌋)); any
	// sizes do for a tabular plan, whose ε does not depend on them.
	return []SiteRecords{{"site0", 120, 30}, {"site1", 50, 30}, {"site2", 180, 45}, {"site3", 33, 30}}
}

// TestPlanPrivacyTabular checks the plan of a tabular FedAvg campaign
// against the closed form of Gaussian DP: 15 rounds of 30 DP-GD steps on
// every record compose to μ = √450/z, and 15 metrics releases to √15/z_m;
// the plan's noise meets ε = 8 at δ = 1e-5 exactly up to its rounding
// (four significant digits, up): δ(8) at the planned z is at most 1e-5,
// and at z lowered by 0.1 % it is above.
func TestPlanPrivacyTabular(t *testing.T) {
	h := Defaults(Default)
	h.DP, h.DPEpsilon = DPRecord, 8
	got, budgets, err := PlanPrivacy(learn.FedAvg, Default, h, 15, healthcareSites())
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		name     string
		z        float64
		releases float64
	}{
		{"dp_noise", got.DPNoise, 15 * 30},           // 0
		{"dp_metrics_noise", got.DPMetricsNoise, 15}, // 1
	} {
		if !(c.z > 0) {
			t.Fatalf("%d: %s = %v, want it planned", i, c.name, c.z)
		}
		at := privacy.GaussianDelta(math.Sqrt(c.releases)/c.z, 8)
		below := privacy.GaussianDelta(math.Sqrt(c.releases)/(c.z*0.999), 8)
		if !(at <= 1e-5 && below > 1e-5) {
			t.Errorf("%d: %s = %v: δ(8) %v at it, %v 0.1 %% below; want ≤ 1e-5 and > 1e-5", i, c.name, c.z, at, below)
		}
	}
	if got.DPDescriptorNoise != 0 {
		t.Errorf("FedAvg releases no descriptor, yet dp_descriptor_noise = %v", got.DPDescriptorNoise)
	}
	for _, b := range budgets {
		if b.Epsilon.Epsilon > 8 || b.Epsilon.Epsilon < 7.99 || b.Epsilon.Accountant != privacy.GDP {
			t.Errorf("site %s: planned ε %v (%s), want just below 8 by Gaussian DP", b.Site, b.Epsilon.Epsilon, b.Epsilon.Accountant)
		}
	}
	// Given noise is kept and checked: half the planned noise spends more.
	h.DPNoise = got.DPNoise / 2
	if _, _, err := PlanPrivacy(learn.FedAvg, Default, h, 15, healthcareSites()); err == nil || !strings.Contains(err.Error(), "dp_epsilon = 8") {
		t.Errorf("half the noise: err %v, want the budget named", err)
	}
}

// TestPlanPrivacyDescriptors: pTopoFL's descriptor releases (every round
// under drift_check_every 1, and the label summary beside each: 30
// releases) get dp_descriptor_share of μ², and the training noise fills
// the rest, so the two together spend ε = 8.
func TestPlanPrivacyDescriptors(t *testing.T) {
	h := Defaults(Default)
	h.DP, h.DPEpsilon = DPRecord, 8
	got, budgets, err := PlanPrivacy(learn.PTopoFL, Default, h, 15, healthcareSites())
	if err != nil {
		t.Fatal(err)
	}
	mu, err := privacy.GaussianMu(8, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	desc := 30 / (got.DPDescriptorNoise * got.DPDescriptorNoise)
	if share := desc / (mu * mu); math.Abs(share-DefaultDPDescriptorShare) > 0.002 {
		t.Errorf("descriptors take %.4f of μ², want dp_descriptor_share %v", share, DefaultDPDescriptorShare)
	}
	train := 450 / (got.DPNoise * got.DPNoise)
	if total := math.Sqrt(train + desc); total > mu || total < 0.995*mu {
		t.Errorf("training and descriptors compose to μ %v, want just below %v", total, mu)
	}
	for _, b := range budgets {
		if b.Epsilon.Epsilon > 8 {
			t.Errorf("site %s: planned ε %v > 8", b.Site, b.Epsilon.Epsilon)
		}
	}
}

func TestPlanPrivacyRefuses(t *testing.T) {
	base := Defaults(Default)
	base.DP, base.DPEpsilon = DPRecord, 3
	for i, c := range []struct {
		m     learn.Method
		edit  func(*Hyperparameters)
		sites []SiteRecords
		want  string
	}{
		{learn.FedAvg, func(h *Hyperparameters) { h.DPDelta = 0.05 }, healthcareSites(), "dp_delta"},                             // 0: above 1/33
		{learn.FedAvg, func(h *Hyperparameters) { h.DPEpsilon = 0 }, healthcareSites(), "set dp_epsilon"},                        // 1
		{learn.FedAvg, func(h *Hyperparameters) { h.LocalSolver = learn.SolverLBFGS }, healthcareSites(), "local_solver"},        // 2
		{learn.PTopoFL, func(h *Hyperparameters) { h.SiteDistance = SiteWasserstein }, healthcareSites(), "site_distance"},       // 3
		{learn.FedAvg, func(h *Hyperparameters) {}, []SiteRecords{{"a", 10, 0}}, "test records"},                                 // 4
		{learn.FedAvg, func(h *Hyperparameters) { h.DP, h.DPEpsilon = "", 0; h.DPNoise = 2 }, healthcareSites(), "applies only"}, // 5: off
	} {
		h := base
		c.edit(&h)
		var err error
		if h.IsDP() {
			_, _, err = PlanPrivacy(c.m, Default, h, 15, c.sites)
		} else {
			err = h.Validate(c.m)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d: err %v, want one naming %q", i, err, c.want)
		}
	}
}

// TestDescriptorRound: the descriptor schedule is round 1 and every
// drift_check_every rounds, for pTopoFL only.
func TestDescriptorRound(t *testing.T) {
	h := Defaults(Default)
	for i, c := range []struct {
		m     learn.Method
		every int
		want  string // rounds 1..7 with a descriptor, by hand
	}{
		{learn.PTopoFL, 1, "1234567"}, // 0
		{learn.PTopoFL, 0, "1"},       // 1
		{learn.PTopoFL, 3, "147"},     // 2: (r−1) % 3 == 0
		{learn.FedAvg, 1, ""},         // 3
	} {
		h.DriftCheckEvery = c.every
		got := ""
		for r := 1; r <= 7; r++ {
			if DescriptorRound(c.m, h, r) {
				got += string(rune('0' + r))
			}
		}
		if got != c.want {
			t.Errorf("%d: rounds %q, want %q", i, got, c.want)
		}
	}
}

// TestRoundChargesDeep: a deep site's training is nn.DPUse's Poisson-
// subsampled steps: deep-small's batch 32 on 600 images is q = 32/600 and
// ⌈600/32⌉ = 19 steps per epoch; its metrics are two releases a round.
func TestRoundChargesDeep(t *testing.T) {
	h := Defaults(DeepSmall)
	h.DP, h.DPNoise, h.DPMetricsNoise, h.DPDescriptorNoise = DPRecord, 1.1, 4, 3
	cfg, err := Resolve(learn.FedAvg, DeepSmall, h)
	if err != nil {
		t.Fatal(err)
	}
	ch := cfg.RoundCharges(SiteRecords{Site: "s", Train: 600, Test: 100}, false)
	if len(ch.Train) != 1 || ch.Train[0] != (privacy.Event{Z: 1.1, Q: 32.0 / 600, Count: 19}) {
		t.Errorf("training charges %+v, want one event z 1.1, q 32/600, 19 steps", ch.Train)
	}
	if len(ch.Test) != 1 || ch.Test[0] != (privacy.Event{Z: 4, Q: 1, Count: 2}) {
		t.Errorf("metrics charges %+v, want two releases at z 4", ch.Test)
	}
}

// TestPlanPrivacyValidation: under validation_fraction the validation
// metrics (one release a round, on the held-out training rows) get
// dp_validation_share of the training records' μ² and the training noise
// the rest, so that both together spend ε = 8 (Gaussian DP: μ² adds); a
// deep site's DP-SGD samples from the images it trains on, 600 − 120 =
// 480 at validation_fraction 0.2 (q = 32/480, ⌈480/32⌉ = 15 steps).
func TestPlanPrivacyValidation(t *testing.T) {
	h := Defaults(Default)
	h.DP, h.DPEpsilon, h.ValidationFraction = DPRecord, 8, 0.2
	got, budgets, err := PlanPrivacy(learn.FedAvg, Default, h, 15, healthcareSites())
	if err != nil {
		t.Fatal(err)
	}
	mu, _ := privacy.GaussianMu(8, 1e-5)
	val := 15 / (got.DPValidationNoise * got.DPValidationNoise)
	if share := val / (mu * mu); math.Abs(share-DefaultDPValidationShare) > 0.002 {
		t.Errorf("validation takes %.4f of μ², want dp_validation_share %v", share, DefaultDPValidationShare)
	}
	train := 450 / (got.DPNoise * got.DPNoise)
	if total := math.Sqrt(train + val); total > mu || total < 0.995*mu {
		t.Errorf("training and validation compose to μ %v, want just below %v", total, mu)
	}
	for _, b := range budgets {
		if b.Train.Epsilon > 8 || b.Train.Epsilon < 7.95 {
			t.Errorf("site %s: training records' planned ε %v, want just below 8", b.Site, b.Train.Epsilon)
		}
	}
	cfg, _ := Resolve(learn.FedAvg, Default, got)
	ch := cfg.RoundCharges(SiteRecords{Site: "s", Train: 100, Test: 30}, false)
	if len(ch.Train) != 2 || ch.Train[1] != (privacy.Event{Z: got.DPValidationNoise, Q: 1, Count: 1}) {
		t.Errorf("a round charges the training records %+v, want the steps and one validation release", ch.Train)
	}

	d := Defaults(DeepSmall)
	d.DP, d.DPNoise, d.DPMetricsNoise, d.DPValidationNoise, d.ValidationFraction = DPRecord, 1.1, 4, 5, 0.2
	dcfg, err := Resolve(learn.FedAvg, DeepSmall, d)
	if err != nil {
		t.Fatal(err)
	}
	ch = dcfg.RoundCharges(SiteRecords{Site: "s", Train: 600, Test: 100}, false)
	if len(ch.Train) != 2 || ch.Train[0] != (privacy.Event{Z: 1.1, Q: 32.0 / 480, Count: 15}) || ch.Train[1].Z != 5 {
		t.Errorf("deep training charges %+v, want z 1.1, q 32/480, 15 steps and a validation release at z 5", ch.Train)
	}

	// The shares must leave training something.
	p := Defaults(Default)
	p.DP, p.DPEpsilon, p.ValidationFraction, p.DPDescriptorShare, p.DPValidationShare = DPRecord, 8, 0.2, 0.5, 0.5
	if _, _, err := PlanPrivacy(learn.PTopoFL, Default, p, 15, healthcareSites()); err == nil || !strings.Contains(err.Error(), "leave nothing") {
		t.Errorf("shares summing to 1: err %v", err)
	}
}

func TestRoundUp(t *testing.T) {
	for i, c := range []struct{ in, want float64 }{
		{12.73201, 12.74},  // 0
		{12.73, 12.73},     // 1: already four digits
		{0.123456, 0.1235}, // 2
		{2.0000001, 2.001}, // 3
	} {
		if got := roundUp(c.in); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%d: roundUp(%v) = %v, want %v", i, c.in, got, c.want)
		}
	}
}

// TestDPDefaults: under dp record drift_check_every defaults to 0 (one
// descriptor release), unless the user set it; without dp nothing changes.
func TestDPDefaults(t *testing.T) {
	none := func(string) bool { return false }
	h := Defaults(Default)
	if got := DPDefaults(h, none); got != h {
		t.Errorf("without dp: %+v changed", got)
	}
	h.DP = DPRecord
	if got := DPDefaults(h, none); got.DriftCheckEvery != 0 {
		t.Errorf("dp record: drift_check_every %d, want 0", got.DriftCheckEvery)
	}
	if got := DPDefaults(h, func(n string) bool { return n == "drift_check_every" }); got.DriftCheckEvery != 1 {
		t.Errorf("dp record with drift_check_every given: %d, want the given 1", got.DriftCheckEvery)
	}
}
