package nn

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/nn/internal/parallel"
)

// dpTol is the relative tolerance of DP-SGD's clipped sums against the
// brute-force reference: both sum float32 per-example gradients, computed
// by differently blocked products (a batch-1 pass against the batch's
// per-example products), which differ by a few float32 roundings per
// accumulated term (at most 1e-7 relative at these sizes).
const dpTol = 1e-5

// fakeRandom is a DPRandom for tests: Float64 cycles through uniform (or
// returns 0 if it is empty) and Perturb32 adds add to every value and
// records the call.
type fakeRandom struct {
	uniform []float64
	draws   int
	add     float32
	keep    bool // keep a copy of each perturbed vector (before the noise)
	calls   []perturbCall
}

type perturbCall struct {
	n              int
	sensitivity, z float64
	v              []float32
}

func (f *fakeRandom) Float64() float64 {
	f.draws++
	if len(f.uniform) == 0 {
		return 0
	}
	return f.uniform[(f.draws-1)%len(f.uniform)]
}

func (f *fakeRandom) Perturb32(v []float32, sensitivity, z float64) {
	c := perturbCall{n: len(v), sensitivity: sensitivity, z: z}
	if f.keep {
		c.v = clone(v)
	}
	f.calls = append(f.calls, c)
	for i := range v {
		v[i] += f.add
	}
}

// pcgRandom is a seeded DPRandom for tests that need a real uniform
// source: PCG uniforms and N(0, (z·s)²) noise, not rounded or snapped.
type pcgRandom struct{ r *rand.Rand }

func newPCGRandom(seed uint64) pcgRandom {
	return pcgRandom{rand.New(rand.NewPCG(seed, 0x64702d74657374))}
}

func (p pcgRandom) Float64() float64 { return p.r.Float64() }

func (p pcgRandom) Perturb32(v []float32, sensitivity, z float64) {
	for i := range v {
		v[i] += float32(p.r.NormFloat64() * sensitivity * z)
	}
}

// dpArchCases are the architectures of the brute-force check beside the
// layer cases of gradCases: the MLP, the CNN at small width with and
// without a dense hidden layer (the deep-small layout), ConvNet-2 itself
// on small inputs, and the GroupNorm ResNet at small width and depth.
var dpArchCases = []gradCase{
	{name: "mlp", cfg: &Config{Arch: MLP, Input: Shape{3, 3, 2}, Classes: 4, Hidden: []int{7, 5}}},                        // 0
	{name: "cnn-deep-small-layout", cfg: &Config{Arch: CNN, Input: Shape{12, 12, 1}, Classes: 3, Width: 2}},               // 1
	{name: "cnn-hidden", cfg: &Config{Arch: CNN, Input: Shape{8, 8, 2}, Classes: 3, Width: 4, Hidden: []int{16}}},         // 2
	{name: "convnet2", cfg: &Config{Arch: ConvNet2, Input: Shape{8, 8, 1}, Classes: 5}},                                   // 3
	{name: "resnet", cfg: &Config{Arch: ResNet, Input: Shape{8, 8, 3}, Classes: 3, Width: 4, Depth: 1, Groups: 2}},        // 4
	{name: "resnet-depth2", cfg: &Config{Arch: ResNet, Input: Shape{6, 6, 1}, Classes: 2, Width: 2, Depth: 2, Groups: 1}}, // 5
}

// dpBatch returns a random batch of b examples for n, weights in [0.5,
// 1.5) except the last, which is 0 (its gradient vanishes).
func dpBatch(n *Network, rng *rand.Rand, b int) (x []float32, labels []int, weights []float32) {
	x = randomInput(rng, b*n.InputSize())
	labels = make([]int, b)
	weights = make([]float32, b)
	for s := range labels {
		labels[s] = rng.IntN(n.Config().Classes)
		weights[s] = float32(0.5 + rng.Float64())
	}
	weights[b-1] = 0
	return x, labels, weights
}

// bruteForceGrads returns each example's gradient of w_i·CE_i, from a
// plain backward pass of the example alone.
func bruteForceGrads(n *Network, x []float32, labels []int, weights []float32) [][]float32 {
	k := n.Config().Classes
	dl := make([]float32, k)
	var gs [][]float32
	for i := range labels {
		logits := n.Forward(x[i*n.InputSize():], 1)
		SoftmaxCrossEntropy(logits, k, labels[i:i+1], weights[i:i+1], dl)
		n.Backward(dl)
		gs = append(gs, clone(n.Grad()))
	}
	return gs
}

func l2(v []float32) float64 { return math.Sqrt(sumSquares(v)) }

