package aggregation

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/tda"
)

// labelBlock returns a label-aware summary whose cross-label H0 ratio is
// r; the mixing curve is filled with r too (LabelScores reads only r).
func labelBlock(r float64) []float64 {
	b := make([]float64, tda.LabelledLen)
	for j := range b {
		b[j] = r
	}
	return b
}

func TestLabelScores(t *testing.T) {
	for i, tc := range []struct {
		r    []float64
		want []float64
	}{
		// By hand: median of [0.2 0.4 0.5 0.9] is 0.45, gap 0.55:
		// g = (r − 0.45)/0.55.
		{[]float64{0.2, 0.4, 0.5, 0.9}, []float64{-0.25 / 0.55, -0.05 / 0.55, 0.05 / 0.55, 0.45 / 0.55}}, // 0
		// Odd count: median 0.5, gap 0.5.
		{[]float64{0.5, 1, 0.3}, []float64{0, 1, -0.4}}, // 1
		// Median 1 (no label structure anywhere): the gap is floored at
		// 0.05, so a site at 1.02 scores 0.4, not infinity.
		{[]float64{1, 1, 1.02}, []float64{0, 0, 0.4}}, // 2
		// One site: its own median.
		{[]float64{0.7}, []float64{0}}, // 3
	} {
		blocks := make([][]float64, len(tc.r))
		for k, r := range tc.r {
			blocks[k] = labelBlock(r)
		}
		got, err := LabelScores(blocks)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		for k := range got {
			if math.Abs(got[k]-tc.want[k]) > tol {
				t.Errorf("%d: g = %v, want %v", i, got, tc.want)
				break
			}
		}
	}
	for i, blocks := range [][][]float64{
		nil,                              // 0
		{labelBlock(0.5), {0.5}},         // 1: short block
		{labelBlock(math.NaN())},         // 2
		{labelBlock(0.5), labelBlock(1)}, // 3: fine
	} {
		_, err := LabelScores(blocks)
		if (err == nil) != (i == 3) {
			t.Errorf("%d: error %v", i, err)
		}
	}
}

func TestLabelZScoresAndTrust(t *testing.T) {
	// τ = 2, γ = 0.5: z = 4g. g = 0.25 sits at z = 1 (full trust), g = 0.5
	// at the threshold (trust e^{-1}), g = 1 at z = 4 (trust e^{-3} ≈ 0.0498,
	// clipped to 0.05).
	z := LabelZScores([]float64{-0.5, 0.25, 0.5, 1}, 2, 0.5)
	if !slices.Equal(z, []float64{-2, 1, 2, 4}) {
		t.Errorf("z = %v, want [-2 1 2 4]", z)
	}
	trust := TrustFromZ(z, 0.05, 1)
	want := []float64{1, 1, math.Exp(-1), 0.05}
	for k := range want {
		if math.Abs(trust[k]-want[k]) > tol {
			t.Errorf("trust = %v, want %v", trust, want)
			break
		}
	}
	// Flags(z > τ): only g > γ.
	if f := Flags(z, trust, 2, 0); !slices.Equal(f, []bool{false, false, false, true}) {
		t.Errorf("flags %v, want only the last", f)
	}
	defer func() {
		if recover() == nil {
			t.Error("γ = 0 did not panic")
		}
	}()
	LabelZScores([]float64{1}, 2, 0)
}

func TestSplitExtendedDescriptor(t *testing.T) {
	v := make([]float64, tda.ExtendedDescriptorLen)
	for j := range v {
		v[j] = float64(j)
	}
	p, l, err := SplitExtendedDescriptor(v)
	if err != nil || len(p) != 48 || len(l) != tda.LabelledLen || p[47] != 47 || l[0] != 48 {
		t.Errorf("split %v | %v (%v)", p, l, err)
	}
	if _, _, err := SplitExtendedDescriptor(v[:48]); err == nil {
		t.Error("48 numbers: no error")
	}
}

// extended returns desc(a, eps) followed by a label block of ratio r.
func extended(a int, eps, r float64) []float64 {
	return append(desc(a, eps), labelBlock(r)...)
}

