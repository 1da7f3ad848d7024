package method

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/aggregation"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/nn"
	"github.com/ptopofl/ptopofl/tda"
)

// TestParamsCoverEveryField checks that Params declares every JSON field
// of Hyperparameters once, in field order, bound to that field: a field
// added without its Param (or a Param bound to the wrong field) fails here.
func TestParamsCoverEveryField(t *testing.T) {
	typ := reflect.TypeOf(Hyperparameters{})
	if typ.NumField() != len(Params) {
		t.Fatalf("Hyperparameters has %d fields, Params %d entries", typ.NumField(), len(Params))
	}
	for i := range typ.NumField() {
		name := strings.Split(typ.Field(i).Tag.Get("json"), ",")[0]
		p := Params[i]
		if p.Name != name {
			t.Errorf("field %d: json %q, Params[%d] is %q", i, name, i, p.Name)
			continue
		}
		v := Value{Num: 7}
		if p.Kind == Text {
			v = Value{Text: tda.VariantTriangle}
		}
		var h Hyperparameters
		if err := p.Set(&h, v); err != nil {
			t.Errorf("field %d (%s): %v", i, name, err)
			continue
		}
		for j := range typ.NumField() {
			if set := !reflect.ValueOf(h).Field(j).IsZero(); set != (j == i) {
				t.Errorf("Params[%d] (%s) set field %d: %v", i, name, j, set)
			}
		}
		if got := p.Get(h); got != v {
			t.Errorf("field %d (%s): Get = %v after Set %v", i, name, got, v)
		}
		if p.Doc == "" {
			t.Errorf("field %d (%s): no Doc", i, name)
		}
	}
}

// TestPresets pins the presets to the paper's values (Table 3, §4.1 and
// golden/paper/expected.json `hyperparameters`, as learn.DefaultSiteConfig
// and aggregation.DefaultConfig document them) and to the paper preset's
// five differences (the fifth: SCAFFOLD is the authors').
func TestPresets(t *testing.T) {
	for i, tc := range []struct {
		preset     string
		descriptor string
		flagBelow  float64
		drift      float64
		detector   aggregation.Detector
		solver     string
	}{
		{Default, tda.VariantExact, 0, 0.1, aggregation.LabelledDetector, learn.SolverGD},       // 0
		{Paper, tda.VariantTriangle, 0.5, 0, aggregation.DescriptorDetector, learn.SolverLBFGS}, // 1
	} {
		for _, m := range learn.Methods {
			c, err := Preset(tc.preset, m)
			if err != nil {
				t.Fatalf("case %d %s: %v", i, m, err)
			}
			server := aggregation.DefaultConfig()
			server.FlagTrustBelow, server.DriftThreshold, server.Detector = tc.flagBelow, tc.drift, tc.detector
			site := learn.DefaultSiteConfig()
			site.LocalSolver, site.LocalGD = tc.solver, learn.GDConfig{LR: 0.05, Steps: 30}
			// The paper preset's fifth difference: SCAFFOLD is the
			// authors' (scaffold_variant "authors"), and only SCAFFOLD's
			// configuration carries it.
			site.SCAFFOLD.ReferenceBug = tc.preset == Paper && m == learn.SCAFFOLD
			want := Config{Method: m, Preset: tc.preset, Descriptor: tc.descriptor, NSub: 80, LabelNSub: tda.DefaultLabelledNSub,
				Site: site, Server: server, Model: ModelLogistic, DescriptorModel: DescriptorInitial, TopoFeatures: TopoWeights}
			if !reflect.DeepEqual(c, want) {
				t.Errorf("case %d %s:\ngot  %+v\nwant %+v", i, m, c, want)
			}
		}
	}
}

// TestResolveZeroMeansSomething checks that the settings whose zero is
// meaningful reach the core as zero and the others take the default.
func TestResolveZeroMeansSomething(t *testing.T) {
	h := Defaults(Default)
	h.Clusters, h.Beta, h.Mu, h.DriftThreshold, h.NSub = 0, 0, 0, 0, 0
	h.PersonalSteps = 7
	c, err := Resolve(learn.PTopoFL, Default, h)
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.M != 0 || c.Server.Beta != 0 || c.Site.FedProx.Mu != 0 || c.Server.DriftThreshold != 0 || c.Site.PFedMe.Steps != 7 || c.NSub != 80 {
		t.Errorf("zero settings: M %d beta %v mu %v drift %v pFedMe steps %d n_sub %d",
			c.Server.M, c.Server.Beta, c.Site.FedProx.Mu, c.Server.DriftThreshold, c.Site.PFedMe.Steps, c.NSub)
	}
}

