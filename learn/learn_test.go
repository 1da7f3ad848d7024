package learn

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

const tol = 1e-12

func TestSigmoidAndLogLoss(t *testing.T) {
	for i, tc := range []struct {
		z, y      float64
		sig, loss float64
	}{
		// Values by hand: σ(0) = 1/2, log 2 = 0.6931471805599453.
		{z: 0, y: 1, sig: 0.5, loss: math.Ln2},                                    // 0
		{z: 0, y: 0, sig: 0.5, loss: math.Ln2},                                    // 1
		{z: 2, y: 1, sig: 1 / (1 + math.Exp(-2)), loss: math.Log1p(math.Exp(-2))}, // 2
		{z: -2, y: 1, sig: 1 / (1 + math.Exp(2)), loss: 2 + math.Log1p(math.Exp(-2))},
		// The clip: σ(100) = σ(30); the loss is not clipped: log(1+e^100) − 0 ≈ 100.
		{z: 100, y: 0, sig: 1 / (1 + math.Exp(-30)), loss: 100}, // 4
		{z: -800, y: 0, sig: 1 / (1 + math.Exp(30)), loss: 0},
		{z: -800, y: 1, sig: 1 / (1 + math.Exp(30)), loss: 800}, // 6
	} {
		if got := Sigmoid(tc.z); math.Abs(got-tc.sig) > tol {
			t.Errorf("%d: Sigmoid(%v) = %v, want %v", i, tc.z, got, tc.sig)
		}
		if got := LogLoss(tc.y, tc.z); math.Abs(got-tc.loss) > tol*math.Max(1, tc.loss) {
			t.Errorf("%d: LogLoss(%v, %v) = %v, want %v", i, tc.y, tc.z, got, tc.loss)
		}
	}
}

func TestStandardScaler(t *testing.T) {
	// Column 0: mean 2, population std sqrt(2/3); column 1 constant (scale 1,
	// scikit-learn's rule); by hand.
	x := [][]float64{{1, 5}, {2, 5}, {3, 5}}
	s, err := FitStandardScaler(x)
	if err != nil {
		t.Fatal(err)
	}
	sd := math.Sqrt(2.0 / 3)
	if s.Mean[0] != 2 || s.Mean[1] != 5 || math.Abs(s.Scale[0]-sd) > tol || s.Scale[1] != 1 {
		t.Errorf("FitStandardScaler = %+v, want mean [2 5] scale [%v 1]", s, sd)
	}
	xs, err := s.Transform(x)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(xs[0][0]+1/sd) > tol || xs[1][0] != 0 || xs[2][1] != 0 {
		t.Errorf("Transform = %v", xs)
	}
	e, err := FitStandardScalerEps(x, 1e-8)
	if err != nil {
		t.Fatal(err)
	}
	if e.Scale[0] != sd+1e-8 || e.Scale[1] != 1e-8 {
		t.Errorf("FitStandardScalerEps scale = %v, want [%v 1e-8]", e.Scale, sd+1e-8)
	}
	for i, bad := range [][][]float64{nil, {{1, 2}, {3}}, {{math.NaN()}}} {
		if _, err := FitStandardScaler(bad); err == nil {
			t.Errorf("bad %d: no error", i)
		}
	}
	if _, err := s.Transform([][]float64{{1}}); err == nil {
		t.Error("Transform of a short row: no error")
	}
}

// separable-ish toy data, hand-made.
var toy = Data{
	X: [][]float64{{-2, 1}, {-1, 0.5}, {-0.5, -1}, {0.3, 0.2}, {1, -0.5}, {2, 1}, {0.1, -0.2}, {-0.2, 0.4}},
	Y: []float64{0, 0, 0, 1, 1, 1, 0, 1},
}

