package learn

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// recordingNoise is a DPRandom that adds a fixed value to every
// coordinate and records each call.
type recordingNoise struct {
	add   float64
	calls []struct{ d, sens, z float64 }
}

func (r *recordingNoise) Gaussian(v []float64, sens, z float64) {
	r.calls = append(r.calls, struct{ d, sens, z float64 }{float64(len(v)), sens, z})
	for i := range v {
		v[i] += r.add
	}
}

func randomData(rng *rand.Rand, n, d int) Data {
	x := make([][]float64, n)
	y := make([]float64, n)
	for i := range x {
		x[i] = make([]float64, d)
		for j := range x[i] {
			x[i][j] = rng.NormFloat64() * 3
		}
		y[i] = float64(rng.IntN(2))
	}
	return Data{X: x, Y: y}
}

// TestClippedLossGradientSum checks the clipped sum against a brute-force
// sum of per-row gradients (each from MeanGradient on a one-row data set
// with C = ∞, times one row), clipped by hand, and that zeroing any one row
// moves the sum by at most the clip.
func TestClippedLossGradientSum(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	m := Logistic{Features: 5, C: math.Inf(1)}
	for i, clip := range []float64{0.1, 1, 4, 1e9} {
		d := randomData(rng, 12, 5)
		params := []float64{0.3, -0.2, 0.5, 0.1, -0.4, 0.05}
		got := make([]float64, 6)
		m.ClippedLossGradientSum(params, d, clip, got)
		want := make([]float64, 6)
		g := make([]float64, 6)
		for r := range d.X {
			m.MeanGradient(params, Data{X: d.X[r : r+1], Y: d.Y[r : r+1]}, g)
			norm := 0.0
			for _, v := range g {
				norm += v * v
			}
			f := math.Min(1, clip/math.Sqrt(norm))
			for j := range want {
				want[j] += f * g[j]
			}
			// Zero-out row r: the sum without it.
			other := make([]float64, 6)
			m.ClippedLossGradientSum(params, Data{X: append(append([][]float64{}, d.X[:r]...), d.X[r+1:]...),
				Y: append(append([]float64{}, d.Y[:r]...), d.Y[r+1:]...)}, clip, other)
			diff := 0.0
			for j := range other {
				diff += (other[j] - got[j]) * (other[j] - got[j])
			}
			if math.Sqrt(diff) > clip*(1+1e-12) {
				t.Errorf("%d: zeroing row %d moved the sum by %v > clip %v", i, r, math.Sqrt(diff), clip)
			}
		}
		for j := range want {
			if math.Abs(got[j]-want[j]) > 1e-12*math.Max(1, math.Abs(want[j])) {
				t.Errorf("%d: sum[%d] = %v, brute force %v", i, j, got[j], want[j])
			}
		}
	}
}

// TestDPGradientDescentReducesToGD: with no noise and a clip no gradient
// reaches, DP-GD is GradientDescent (the same arithmetic up to rounding).
func TestDPGradientDescentReducesToGD(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	d := randomData(rng, 40, 4)
	m := Logistic{Features: 4, C: 1}
	init := []float64{0.1, 0.2, -0.1, 0, 0.3}
	want := GradientDescent(m, d, init, 0.05, 30, nil)
	noise := &recordingNoise{}
	got, err := DPGradientDescent(m, d, init, 0.05, 30, nil, &DPConfig{Clip: 1e9, NoiseMultiplier: 1, Random: noise})
	if err != nil {
		t.Fatal(err)
	}
	for j := range want {
		if math.Abs(got[j]-want[j]) > 1e-12 {
			t.Errorf("θ[%d] = %v, GD gives %v", j, got[j], want[j])
		}
	}
	if len(noise.calls) != 30 {
		t.Fatalf("%d noise calls, want one per step (30)", len(noise.calls))
	}
	for i, c := range noise.calls {
		if c.d != 5 || c.sens != 1e9 || c.z != 1 {
			t.Errorf("call %d: (d, Δ, z) = (%v, %v, %v), want (5, 1e9, 1)", i, c.d, c.sens, c.z)
		}
	}
}

