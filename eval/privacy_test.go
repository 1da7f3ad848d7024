package eval

import (
	"math"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/tda"
)

// privacyTol absorbs the last-bit differences between the hand formulas
// (evaluated in Python's float64 math) and the Go code's operation order.
const privacyTol = 1e-15

func TestPrivacyFormulas(t *testing.T) {
	for i, test := range []struct {
		name string
		got  func() (float64, error)
		want float64
	}{
		// Paper §3.6 Eq. (10): 21/(100·20) = 0.0105.
		{"grad n=100", func() (float64, error) { return GradientRisk(100, 20, 21) }, 0.0105}, // 0
		// The cap: p/(n·d) = 5 > 1 → 1.
		{"grad capped", func() (float64, error) { return GradientRisk(1, 1, 5) }, 1}, // 1
		// Golden HC client 3 (n_train = 44): 21/880.
		{"grad n=44", func() (float64, error) { return GradientRisk(44, 20, 21) }, 0.023863636363636365}, // 2
		// Eq. (11): 48/(100·20)·0.1 = 0.0024, the paper's §4.6 figure.
		{"topo n=100", func() (float64, error) { return DescriptorRisk(100, 20, 48, 0.1) }, 0.0024}, // 3
		// Golden HC client 3: 48/880·0.1.
		{"topo n=44", func() (float64, error) { return DescriptorRisk(44, 20, 48, 0.1) }, 0.005454545454545455}, // 4
		// Fig. 6 (B): log2(1+21) = 1 + log2(11), the paper's "log2(22) ≈ 4.5 bits".
		{"MI grad", func() (float64, error) { return MutualInformationProxy(21, 1) }, 4.459431618637297}, // 5
		// log2(1 + 48·0.1) = log2(5.8) ≈ 2.5 bits (Python: math.log2(5.8)).
		{"MI topo", func() (float64, error) { return MutualInformationProxy(48, 0.1) }, 2.5360529002402097}, // 6
	} {
		got, err := test.got()
		if err != nil {
			t.Fatalf("case %d (%s): %v", i, test.name, err)
		}
		if math.Abs(got-test.want) > privacyTol*math.Max(1, math.Abs(test.want)) {
			t.Errorf("case %d (%s): got %v, want %v", i, test.name, got, test.want)
		}
	}
}

// TestPrivacyGoldenSizes evaluates the report on the golden healthcare
// sites' training sizes (golden/paper/healthcare/clients.json n_train:
// 130, 192, 122, 44, 133, 101, 199, 50). Means computed by hand as
// mean(21/(20·n)) and mean(4.8/(20·n)) in Python float64. Without the cap
// the ratio is m·α_c/p = 4.8/21 for any sizes, the paper's "≈ 0.22".
func TestPrivacyGoldenSizes(t *testing.T) {
	sizes := []int{130, 192, 122, 44, 133, 101, 199, 50}
	r, err := Privacy(nil, sizes, DefaultPrivacySettings(20))
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		name      string
		got, want float64
	}{
		{"mean gradient risk", r.MeanGradientRisk, 0.011322878146652752},     // 0
		{"mean descriptor risk", r.MeanDescriptorRisk, 0.002588086433520629}, // 1
		{"ratio", r.RiskRatio, 4.8 / 21},                                     // 2
		{"gradient MI", r.GradientMI, 4.459431618637297},                     // 3
		{"descriptor MI", r.DescriptorMI, 2.5360529002402097},                // 4
	} {
		if math.Abs(c.got-c.want) > 1e-14*math.Abs(c.want) {
			t.Errorf("case %d (%s): got %v, want %v", i, c.name, c.got, c.want)
		}
	}
	if len(r.Sites) != 8 || r.Sites[3].Site != "site3" || r.Sites[3].N != 44 {
		t.Errorf("sites %+v", r.Sites)
	}
}

func TestFederationPrivacy(t *testing.T) {
	fed, err := Healthcare(DefaultHealthcareOptions(42))
	if err != nil {
		t.Fatal(err)
	}
	r, err := FederationPrivacy(fed, DescriptorDim)
	if err != nil {
		t.Fatal(err)
	}
	for k, s := range r.Sites {
		n := len(fed.Sites[k].YTrain)
		if s.Site != fed.Sites[k].Name || s.N != n {
			t.Errorf("site %d: %s n=%d, want %s n=%d", k, s.Site, s.N, fed.Sites[k].Name, n)
		}
		if want := 21 / (20 * float64(n)); math.Abs(s.GradientRisk-want) > privacyTol {
			t.Errorf("site %d: gradient risk %v, want %v", k, s.GradientRisk, want)
		}
	}
	if math.Abs(r.RiskRatio-4.8/21) > 1e-15 {
		t.Errorf("ratio %v, want 4.8/21", r.RiskRatio)
	}
	// The extended descriptor (48 + 11 label-aware numbers) sends 59:
	// ρ_topo/ρ_grad = 59·0.1/21 and the proxy log2(1 + 5.9) bits.
	x, err := FederationPrivacy(fed, tda.ExtendedDescriptorLen)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(x.RiskRatio-5.9/21) > 1e-15 || math.Abs(x.DescriptorMI-math.Log2(6.9)) > 1e-15 || x.Settings.DescriptorDim != 59 {
		t.Errorf("extended: ratio %v MI %v dim %d, want 5.9/21, log2 6.9, 59", x.RiskRatio, x.DescriptorMI, x.Settings.DescriptorDim)
	}
	if _, err := FederationPrivacy(fed, 0); err == nil {
		t.Error("descriptor dimension 0: no error")
	}
}

func TestPrivacyErrors(t *testing.T) {
	for i, test := range []struct {
		err  error
		want string
	}{
		{second(GradientRisk(0, 20, 21)), "n = 0"},                                           // 0
		{second(DescriptorRisk(10, 20, 48, 0)), "α_c = 0"},                                   // 1
		{second(DescriptorRisk(10, 20, 48, 1.5)), "α_c = 1.5"},                               // 2
		{second(MutualInformationProxy(0, 1)), "dim = 0"},                                    // 3
		{second(Privacy(nil, nil, DefaultPrivacySettings(20))), "no sites"},                  // 4
		{second(Privacy([]string{"a"}, []int{1, 2}, DefaultPrivacySettings(20))), "1 names"}, // 5
		{second(Privacy(nil, []int{10, 0}, DefaultPrivacySettings(20))), "site site1"},       // 6
	} {
		if test.err == nil || !strings.Contains(test.err.Error(), test.want) {
			t.Errorf("case %d: error %v, want one containing %q", i, test.err, test.want)
		}
	}
}

func second[T any](_ T, err error) error { return err }
