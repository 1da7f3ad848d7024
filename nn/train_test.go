package nn

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/ptopofl/ptopofl/learn"
)

// stripes returns n images of h×w×1 whose class (of 2) is which half,
// left or right, is brighter, with noise: separable by any of the models.
func stripes(seed uint64, n, h, w int) Data {
	rng := rand.New(rand.NewPCG(seed, 5))
	d := Data{N: n, X: make([]float32, n*h*w), Labels: make([]int, n)}
	for s := range n {
		y := rng.IntN(2)
		d.Labels[s] = y
		for r := range h {
			for c := range w {
				v := 0.3 * rng.NormFloat64()
				if (c < w/2) == (y == 0) {
					v += 1
				}
				d.X[(s*h+r)*w+c] = float32(v)
			}
		}
	}
	return d
}

// TestTrainDeterministicAcrossThreads trains each architecture with
// GOMAXPROCS 1 and 2 (and 3 workers) and requires the same bits.
func TestTrainDeterministicAcrossThreads(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for i, cfg := range []Config{
		{Arch: ConvNet2, Input: Shape{28, 28, 1}, Classes: 2},                     // 0
		{Arch: MLP, Input: Shape{28, 28, 1}, Classes: 2, Hidden: []int{512, 256}}, // 1
		{Arch: ResNet, Input: Shape{16, 16, 1}, Classes: 2, Width: 8, Groups: 4},  // 2
	} {
		d := stripes(uint64(i), 40, cfg.Input.H, cfg.Input.W)
		tc := TrainConfig{Optimizer: SGD, LR: 0.01, Momentum: 0.9, WeightDecay: 1e-4, Epochs: 1, BatchSize: 16, Seed: 3}
		if i == 2 {
			tc.Optimizer = Adam
			tc.LR = 1e-3
		}
		var first []float32
		for _, run := range []struct{ procs, workers int }{{1, 0}, {2, 0}, {2, 3}} {
			runtime.GOMAXPROCS(run.procs)
			n, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			n.SetWorkers(run.workers)
			n.Init(7)
			if _, err := Train(n, d, tc, Terms{}); err != nil {
				t.Fatal(err)
			}
			if first == nil {
				first = clone(n.Params())
				continue
			}
			for j, v := range n.Params() {
				if math.Float32bits(v) != math.Float32bits(first[j]) {
					t.Fatalf("case %d (%s): GOMAXPROCS %d, workers %d: parameter %d is %v, with one thread %v", i, cfg.Arch, run.procs, run.workers, j, v, first[j])
				}
			}
		}
	}
}