// TestDPNoiseEntersOnceDividedByN: on two rows whose clipped gradients
// cancel, a known noise value moves θ by lr·noise/n per step, n the
// number of rows.
func TestDPNoiseEntersOnceDividedByN(t *testing.T) {
	d := Data{X: [][]float64{{0}, {0}}, Y: []float64{0, 1}}
	m := Logistic{Features: 1, C: math.Inf(1)}
	// At θ = 0 both rows' gradients cancel in the intercept (σ(0) − 0 and
	// σ(0) − 1) and the coefficient's are 0; the noise adds 1 to each
	// coordinate of the sum, so one step moves θ by −lr·1/n = −0.05.
	noise := &recordingNoise{add: 1}
	got, err := DPGradientDescent(m, d, []float64{0, 0}, 0.1, 1, nil, &DPConfig{Clip: 10, NoiseMultiplier: 2, Random: noise})
	if err != nil {
		t.Fatal(err)
	}
	for j, want := range []float64{-0.05, -0.05} {
		if math.Abs(got[j]-want) > 1e-15 {
			t.Errorf("θ[%d] = %v, want %v", j, got[j], want)
		}
	}
}

func TestDPSiteUpdates(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	d := randomData(rng, 30, 3)
	base := DefaultSiteConfig()
	base.LocalSolver = SolverGD
	base.LocalGD = GDConfig{LR: 0.05, Steps: 7}
	for i, c := range []struct {
		m     Method
		calls int // noisy releases in one round, by hand from the configs
	}{
		{FedAvg, 7},    // 0: LocalGD.Steps
		{PTopoFL, 7},   // 1: FedAvg's update under DP
		{FedProx, 30},  // 2: FedProx.Steps
		{SCAFFOLD, 30}, // 3
		{PFedMe, 20},   // 4: PFedMe.Steps
		{LocalOnly, 7}, // 5
		{Krum, 7},      // 6
		{NormClip, 7},  // 7
	} {
		noise := &recordingNoise{}
		cfg := base
		cfg.DP = &DPConfig{Clip: 1, NoiseMultiplier: 3, Random: noise}
		out, err := UpdateSite(SiteInput{Method: c.m, Round: 1, Seed: 1, Train: d, Descriptor: make([]float64, 48), Config: cfg})
		if err != nil {
			t.Fatalf("%d %s: %v", i, c.m, err)
		}
		if len(noise.calls) != c.calls || DPReleases(c.m, cfg) != c.calls {
			t.Errorf("%d %s: %d noise calls, DPReleases %d, want %d", i, c.m, len(noise.calls), DPReleases(c.m, cfg), c.calls)
		}
		if out.SampleWeights != nil {
			t.Errorf("%d %s: topology sample weights used under DP", i, c.m)
		}
	}
	cfg := base
	cfg.LocalSolver = SolverLBFGS
	cfg.DP = &DPConfig{Clip: 1, NoiseMultiplier: 3, Random: &recordingNoise{}}
	if _, err := UpdateSite(SiteInput{Method: FedAvg, Round: 1, Train: d, Config: cfg}); !errors.Is(err, ErrLBFGSUnderDP) {
		t.Errorf("L-BFGS under DP: err %v, want ErrLBFGSUnderDP", err)
	}
	for i, bad := range []*DPConfig{
		{Clip: 0, NoiseMultiplier: 1, Random: &recordingNoise{}},
		{Clip: 1, NoiseMultiplier: 0, Random: &recordingNoise{}},
		{Clip: 1, NoiseMultiplier: 1},
	} {
		cfg := base
		cfg.DP = bad
		if _, err := UpdateSite(SiteInput{Method: FedAvg, Round: 1, Train: d, Config: cfg}); err == nil {
			t.Errorf("%d: bad DP config %+v accepted", i, *bad)
		}
	}
}