// TestDPClippedSumMatchesBruteForce checks the per-example clipping of
// every layer type and architecture, with each way a convolution can
// compute it (kept per-example gradients; some kept, as the budget
// allows; not kept, with the explicit norm; not kept, with the Gram
// identity), after a pass on other examples: the clipped sum must equal
// Σ_i min(1, C/‖g_i‖)·g_i of the per-example gradients computed one
// example at a time, with C between the norms so that some examples are
// clipped and some (the zero-weight one among them) are not.
func TestDPClippedSumMatchesBruteForce(t *testing.T) {
	policies := []struct {
		name       string
		storeBytes int
		gram       gramPolicy
	}{
		{"stored", convStoreBytes, gramAuto},
		{"partly-stored", 4 << 10, gramAuto}, // the layers of up to 200 parameters first in backward order
		{"explicit-norm", 0, gramNever},
		{"gram-norm", 0, gramAlways},
	}
	cases := append(slices.Clone(gradCases), dpArchCases...)
	for i, c := range cases {
		if c.cfg != nil && c.cfg.Arch == TopoNN {
			// Its samples' inputs hold the batch's descriptor, so an
			// example alone is another input: TopoNN refuses DP
			// (TestTopoNNTrains).
			continue
		}
		for _, pol := range policies {
			t.Run(fmt.Sprintf("%d-%s/%s", i, c.name, pol.name), func(t *testing.T) {
				n := c.build(t)
				n.Init(uint64(i + 1))
				rng := rand.New(rand.NewPCG(uint64(i), 17))
				for j := range n.Params() {
					n.Params()[j] += float32(0.02 * rng.NormFloat64())
				}
				const batch = 5
				x, labels, weights := dpBatch(n, rng, batch)
				gs := bruteForceGrads(n, x, labels, weights)
				norms := make([]float64, batch)
				for s, g := range gs {
					norms[s] = l2(g)
				}
				sorted := slices.Clone(norms)
				slices.Sort(sorted)
				clip := (sorted[1] + sorted[2]) / 2
				want := make([]float64, n.NumParams())
				var scale float64 // Σ_i ‖c_i·g_i‖, the size the rounding scales with
				for s, g := range gs {
					f := math.Min(1, clip/norms[s])
					scale += f * norms[s]
					for j, v := range g {
						want[j] += f * float64(v)
					}
				}
				p := dpClip{storeBytes: pol.storeBytes, gram: pol.gram}
				dl := make([]float32, batch*n.Config().Classes)
				// A first pass on 3 other examples: the checked pass reuses
				// its records and grows their buffers.
				x3, l3, w3 := dpBatch(n, rng, 3)
				p.clippedSum(n, x3, l3, w3, dl, clip)
				p.clippedSum(n, x, labels, weights, dl, clip)
				for s := range batch {
					if got := math.Sqrt(p.sq[s]); math.Abs(got-norms[s]) > dpTol*norms[s]+1e-12 {
						t.Errorf("example %d: norm %.7g, brute force %.7g", s, got, norms[s])
					}
				}
				var diff float64
				for j, v := range n.Grad() {
					diff += (float64(v) - want[j]) * (float64(v) - want[j])
				}
				if math.Sqrt(diff) > dpTol*scale {
					t.Errorf("clipped sum off by %.3g in L2 norm, terms of total norm %.3g", math.Sqrt(diff), scale)
				}
				if norms[batch-1] != 0 || !(sorted[1] > 0) {
					t.Errorf("norms %v: want the zero-weight example's 0 and the others positive", norms)
				}
			})
		}
	}
}

// TestDPUseGram checks that the automatic choice takes the Gram identity
// exactly where it needs fewer operations: a 3×3 convolution of 128
// channels on a 4×4 map (ResNet's last stage at 32×32 inputs: 16·(1152 +
// 128) < 1152·128) and not ConvNet-2's second convolution (196·(800 + 64)
// > 800·64).
func TestDPUseGram(t *testing.T) {
	for i, c := range []struct {
		conv *conv
		in   Shape
		want bool
	}{
		{&conv{k: 3, stride: 1, pad: 1, outC: 128}, Shape{4, 4, 128}, true},  // 0
		{&conv{k: 5, stride: 1, pad: 2, outC: 64}, Shape{14, 14, 32}, false}, // 1
	} {
		c.conv.setup(c.in)
		if got := c.conv.useGram(gramAuto); got != c.want {
			t.Errorf("case %d: Gram %v, want %v", i, got, c.want)
		}
	}
}