// TestOptimizerSteps checks two optimiser steps of softmax regression
// (an MLP without hidden layers) from zero parameters on the single sample
// x = (1, 2), label 0, against the update formulas evaluated in float64.
// First step: softmax (½, ½), ∂L/∂z = (−½, ½), so ∂L/∂W = x⊗(−½, ½) and
// ∂L/∂b = (−½, ½). Plain SGD with η = 0.5 gives W = [[¼, −¼], [½, −½]],
// b = (¼, −¼); Adam's first step is −η·sign(g).
func TestOptimizerSteps(t *testing.T) {
	x := []float64{1, 2}
	// gradient of the loss (with terms) at params p = (W00 W01 W10 W11 b0 b1)
	lossGrad := func(p []float64) []float64 {
		z0 := x[0]*p[0] + x[1]*p[2] + p[4]
		z1 := x[0]*p[1] + x[1]*p[3] + p[5]
		p0 := 1 / (1 + math.Exp(z1-z0))
		d := []float64{p0 - 1, 1 - p0}
		return []float64{x[0] * d[0], x[0] * d[1], x[1] * d[0], x[1] * d[1], d[0], d[1]}
	}
	center := []float32{1, -1, 0.5, 2, -0.5, 3}
	corr := []float32{0.1, 0.2, -0.3, 0.4, -0.5, 0.6}
	for i, c := range []struct {
		cfg   TrainConfig
		terms Terms
	}{
		{cfg: TrainConfig{Optimizer: SGD, LR: 0.5}},                                                                  // 0
		{cfg: TrainConfig{Optimizer: SGD, LR: 0.5, Momentum: 0.9}},                                                   // 1
		{cfg: TrainConfig{Optimizer: SGD, LR: 0.1, Momentum: 0.5, WeightDecay: 0.3}},                                 // 2
		{cfg: TrainConfig{Optimizer: SGD, LR: 0.1}, terms: Terms{ProxMu: 0.7, ProxCenter: center}},                   // 3
		{cfg: TrainConfig{Optimizer: SGD, LR: 0.1}, terms: Terms{Correction: corr}},                                  // 4
		{cfg: TrainConfig{Optimizer: Adam, LR: 0.5}},                                                                 // 5
		{cfg: TrainConfig{Optimizer: Adam, LR: 0.01, WeightDecay: 0.1}, terms: Terms{ProxMu: 2, ProxCenter: center}}, // 6
	} {
		n, err := New(Config{Arch: MLP, Input: Shape{1, 1, 2}, Classes: 2, Hidden: []int{}})
		if err != nil {
			t.Fatal(err)
		}
		c.cfg.Epochs, c.cfg.BatchSize = 2, 1
		d := Data{N: 1, X: []float32{1, 2}, Labels: []int{0}}
		if _, err := Train(n, d, c.cfg, c.terms); err != nil {
			t.Fatal(err)
		}
		// The reference: the same two steps in float64.
		cfg := c.cfg.withDefaults()
		p := make([]float64, 6)
		m, v := make([]float64, 6), make([]float64, 6)
		for step := 1; step <= 2; step++ {
			g := lossGrad(p)
			for j := range g {
				g[j] += cfg.WeightDecay * p[j]
				if c.terms.ProxCenter != nil {
					g[j] += c.terms.ProxMu * (p[j] - float64(c.terms.ProxCenter[j]))
				}
				if c.terms.Correction != nil {
					g[j] += float64(c.terms.Correction[j])
				}
				if cfg.Optimizer == Adam {
					m[j] = cfg.Beta1*m[j] + (1-cfg.Beta1)*g[j]
					v[j] = cfg.Beta2*v[j] + (1-cfg.Beta2)*g[j]*g[j]
					mh := m[j] / (1 - math.Pow(cfg.Beta1, float64(step)))
					vh := v[j] / (1 - math.Pow(cfg.Beta2, float64(step)))
					p[j] -= cfg.LR * mh / (math.Sqrt(vh) + cfg.Epsilon)
				} else {
					m[j] = cfg.Momentum*m[j] + g[j]
					p[j] -= cfg.LR * m[j]
				}
			}
			if i == 0 && step == 1 {
				// The hand-computed first step of the doc comment.
				want := []float64{0.25, -0.25, 0.5, -0.5, 0.25, -0.25}
				for j := range want {
					if !near(p[j], want[j], 1e-12) {
						t.Fatalf("reference first step %v, want %v", p, want)
					}
				}
			}
		}
		for j, got := range n.Params() {
			if !near(float64(got), p[j], 1e-5) {
				t.Errorf("case %d: parameter %d is %v, want %v", i, j, got, p[j])
			}
		}
	}
}

func TestTrainLearns(t *testing.T) {
	train, test := stripes(1, 256, 12, 12), stripes(2, 200, 12, 12)
	for i, cfg := range []Config{
		{Arch: MLP, Input: Shape{12, 12, 1}, Classes: 2, Hidden: []int{32}},     // 0
		{Arch: ConvNet2, Input: Shape{12, 12, 1}, Classes: 2},                   // 1
		{Arch: ResNet, Input: Shape{12, 12, 1}, Classes: 2, Width: 4, Depth: 1}, // 2
	} {
		n, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		n.Init(1)
		before, _ := n.Accuracy(test)
		tc := TrainConfig{Optimizer: SGD, LR: 0.02, Momentum: 0.9, Epochs: 3, BatchSize: 32, Seed: 1}
		res, err := Train(n, train, tc, Terms{})
		if err != nil {
			t.Fatal(err)
		}
		after, _ := n.Accuracy(test)
		if res.Steps != 3*8 {
			t.Errorf("case %d: %d steps, want 24", i, res.Steps)
		}
		// A separable problem: held-out accuracy must end near 1.
		if after < 0.95 {
			t.Errorf("case %d (%s): accuracy %.3f before, %.3f after training (loss %.3f), want ≥ 0.95", i, cfg.Arch, before, after, res.MeanLoss)
		}
	}
}

