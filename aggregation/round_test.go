package aggregation

import (
	"math"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/tda"
)

const tol = 1e-12

func TestTrustScoresAndFlags(t *testing.T) {
	// By hand: sites at 0, 0, 0, 3 on a line: δ = [1, 1, 1, 3], mean 1.5,
	// population std √0.75, z_3 = 1.5/(√0.75 + 1e-8), t_3 = exp(−(z_3 − 1)).
	d := lineDistances([]float64{0, 0, 0, 3})
	z, trust := TrustScores(d, 0.05, 1)
	sd := math.Sqrt(0.75)
	wantZ := []float64{-0.5 / (sd + 1e-8), -0.5 / (sd + 1e-8), -0.5 / (sd + 1e-8), 1.5 / (sd + 1e-8)}
	wantT := []float64{1, 1, 1, math.Exp(-(wantZ[3] - 1))}
	for k := range z {
		if math.Abs(z[k]-wantZ[k]) > tol || math.Abs(trust[k]-wantT[k]) > tol {
			t.Errorf("site %d: z %v trust %v, want %v %v", k, z[k], trust[k], wantZ[k], wantT[k])
		}
	}
	// t_3 ≈ 0.481: τ = 2 flags nothing (z_3 ≈ 1.73), τ = 1.5 flags site 3,
	// and the reference's trust < 0.5 flags site 3.
	for i, tc := range []struct {
		tau, below float64
		want       []bool
	}{
		{2, 0, []bool{false, false, false, false}}, // 0
		{1.5, 0, []bool{false, false, false, true}},
		{2, 0.5, []bool{false, false, false, true}}, // 2
	} {
		got := Flags(z, trust, tc.tau, tc.below)
		for k := range got {
			if got[k] != tc.want[k] {
				t.Errorf("%d: flags %v, want %v", i, got, tc.want)
				break
			}
		}
	}
	// The clip: one outlier among K sites has z = √(K−1) (by hand), so
	// among 30 sites exp(−(√29 − 1)) ≈ 0.012 is clipped to 0.05.
	line := make([]float64, 30)
	line[29] = 1000
	_, trust = TrustScores(lineDistances(line), 0.05, 1)
	if trust[29] != 0.05 {
		t.Errorf("outlier trust %v, want the clip 0.05", trust[29])
	}
}

