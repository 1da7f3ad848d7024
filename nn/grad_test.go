package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// Gradient checks: every layer type sits inside a tiny network whose first
// layer has parameters, so that checking the gradient of every parameter
// (of a large network, a seeded sample of them) also checks each layer's
// input gradient.
// The reference is the float32 central difference
// (L(θ+h·e_j) − L(θ−h·e_j))/(2h) of the float64-accumulated loss. Its
// truncation error is O(h²) and its rounding error about 1e-7·|L|/h (≤ 5e-4
// here, |L| ≈ 1), so an analytic gradient passes if it is within gradRelTol
// of the difference quotient relative to their magnitude, plus gradAbsTol,
// for one of the steps gradSteps. The smaller step is there for the few
// probes whose ±1e-3 interval crosses a ReLU or max-pool kink of these tiny
// networks (seen on the width-2 ResNet: the quotient moves from −0.33 at
// h = 1e-3 to −0.355 at h ≤ 3e-4, the analytic value).
var gradSteps = []float32{1e-3, 3e-4}

const (
	gradRelTol = 1e-2
	gradAbsTol = 1e-3
	// gradProbes parameters, a seeded sample, are checked in a network of
	// more than gradAllBelow parameters; every parameter of a smaller one
	// (a sign error in one GroupNorm γ, say, is then found for sure rather
	// than by the sample's luck).
	gradProbes   = 60
	gradAllBelow = 4000
)

type gradCase struct {
	name    string
	in      Shape
	classes int
	layers  func() []layer
	cfg     *Config // a whole architecture instead of layers
}

var gradCases = []gradCase{
	{ // 0
		name: "dense+relu", in: Shape{1, 1, 5}, classes: 3,
		layers: func() []layer { return []layer{&dense{out: 4}, &relu{}, &dense{out: 3, last: true}} },
	},
	{ // 1: 3×3 'same' convolution with bias after a 1×1 convolution
		name: "conv3x3", in: Shape{5, 5, 2}, classes: 3,
		layers: func() []layer {
			return []layer{&conv{k: 1, stride: 1, outC: 3, bias: true}, &conv{k: 3, stride: 1, pad: 1, outC: 4, bias: true}, &dense{out: 3, last: true}}
		},
	},
	{ // 2: strided convolution without bias, edge handling on an even input
		name: "conv3x3-stride2", in: Shape{6, 6, 2}, classes: 3,
		layers: func() []layer {
			return []layer{&conv{k: 1, stride: 1, outC: 3, bias: true}, &conv{k: 3, stride: 2, pad: 1, outC: 4}, &dense{out: 3, last: true}}
		},
	},
	{ // 3: ConvNet-2's 5×5 'same' convolution
		name: "conv5x5", in: Shape{6, 5, 1}, classes: 2,
		layers: func() []layer {
			return []layer{&conv{k: 1, stride: 1, outC: 2, bias: true}, &conv{k: 5, stride: 1, pad: 2, outC: 3, bias: true}, &dense{out: 2, last: true}}
		},
	},
	{ // 4: max-pooling on an odd input (last row and column dropped)
		name: "maxpool", in: Shape{5, 5, 2}, classes: 3,
		layers: func() []layer {
			return []layer{&conv{k: 1, stride: 1, outC: 3, bias: true}, &maxPool{}, &dense{out: 3, last: true}}
		},
	},
	{ // 5
		name: "groupnorm", in: Shape{3, 3, 4}, classes: 3,
		layers: func() []layer {
			return []layer{&conv{k: 1, stride: 1, outC: 4, bias: true}, &groupNorm{groups: 2}, &dense{out: 3, last: true}}
		},
	},
	{ // 6
		name: "block-identity", in: Shape{4, 4, 2}, classes: 3,
		layers: func() []layer {
			return []layer{&conv{k: 1, stride: 1, outC: 4, bias: true}, newBasicBlock(4, 1, 2), &dense{out: 3, last: true}}
		},
	},
	{ // 7
		name: "block-projection+avgpool", in: Shape{5, 5, 2}, classes: 3,
		layers: func() []layer {
			return []layer{&conv{k: 1, stride: 1, outC: 4, bias: true}, newBasicBlock(8, 2, 2), &globalAvgPool{}, &dense{out: 3, last: true}}
		},
	},
	{name: "mlp", cfg: &Config{Arch: MLP, Input: Shape{2, 3, 1}, Classes: 4, Hidden: []int{7, 5}}},                        // 8
	{name: "convnet2", cfg: &Config{Arch: ConvNet2, Input: Shape{8, 8, 1}, Classes: 5}},                                   // 9
	{name: "resnet", cfg: &Config{Arch: ResNet, Input: Shape{8, 8, 3}, Classes: 3, Width: 4, Depth: 1, Groups: 2}},        // 10
	{name: "resnet-depth2", cfg: &Config{Arch: ResNet, Input: Shape{6, 6, 1}, Classes: 2, Width: 2, Depth: 2, Groups: 1}}, // 11
	{ // 12: a convolution whose im2col columns exceed colsBytes per sample,
		// so that forward and backward run in chunks of one sample
		name: "conv5x5-chunked", in: Shape{28, 28, 2}, classes: 2,
		layers: func() []layer {
			return []layer{&conv{k: 1, stride: 1, outC: 64, bias: true}, &conv{k: 5, stride: 1, pad: 2, outC: 2, bias: true}, &dense{out: 2, last: true}}
		},
	},
	{name: "cnn-hidden", cfg: &Config{Arch: CNN, Input: Shape{8, 8, 1}, Classes: 3, Width: 2, Hidden: []int{5}}}, // 13
	{ // 14: a 1×1 convolution (the pointwise product, no im2col) that is
		// not the first layer, so that its input gradient is checked too
		name: "pointwise-inner", in: Shape{4, 4, 2}, classes: 3,
		layers: func() []layer {
			return []layer{&conv{k: 3, stride: 1, pad: 1, outC: 3, bias: true}, &conv{k: 1, stride: 1, outC: 4, bias: true}, &dense{out: 3, last: true}}
		},
	},
	// 15: TopoNN: the batch's descriptor is an input of the dense layers,
	// which perturbing their parameters does not move.
	{name: "toponn", cfg: &Config{Arch: TopoNN, Input: Shape{2, 3, 1}, Classes: 4, Hidden: []int{7, 5}}},
}