func TestValidateNamesTheField(t *testing.T) {
	for i, tc := range []struct {
		m     learn.Method
		edit  func(*Hyperparameters)
		field string // "" = valid
	}{
		{learn.PTopoFL, func(h *Hyperparameters) { h.Beta = 1.5 }, "hyperparameters.beta"},                       // 0
		{learn.FedAvg, func(h *Hyperparameters) { h.Beta = 1.5 }, ""},                                            // 1: FedAvg does not read beta
		{learn.PTopoFL, func(h *Hyperparameters) { h.Descriptor = "cech" }, "hyperparameters.descriptor"},        // 2
		{learn.PTopoFL, func(h *Hyperparameters) { h.BettiResolution = 10 }, "hyperparameters.betti_resolution"}, // 3
		{learn.FedProx, func(h *Hyperparameters) { h.LR = -1 }, "hyperparameters.lr"},                            // 4
		{learn.TrimmedMean, func(h *Hyperparameters) { h.TrimFraction = 0.5 }, "hyperparameters.trim_fraction"},  // 5
		{learn.Krum, func(h *Hyperparameters) { h.Byzantine = -1 }, "hyperparameters.byzantine"},                 // 6
		{learn.PTopoFL, func(h *Hyperparameters) { h.MaxClusters = 1 }, "hyperparameters.max_clusters"},          // 7
		{learn.FedAvg, func(h *Hyperparameters) { h.C = 0 }, "hyperparameters.c"},                                // 8
		{learn.SCAFFOLD, func(h *Hyperparameters) { h.ScaffoldVariant = "bugged" }, "hyperparameters.scaffold_variant"},
		{learn.SCAFFOLD, func(h *Hyperparameters) { h.ScaffoldVariant = ScaffoldAuthors }, ""}, // 10
		{learn.SCAFFOLD, func(h *Hyperparameters) { h.ScaffoldVariant, h.Model = ScaffoldAuthors, ModelCNN }, "hyperparameters.scaffold_variant"},
		{learn.SCAFFOLD, func(h *Hyperparameters) { h.ScaffoldVariant, h.DP, h.DPNoise = ScaffoldAuthors, DPRecord, 1 }, "hyperparameters.scaffold_variant"},
		{learn.FedAvg, func(h *Hyperparameters) { h.ScaffoldVariant = "bugged" }, ""}, // 13: FedAvg does not read it
		{learn.PTopoFL, func(h *Hyperparameters) { h.DescriptorModel = "trained" }, "hyperparameters.descriptor_model"},
		{learn.PTopoFL, func(h *Hyperparameters) { h.DescriptorModel = DescriptorGlobal }, "hyperparameters.descriptor_model"}, // 15: tabular
		{learn.PTopoFL, func(h *Hyperparameters) { h.DescriptorModel, h.Model = DescriptorGlobal, ModelCNN }, ""},
		{learn.PTopoFL, func(h *Hyperparameters) { h.TopoFeatures = "columns" }, "hyperparameters.topo_features"},
		{learn.PTopoFL, func(h *Hyperparameters) { h.TopoFeatures = TopoBoth }, ""}, // 18
		{learn.PTopoFL, func(h *Hyperparameters) { h.TopoFeatures, h.Model = TopoAugment, ModelCNN }, "hyperparameters.topo_features"},
		{learn.PTopoFL, func(h *Hyperparameters) { h.TopoFeatures, h.DP, h.DPNoise = TopoAugment, DPRecord, 1 }, "hyperparameters.topo_features"},
	} {
		h := Defaults(Default)
		tc.edit(&h)
		err := h.Validate(tc.m)
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("case %d: valid rejected: %v", i, err)
		case tc.field != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.field)):
			t.Errorf("case %d: error %v does not name %s", i, err, tc.field)
		}
	}
}

func TestParseValue(t *testing.T) {
	for i, tc := range []struct {
		name, text string
		want       ParamValue
		err        bool
	}{
		{"beta", "0.3", ParamValue{Name: "beta", Value: 0.3}, false},                        // 0
		{"beta", `"0.3"`, ParamValue{}, true},                                               // 1: a quoted number is not a number
		{"clusters", "2.5", ParamValue{}, true},                                             // 2: not an integer
		{"descriptor", "triangle", ParamValue{Name: "descriptor", Text: "triangle"}, false}, // 3
		{"nonsense", "1", ParamValue{}, true},                                               // 4
		{"beta", "NaN", ParamValue{}, true},                                                 // 5
	} {
		got, err := ParseValue(tc.name, tc.text)
		if (err != nil) != tc.err || (!tc.err && got != tc.want) {
			t.Errorf("case %d: ParseValue(%s, %s) = %+v, %v", i, tc.name, tc.text, got, err)
		}
	}
}