// TestDPNoiseOncePerStep trains softmax regression by DP-SGD with a fake
// stream and checks that each step calls Perturb32 exactly once, on the
// whole slab, with sensitivity C and multiplier z, on the clipped sum of
// that step's Poisson sample, and that the step divides the noisy sum by
// the expected sample size q·N = 4, not the realised size.
func TestDPNoiseOncePerStep(t *testing.T) {
	cfg := Config{Arch: MLP, Input: Shape{1, 1, 3}, Classes: 2, Hidden: []int{}}
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n.Init(3)
	rng := rand.New(rand.NewPCG(8, 8))
	const N = 10
	d := Data{N: N, X: randomInput(rng, N*3), Labels: make([]int, N)}
	for s := range d.Labels {
		d.Labels[s] = s % 2
	}
	// q = 4/10: the draws include examples 0, 2 and 7 in the first step
	// (3, not 4), and every draw cycles every 10, so every step does.
	uniform := []float64{0.1, 0.9, 0.3, 0.5, 0.45, 0.95, 0.7, 0.0, 0.4, 0.99}
	fr := &fakeRandom{uniform: uniform, add: 0.25, keep: true}
	const clip, z, lr = 0.3, 1.7, 0.5
	tc := TrainConfig{Optimizer: SGD, LR: lr, Epochs: 2, BatchSize: 4, DP: &DPConfig{Clip: clip, NoiseMultiplier: z, Random: fr}}
	start := clone(n.Params())
	// The reference for the first step: the clipped sum of examples 0, 2
	// and 7 by brute force.
	sample := []int{0, 2, 7}
	ref, _ := New(cfg)
	copy(ref.Params(), start)
	sum := make([]float64, n.NumParams())
	for _, s := range sample {
		g := bruteForceGrads(ref, d.X[s*3:(s+1)*3], d.Labels[s:s+1], []float32{1})[0]
		f := math.Min(1, clip/l2(g))
		for j, v := range g {
			sum[j] += f * float64(v)
		}
	}
	res, err := Train(n, d, tc, Terms{})
	if err != nil {
		t.Fatal(err)
	}
	// 2 epochs of ⌈10/4⌉ = 3 steps, 10 draws each.
	if res.Steps != 6 || len(fr.calls) != 6 || fr.draws != 60 {
		t.Fatalf("%d steps, %d Perturb32 calls, %d draws; want 6, 6, 60", res.Steps, len(fr.calls), fr.draws)
	}
	for i, c := range fr.calls {
		if c.n != n.NumParams() || c.sensitivity != clip || c.z != z {
			t.Errorf("call %d: %d values, sensitivity %v, z %v; want %d, %v, %v", i, c.n, c.sensitivity, c.z, n.NumParams(), clip, z)
		}
	}
	for j, v := range fr.calls[0].v {
		if !near(float64(v), sum[j], 1e-5) {
			t.Fatalf("first step: parameter %d's clipped sum %v, brute force %v", j, v, sum[j])
		}
	}
	// Replay the six steps from the recorded sums: θ ← θ − η(v + 0.25)/4.
	want := make([]float64, n.NumParams())
	for j := range want {
		want[j] = float64(start[j])
		for _, c := range fr.calls {
			want[j] -= lr * (float64(c.v[j]) + 0.25) / 4
		}
	}
	for j, v := range n.Params() {
		if !near(float64(v), want[j], 1e-5) {
			t.Errorf("parameter %d is %v, want %v (dividing by the expected sample size 4)", j, v, want[j])
		}
	}
}

