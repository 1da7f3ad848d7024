package nn

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/tda"
)

// TestTopoNNForward: TopoNN's first layer gives every sample its own
// values followed by the 48 numbers tda.ComputeDescriptor gives for the
// batch's samples (a batch of 5 in R⁶), l2-normalised, the same for every
// sample; its
// backward passes the gradient of a sample's own part through. The
// default network is the appendix's: hidden [64, 32], (6 + 48)·64 + 64 +
// 64·32 + 32 + 32·10 + 10 = 5,930 parameters for 6 inputs and 10 classes.
func TestTopoNNForward(t *testing.T) {
	n, err := New(Config{Arch: TopoNN, Input: Shape{1, 6, 1}, Classes: 10})
	if err != nil {
		t.Fatal(err)
	}
	if h := n.Config().Hidden; len(h) != 2 || h[0] != 64 || h[1] != 32 || n.NumParams() != 5930 {
		t.Fatalf("hidden %v, %d parameters; want [64 32], 5930", h, n.NumParams())
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const batch = 5
	x := randomInput(rng, batch*6)
	n.Init(3)
	n.Forward(x, batch)
	rows := make([][]float64, batch)
	for s := range rows {
		rows[s] = make([]float64, 6)
		for j := range rows[s] {
			rows[s][j] = float64(x[s*6+j])
		}
	}
	want, err := tda.ComputeDescriptor(rows, tda.DescriptorOptions{Variant: tda.VariantExact})
	if err != nil {
		t.Fatal(err)
	}
	aug := n.acts[0]
	for s := range batch {
		row := aug[s*54 : (s+1)*54]
		for j := range 6 {
			if row[j] != x[s*6+j] {
				t.Fatalf("sample %d value %d: %v, want %v", s, j, row[j], x[s*6+j])
			}
		}
		for j, v := range tda.NormalizeDescriptor(want.Vector) {
			if row[6+j] != float32(v) {
				t.Fatalf("sample %d descriptor %d: %v, want %v", s, j, row[6+j], float32(v))
			}
		}
	}
	dy := randomInput(rng, batch*54)
	dx := make([]float32, batch*6)
	(&topoAugment{in: 6}).backward(env{}, nil, nil, dy, dx, batch)
	for s := range batch {
		for j := range 6 {
			if dx[s*6+j] != dy[s*54+j] {
				t.Fatalf("dx[%d][%d] = %v, want %v", s, j, dx[s*6+j], dy[s*54+j])
			}
		}
	}
}

// TestTopoNNTrains: a TopoNN trains like any network (64 samples of two
// well-separated classes in R⁴: accuracy ≥ 0.9 after 20 epochs; measured
// 1) and refuses DP-SGD, whose per-example clipping its batch descriptor
// would defeat.
func TestTopoNNTrains(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 5))
	const n = 64
	d := Data{N: n, X: make([]float32, n*4), Labels: make([]int, n)}
	for s := range n {
		c := s % 2
		d.Labels[s] = c
		for j := range 4 {
			d.X[s*4+j] = float32(rng.NormFloat64()*0.3 + 2*float64(c))
		}
	}
	net, err := New(Config{Arch: TopoNN, Input: Shape{1, 4, 1}, Classes: 2, Hidden: []int{8}})
	if err != nil {
		t.Fatal(err)
	}
	net.Init(1)
	cfg := TrainConfig{Optimizer: SGD, Epochs: 20, BatchSize: 16, LR: 0.01, Momentum: 0.9, Seed: 2}
	first, err := Train(net, d, TrainConfig{Optimizer: SGD, Epochs: 1, BatchSize: 16, LR: 0.01, Momentum: 0.9, Seed: 2}, Terms{})
	if err != nil {
		t.Fatal(err)
	}
	last, err := Train(net, d, cfg, Terms{})
	if err != nil {
		t.Fatal(err)
	}
	acc, err := net.Accuracy(d)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("loss %.4f → %.4f, accuracy %.3f", first.MeanLoss, last.MeanLoss, acc)
	if !(last.MeanLoss < first.MeanLoss) || acc < 0.9 {
		t.Errorf("loss %v → %v, accuracy %v", first.MeanLoss, last.MeanLoss, acc)
	}
	cfg.DP = &DPConfig{Clip: 1, NoiseMultiplier: 1}
	if _, err := Train(net, d, cfg, Terms{}); err == nil || !strings.Contains(err.Error(), "toponn cannot train under DP") {
		t.Errorf("DP: %v", err)
	}
	if _, err := NewTrainer(net, cfg, Terms{}); err == nil {
		t.Error("NewTrainer under DP: no error")
	}
}