// TestMaxClustersReachesTheSilhouetteChoice follows max_clusters from an
// override to the server configuration.
func TestMaxClustersReachesTheSilhouetteChoice(t *testing.T) {
	h, err := Defaults(Default).Apply([]ParamValue{{Name: "max_clusters", Value: 4}, {Name: "clusters", Value: 0}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Resolve(learn.PTopoFL, Default, h)
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.MaxAutoClusters != 4 || c.Server.M != 0 {
		t.Errorf("MaxAutoClusters %d M %d, want 4 and 0", c.Server.MaxAutoClusters, c.Server.M)
	}
}

// TestValidateFederationSuggestsAValueThatWorks: every rejection names the
// field, and the value or quorum it suggests is accepted in turn.
func TestValidateFederationSuggestsAValueThatWorks(t *testing.T) {
	for i, tc := range []struct {
		m      learn.Method
		edit   func(*Hyperparameters)
		fewest int
		field  string                 // "" = valid
		fix    func(*Hyperparameters) // the change the message asks for; nil when it asks for more sites
	}{
		{learn.Krum, func(h *Hyperparameters) { h.Byzantine = 1 }, 5, "", nil},                                                                                          // 0
		{learn.Krum, func(h *Hyperparameters) { h.Byzantine = 2 }, 6, "hyperparameters.byzantine", func(h *Hyperparameters) { h.Byzantine = 1 }},                        // 1: "at most 1"
		{learn.Krum, func(h *Hyperparameters) { h.Byzantine = 0 }, 2, "hyperparameters.byzantine", nil},                                                                 // 2: no f works on 2
		{learn.TrimmedMean, func(h *Hyperparameters) { h.TrimFraction = 0.1 }, 8, "hyperparameters.trim_fraction", func(h *Hyperparameters) { h.TrimFraction = 0.125 }}, // 3: "0.125 or more"
		{learn.TrimmedMean, func(h *Hyperparameters) { h.TrimFraction = 0.3 }, 3, "hyperparameters.trim_fraction", func(h *Hyperparameters) { h.TrimFraction = 0.334 }}, // 4: 0.333 would cut ⌊0.999⌋ = 0
		{learn.TrimmedMean, func(h *Hyperparameters) { h.TrimFraction = 0.4 }, 2, "hyperparameters.trim_fraction", nil},                                                 // 5: no fraction below 0.5 cuts one of 2
		{learn.TrimmedMean, func(h *Hyperparameters) { h.TrimFraction = 0 }, 2, "", nil},                                                                                // 6: the plain mean, asked for
		{learn.TrimmedMean, func(h *Hyperparameters) {}, 5, "", nil},                                                                                                    // 7: the default cuts one of 5
		{learn.Median, func(h *Hyperparameters) { h.TrimFraction = 0.1; h.Byzantine = 9 }, 1, "", nil},                                                                  // 8: not read by the median
	} {
		h := Defaults(Default)
		tc.edit(&h)
		err := h.ValidateFederation(tc.m, tc.fewest)
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("case %d: valid rejected: %v", i, err)
			continue
		case tc.field != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.field)):
			t.Errorf("case %d: error %v does not name %s", i, err, tc.field)
			continue
		}
		if tc.fix == nil {
			continue
		}
		if !strings.Contains(err.Error(), "min_sites") {
			t.Errorf("case %d: %v does not mention min_sites as a way out", i, err)
		}
		tc.fix(&h)
		if err := h.ValidateFederation(tc.m, tc.fewest); err != nil {
			t.Errorf("case %d: the suggested value is rejected too: %v", i, err)
		}
	}
}