// TestObjectiveGradient checks Objective's analytic gradient against central
// finite differences.
func TestObjectiveGradient(t *testing.T) {
	m := Logistic{Features: 2, C: 0.7}
	d := toy
	d.Weights = []float64{1, 2, 0.5, 1, 1, 3, 0.2, 1}
	p := []float64{0.3, -0.4, 0.1}
	g := make([]float64, 3)
	m.Objective(p, d, g)
	for j := range p {
		h := 1e-6
		a := append([]float64(nil), p...)
		b := append([]float64(nil), p...)
		a[j] += h
		b[j] -= h
		fd := (m.Objective(a, d, nil) - m.Objective(b, d, nil)) / (2 * h)
		if math.Abs(fd-g[j]) > 1e-7 {
			t.Errorf("grad[%d] = %v, finite difference %v", j, g[j], fd)
		}
	}
	// MeanGradient is the objective's gradient over n with the clipped
	// sigmoid, which equals the exact one for these small logits.
	mg := make([]float64, 3)
	m.MeanGradient(p, d, mg)
	for j := range mg {
		if math.Abs(mg[j]-g[j]/8) > tol {
			t.Errorf("MeanGradient[%d] = %v, want %v", j, mg[j], g[j]/8)
		}
	}
}

// TestFitLBFGS checks that the solver reaches a stationary point of the
// objective to the tight tolerance from any warm start, and that the
// intercept is not penalised (a constant feature-free problem fits the
// log-odds exactly).
func TestFitLBFGS(t *testing.T) {
	m := Logistic{Features: 2, C: 1}
	var first []float64
	for i, init := range [][]float64{nil, {5, -5, 3}, {-0.1, 0.2, 0}} {
		p, err := FitLBFGS(m, toy, init, DefaultLBFGS)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		g := make([]float64, 3)
		m.Objective(p, toy, g)
		if infNorm(g) > 1e-9 {
			t.Errorf("%d: gradient norm %v at the solution", i, infNorm(g))
		}
		if first == nil {
			first = p
		}
		for j := range p {
			if math.Abs(p[j]-first[j]) > 1e-9 {
				t.Errorf("%d: solution %v differs from %v", i, p, first)
			}
		}
	}
	// Zero features, 3 positives of 4: the unpenalised intercept is
	// log(3/1) (by hand).
	d := Data{X: [][]float64{{}, {}, {}, {}}, Y: []float64{1, 1, 1, 0}}
	p, err := FitLBFGS(Logistic{Features: 0, C: 1}, d, nil, DefaultLBFGS)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(p[0]-math.Log(3)) > 1e-9 {
		t.Errorf("intercept-only fit = %v, want log 3 = %v", p[0], math.Log(3))
	}
	if _, err := FitLBFGS(m, Data{X: [][]float64{{1, 2}}, Y: []float64{2}}, nil, DefaultLBFGS); err == nil {
		t.Error("label 2: no error")
	}
	if _, err := FitLBFGS(m, toy, []float64{1}, DefaultLBFGS); err == nil {
		t.Error("short warm start: no error")
	}
}

func TestGradientDescent(t *testing.T) {
	// One step from 0 with lr 1: θ = −MeanGradient(0) = −(X^T(1/2 − y)/n, mean(1/2 − y)).
	m := Logistic{Features: 2, C: 1}
	got := GradientDescent(m, toy, []float64{0, 0, 0}, 1, 1, nil)
	want := []float64{0, 0, 0}
	for i, x := range toy.X {
		r := 0.5 - toy.Y[i]
		want[0] -= x[0] * r / 8
		want[1] -= x[1] * r / 8
		want[2] -= r / 8
	}
	for j := range got {
		if math.Abs(got[j]-want[j]) > tol {
			t.Errorf("θ[%d] = %v, want %v", j, got[j], want[j])
		}
	}
}

