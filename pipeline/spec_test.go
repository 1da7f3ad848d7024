package pipeline

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/tda"
)

func validSpec() CampaignSpec {
	return CampaignSpec{
		Campaign: "hc-42", Method: learn.PTopoFL, Rounds: 15, Seed: 42, Bucket: "ptopofl",
		Sites: []Site{{Name: "client0"}, {Name: "client1"}, {Name: "client2"}},
	}.WithDefaults()
}

func TestCampaignSpecValidate(t *testing.T) {
	if err := validSpec().Validate(); err != nil {
		t.Fatalf("valid spec rejected: %v", err)
	}
	for i, tc := range []struct {
		edit  func(*CampaignSpec)
		field string // the error must name this field
	}{
		{func(s *CampaignSpec) { s.Campaign = "" }, "campaign"},                                                                                                           // 0
		{func(s *CampaignSpec) { s.Campaign = "a/b" }, "campaign"},                                                                                                        // 1
		{func(s *CampaignSpec) { s.Method = "fedsgd" }, "method"},                                                                                                         // 2
		{func(s *CampaignSpec) { s.Preset = "fast" }, "preset"},                                                                                                           // 3
		{func(s *CampaignSpec) { s.Rounds = 0 }, "rounds"},                                                                                                                // 4
		{func(s *CampaignSpec) { s.Sites = nil }, "sites"},                                                                                                                // 5
		{func(s *CampaignSpec) { s.Sites[1].Name = "x y" }, "sites[1].name"},                                                                                              // 6
		{func(s *CampaignSpec) { s.Sites[2].Name = "client0" }, "sites[2].name"},                                                                                          // 7
		{func(s *CampaignSpec) { s.MinSites = 4 }, "min_sites"},                                                                                                           // 8
		{func(s *CampaignSpec) { s.RoundDeadline = -time.Second }, "round_deadline"},                                                                                      // 9
		{func(s *CampaignSpec) { s.Bucket = "" }, "bucket"},                                                                                                               // 10
		{func(s *CampaignSpec) { s.Hyperparameters.Beta = 1.5 }, "hyperparameters.beta"},                                                                                  // 11
		{func(s *CampaignSpec) { s.Hyperparameters.Descriptor = "cech" }, "hyperparameters.descriptor"},                                                                   // 12
		{func(s *CampaignSpec) { s.DescriptorRows = map[string][]int{"nobody": {1}} }, "descriptor_rows"},                                                                 // 13
		{func(s *CampaignSpec) { s.DescriptorRows = map[string][]int{"client1": {-1}} }, "descriptor_rows"},                                                               // 14
		{func(s *CampaignSpec) { s.Method = learn.FedProx; s.Hyperparameters.LR = -1 }, "hyperparameters.lr"},                                                             // 15
		{func(s *CampaignSpec) { s.ContinueAsNewEvery = -1 }, "continue_as_new_every"},                                                                                    // 16
		{func(s *CampaignSpec) { s.Rounds = 10000 }, "rounds"},                                                                                                            // 17: keys round-NNNN stop sorting
		{func(s *CampaignSpec) { s.MinSites = -1 }, "min_sites"},                                                                                                          // 18
		{func(s *CampaignSpec) { s.Method = learn.Krum; s.Hyperparameters.Byzantine = 1 }, "hyperparameters.byzantine"},                                                   // 19: 3 sites, f = 1 needs 5
		{func(s *CampaignSpec) { s.Method = learn.TrimmedMean; s.Hyperparameters.TrimFraction = 0.2 }, "hyperparameters.trim_fraction"},                                   // 20: ⌊0.2·3⌋ = 0
		{func(s *CampaignSpec) { s.Sites[1].Name = "global" }, `sites[1].name "global": reserved`},                                                                        // 21: the global model's aggregate key
		{func(s *CampaignSpec) { s.Sites[2].Name = "cluster-0" }, `sites[2].name "cluster-0": names starting with "cluster-"`},                                            // 22: a cluster model's, which every site may read
		{func(s *CampaignSpec) { s.DescriptorRows = map[string][]int{"client1": {3, 8, 3}} }, `descriptor_rows["client1"][2] = 3: repeats descriptor_rows["client1"][0]`}, // 23
	} {
		s := validSpec()
		s.Sites = append([]Site(nil), s.Sites...)
		tc.edit(&s)
		err := s.Validate()
		if err == nil {
			t.Errorf("case %d: invalid spec accepted", i)
			continue
		}
		if !strings.HasPrefix(err.Error(), tc.field) {
			t.Errorf("case %d: error %q does not start with the field %q", i, err, tc.field)
		}
	}
}