// TestOlderSpecKeepsItsBehaviour decodes the hyper-parameters of a
// default-preset campaign stored before `detector` and `local_solver`
// existed (the JSON of that version, without the two fields) and checks
// that it resolves to the behaviour it started with — the paper's
// detector and L-BFGS to the optimum — while a spec built today from
// Defaults gets the new default explicitly.
func TestOlderSpecKeepsItsBehaviour(t *testing.T) {
	old := `{"clusters":2,"beta":0.3,"anomaly_threshold":2,"drift_threshold":0.1,"drift_check_every":0,"n_sub":80,` +
		`"betti_resolution":20,"descriptor":"exact","c":1,"max_iter":1000,"tol":1e-10,"lr":0.05,"steps":30,"mu":0.1,` +
		`"lambda":15,"lr_personal":0.01,"lr_outer":0.01,"personal_steps":20,"trim_fraction":0.1,"byzantine":1}`
	var h Hyperparameters
	if err := json.Unmarshal([]byte(old), &h); err != nil {
		t.Fatal(err)
	}
	c, err := Resolve(learn.PTopoFL, Default, h)
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.Detector != aggregation.DescriptorDetector || c.Site.LocalSolver != learn.SolverLBFGS {
		t.Errorf("older spec resolved to detector %q, local solver %q; want %q and %q",
			c.Server.Detector, c.Site.LocalSolver, aggregation.DescriptorDetector, learn.SolverLBFGS)
	}
	c, err = Resolve(learn.PTopoFL, Default, Defaults(Default))
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.Detector != aggregation.LabelledDetector || c.Site.LocalSolver != learn.SolverGD {
		t.Errorf("new spec resolved to detector %q, local solver %q", c.Server.Detector, c.Site.LocalSolver)
	}
}

// TestDriftCheckEveryDefault: a default-preset spec built today measures
// drift every round (the paper's drift monitor), the paper preset, whose
// drift threshold is 0, does not; a spec stored before the default changed
// carries its drift_check_every of 0 and keeps it through WithDefaults
// (0 is a setting, not a missing value).
func TestDriftCheckEveryDefault(t *testing.T) {
	if got := Defaults(Default).DriftCheckEvery; got != 1 {
		t.Errorf("default preset: drift_check_every = %d, want 1", got)
	}
	if got := Defaults(Paper).DriftCheckEvery; got != 0 {
		t.Errorf("paper preset: drift_check_every = %d, want 0", got)
	}
	for _, p := range DeepPresets {
		if got := Defaults(p).DriftCheckEvery; got != 0 {
			t.Errorf("%s preset: drift_check_every = %d, want 0 (descriptors under a changing model)", p, got)
		}
	}
	old := `{"clusters":2,"beta":0.3,"anomaly_threshold":2,"drift_threshold":0.1,"drift_check_every":0,"n_sub":80}`
	var h Hyperparameters
	if err := json.Unmarshal([]byte(old), &h); err != nil {
		t.Fatal(err)
	}
	if got := h.WithDefaults(Default).DriftCheckEvery; got != 0 {
		t.Errorf("stored spec: drift_check_every = %d after WithDefaults, want its 0", got)
	}
}

// TestDeepPresets pins the deep presets to the paper's Scenario C and D
// settings (M = 3, β = 0.3, n_sub = 200, L = 20; C: 5 local epochs, 100
// rounds; D: 3 local epochs, 200 rounds, FEMNIST's 62 classes) and the
// small variant to issue 13's PyTorch anchor (conv 5×5×16 → pool → conv
// 5×5×32 → pool → dense 10, 1 epoch, batch 32, SGD 0.05 momentum 0.9, 20
// rounds).
func TestDeepPresets(t *testing.T) {
	for i, tc := range []struct {
		preset  string
		network nn.Config
		epochs  int
		lr      float64
		rounds  int
	}{
		{DeepC, nn.Config{Arch: nn.ResNet, Classes: 10, Width: 64, Depth: 2}, 5, 0.01, 100},         // 0: ResNet-18 (paper, Scenario C)
		{DeepD, nn.Config{Arch: nn.ConvNet2, Classes: 62}, 3, 0.01, 200},                            // 1
		{DeepSmall, nn.Config{Arch: nn.CNN, Classes: 10, Width: 16, Hidden: []int{}}, 1, 0.05, 20},  // 2
		{DeepDSmall, nn.Config{Arch: nn.CNN, Classes: 10, Width: 16, Hidden: []int{}}, 3, 0.05, 20}, // 3
	} {
		c, err := Preset(tc.preset, learn.PTopoFL)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if !c.IsDeep() || !reflect.DeepEqual(c.Network, tc.network) {
			t.Errorf("case %d: network %+v, want %+v", i, c.Network, tc.network)
		}
		want := nn.TrainConfig{Optimizer: nn.SGD, LR: tc.lr, Momentum: 0.9, Epochs: tc.epochs, BatchSize: 32}
		if c.DeepSite.Train != want {
			t.Errorf("case %d: training %+v, want %+v", i, c.DeepSite.Train, want)
		}
		if c.Server.M != 3 || c.Server.Beta != 0.3 || c.NSub != 200 || c.Server.Detector != aggregation.DescriptorDetector {
			t.Errorf("case %d: M %d, β %v, n_sub %d, detector %s; want 3, 0.3, 200, descriptor", i, c.Server.M, c.Server.Beta, c.NSub, c.Server.Detector)
		}
		if got := Rounds(tc.preset); got != tc.rounds {
			t.Errorf("case %d: %d rounds, want %d", i, got, tc.rounds)
		}
	}
	// A tabular spec ignores the deep parameters, even invalid ones.
	h := Defaults(Default)
	h.Momentum = 2
	if _, err := Resolve(learn.FedAvg, Default, h); err != nil {
		t.Errorf("logistic model with momentum 2: %v", err)
	}
	h.Model = ModelCNN
	if _, err := Resolve(learn.FedAvg, Default, h); err == nil || !strings.Contains(err.Error(), "momentum") {
		t.Errorf("cnn with momentum 2: error %v, want one naming momentum", err)
	}
}

