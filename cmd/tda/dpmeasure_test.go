package main

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/aggregation"
	"github.com/ptopofl/ptopofl/eval"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/tda"
)

func TestAdjustedRandIndex(t *testing.T) {
	for i, tc := range []struct {
		a, b []int
		want float64
	}{
		// By hand: identical partitions (relabelled) give 1.
		{[]int{0, 0, 1, 1}, []int{1, 1, 0, 0}, 1}, // 0
		// {01|23} vs {02|13}: Σ C(n_ij,2) = 0, Σ C(a_i,2) = Σ C(b_j,2) = 2,
		// E = 2·2/6 = 2/3, ARI = (0 − 2/3)/(2 − 2/3) = −0.5.
		{[]int{0, 0, 1, 1}, []int{0, 1, 0, 1}, -0.5}, // 1
		// Both single clusters: the denominator is 0 and they agree.
		{[]int{0, 0, 0}, []int{0, 0, 0}, 1}, // 2
		// sklearn.metrics.adjusted_rand_score([0,0,0,1,1,1],[0,0,1,1,2,2])
		// = 0.24242424242424243 (by hand: index 2, sums 6 and 3, E = 1.2,
		// (2 − 1.2)/(4.5 − 1.2) = 8/33).
		{[]int{0, 0, 0, 1, 1, 1}, []int{0, 0, 1, 1, 2, 2}, 8.0 / 33}, // 3
	} {
		if got := adjustedRandIndex(tc.a, tc.b); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%d: ARI = %v, want %v", i, got, tc.want)
		}
	}
}

func TestSpearman(t *testing.T) {
	for i, tc := range []struct {
		x, y []float64
		want float64
	}{
		{[]float64{1, 2, 3}, []float64{10, 20, 30}, 1}, // 0
		{[]float64{1, 2, 3}, []float64{3, 2, 1}, -1},   // 1
		// Ties share ranks: (1.5, 1.5, 3) against (1, 2, 3) gives
		// 1.5/√(1.5·2) = √3/2 (by hand).
		{[]float64{1, 1, 2}, []float64{1, 2, 3}, math.Sqrt(3) / 2}, // 2
		{[]float64{1, 1, 1}, []float64{1, 2, 3}, 0},                // 3: no spread
	} {
		if got := spearman(tc.x, tc.y); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%d: ρ = %v, want %v", i, got, tc.want)
		}
	}
}