func (c gradCase) build(t *testing.T) *Network {
	t.Helper()
	if c.cfg != nil {
		n, err := New(*c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	n, err := assemble(Config{Input: c.in, Classes: c.classes}, c.layers())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func randomInput(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

func TestGradients(t *testing.T) {
	for i, c := range gradCases {
		t.Run(fmt.Sprintf("%d-%s", i, c.name), func(t *testing.T) {
			n := c.build(t)
			n.Init(uint64(i + 1))
			rng := rand.New(rand.NewPCG(uint64(i), 99))
			// Perturb the GroupNorm scales and shifts away from 1 and 0 so
			// that their gradients are not trivially symmetric.
			for j := range n.Params() {
				n.Params()[j] += float32(0.02 * rng.NormFloat64())
			}
			const batch = 3
			k := n.Config().Classes
			x := randomInput(rng, batch*n.InputSize())
			labels := make([]int, batch)
			weights := make([]float32, batch)
			for s := range labels {
				labels[s] = rng.IntN(k)
				weights[s] = float32(0.5 + rng.Float64())
			}
			loss := func() float64 {
				return SoftmaxCrossEntropy(n.Forward(x, batch), k, labels, weights, nil)
			}
			dLogits := make([]float32, batch*k)
			SoftmaxCrossEntropy(n.Forward(x, batch), k, labels, weights, dLogits)
			n.Backward(dLogits)
			grad := append([]float32(nil), n.Grad()...)
			probes := rng.Perm(n.NumParams())
			if len(probes) > gradAllBelow {
				probes = probes[:gradProbes]
			}
			p := n.Params()
			large := 0
			for _, j := range probes {
				if math.Abs(float64(grad[j])) > 10*gradAbsTol {
					large++
				}
				old := p[j]
				ana := float64(grad[j])
				var nums []float64
				for _, h := range gradSteps {
					p[j] = old + h
					up := loss()
					p[j] = old - h
					down := loss()
					p[j] = old
					num := (up - down) / (2 * float64(h))
					nums = append(nums, num)
					if math.Abs(num-ana) <= gradRelTol*math.Max(math.Abs(num), math.Abs(ana))+gradAbsTol {
						nums = nil
						break
					}
				}
				if nums != nil {
					t.Errorf("parameter %d: analytic %.6g, central differences %.6g", j, ana, nums)
				}
			}
			if large < len(probes)/4 {
				t.Errorf("only %d of %d probed gradients exceed %g: the check would be vacuous", large, len(probes), 10*gradAbsTol)
			}
		})
	}
}

// TestConvChunked checks that the chunked test case above really chunks.
func TestConvChunked(t *testing.T) {
	c := gradCases[12].layers()[1].(*conv)
	c.setup(Shape{28, 28, 64}) // the output of the case's first layer
	if n := c.chunk(3); n != 1 {
		t.Errorf("chunk of %d samples, want 1", n)
	}
}
