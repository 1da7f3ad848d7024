package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ptopofl/ptopofl/learn"
)

// TestUpdateSiteTermsStepByStep checks FedProx's and SCAFFOLD's terms in
// the deep site update against the update written out by hand: each of the
// K plain-SGD steps is the data term's step (a Trainer with no terms, on
// the minibatch the epoch's shuffle gives) plus the method's own term,
// added here in float64 from the step's starting point:
//
//   - FedProx (Li et al. 2020, Eq. 2): θ_{k+1} = θ_k − η∇f(θ_k) − ημ(θ_k − θ_g),
//     θ_g the pushed model;
//   - SCAFFOLD (Karimireddy et al. 2020, Alg. 1 line 10): θ_{k+1} = θ_k −
//     η(∇f(θ_k) − c_i + c).
//
// TestUpdateSite checks SCAFFOLD's control-variate formula from the model
// the update returns, which would hold with the correction dropped or its
// sign flipped, and FedProx only as "closer to the pushed model", which
// would hold with μ halved or tripled; here each of those changes moves the
// final model by ~1e-3, against float32 rounding differences of ~1e-6
// (the implementation adds the term to the gradient before the step).
func TestUpdateSiteTermsStepByStep(t *testing.T) {
	cfg := Config{Arch: MLP, Input: Shape{6, 6, 1}, Classes: 2, Hidden: []int{8}}
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d := stripes(4, 50, 6, 6)
	const lr, mu, seed, bs, epochs = 0.05, 10.0, 9, 16, 2
	sc := SiteConfig{Train: TrainConfig{Optimizer: SGD, LR: lr, Epochs: epochs, BatchSize: bs, Seed: seed}, ProxMu: mu}
	n.Init(1)
	pushed := clone(n.Params())
	np := n.NumParams()
	server, ci := make([]float32, np), make([]float32, np)
	for j := range server {
		server[j] = 0.03 * float32(j%7-3)
		ci[j] = 0.02 * float32(j%5-2)
	}

	// The minibatches in the order eachBatch draws them (PCG seeded with
	// Seed and "nn-shuf", reshuffled every epoch).
	type batch struct {
		x []float32
		y []int
	}
	var batches []batch
	rng := rand.New(rand.NewPCG(seed, 0x6e6e2d73687566))
	order := make([]int, d.N)
	for i := range order {
		order[i] = i
	}
	size := n.InputSize()
	for range epochs {
		rng.Shuffle(d.N, func(i, j int) { order[i], order[j] = order[j], order[i] })
		for lo := 0; lo < d.N; lo += bs {
			b := min(bs, d.N-lo)
			x, y := make([]float32, b*size), make([]int, b)
			for i, s := range order[lo : lo+b] {
				copy(x[i*size:(i+1)*size], d.X[s*size:(s+1)*size])
				y[i] = d.Labels[s]
			}
			batches = append(batches, batch{x, y})
		}
	}

	// byHand runs the K steps with term(θ_k) added to each data step.
	byHand := func(term func(theta []float32, j int) float64) []float32 {
		theta := clone(pushed)
		for _, b := range batches {
			copy(n.Params(), theta)
			tr, err := NewTrainer(n, TrainConfig{Optimizer: SGD, LR: lr, Epochs: 1, BatchSize: bs}, Terms{})
			if err != nil {
				t.Fatal(err)
			}
			tr.Step(b.x, b.y, nil)
			next := n.Params()
			for j := range theta {
				theta[j] = float32(float64(next[j]) - lr*term(theta, j))
			}
		}
		return theta
	}
	maxDiff := func(a, b []float32) float64 {
		var m float64
		for j := range a {
			m = max(m, math.Abs(float64(a[j])-float64(b[j])))
		}
		return m
	}
	run := func(m learn.Method, state SiteState) SiteOutput {
		out, err := UpdateSite(n, SiteInput{Method: m, Round: 2, Train: d, Pushed: pushed, ServerControl: server, State: state, Config: sc})
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		return out
	}

	const tol = 2e-5
	cases := []struct {
		name  string
		got   []float32
		term  func(theta []float32, j int) float64
		wrong []func(theta []float32, j int) float64 // what a broken term would give: must be far
	}{
		{"FedProx", run(learn.FedProx, SiteState{}).Params,
			func(th []float32, j int) float64 { return mu * float64(th[j]-pushed[j]) },
			[]func([]float32, int) float64{
				func(th []float32, j int) float64 { return mu / 2 * float64(th[j]-pushed[j]) },
				func(th []float32, j int) float64 { return 3 * mu * float64(th[j]-pushed[j]) },
			}},
		{"SCAFFOLD", run(learn.SCAFFOLD, SiteState{Control: ci}).Params,
			func(_ []float32, j int) float64 { return float64(server[j]) - float64(ci[j]) },
			[]func([]float32, int) float64{
				func([]float32, int) float64 { return 0 },
				func(_ []float32, j int) float64 { return float64(ci[j]) - float64(server[j]) },
			}},
	}
	for i, c := range cases {
		want := byHand(c.term)
		if d := maxDiff(c.got, want); d > tol {
			t.Errorf("case %d (%s): off the hand-written update by %.3g (tolerance %g)", i, c.name, d, tol)
		}
		// The test can tell: every broken variant of the term lands far
		// from the update.
		for k, w := range c.wrong {
			if d := maxDiff(byHand(w), want); d < 50*tol {
				t.Errorf("case %d (%s): broken variant %d is only %.3g away: the check could not catch it", i, c.name, k, d)
			}
		}
	}
}