// TestPenultimate checks that Embed returns the input of the output layer:
// applying the output layer's weights to it reproduces the logits.
func TestPenultimate(t *testing.T) {
	n, err := New(Config{Arch: ConvNet2, Input: Shape{8, 8, 1}, Classes: 3})
	if err != nil {
		t.Fatal(err)
	}
	n.Init(2)
	d := stripes(3, 70, 8, 8) // more than one evaluation chunk
	emb, err := n.Embed(d)
	if err != nil {
		t.Fatal(err)
	}
	dim := n.PenultimateSize()
	if dim != 2048 || len(emb) != d.N*dim {
		t.Fatalf("penultimate size %d, %d values; want 2048 per sample", dim, len(emb))
	}
	out := n.layers[len(n.layers)-1].(*dense)
	logits := clone(n.Forward(d.X[69*64:], 1))
	for c := range 3 {
		s := float64(out.b[c])
		for j := range dim {
			s += float64(emb[69*dim+j]) * float64(out.w[j*3+c])
		}
		if !near(s, float64(logits[c]), 1e-4) {
			t.Errorf("class %d: logit from the penultimate activations %v, network %v", c, s, logits[c])
		}
	}
	pred, _ := n.Predict(d)
	if pred[69] != argmax(logits) {
		t.Errorf("Predict %d, arg-max of the logits %d", pred[69], argmax(logits))
	}
}