// TestDPPoissonSampling counts the samples eachPoissonBatch draws from a
// real uniform source (PCG): over 2,000 steps at q = 10/50 the mean
// sample size must be q·N = 10 (standard error √(50·0.2·0.8/2000) ≈
// 0.063; tolerance 0.4) and each example's inclusion rate q (standard
// error 0.009; tolerance 0.05), with one draw per example per step and
// ⌈N/BatchSize⌉ steps per epoch, the sample in example order, and MeanLoss
// the mean of the last epoch's sampled examples' losses. (An empty sample,
// of probability 0.8⁵⁰ ≈ 1.4e-5 here, is TestDPDataIndependentTerms's.)
func TestDPPoissonSampling(t *testing.T) {
	n, err := New(Config{Arch: MLP, Input: Shape{1, 1, 1}, Classes: 2, Hidden: []int{}})
	if err != nil {
		t.Fatal(err)
	}
	const N, epochs = 50, 400
	d := Data{N: N, X: make([]float32, N), Labels: make([]int, N)}
	for s := range d.X {
		d.X[s] = float32(s) // identifies the example
	}
	counting := &countingRandom{pcgRandom: newPCGRandom(1)}
	cfg := TrainConfig{Optimizer: SGD, LR: 0.1, Epochs: epochs, BatchSize: 10, DP: &DPConfig{Clip: 1, Random: counting}}
	seen := make([]int, N)
	total, step, lastCount := 0, 0, 0
	var lastSum float64 // the last epoch's summed per-example losses
	res, err := eachPoissonBatch(n, d, cfg, func(x []float32, labels []int, _ []float32) float64 {
		total += len(labels)
		if step%5 == 0 {
			lastSum, lastCount = 0, 0
		}
		step++
		prev := -1
		for _, v := range x {
			s := int(v)
			if s <= prev {
				t.Fatalf("sample not in example order: %v", x)
			}
			prev = s
			seen[s]++
		}
		// A fake loss: the mean of the sampled examples' indices.
		var l float64
		for _, v := range x {
			l += float64(v)
		}
		if len(x) > 0 {
			l /= float64(len(x))
		}
		lastSum += l * float64(len(x))
		lastCount += len(x)
		return l
	})
	if err != nil {
		t.Fatal(err)
	}
	steps := epochs * 5
	if res.Steps != steps || counting.draws != steps*N {
		t.Fatalf("%d steps, %d draws; want %d, %d", res.Steps, counting.draws, steps, steps*N)
	}
	if mean := float64(total) / float64(steps); math.Abs(mean-10) > 0.4 {
		t.Errorf("mean sample size %.3f, want q·N = 10", mean)
	}
	for s, c := range seen {
		if rate := float64(c) / float64(steps); math.Abs(rate-0.2) > 0.05 {
			t.Errorf("example %d sampled at rate %.3f, want 0.2", s, rate)
		}
	}
	if want := lastSum / float64(lastCount); !near(res.MeanLoss, want, 1e-12) {
		t.Errorf("mean loss %v: want the last epoch's mean per-example loss %v", res.MeanLoss, want)
	}
}

type countingRandom struct {
	pcgRandom
	draws int
}

func (c *countingRandom) Float64() float64 { c.draws++; return c.pcgRandom.Float64() }

// TestDPDataIndependentTerms: with every draw above q the Poisson samples
// are empty, so each step's gradient is the noise alone (the fake adds a
// to every value of the zero sum) divided by the expected sample size,
// plus the data-independent terms, which are neither clipped, noised nor
// divided: θ ← θ − η(a/E + wd·θ + μ(θ − θ_g) + corr) per element for
// plain SGD (E = min(BatchSize, N) = 4, four steps: 2 epochs of ⌈6/4⌉).
// The reference runs the same recurrence in float64.
func TestDPDataIndependentTerms(t *testing.T) {
	cfg := Config{Arch: MLP, Input: Shape{1, 1, 2}, Classes: 3, Hidden: []int{4}}
	rng := rand.New(rand.NewPCG(5, 5))
	d := Data{N: 6, X: randomInput(rng, 12), Labels: []int{0, 1, 2, 0, 1, 2}}
	n, _ := New(cfg)
	n.Init(2)
	start := clone(n.Params())
	np := n.NumParams()
	center := make([]float32, np)
	corr := make([]float32, np)
	for j := range center {
		center[j] = start[j] + 0.1*float32(j%5-2)
		corr[j] = 0.01 * float32(j%3-1)
	}
	const a, lr, E = 0.3, 0.1, 4
	for i, c := range []struct {
		wd    float64
		terms Terms
	}{
		{},        // 0: noise alone
		{wd: 0.5}, // 1: weight decay
		{terms: Terms{ProxMu: 2, ProxCenter: center}}, // 2: FedProx's (and pFedMe's) proximal term
		{terms: Terms{Correction: corr}},              // 3: SCAFFOLD's correction
	} {
		copy(n.Params(), start)
		fr := &fakeRandom{uniform: []float64{0.99}, add: a}
		tc := TrainConfig{Optimizer: SGD, LR: lr, WeightDecay: c.wd, Epochs: 2, BatchSize: 4, DP: &DPConfig{Clip: 1, NoiseMultiplier: 1, Random: fr}}
		res, err := Train(n, d, tc, c.terms)
		if err != nil {
			t.Fatal(err)
		}
		if res.Steps != 4 || len(fr.calls) != 4 || res.MeanLoss != 0 {
			t.Errorf("case %d: %d steps, %d noise calls, mean loss %v; want 4, 4, 0", i, res.Steps, len(fr.calls), res.MeanLoss)
		}
		for j, got := range n.Params() {
			th := float64(start[j])
			for range 4 {
				g := a/E + c.wd*th
				if c.terms.ProxCenter != nil {
					g += c.terms.ProxMu * (th - float64(center[j]))
				}
				if c.terms.Correction != nil {
					g += float64(corr[j])
				}
				th -= lr * g
			}
			if !near(float64(got), th, 1e-5) {
				t.Fatalf("case %d: parameter %d is %v, want %v", i, j, got, th)
			}
		}
	}
	// The same through UpdateSite: FedProx with empty samples moves θ
	// only by the prox term and the noise.
	sc := SiteConfig{Train: TrainConfig{Optimizer: SGD, LR: lr, Epochs: 2, BatchSize: 4}, ProxMu: 2}
	fr := &fakeRandom{uniform: []float64{0.99}, add: a}
	sc.Train.DP = &DPConfig{Clip: 1, NoiseMultiplier: 1, Random: fr}
	out, err := UpdateSite(n, SiteInput{Method: learn.FedProx, Round: 2, Train: d, Pushed: start, Config: sc})
	if err != nil {
		t.Fatal(err)
	}
	for j, got := range out.Params {
		th := float64(start[j])
		for range 4 {
			th -= lr * (a/E + 2*(th-float64(start[j])))
		}
		if !near(float64(got), th, 1e-5) {
			t.Fatalf("FedProx: parameter %d is %v, want %v", j, got, th)
		}
	}
}