// TestNameChecksReplay: the checks of version 2 of the workflows' spec
// checks (reserved site names, repeated descriptor rows) are Validate's
// alone; ValidateBeforeNameChecks and LegacyValidate, which replay
// histories begun before them, still accept such specs, and so do the
// sweep's.
func TestNameChecksReplay(t *testing.T) {
	for i, edit := range []func(*CampaignSpec){
		func(s *CampaignSpec) { s.Sites[0].Name = "global" },                             // 0
		func(s *CampaignSpec) { s.Sites[0].Name = "cluster-1" },                          // 1
		func(s *CampaignSpec) { s.DescriptorRows = map[string][]int{"client0": {2, 2}} }, // 2
	} {
		s := validSpec()
		s.Sites = append([]Site(nil), s.Sites...)
		edit(&s)
		if s.Validate() == nil {
			t.Errorf("%d: Validate accepted %+v", i, s)
		}
		if err := s.ValidateBeforeNameChecks(); err != nil {
			t.Errorf("%d: ValidateBeforeNameChecks: %v", i, err)
		}
		if err := s.LegacyValidate(); err != nil {
			t.Errorf("%d: LegacyValidate: %v", i, err)
		}
	}
	sw := SweepSpec{Sweep: "grid", Rounds: 2, Seeds: []uint64{1}, Bucket: "b",
		Methods:     []SweepMethod{{Method: learn.FedAvg, Hyperparameters: method.Defaults(method.Default)}},
		Federations: []SweepFederation{{Name: "f", Sites: []Site{{Name: "global"}, {Name: "s1"}}}},
	}.WithDefaults()
	if err := sw.Validate(); err == nil || !strings.Contains(err.Error(), `sites[0].name "global": reserved`) {
		t.Errorf("sweep Validate: %v, want the reserved name", err)
	}
	if err := sw.ValidateBeforeNameChecks(); err != nil {
		t.Errorf("sweep ValidateBeforeNameChecks: %v", err)
	}
}

// TestValidateChecksTheQuorumSize pins the checks that used to surface only
// at round 1's aggregation (Krum) or never (a trimmed mean that trims
// nothing), and that LegacyValidate, which replays old histories, still
// accepts such specs.
func TestValidateChecksTheQuorumSize(t *testing.T) {
	sites := func(n int) []Site {
		out := make([]Site, n)
		for i := range out {
			out[i] = Site{Name: fmt.Sprintf("s%d", i)}
		}
		return out
	}
	for i, tc := range []struct {
		method   learn.Method
		sites    int
		minSites int // 0: all
		set      []method.ParamValue
		field    string // "" = valid
	}{
		{learn.Krum, 5, 0, nil, ""},                                                // 0: 5 > 2·1 + 2
		{learn.Krum, 4, 0, nil, "hyperparameters.byzantine"},                       // 1: 4 models, f = 1
		{learn.Krum, 8, 4, nil, "hyperparameters.byzantine"},                       // 2: the quorum lets a round aggregate 4
		{learn.Krum, 4, 0, []method.ParamValue{{Name: "byzantine", Value: 0}}, ""}, // 3: f = 0 needs 3
		{learn.TrimmedMean, 8, 0, nil, ""},                                         // 4: default 0.2 cuts ⌊1.6⌋ = 1
		{learn.TrimmedMean, 8, 0, []method.ParamValue{{Name: "trim_fraction", Value: 0.1}}, "hyperparameters.trim_fraction"},  // 5: ⌊0.8⌋ = 0
		{learn.TrimmedMean, 10, 0, []method.ParamValue{{Name: "trim_fraction", Value: 0.1}}, ""},                              // 6: ⌊1.0⌋ = 1
		{learn.TrimmedMean, 10, 9, []method.ParamValue{{Name: "trim_fraction", Value: 0.1}}, "hyperparameters.trim_fraction"}, // 7: a round of 9
		{learn.TrimmedMean, 3, 0, []method.ParamValue{{Name: "trim_fraction", Value: 0}}, ""},                                 // 8: 0 asks for the plain mean
		{learn.FedAvg, 2, 0, nil, ""}, // 9: no size rule
	} {
		s := validSpec()
		s.Method, s.Sites, s.MinSites = tc.method, sites(tc.sites), tc.minSites
		h, err := method.Defaults(method.Default).Apply(tc.set)
		if err != nil {
			t.Fatal(err)
		}
		s.Hyperparameters = h
		s = s.WithDefaults()
		err = s.Validate()
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("case %d: valid spec rejected: %v", i, err)
		case tc.field != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.field)):
			t.Errorf("case %d: error %v does not name %s", i, err, tc.field)
		}
		if err := s.LegacyValidate(); err != nil {
			t.Errorf("case %d: LegacyValidate rejected a spec the old rules accept: %v", i, err)
		}
	}
}