func TestUpdateSite(t *testing.T) {
	cfg := Config{Arch: MLP, Input: Shape{6, 6, 1}, Classes: 2, Hidden: []int{8}}
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d := stripes(4, 50, 6, 6)
	sc := SiteConfig{Train: TrainConfig{Optimizer: SGD, LR: 0.05, Epochs: 2, BatchSize: 16, Seed: 9}, ProxMu: 10, PFedMeLambda: 15, PFedMeLR: 0.01,
		PFedMeSteps: 3, PFedMePersonalLR: 0.02}
	n.Init(1)
	pushed := clone(n.Params())
	np := n.NumParams()
	server := make([]float32, np)
	for j := range server {
		server[j] = 0.01 * float32(j%7-3)
	}
	run := func(m learn.Method, mod func(*SiteInput)) SiteOutput {
		t.Helper()
		in := SiteInput{Method: m, Round: 2, Train: d, Pushed: pushed, ServerControl: server, Config: sc}
		if mod != nil {
			mod(&in)
		}
		out, err := UpdateSite(n, in)
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		return out
	}
	dist := func(a, b []float32) float64 {
		var s float64
		for j := range a {
			s += float64(a[j]-b[j]) * float64(a[j]-b[j])
		}
		return math.Sqrt(s)
	}
	fedavg := run(learn.FedAvg, nil)
	if fedavg.Steps != 2*4 || fedavg.N != 50 {
		t.Errorf("FedAvg: %d steps for %d samples, want 8 for 50", fedavg.Steps, fedavg.N)
	}
	// Every method has a deep site update with a model of the network's
	// size; the robust aggregators' sites train exactly as FedAvg's.
	for _, m := range learn.Methods {
		out := run(m, nil)
		if len(out.Params) != np {
			t.Errorf("%s: %d parameters, want %d", m, len(out.Params), np)
		}
		switch m {
		case learn.Median, learn.TrimmedMean, learn.Krum, learn.FoolsGold, learn.NormClip:
			if dist(out.Params, fedavg.Params) != 0 {
				t.Errorf("%s: site model differs from FedAvg's", m)
			}
		}
	}
	// FedProx with a large μ stays closer to the pushed model.
	prox := run(learn.FedProx, nil)
	if a, b := dist(prox.Params, pushed), dist(fedavg.Params, pushed); !(a < 0.5*b) {
		t.Errorf("FedProx moved %.4g from the pushed model, FedAvg %.4g: want less than half", a, b)
	}
	// SCAFFOLD option II from the returned model: c_i⁺ = c_i − c + (θ_start − θ)/(Kη).
	ci := make([]float32, np)
	for j := range ci {
		ci[j] = 0.02 * float32(j%5-2)
	}
	sc1 := run(learn.SCAFFOLD, func(in *SiteInput) { in.State.Control = ci })
	for j := range ci {
		want := float64(ci[j]) - float64(server[j]) + float64(pushed[j]-sc1.Params[j])/(8*0.05)
		if !near(float64(sc1.State.Control[j]), want, 1e-5) || !near(float64(sc1.Control[j]), want-float64(ci[j]), 1e-4) {
			t.Fatalf("SCAFFOLD parameter %d: c_i⁺ %v, Δc_i %v; want %v, %v", j, sc1.State.Control[j], sc1.Control[j], want, want-float64(ci[j]))
		}
	}
	// pFedMe (Algorithm 1) with one minibatch of every sample: K = 3 plain
	// SGD steps at 0.02 on f(θ) + λ/2‖θ − w‖² from the site's θ, then
	// w ← w − ηλ(w − θ); reproduced step by step with a Trainer on the
	// samples in the order the epoch's shuffle gives them.
	one := sc
	one.Train.BatchSize, one.Train.Epochs = d.N, 1
	theta0 := make([]float32, np)
	for j := range theta0 {
		theta0[j] = pushed[j] + 0.01*float32(j%3-1)
	}
	pf := run(learn.PFedMe, func(in *SiteInput) { in.Config = one; in.State.Personal = theta0 })
	order := make([]int, d.N)
	for i := range order {
		order[i] = i
	}
	rand.New(rand.NewPCG(9, 0x6e6e2d73687566)).Shuffle(d.N, func(i, j int) { order[i], order[j] = order[j], order[i] })
	size := n.InputSize()
	xb, yb := make([]float32, d.N*size), make([]int, d.N)
	for i, s := range order {
		copy(xb[i*size:(i+1)*size], d.X[s*size:(s+1)*size])
		yb[i] = d.Labels[s]
	}
	w := clone(pushed)
	copy(n.Params(), theta0)
	tr, err := NewTrainer(n, TrainConfig{Optimizer: SGD, LR: 0.02, Epochs: 1, BatchSize: d.N}, Terms{ProxMu: 15, ProxCenter: w})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		tr.Step(xb, yb, nil)
	}
	theta := clone(n.Params())
	for j := range w {
		w[j] -= float32(0.01*15) * (w[j] - theta[j])
	}
	if dist(pf.State.Personal, theta) != 0 || dist(pf.Params, w) != 0 || pf.Steps != 1 {
		t.Errorf("pFedMe: θ off by %v, w off by %v, %d minibatches; want 0, 0, 1", dist(pf.State.Personal, theta), dist(pf.Params, w), pf.Steps)
	}
	if a, b := dist(pf.Params, theta), dist(pushed, theta); !(a < b) {
		t.Errorf("pFedMe: w moved away from θ (%v from %v)", a, b)
	}
	// LocalOnly ignores the pushed model: round 1 and 2 from the same
	// seed give the same model whatever was pushed.
	l1 := run(learn.LocalOnly, func(in *SiteInput) { in.Pushed = nil; in.InitSeed = 5 })
	l2 := run(learn.LocalOnly, func(in *SiteInput) { in.InitSeed = 5 })
	if dist(l1.Params, l2.Params) != 0 || dist(l1.State.Local, l1.Params) != 0 {
		t.Errorf("LocalOnly depends on the pushed model")
	}
	// pTopoFL's sample weights reach the loss: zero weights on one class
	// give a different model than FedAvg's.
	sw := make([]float32, d.N)
	for s := range sw {
		sw[s] = float32(d.Labels[s])
	}
	pt := run(learn.PTopoFL, func(in *SiteInput) { in.Train.Weights = sw })
	if dist(pt.Params, fedavg.Params) == 0 {
		t.Errorf("pTopoFL's sample weights changed nothing")
	}
}