// TestDPFullBatchEqualsPlain: with q = 1 (BatchSize ≥ N) every example is
// in every sample, and with no noise and a clip no gradient reaches,
// DP-SGD is full-batch gradient descent: the sum of the per-example
// gradients divided by N, the plain trainer's one minibatch of all N.
func TestDPFullBatchEqualsPlain(t *testing.T) {
	for i, c := range []struct {
		cfg Config
		tc  TrainConfig
	}{
		{Config{Arch: MLP, Input: Shape{4, 4, 1}, Classes: 2, Hidden: []int{6}}, TrainConfig{Optimizer: SGD, LR: 0.1, Momentum: 0.9, WeightDecay: 1e-3}}, // 0
		{Config{Arch: CNN, Input: Shape{8, 8, 1}, Classes: 2, Width: 2}, TrainConfig{Optimizer: Adam, LR: 1e-3}},                                         // 1
		{Config{Arch: ResNet, Input: Shape{6, 6, 1}, Classes: 2, Width: 2, Depth: 1, Groups: 1}, TrainConfig{Optimizer: SGD, LR: 0.05, Momentum: 0.5}},   // 2
	} {
		d := stripes(uint64(i), 12, c.cfg.Input.H, c.cfg.Input.W)
		d.Weights = make([]float32, d.N)
		for s := range d.Weights {
			d.Weights[s] = 0.5 + float32(s%3)/2
		}
		plain, _ := New(c.cfg)
		dp, _ := New(c.cfg)
		plain.Init(4)
		dp.Init(4)
		tc := c.tc
		tc.Epochs, tc.BatchSize = 3, 100 // ≥ N: one batch, q = 1
		if _, err := Train(plain, d, tc, Terms{}); err != nil {
			t.Fatal(err)
		}
		fr := &fakeRandom{uniform: []float64{0.999}}
		tc.DP = &DPConfig{Clip: 1e30, Random: fr}
		res, err := Train(dp, d, tc, Terms{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Steps != 3 || fr.draws != 3*d.N {
			t.Errorf("case %d: %d steps, %d draws; want 3, %d", i, res.Steps, fr.draws, 3*d.N)
		}
		var diff, size float64
		for j, v := range dp.Params() {
			w := plain.Params()[j]
			diff += float64(v-w) * float64(v-w)
			size += float64(w) * float64(w)
		}
		if math.Sqrt(diff) > 1e-5*math.Sqrt(size) {
			t.Errorf("case %d (%s): DP-SGD at q = 1, z = 0 differs from full-batch training by %.3g (parameters of norm %.3g)", i, c.cfg.Arch, math.Sqrt(diff), math.Sqrt(size))
		}
	}
}

// TestDPDeterministicAcrossThreads trains by DP-SGD with the same stream on
// GOMAXPROCS 1 and 2 (and 3 workers) and requires the same bits, for every
// way a convolution clips.
func TestDPDeterministicAcrossThreads(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for i, cfg := range []Config{
		{Arch: CNN, Input: Shape{12, 12, 1}, Classes: 3, Width: 4, Hidden: []int{8}},     // 0
		{Arch: ResNet, Input: Shape{8, 8, 1}, Classes: 2, Width: 4, Depth: 1, Groups: 2}, // 1
		{Arch: MLP, Input: Shape{6, 6, 1}, Classes: 2, Hidden: []int{16}},                // 2
	} {
		d := stripes(uint64(i), 40, cfg.Input.H, cfg.Input.W)
		for _, pol := range []struct {
			storeBytes int
			gram       gramPolicy
		}{{convStoreBytes, gramAuto}, {0, gramNever}, {0, gramAlways}} {
			var first []float32
			for _, run := range []struct{ procs, workers int }{{1, 0}, {2, 0}, {2, 3}} {
				runtime.GOMAXPROCS(run.procs)
				n, _ := New(cfg)
				n.SetWorkers(run.workers)
				n.Init(7)
				tc := TrainConfig{Optimizer: SGD, LR: 0.05, Momentum: 0.9, Epochs: 2, BatchSize: 12,
					DP: &DPConfig{Clip: 0.5, NoiseMultiplier: 1.1, Random: newPCGRandom(uint64(i))}}
				tr, err := NewTrainer(n, tc, Terms{})
				if err != nil {
					t.Fatal(err)
				}
				tr.t.dp.clip.storeBytes, tr.t.dp.clip.gram = pol.storeBytes, pol.gram
				tr.t.expectBatch(tc.BatchSize, d.N)
				if _, err := eachBatch(n, d, tc, tr.t.step); err != nil {
					t.Fatal(err)
				}
				if first == nil {
					first = clone(n.Params())
					continue
				}
				for j, v := range n.Params() {
					if math.Float32bits(v) != math.Float32bits(first[j]) {
						t.Fatalf("case %d (%s, store %d, gram %d): GOMAXPROCS %d, workers %d: parameter %d is %v, with one thread %v",
							i, cfg.Arch, pol.storeBytes, pol.gram, run.procs, run.workers, j, v, first[j])
					}
				}
			}
		}
	}
}

// TestUpdateSiteDP runs every method's site update under DP-SGD: each
// takes DPUse's number of steps with one noisy release each, except
// pFedMe's K = 3 per Poisson sample (one sample's N draws, K releases).
func TestUpdateSiteDP(t *testing.T) {
	cfg := Config{Arch: CNN, Input: Shape{8, 8, 1}, Classes: 2, Width: 2}
	n, _ := New(cfg)
	d := stripes(4, 30, 8, 8)
	n.Init(1)
	pushed := clone(n.Params())
	sc := SiteConfig{Train: TrainConfig{Optimizer: SGD, LR: 0.05, Momentum: 0.9, Epochs: 2, BatchSize: 8}, ProxMu: 0.1,
		PFedMeLambda: 15, PFedMeLR: 0.01, PFedMeSteps: 3, PFedMePersonalLR: 0.02}
	for _, m := range learn.Methods {
		fr := &fakeRandom{uniform: []float64{0.1, 0.5, 0.9}, add: 1e-3}
		c := sc
		c.Train.DP = &DPConfig{Clip: 1, NoiseMultiplier: 1, Random: fr}
		out, err := UpdateSite(n, SiteInput{Method: m, Round: 2, Train: d, Pushed: pushed, Config: c})
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		q, steps, z := DPUse(m, c, d.N)
		// ⌈30/8⌉ = 4 steps per epoch, 2 epochs.
		wantCalls, wantZ := steps, 1.0
		if m == learn.PFedMe {
			wantCalls, wantZ = 3*steps, 1/math.Sqrt(3)
		}
		if q != 8.0/30 || steps != 8 || math.Abs(z-wantZ) > 1e-15 {
			t.Errorf("%s: DPUse q %v, steps %d, z %v; want 8/30, 8, %v", m, q, steps, z, wantZ)
		}
		if out.Steps != steps || len(fr.calls) != wantCalls || fr.draws != steps*d.N {
			t.Errorf("%s: %d steps, %d noisy releases, %d draws; want %d, %d, %d", m, out.Steps, len(fr.calls), fr.draws, steps, wantCalls, steps*d.N)
		}
		for j, v := range out.Params {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("%s: parameter %d is %v", m, j, v)
			}
		}
		if m == learn.SCAFFOLD && (out.Control == nil || out.State.Control == nil) {
			t.Errorf("SCAFFOLD: no control variate")
		}
	}
}

func TestDPConfigValidate(t *testing.T) {
	fr := &fakeRandom{}
	good := DPConfig{Clip: 1, NoiseMultiplier: 1.1, Random: fr}
	if err := good.Validate(); err != nil {
		t.Fatalf("good config: %v", err)
	}
	for i, c := range []struct {
		mod   func(*DPConfig)
		field string
	}{
		{func(c *DPConfig) { c.Clip = 0 }, "DP.Clip"},                                // 0
		{func(c *DPConfig) { c.Clip = -1 }, "DP.Clip"},                               // 1
		{func(c *DPConfig) { c.Clip = math.NaN() }, "DP.Clip"},                       // 2
		{func(c *DPConfig) { c.Clip = math.Inf(1) }, "DP.Clip"},                      // 3
		{func(c *DPConfig) { c.NoiseMultiplier = -0.1 }, "DP.NoiseMultiplier"},       // 4
		{func(c *DPConfig) { c.NoiseMultiplier = math.NaN() }, "DP.NoiseMultiplier"}, // 5
		{func(c *DPConfig) { c.Random = nil }, "DP.Random"},                          // 6
	} {
		dc := good
		c.mod(&dc)
		err := dc.Validate()
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("case %d: error %v, want one naming %s", i, err, c.field)
		}
		// The trainer and the site update refuse it too, naming the field.
		n, _ := New(Config{Arch: MLP, Input: Shape{1, 1, 2}, Classes: 2, Hidden: []int{}})
		tc := DefaultTrainConfig()
		tc.DP = &dc
		d := Data{N: 2, X: []float32{1, 2, 3, 4}, Labels: []int{0, 1}}
		if _, err := Train(n, d, tc, Terms{}); err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("case %d: Train error %v", i, err)
		}
		if _, err := UpdateSite(n, SiteInput{Method: learn.PFedMe, Train: d, Config: SiteConfig{Train: tc, PFedMeSteps: 1, PFedMePersonalLR: 0.1}}); err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("case %d: UpdateSite error %v", i, err)
		}
	}
	// Sample weights are allowed and reach the per-example losses: zero
	// weights on every example leave only the noise.
	n, _ := New(Config{Arch: MLP, Input: Shape{1, 1, 2}, Classes: 2, Hidden: []int{}})
	tc := TrainConfig{Optimizer: SGD, LR: 1, Epochs: 1, BatchSize: 2, DP: &good}
	d := Data{N: 2, X: []float32{1, 2, 3, 4}, Labels: []int{0, 1}, Weights: []float32{0, 0}}
	if _, err := Train(n, d, tc, Terms{}); err != nil {
		t.Fatalf("weighted data: %v", err)
	}
	for j, v := range n.Params() {
		if v != 0 {
			t.Errorf("parameter %d moved to %v with zero weights and no noise", j, v)
		}
	}
}