// TestChangesTurnOnePresetIntoAnother checks Changes on every pair of
// presets: applying the changes to the first preset's defaults gives the
// second's exactly, and a preset needs no change to become itself.
func TestChangesTurnOnePresetIntoAnother(t *testing.T) {
	for _, a := range Presets {
		for _, b := range Presets {
			from, to := Defaults(a), Defaults(b)
			ch := Changes(from, to)
			got, err := from.Apply(ch)
			if err != nil {
				t.Fatalf("%s → %s: %v", a, b, err)
			}
			if got != to {
				t.Errorf("%s → %s: applying %v does not give %s's defaults", a, b, ch, b)
			}
			if a == b && len(ch) != 0 {
				t.Errorf("%s → itself: %v, want no change", a, ch)
			}
		}
	}
	// deep-d-small is deep-small with Scenario D's three local epochs.
	if ch := Changes(Defaults(DeepSmall), Defaults(DeepDSmall)); len(ch) != 1 || ch[0] != (ParamValue{Name: "local_epochs", Value: 3}) {
		t.Errorf("deep-small → deep-d-small: %v, want local_epochs 3 only", ch)
	}
}

// TestScaffoldVariantOnlyInSCAFFOLDSpecs checks that the paper preset's
// scaffold_variant "authors" enters a SCAFFOLD spec only: every other
// method's hyper-parameters encode (and so hash) as they did before the
// parameter existed, and a spec stored without it reads as "standard", the
// update every stored SCAFFOLD campaign ran.
func TestScaffoldVariantOnlyInSCAFFOLDSpecs(t *testing.T) {
	for i, tc := range []struct {
		preset string
		m      learn.Method
		want   string // the stored field
	}{
		{Paper, learn.SCAFFOLD, ScaffoldAuthors}, // 0
		{Paper, learn.FedAvg, ""},
		{Paper, learn.PTopoFL, ""},
		{Default, learn.SCAFFOLD, ""},
		{Default, learn.FedProx, ""}, // 4
	} {
		h := Defaults(tc.preset).ForMethod(tc.m)
		if h.ScaffoldVariant != tc.want {
			t.Errorf("case %d: %s %s stores scaffold_variant %q, want %q", i, tc.preset, tc.m, h.ScaffoldVariant, tc.want)
		}
		b, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(b), "scaffold_variant"); got != (tc.want != "") {
			t.Errorf("case %d: %s %s encodes scaffold_variant: %v", i, tc.preset, tc.m, got)
		}
		c, err := Resolve(tc.m, tc.preset, h)
		if err != nil {
			t.Fatal(err)
		}
		if c.Site.SCAFFOLD.ReferenceBug != (tc.want == ScaffoldAuthors) {
			t.Errorf("case %d: reference bug %v", i, c.Site.SCAFFOLD.ReferenceBug)
		}
	}
	var stored Hyperparameters // a SCAFFOLD spec stored before the parameter existed
	p, _ := Lookup("scaffold_variant")
	if v := p.Get(stored); v.Text != ScaffoldStandard {
		t.Errorf("a stored spec without scaffold_variant reads %q, want %q", v.Text, ScaffoldStandard)
	}
}