func TestWithDefaults(t *testing.T) {
	s := CampaignSpec{Preset: method.Paper, Sites: []Site{{Name: "a"}, {Name: "b"}}}.WithDefaults()
	if s.MinSites != 2 || s.RoundDeadline != DefaultRoundDeadline || s.ContinueAsNewEvery != DefaultContinueAsNewEvery {
		t.Errorf("defaults not applied: %+v", s)
	}
	// Clusters and beta are kept as given: 0 is meaningful for both
	// (automatic M, no blending).
	if s.Hyperparameters.Descriptor != tda.VariantTriangle || s.Hyperparameters.Clusters != 0 || s.Hyperparameters.Beta != 0 {
		t.Errorf("paper preset hyper-parameters: %+v", s.Hyperparameters)
	}
}

func TestSpecHashStable(t *testing.T) {
	a, b := validSpec(), validSpec()
	a.DescriptorRows = map[string][]int{"client0": {1, 2}, "client1": {3}}
	b.DescriptorRows = map[string][]int{"client1": {3}, "client0": {1, 2}}
	if a.SpecHash() != b.SpecHash() {
		t.Error("spec hash depends on map insertion order")
	}
	b.Seed++
	if a.SpecHash() == b.SpecHash() {
		t.Error("spec hash ignores the seed")
	}
}

func TestDeriveSeed(t *testing.T) {
	// The value pins the documented encoding: it was computed independently
	// with Python's hashlib over the bytes described in DeriveSeed's doc:
	//   h = sha256(b"ptopofl/seed/v1\0" + (42).to_bytes(8,"big") + (3).to_bytes(8,"big")
	//              + (7).to_bytes(4,"big") + b"client1" + (5).to_bytes(4,"big") + b"train")
	//   int.from_bytes(h.digest()[:8], "big")
	const want uint64 = 1954615692434754461
	if got := DeriveSeed(42, 3, "client1", PurposeTrain); got != want {
		t.Errorf("DeriveSeed(42, 3, client1, train) = %d, want %d", got, want)
	}
	seen := map[uint64]string{}
	for _, k := range []struct {
		round         int
		site, purpose string
	}{{1, "a", "train"}, {2, "a", "train"}, {1, "b", "train"}, {1, "a", "descriptor"}, {1, "", "atrain"}, {1, "at", "rain"}} {
		s := DeriveSeed(1, k.round, k.site, k.purpose)
		if prev, dup := seen[s]; dup {
			t.Errorf("seed collision between %v and %s", k, prev)
		}
		seen[s] = k.site + "/" + k.purpose
	}
}

func TestKeysAndIDs(t *testing.T) {
	if got := RoundWorkflowID("hc", 7); got != "hc/round-0007" {
		t.Errorf("RoundWorkflowID = %q", got)
	}
	if got := SiteTaskQueue("client3"); got != "ptopofl-site-client3" {
		t.Errorf("SiteTaskQueue = %q", got)
	}
	for i, tc := range []struct {
		attempt int
		want    string
	}{
		{0, "hc/round-0007"},           // 0: histories from before attempts
		{1, "hc/round-0007"},           // 1
		{2, "hc/round-0007/attempt-2"}, // 2
	} {
		id := AttemptRoundWorkflowID("hc", 7, tc.attempt)
		if id != tc.want {
			t.Errorf("%d: AttemptRoundWorkflowID = %q, want %q", i, id, tc.want)
		}
		if r, ok := roundOfWorkflowID(id); !ok || r != 7 {
			t.Errorf("%d: roundOfWorkflowID(%q) = %d, %v; want 7", i, id, r, ok)
		}
	}
}

// TestSameCampaign: the code version is not part of a campaign's identity;
// anything that changes the result is, and defaults count as given.
func TestSameCampaign(t *testing.T) {
	a := validSpec()
	for i, tc := range []struct {
		change func(*CampaignSpec)
		same   bool
	}{
		{func(s *CampaignSpec) { s.CodeVersion = "older-build" }, true},                                        // 0
		{func(s *CampaignSpec) { s.Seed++ }, false},                                                            // 1
		{func(s *CampaignSpec) { s.Hyperparameters.Beta += 0.1 }, false},                                       // 2
		{func(s *CampaignSpec) { s.MinSites = 0 }, true},                                                       // 3: validSpec's quorum is all 3 sites, which 0 means
		{func(s *CampaignSpec) { s.RoundDeadline = 0 }, true},                                                  // 4: validSpec has the default deadline
		{func(s *CampaignSpec) { s.MinSites = 2 }, false},                                                      // 5
		{func(s *CampaignSpec) { s.KeepSiteModels = 3 }, false},                                                // 6: the retention policy
		{func(s *CampaignSpec) { s.Schema = &DataSchema{Kind: SchemaTable, Features: []string{"x1"}} }, false}, // 7: see campaign.SpecDiff for a schema on one side only
		{func(s *CampaignSpec) { s.DescriptorRows = map[string][]int{"client0": {1}} }, false},                 // 8
	} {
		b := a
		tc.change(&b)
		if got := a.SameCampaign(b); got != tc.same {
			t.Errorf("%d: SameCampaign = %v, want %v", i, got, tc.same)
		}
	}
}