// TestDPMeasureJSON runs dp-measure on one federation and checks the
// structure and the numbers that follow from the definitions: the z = 0
// row agrees perfectly with itself, and the ε column reproduces the
// analytic Gaussian mechanism's multipliers for ε = 8, 2, 1 at δ = 1e-5.
func TestDPMeasureJSON(t *testing.T) {
	code, out, errOut := runCmd("dp-measure", "--seeds", "1", "--first-seed", "1000", "--z", "0,0.6002,1.9938,3.7306", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep dpReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 4 || len(rep.Seeds) != 1 || rep.Seeds[0] != 1000 {
		t.Fatalf("report %+v", rep)
	}
	r0 := rep.Rows[0]
	if r0.EpsilonOne != nil || r0.ARIDP != 1 || math.Abs(r0.SpearmanDP-1) > 1e-12 || r0.SigmaDescriptor != 0 {
		t.Errorf("z = 0 row: %+v", r0)
	}
	for i, want := range []float64{8, 2, 1} {
		r := rep.Rows[i+1]
		if r.EpsilonOne == nil || math.Abs(*r.EpsilonOne-want) > 0.01 {
			t.Errorf("z = %v: ε = %v, want %v", r.Z, r.EpsilonOne, want)
		}
		if r.EpsilonBoth == nil || !(*r.EpsilonBoth > *r.EpsilonOne) {
			t.Errorf("z = %v: ε of both releases %v, want more than one release's", r.Z, r.EpsilonBoth)
		}
		if c := r.Detection; c.TP+c.FN != 2 || c.FP+c.TN != 6 {
			t.Errorf("z = %v: counts %+v, want 2 adversarial and 6 honest sites", r.Z, c)
		}
	}
	// Deterministic: the same command gives the same bytes.
	if _, again, _ := runCmd("dp-measure", "--seeds", "1", "--first-seed", "1000", "--z", "0,0.6002,1.9938,3.7306", "--format", "json"); again != out {
		t.Error("two runs differ")
	}
}

func TestDPMeasureTable(t *testing.T) {
	code, out, errOut := runCmd("dp-measure", "--seeds", "1", "--first-seed", "1000", "--z", "0,2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"| z | ε one release", "| 2 | 1.99 |", "paper LabelledSummary, no noise", "| DP, z = 2 (ε 1.99)"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestDPMeasureBadFlags(t *testing.T) {
	for i, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--z", "0,-1"}, "--z"},             // 0
		{[]string{"--z", "a"}, "--z"},                // 1
		{[]string{"--seeds", "0"}, "--seeds"},        // 2
		{[]string{"--format", "xml"}, "--format"},    // 3
		{[]string{"--bandwidth", "-1"}, "Bandwidth"}, // 4
		{[]string{"--grid", "1"}, "Grid"},            // 5
		{[]string{"--label-radii", "3,2"}, "Radii"},  // 6
		{[]string{"--dp-rows", "-3"}, "--dp-rows"},   // 7
		{[]string{"extra"}, "no arguments"},          // 8
	} {
		code, out, errOut := runCmd(append([]string{"dp-measure"}, tc.args...)...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("%d: %v: exit %d, stdout %q, stderr %q; want exit 2 mentioning %q", i, tc.args, code, out, errOut, tc.want)
		}
	}
}

// TestDPReleaseThroughServer sends noisy DP descriptors and DP label blocks
// of one healthcare federation through the server's round, as extended
// descriptors under the labelled detector, to check that the server takes
// them unchanged (48 + 11 finite numbers per site).
func TestDPReleaseThroughServer(t *testing.T) {
	fed, err := eval.Healthcare(eval.DefaultHealthcareOptions(1000))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	sites := make([]aggregation.SiteResult, len(fed.Sites))
	for k, s := range fed.Sites {
		y := make([]float64, len(s.YTrain))
		for i, l := range s.YTrain {
			y[i] = float64(l)
		}
		rows := dpSubsample(len(s.XTrain), 0, 0, 0)
		v, delta, err := tda.DPDescriptor(s.XTrain, rows, tda.DPDescriptorOptions{})
		if err != nil {
			t.Fatal(err)
		}
		desc, err := tda.DPDescriptorVector(addGaussian(v, 2*delta, rng), tda.DPDescriptorOptions{})
		if err != nil {
			t.Fatal(err)
		}
		raw, dl, err := tda.DPLabelRaw(s.XTrain, y, rows, tda.DPLabelOptions{})
		if err != nil {
			t.Fatal(err)
		}
		block, err := tda.DPLabelBlock(addGaussian(raw, 2*dl, rng), len(rows))
		if err != nil {
			t.Fatal(err)
		}
		sites[k] = aggregation.SiteResult{Params: make([]float64, fed.Features+1), N: len(s.YTrain), Descriptor: append(desc, block...)}
	}
	cfg := aggregation.DefaultConfig()
	cfg.Detector = aggregation.LabelledDetector
	out, err := aggregation.AggregateRound(aggregation.RoundInput{Method: learn.PTopoFL, Round: 1, Sites: sites, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Flagged) != len(sites) || len(out.Labels) != len(sites) {
		t.Errorf("round output has %d flags and %d labels for %d sites", len(out.Flagged), len(out.Labels), len(sites))
	}
}

func TestGaussianEpsilon(t *testing.T) {
	// The multipliers of the brief: z = 0.6002, 1.9938, 3.7306 give ε = 8,
	// 2, 1 at δ = 1e-5 for the analytic Gaussian mechanism (Balle and Wang
	// 2018), to the precision of the four digits of z.
	for i, tc := range []struct{ z, eps float64 }{{0.6002, 8}, {1.9938, 2}, {3.7306, 1}} {
		if got := gaussianEpsilon(1/tc.z, 1e-5); math.Abs(got-tc.eps) > 2e-3*tc.eps {
			t.Errorf("%d: z = %v: ε = %v, want %v", i, tc.z, got, tc.eps)
		}
	}
	// μ = 1e-6: δ(0) = Φ(μ/2) − Φ(−μ/2) ≈ μ/√(2π) = 4e-7 ≤ 1e-5, so ε = 0.
	if got := gaussianEpsilon(1e-6, 1e-5); got != 0 {
		t.Errorf("tiny μ: ε = %v, want 0", got)
	}
}