// TestInitialParams checks the numpy legacy generator against the first
// coefficients of the golden init_coef (testdata of package simulate:
// healthcare/expected.json FedProx init_coef[0], numpy
// RandomState(242).randn(1,20)*0.01) and the well-known first draws of
// RandomState(0).randn: 1.764052345967664, 0.4001572083672233.
func TestInitialParams(t *testing.T) {
	p := InitialParams(20, 242, 0.01)
	if len(p) != 21 || p[20] != 0 {
		t.Fatalf("len %d intercept %v, want 21 and 0", len(p), p[20])
	}
	for j, w := range []float64{-0.0035751940380246055, 0.0014844784435230044, 0.009935308028707929, 0.01838967594996358} {
		if p[j] != w {
			t.Errorf("seed 242 coef %d = %v, want %v", j, p[j], w)
		}
	}
	q := InitialParams(2, 0, 1)
	if q[0] != 1.764052345967664 || q[1] != 0.4001572083672233 {
		t.Errorf("RandomState(0).randn(2) = %v", q[:2])
	}
}

func TestTopologySampleWeights(t *testing.T) {
	// Two rows: xs = ±1 in the single column (std 1 after (x−mean)/(std+0)),
	// both at distance 1 from the centre, so both weights are e^{−1/A0}
	// before normalisation and 1/(1+1e-8·e^{1/A0}) after.
	desc := make([]float64, 48)
	desc[42] = 2
	c := DefaultTopologyWeights
	c.StandardiseEps = 0
	w, err := TopologySampleWeights([][]float64{{-1}, {1}}, desc, c)
	if err != nil {
		t.Fatal(err)
	}
	e := math.Exp(-0.5)
	want := e / (e + 1e-8)
	if math.Abs(w[0]-want) > tol || math.Abs(w[1]-want) > tol {
		t.Errorf("weights %v, want [%v %v]", w, want, want)
	}
	// An outlier is clipped at ClipMin; the A0 floor 0.1 applies to A0 = 0.
	desc[42] = 0
	w, err = TopologySampleWeights([][]float64{{0}, {0}, {0}, {0}, {0}, {0}, {0}, {0}, {0}, {100}}, desc, DefaultTopologyWeights)
	if err != nil {
		t.Fatal(err)
	}
	if w[9] != 0.2 {
		t.Errorf("outlier weight %v, want the clip 0.2", w[9])
	}
	if _, err := TopologySampleWeights([][]float64{{1}}, desc[:10], DefaultTopologyWeights); err == nil {
		t.Error("short descriptor: no error")
	}
}

func TestUpdateSiteErrors(t *testing.T) {
	cfg := DefaultSiteConfig()
	for i, in := range []SiteInput{
		{Method: "fedsgd", Train: toy, Config: cfg},                          // 0 unknown method
		{Method: FedAvg, Train: toy, Pushed: []float64{1, 2}, Config: cfg},   // 1 wrong length
		{Method: PTopoFL, Train: toy, Descriptor: []float64{1}, Config: cfg}, // 2 short descriptor
		{Method: FedProx, Train: Data{X: [][]float64{{1, 2}}, Y: []float64{0.5}}, Config: cfg},
	} {
		if _, err := UpdateSite(in); err == nil {
			t.Errorf("%d: no error", i)
		}
	}
}

// TestSCAFFOLDMessage checks the control-variate message: the change Δc_i
// when correct, the full c_i under ReferenceBug; both states equal.
func TestSCAFFOLDMessage(t *testing.T) {
	cfg := DefaultSiteConfig()
	in := SiteInput{Method: SCAFFOLD, Round: 2, Train: toy, Config: cfg,
		Pushed: []float64{0.1, 0.2, 0}, ServerControl: []float64{0.01, -0.02, 0.03},
		State: SiteState{Control: []float64{0.5, 0.5, 0.5}}}
	ok, err := UpdateSite(in)
	if err != nil {
		t.Fatal(err)
	}
	in.Config.SCAFFOLD.ReferenceBug = true
	bug, err := UpdateSite(in)
	if err != nil {
		t.Fatal(err)
	}
	for j := range ok.Control {
		if ok.State.Control[j] != bug.State.Control[j] || bug.Control[j] != bug.State.Control[j] ||
			math.Abs(ok.Control[j]-(ok.State.Control[j]-0.5)) > tol {
			t.Errorf("coordinate %d: correct sends %v, bug sends %v, state %v", j, ok.Control[j], bug.Control[j], ok.State.Control[j])
		}
	}
}