func TestUpdateSiteErrors(t *testing.T) {
	n, err := New(Config{Arch: MLP, Input: Shape{2, 2, 1}, Classes: 2, Hidden: []int{3}})
	if err != nil {
		t.Fatal(err)
	}
	good := Data{N: 2, X: make([]float32, 8), Labels: []int{0, 1}}
	sc := SiteConfig{Train: DefaultTrainConfig()}
	for i, in := range []SiteInput{
		{Method: "bogus", Train: good, Config: sc},                                                        // 0
		{Method: learn.FedAvg, Train: Data{N: 2, X: make([]float32, 8), Labels: []int{0, 2}}, Config: sc}, // 1: label out of range
		{Method: learn.FedAvg, Train: Data{N: 2, X: make([]float32, 7), Labels: []int{0, 1}}, Config: sc}, // 2: truncated pixels
		{Method: learn.FedAvg, Train: good, Pushed: make([]float32, 3), Config: sc},                       // 3: wrong length
		{Method: learn.FedAvg, Train: good, Config: SiteConfig{Train: TrainConfig{Optimizer: SGD}}},       // 4: no learning rate
		{Method: learn.FedAvg, Train: Data{N: 0}, Config: sc},                                             // 5: empty
	} {
		if _, err := UpdateSite(n, in); err == nil {
			t.Errorf("case %d: no error", i)
		}
	}
}

func BenchmarkTrainStep(b *testing.B) {
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"convnet2-62", Config{Arch: ConvNet2, Input: Shape{28, 28, 1}, Classes: 62}},
		{"mlp-784-256-10", Config{Arch: MLP, Input: Shape{28, 28, 1}, Classes: 10}},
		{"resnet-w16d2-cifar", Config{Arch: ResNet, Input: Shape{32, 32, 3}, Classes: 10}},
	} {
		b.Run(c.name, func(b *testing.B) {
			n, err := New(c.cfg)
			if err != nil {
				b.Fatal(err)
			}
			n.Init(1)
			const batch = 64
			rng := rand.New(rand.NewPCG(1, 2))
			d := Data{N: batch, X: randomInput(rng, batch*n.InputSize()), Labels: make([]int, batch)}
			for i := range d.Labels {
				d.Labels[i] = rng.IntN(c.cfg.Classes)
			}
			tc := TrainConfig{Optimizer: SGD, LR: 0.01, Momentum: 0.9, Epochs: 1, BatchSize: batch}
			tr, err := NewTrainer(n, tc, Terms{})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				tr.Step(d.X, d.Labels, nil)
			}
		})
	}
}

func TestTrainConfigValidate(t *testing.T) {
	if err := DefaultTrainConfig().Validate(); err != nil {
		t.Errorf("default: %v", err)
	}
	if err := DefaultSiteConfig().Train.Validate(); err != nil {
		t.Errorf("default site config: %v", err)
	}
	good := DefaultTrainConfig()
	for i, mod := range []func(*TrainConfig){
		func(c *TrainConfig) { c.Optimizer = "rmsprop" },          // 0
		func(c *TrainConfig) { c.LR = 0 },                         // 1
		func(c *TrainConfig) { c.LR = math.Inf(1) },               // 2
		func(c *TrainConfig) { c.Momentum = 1 },                   // 3
		func(c *TrainConfig) { c.Optimizer, c.Beta2 = Adam, 1.5 }, // 4
		func(c *TrainConfig) { c.Epsilon = -1 },                   // 5
		func(c *TrainConfig) { c.WeightDecay = -0.1 },             // 6
		func(c *TrainConfig) { c.Epochs = 0 },                     // 7
		func(c *TrainConfig) { c.BatchSize = 0 },                  // 8
		func(c *TrainConfig) { c.LR = math.NaN() },                // 9
	} {
		c := good
		mod(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("case %d: no error for %+v", i, c)
		}
	}
}