// TestDPUse checks the accounting figures against hand counts.
func TestDPUse(t *testing.T) {
	dp := &DPConfig{Clip: 1, NoiseMultiplier: 1.2, Random: &fakeRandom{}}
	site := func(epochs, batch, k int, dp *DPConfig) SiteConfig {
		return SiteConfig{Train: TrainConfig{Optimizer: SGD, LR: 0.1, Epochs: epochs, BatchSize: batch, DP: dp}, PFedMeSteps: k}
	}
	for i, c := range []struct {
		m     learn.Method
		cfg   SiteConfig
		n     int
		q     float64
		steps int
		z     float64
	}{
		{learn.FedAvg, site(1, 64, 5, dp), 600, 64.0 / 600, 10, 1.2},   // 0: ⌈600/64⌉ = 10
		{learn.SCAFFOLD, site(3, 50, 5, dp), 600, 50.0 / 600, 36, 1.2}, // 1: 3·12
		{learn.PFedMe, site(2, 64, 4, dp), 600, 64.0 / 600, 20, 0.6},   // 2: z/√4
		{learn.FedProx, site(2, 64, 5, dp), 40, 1, 2, 1.2},             // 3: BatchSize ≥ N: q = 1, one step per epoch
		{learn.LocalOnly, site(1, 64, 5, nil), 600, 64.0 / 600, 10, 0}, // 4: no DP: z = 0
		{learn.FedAvg, site(1, 64, 5, dp), 0, 0, 0, 0},                 // 5: no data
		{learn.PFedMe, site(1, 10, 1, dp), 25, 10.0 / 25, 3, 1.2},      // 6: K = 1
	} {
		q, steps, z := DPUse(c.m, c.cfg, c.n)
		if math.Abs(q-c.q) > 1e-15 || steps != c.steps || math.Abs(z-c.z) > 1e-15 {
			t.Errorf("case %d: q %v, steps %d, z %v; want %v, %d, %v", i, q, steps, z, c.q, c.steps, c.z)
		}
	}
}