func TestFedAvgAndSCAFFOLDServer(t *testing.T) {
	sites := []SiteResult{
		{Params: []float64{1, 0}, Control: []float64{0.2, 0}, N: 1},
		{Params: []float64{4, 3}, Control: []float64{0.4, 1}, N: 2},
	}
	// By hand: (1·[1 0] + 2·[4 3])/3 = [3 2]; c = [1 1] + mean = [1.3 1.5].
	out, err := AggregateRound(RoundInput{Method: learn.SCAFFOLD, Round: 2, Sites: sites,
		State: ServerState{Control: []float64{1, 1}}, Config: DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	if out.Models[0][0] != 3 || out.Models[1][1] != 2 || math.Abs(out.Control[0]-1.3) > tol || out.Control[1] != 1.5 {
		t.Errorf("models %v control %v, want [3 2] and [1.3 1.5]", out.Models, out.Control)
	}
	if out.State.Round != 2 || out.State.Control[1] != 1.5 {
		t.Errorf("state %+v", out.State)
	}
	out, err = AggregateRound(RoundInput{Method: learn.LocalOnly, Round: 1, Sites: sites, Config: DefaultConfig()})
	if err != nil || out.Models[1][0] != 4 {
		t.Errorf("local: models %v err %v, want each site's own", out.Models, err)
	}
	out, err = AggregateRound(RoundInput{Method: learn.Median, Round: 1, Sites: sites, Config: DefaultConfig()})
	if err != nil || out.Models[0][0] != 2.5 {
		t.Errorf("median: models %v err %v, want [2.5 1.5]", out.Models, err)
	}
}

// desc returns a 48-number descriptor pointing along axis a (so normalised
// descriptors of one axis coincide), tilted by eps towards axis a+1.
func desc(a int, eps float64) []float64 {
	d := make([]float64, 48)
	d[a] = 10
	d[a+1] = 10 * eps
	return d
}

func TestPTopoFLRound(t *testing.T) {
	sites := []SiteResult{
		{Params: []float64{1, 1}, N: 10, Descriptor: desc(0, 0)},
		{Params: []float64{3, 1}, N: 30, Descriptor: desc(0, 0.1)},
		{Params: []float64{10, 0}, N: 20, Descriptor: desc(5, 0)},
	}
	cfg := DefaultConfig()
	cfg.Beta = 0.3
	out, err := AggregateRound(RoundInput{Method: learn.PTopoFL, Round: 1, Sites: sites, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Labels; got[0] != 0 || got[1] != 0 || got[2] != 1 {
		t.Fatalf("labels %v, want [0 0 1]", got)
	}
	// Recompute Eq. (6)–(7) by hand from the normalised descriptors.
	f := NormalizeDescriptors([][]float64{sites[0].Descriptor, sites[1].Descriptor, sites[2].Descriptor})
	_, trust := TrustScores(EuclideanMatrix(f), 0.05, 1)
	centre := make([]float64, 48)
	for j := range centre {
		centre[j] = (f[0][j] + f[1][j]) / 2
	}
	a0 := 10 * math.Exp(-euclid(f[0], centre)) * trust[0]
	a1 := 30 * math.Exp(-euclid(f[1], centre)) * trust[1]
	s := a0 + a1 + 1e-8
	c0 := []float64{(a0*1 + a1*3) / s, (a0*1 + a1*1) / s}
	a2 := 20 * trust[2] / (20*trust[2] + 1e-8)
	c1 := []float64{a2 * 10, 0}
	for j := 0; j < 2; j++ {
		g := 2.0/3*c0[j] + 1.0/3*c1[j]
		w0 := 0.7*c0[j] + 0.3*g
		w1 := 0.7*c1[j] + 0.3*g
		if math.Abs(out.Models[0][j]-w0) > tol || math.Abs(out.Models[1][j]-w0) > tol || math.Abs(out.Models[2][j]-w1) > tol {
			t.Errorf("coordinate %d: models %v, want [%v %v %v]", j, out.Models, w0, w0, w1)
		}
	}
	for k, d := range out.Drift {
		if d != 0 {
			t.Errorf("round-1 drift[%d] = %v, want 0", k, d)
		}
	}

	// Round 2: site 1's descriptor now looks like site 2's. Its drift is
	// ‖φ̂^(2) − φ̂^(1)‖/2 (Eq. 9 over two rounds); above the threshold it
	// moves to cluster 1 and the ids of the other sites stay.
	moved := append([]SiteResult(nil), sites...)
	moved[1].Descriptor = desc(5, 0.01)
	f1 := NormalizeDescriptors([][]float64{moved[1].Descriptor})[0]
	out2, err := AggregateRound(RoundInput{Method: learn.PTopoFL, Round: 2, Sites: moved, State: out.State, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if want := euclid(f1, f[1]) / 2; math.Abs(out2.Drift[1]-want) > tol {
		t.Errorf("drift %v, want %v", out2.Drift[1], want)
	}
	if got := out2.Labels; got[0] != 0 || got[1] != 1 || got[2] != 1 || len(out2.Reclustered) != 1 {
		t.Errorf("labels after drift %v (moved %v), want [0 1 1]", got, out2.Reclustered)
	}
	// With re-clustering disabled the labels are kept.
	cfg.DriftThreshold = 0
	out3, err := AggregateRound(RoundInput{Method: learn.PTopoFL, Round: 2, Sites: moved, State: out.State, Config: cfg})
	if err != nil || out3.Labels[1] != 0 {
		t.Errorf("labels without re-clustering %v (err %v), want [0 0 1]", out3.Labels, err)
	}

	// β = 1: every site receives the same consensus model (Eq. 7).
	cfg.Beta = 1
	out4, err := AggregateRound(RoundInput{Method: learn.PTopoFL, Round: 1, Sites: sites, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(out4.Models[0][0]-out4.Models[2][0]) > tol {
		t.Errorf("β=1 models differ: %v", out4.Models)
	}
}

func TestWassersteinDistance(t *testing.T) {
	// By hand, L∞ ground metric, p = 2: {(0,1)} vs {(0,3)} matched costs
	// 2² = 4, both to the diagonal (1/2)² + (3/2)² = 2.5, so W₂ = √2.5;
	// identical H1 diagrams add 0.
	h1 := []tda.Pair{{Birth: 1, Death: 2}}
	sites := []SiteResult{
		{Params: []float64{0}, N: 1, Descriptor: desc(0, 0), H0: []tda.Pair{{Birth: 0, Death: 1}, {Birth: 0, Death: math.Inf(1)}}, H1: h1},
		{Params: []float64{1}, N: 1, Descriptor: desc(0, 0), H0: []tda.Pair{{Birth: 0, Death: 3}}, H1: h1},
	}
	d, err := WassersteinMatrix(sites, 2)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(d[0][1]-math.Sqrt(2.5)) > tol || d[1][0] != d[0][1] || d[0][0] != 0 {
		t.Errorf("matrix %v, want off-diagonal √2.5", d)
	}
	cfg := DefaultConfig()
	cfg.Distance, cfg.Temperature, cfg.M = WassersteinDistance, 2, 1
	out, err := AggregateRound(RoundInput{Method: learn.PTopoFL, Round: 1, Sites: sites, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	// One cluster, equal n and trust, equal mean distance √2.5/2 to the
	// cluster: equal weights, so the model is 0.5 up to the 1e-8 guard of
	// Eq. (6), which here is 2.4e-8 of the weight sum.
	if math.Abs(out.Models[0][0]-0.5) > 1e-7 {
		t.Errorf("model %v, want 0.5", out.Models[0])
	}
	if _, err := WassersteinMatrix(sites, 0.5); err == nil {
		t.Error("p = 0.5: no error")
	}
}

func TestAggregateRoundErrors(t *testing.T) {
	good := SiteResult{Params: []float64{1, 2}, N: 3, Descriptor: desc(0, 0)}
	for i, tc := range []struct {
		in   RoundInput
		want string
	}{
		{RoundInput{Method: learn.FedAvg}, "no sites"}, // 0
		{RoundInput{Method: learn.FedAvg, Sites: []SiteResult{good, {Params: []float64{1}, N: 1}}}, "site 1 model"},
		{RoundInput{Method: learn.FedAvg, Sites: []SiteResult{good, {Params: []float64{1, math.NaN()}, N: 1}}}, "site 1 model"},
		{RoundInput{Method: learn.FedAvg, Sites: []SiteResult{{Params: []float64{1}, N: 0}}}, "n = 0"},
		{RoundInput{Method: learn.PTopoFL, Sites: []SiteResult{good, {Params: []float64{1, 2}, N: 1}}}, "no descriptor"}, // 4
		{RoundInput{Method: learn.SCAFFOLD, Sites: []SiteResult{good}}, "control variate"},
		{RoundInput{Method: "fedsgd", Sites: []SiteResult{good}}, "unknown method"},
		{RoundInput{Method: learn.PTopoFL, Sites: []SiteResult{good, good}, State: ServerState{Labels: []int{0}}}, "server state"}, // 7
	} {
		_, err := AggregateRound(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%d: error %v, want one mentioning %q", i, err, tc.want)
		}
	}
}