func TestPTopoFLLabelledDetector(t *testing.T) {
	// Four sites with identical paper descriptors, so the paper's z-scores
	// are all 0; cross-label ratios 0.4, 0.5, 0.6 and 0.95. Median 0.55,
	// gap 0.45: g_3 = 0.4/0.45 = 0.889 > γ = 0.5 (z = 3.56, trust
	// e^{−2.56}); g_2 = 0.05/0.45 → z = 0.44, trust 1.
	sites := []SiteResult{
		{Params: []float64{1}, N: 10, Descriptor: extended(0, 0, 0.4)},
		{Params: []float64{1}, N: 10, Descriptor: extended(0, 0, 0.5)},
		{Params: []float64{1}, N: 10, Descriptor: extended(0, 0, 0.6)},
		{Params: []float64{5}, N: 10, Descriptor: extended(0, 0, 0.95)},
	}
	cfg := DefaultConfig()
	cfg.M = 1
	cfg.Detector = LabelledDetector
	out, err := AggregateRound(RoundInput{Method: learn.PTopoFL, Round: 1, Sites: sites, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	z3 := 2 * (0.4 / 0.45) / 0.5
	if math.Abs(out.ZScores[3]-z3) > tol || math.Abs(out.Trust[3]-math.Exp(-(z3-1))) > tol || out.Trust[2] != 1 {
		t.Errorf("z %v trust %v, want z_3 = %v", out.ZScores, out.Trust, z3)
	}
	if !slices.Equal(out.Flagged, []bool{false, false, false, true}) {
		t.Errorf("flags %v, want site 3", out.Flagged)
	}
	// One cluster, equal n and centre distance 0: the model is the
	// trust-weighted mean (1·3 + 5·t_3)/(3 + t_3), up to the 1e-8 guard.
	t3 := out.Trust[3]
	if want := (3 + 5*t3) / (3 + t3); math.Abs(out.Models[0][0]-want) > 1e-7 {
		t.Errorf("model %v, want %v", out.Models[0], want)
	}
	// The paper's detector on the same 48 numbers flags nothing and gives
	// the plain mean 2; under it the label block would be part of the
	// descriptor, so compare with the 48 numbers alone.
	paper := slices.Clone(sites)
	for k := range paper {
		paper[k].Descriptor = paper[k].Descriptor[:tda.DescriptorLen]
	}
	cfg.Detector = DescriptorDetector
	out2, err := AggregateRound(RoundInput{Method: learn.PTopoFL, Round: 1, Sites: paper, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(out2.Flagged, true) || math.Abs(out2.Models[0][0]-2) > 1e-7 {
		t.Errorf("paper detector: flags %v model %v, want none and 2", out2.Flagged, out2.Models[0])
	}
	// Combined: the paper's z-scores are 0 here, so it is labelled's with
	// the negative scores lifted to 0.
	cfg.Detector = CombinedDetector
	out3, err := AggregateRound(RoundInput{Method: learn.PTopoFL, Round: 1, Sites: sites, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	wantZ := []float64{0, 0, out.ZScores[2], out.ZScores[3]}
	if !slices.Equal(out3.ZScores, wantZ) || !slices.Equal(out3.Flagged, out.Flagged) {
		t.Errorf("combined z %v flags %v, want %v %v", out3.ZScores, out3.Flagged, wantZ, out.Flagged)
	}
	// Clustering and drift see only the paper's numbers: a different label
	// block leaves the labels and drift of round 2 unchanged.
	cfg.Detector = LabelledDetector
	again := slices.Clone(sites)
	again[0].Descriptor = extended(0, 0, 0.1)
	out4, err := AggregateRound(RoundInput{Method: learn.PTopoFL, Round: 2, Sites: again, State: out.State, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(out4.Drift, func(d float64) bool { return d != 0 }) {
		t.Errorf("drift %v from a label block change, want 0", out4.Drift)
	}
}

func TestPTopoFLLabelledDetectorErrors(t *testing.T) {
	good := SiteResult{Params: []float64{1}, N: 3, Descriptor: extended(0, 0, 0.5)}
	short := SiteResult{Params: []float64{1}, N: 3, Descriptor: desc(0, 0)}
	for i, tc := range []struct {
		detector Detector
		gap      float64
		sites    []SiteResult
		want     string
	}{
		{LabelledDetector, 0.5, []SiteResult{short, short}, "extended descriptor"}, // 0
		{CombinedDetector, 0.5, []SiteResult{short, short}, "extended descriptor"}, // 1
		{LabelledDetector, 0, []SiteResult{good, good}, "label gap"},               // 2
		{"oracle", 0.5, []SiteResult{good, good}, "unknown detector"},              // 3
	} {
		cfg := DefaultConfig()
		cfg.Detector, cfg.LabelGap = tc.detector, tc.gap
		_, err := AggregateRound(RoundInput{Method: learn.PTopoFL, Round: 1, Sites: tc.sites, Config: cfg})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%d: error %v, want one mentioning %q", i, err, tc.want)
		}
	}
}