// benchRandom is a fast stand-in DPRandom for the benchmarks: uniforms
// from ChaCha8 and normal noise from ChaCha8 streams, one per chunk of
// the slab keyed by the call count and the chunk, drawn on all cores, so
// that a DP step's time is the training's and not a serial noise loop's.
// It is not a secure mechanism (no snapping).
type benchRandom struct {
	r     *rand.Rand
	calls uint64
}

func newBenchRandom() *benchRandom {
	return &benchRandom{r: rand.New(rand.NewChaCha8([32]byte{'n', 'n'}))}
}

func (b *benchRandom) Float64() float64 { return b.r.Float64() }

func (b *benchRandom) Perturb32(v []float32, sensitivity, z float64) {
	b.calls++
	const chunk = 1 << 16
	sd := sensitivity * z
	parallel.Run(runtime.GOMAXPROCS(0), (len(v)+chunk-1)/chunk, func(c int) {
		var seed [32]byte
		binary.LittleEndian.PutUint64(seed[:], b.calls)
		binary.LittleEndian.PutUint64(seed[8:], uint64(c))
		r := rand.New(rand.NewChaCha8(seed))
		for j := c * chunk; j < min((c+1)*chunk, len(v)); j++ {
			v[j] += float32(r.NormFloat64() * sd)
		}
	})
}