// TestLossAndSigmoidAreTheSeparateFunctions: the fused evaluation the
// L-BFGS objective uses gives, bit for bit, LogLoss and ExactSigmoid, on
// zeros of both signs, subnormals, values around the branch points and the
// clip, large magnitudes and a sweep of random logits.
func TestLossAndSigmoidAreTheSeparateFunctions(t *testing.T) {
	zs := []float64{0, math.Copysign(0, -1), math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64,
		1e-300, -1e-300, 1e-17, -1e-17, 0.5, -0.5, 1, -1, 30, -30, 36.7, -36.7, 709, -709, 745, -745, 1e308, -1e308,
		math.Inf(1), math.Inf(-1)}
	rng := rand.New(rand.NewPCG(7, 11))
	for range 20000 {
		zs = append(zs, (rng.Float64()*2-1)*math.Pow(10, float64(rng.IntN(8))-3))
	}
	for _, z := range zs {
		for _, y := range []float64{0, 1} {
			l, s := lossAndSigmoid(y, z)
			wl, ws := LogLoss(y, z), ExactSigmoid(z)
			if math.Float64bits(l) != math.Float64bits(wl) || math.Float64bits(s) != math.Float64bits(ws) {
				t.Fatalf("z=%v y=%v: fused (%v, %v), separate (%v, %v)", z, y, l, s, wl, ws)
			}
		}
	}
}

// TestRobustBaselinesUpdateLikeFedAvg: every robust baseline's site update
// is FedAvg's, bit for bit, and the new methods parse.
func TestRobustBaselinesUpdateLikeFedAvg(t *testing.T) {
	in := SiteInput{Method: FedAvg, Round: 2, Train: toy, Pushed: []float64{0.1, -0.2, 0.05}, Config: DefaultSiteConfig()}
	want, err := UpdateSite(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []Method{Median, TrimmedMean, Krum, FoolsGold, NormClip} {
		if p, err := ParseMethod(string(m)); err != nil || p != m {
			t.Errorf("ParseMethod(%q) = %q, %v", m, p, err)
		}
		in.Method = m
		got, err := UpdateSite(in)
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		if !slices.Equal(got.Params, want.Params) || got.N != want.N {
			t.Errorf("%s: params %v n %d, want FedAvg's %v %d", m, got.Params, got.N, want.Params, want.N)
		}
	}
}

// TestPTopoFLWithoutSampleWeights: under NoSampleWeights (topo_features
// "augment") pTopoFL's site update is the unweighted fit FedAvg's is, bit
// for bit, from the same pushed model, and reports no sample weights;
// with them (the default) it differs.
func TestPTopoFLWithoutSampleWeights(t *testing.T) {
	cfg := DefaultSiteConfig()
	desc := make([]float64, 48)
	desc[cfg.TopologyWeights.DescriptorIndex] = 0.7
	in := SiteInput{Method: FedAvg, Round: 2, Train: toy, Pushed: []float64{0.1, -0.2, 0.05}, Descriptor: desc, Config: cfg}
	want, err := UpdateSite(in)
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		noWeights bool
		same      bool
	}{{true, true}, {false, false}} {
		in.Method = PTopoFL
		in.Config.NoSampleWeights = tc.noWeights
		got, err := UpdateSite(in)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if same := slices.Equal(got.Params, want.Params); same != tc.same || (got.SampleWeights == nil) != tc.noWeights {
			t.Errorf("case %d: params %v (FedAvg's %v), sample weights %v", i, got.Params, want.Params, got.SampleWeights)
		}
	}
}