// TestTrainerStep checks that stepping a Trainer by hand is what Train
// does: on one sample with batch size 1 the order is fixed, so two steps
// equal two epochs bit for bit.
func TestTrainerStep(t *testing.T) {
	cfg := Config{Arch: MLP, Input: Shape{2, 2, 1}, Classes: 3, Hidden: []int{4}}
	d := Data{N: 1, X: []float32{0.1, -0.2, 0.3, 0.4}, Labels: []int{2}, Weights: []float32{0.5}}
	tc := TrainConfig{Optimizer: Adam, LR: 0.01, Epochs: 2, BatchSize: 1}
	a, _ := New(cfg)
	b, _ := New(cfg)
	a.Init(4)
	b.Init(4)
	if _, err := Train(a, d, tc, Terms{}); err != nil {
		t.Fatal(err)
	}
	tr, err := NewTrainer(b, tc, Terms{})
	if err != nil {
		t.Fatal(err)
	}
	l1 := tr.Step(d.X, d.Labels, d.Weights)
	l2 := tr.Step(d.X, d.Labels, d.Weights)
	if !(l2 < l1) {
		t.Errorf("loss %v then %v: want a decrease", l1, l2)
	}
	for j, v := range a.Params() {
		if math.Float32bits(v) != math.Float32bits(b.Params()[j]) {
			t.Fatalf("parameter %d: Train %v, Trainer.Step %v", j, v, b.Params()[j])
		}
	}
	if _, err := NewTrainer(b, TrainConfig{}, Terms{}); err == nil {
		t.Errorf("no error for an empty configuration")
	}
	if _, err := NewTrainer(b, tc, Terms{Correction: make([]float32, 3)}); err == nil {
		t.Errorf("no error for a correction of the wrong length")
	}
	if _, err := NewTrainer(b, tc, Terms{ProxMu: 1}); err == nil {
		t.Errorf("no error for a proximal term without center")
	}
}

func TestEvaluationParams(t *testing.T) {
	pushed := []float32{1}
	st := SiteState{Personal: []float32{2}, Local: []float32{3}}
	for i, c := range []struct {
		m    learn.Method
		want float32
	}{{learn.PFedMe, 2}, {learn.LocalOnly, 3}, {learn.FedAvg, 1}, {learn.SCAFFOLD, 1}, {learn.PTopoFL, 1}} {
		if got := EvaluationParams(c.m, pushed, st); got[0] != c.want {
			t.Errorf("case %d (%s): %v, want %v", i, c.m, got, c.want)
		}
	}
}

// TestScaffoldStepSum: the divisor of SCAFFOLD's option II is the distance
// K steps of heavy-ball SGD move under a unit constant gradient, which the
// recurrence v ← μv + 1, θ ← θ − ηv gives directly.
func TestScaffoldStepSum(t *testing.T) {
	for i, c := range []struct {
		steps int
		cfg   TrainConfig
		want  float64
	}{
		{5, TrainConfig{Optimizer: SGD, LR: 0.1}, 0.5},                   // 0: plain SGD: K·η
		{1, TrainConfig{Optimizer: SGD, LR: 0.1, Momentum: 0.9}, 0.1},    // 1: one step: η (the buffer starts at 0)
		{2, TrainConfig{Optimizer: SGD, LR: 1, Momentum: 0.5}, 2.5},      // 2: 1 + 1.5 by hand
		{3, TrainConfig{Optimizer: Adam, LR: 0.01, Momentum: 0.9}, 0.03}, // 3: Adam keeps K·η
	} {
		if got := scaffoldStepSum(c.steps, c.cfg); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("case %d: %v, want %v", i, got, c.want)
		}
	}
	v, theta := 0.0, 0.0
	for range 19 {
		v = 0.9*v + 1
		theta += 0.05 * v
	}
	if got := scaffoldStepSum(19, TrainConfig{Optimizer: SGD, LR: 0.05, Momentum: 0.9}); math.Abs(got-theta) > 1e-12 {
		t.Errorf("19 steps at μ 0.9: %v, the recurrence moves %v", got, theta)
	}
}