// benchStepCases are the networks of BenchmarkPlainStep and
// BenchmarkDPStep: the deep-small CNN (conv 5×5×16 → pool → conv 5×5×32
// → pool → dense 10 on 28×28×1, 28,938 parameters) and ConvNet-2 with 62
// classes.
var benchStepCases = []struct {
	name string
	cfg  Config
}{
	{"cnn", Config{Arch: CNN, Input: Shape{28, 28, 1}, Classes: 10}},
	{"convnet2", Config{Arch: ConvNet2, Input: Shape{28, 28, 1}, Classes: 62}},
}

// silentRandom is a DPRandom whose Perturb32 adds nothing: a DP step
// with it costs the clipping alone.
type silentRandom struct{ *benchRandom }

func (silentRandom) Perturb32([]float32, float64, float64) {}

// benchStep times Trainer.Step at batch 64 (SGD with momentum), by DP-SGD
// (C = 1, z = 1, the batch taken as the Poisson sample) if dp is not nil.
func benchStep(b *testing.B, cfg Config, dp DPRandom) {
	n, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	n.Init(1)
	const batch = 64
	rng := rand.New(rand.NewPCG(1, 2))
	x := randomInput(rng, batch*n.InputSize())
	labels := make([]int, batch)
	for i := range labels {
		labels[i] = rng.IntN(cfg.Classes)
	}
	tc := TrainConfig{Optimizer: SGD, LR: 0.01, Momentum: 0.9, Epochs: 1, BatchSize: batch}
	if dp != nil {
		tc.DP = &DPConfig{Clip: 1, NoiseMultiplier: 1, Random: dp}
	}
	tr, err := NewTrainer(n, tc, Terms{})
	if err != nil {
		b.Fatal(err)
	}
	tr.Step(x, labels, nil)
	b.ResetTimer()
	for b.Loop() {
		tr.Step(x, labels, nil)
	}
}

// BenchmarkPlainStep is BenchmarkDPStep's baseline: one plain training
// step of the same networks at batch 64.
func BenchmarkPlainStep(b *testing.B) {
	for _, c := range benchStepCases {
		b.Run(c.name, func(b *testing.B) { benchStep(b, c.cfg, nil) })
	}
}

// BenchmarkDPStep times one DP-SGD step (per-example clipping, the noise
// of benchRandom, the division and the update) at batch 64, and, as
// NAME-noiseless, the same step with a Perturb32 that adds nothing (the
// clipping's cost without the noise generator's); compare with
// BenchmarkPlainStep in the same run.
func BenchmarkDPStep(b *testing.B) {
	for _, c := range benchStepCases {
		b.Run(c.name, func(b *testing.B) { benchStep(b, c.cfg, newBenchRandom()) })
		b.Run(c.name+"-noiseless", func(b *testing.B) { benchStep(b, c.cfg, silentRandom{newBenchRandom()}) })
	}
}

// BenchmarkDPNoise times benchRandom's noise alone on ConvNet-2's slab,
// the part of BenchmarkDPStep that a real mechanism replaces.
func BenchmarkDPNoise(b *testing.B) {
	v := make([]float32, 6603710)
	r := newBenchRandom()
	for b.Loop() {
		r.Perturb32(v, 1, 1)
	}
}
