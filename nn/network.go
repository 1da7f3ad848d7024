package nn

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
)

// Arch names a network architecture.
type Arch string

// The architectures New builds.
const (
	// MLP is a multilayer perceptron: dense layers of Config.Hidden widths
	// with ReLU, then a dense output layer.
	MLP Arch = "mlp"
	// ConvNet2 is LEAF's FEMNIST CNN (Caldas et al. 2018, "LEAF: A
	// Benchmark for Federated Settings"): conv 5×5×32 'same' + ReLU, 2×2
	// max-pool, conv 5×5×64 'same' + ReLU, 2×2 max-pool, dense 2048 + ReLU,
	// dense Classes. For 28×28×1 inputs and 62 classes it has 6,603,710
	// parameters. Each ReLU runs after its max-pool rather than before:
	// max and ReLU commute, so the function is the same, on a quarter of
	// the values.
	ConvNet2 Arch = "convnet2"
	// ResNet is ResNet-18's layout (He et al. 2016) scaled by Config.Width
	// and Config.Depth: a 3×3 stem convolution of Width channels, four
	// stages of Depth basic blocks with Width, 2·Width, 4·Width and 8·Width
	// channels (the first block of stages 2–4 has stride 2), global average
	// pooling and a dense output layer; Width 64 and Depth 2 is the
	// CIFAR variant of ResNet-18. Every normalisation is GroupNorm with
	// Config.Groups groups instead of BatchNorm: BatchNorm's running
	// statistics are estimates over one site's batches that federated
	// averaging cannot combine meaningfully (sites' feature distributions
	// differ), while GroupNorm normalises each sample on its own and has only
	// ordinary parameters, which average like any other.
	ResNet Arch = "resnet"
	// CNN is ConvNet-2's layout at a chosen size: conv 5×5×Width 'same' +
	// ReLU, 2×2 max-pool, conv 5×5×(2·Width) 'same' + ReLU, 2×2 max-pool,
	// then dense layers of Config.Hidden widths with ReLU (none when Hidden
	// is empty) and a dense output layer. Width 32 and Hidden [2048] is
	// ConvNet2; Width 16 and no hidden layer is the small CNN of the
	// Fashion-MNIST anchor (conv 5×5×16 → pool → conv 5×5×32 → pool →
	// dense 10; 28,938 parameters for 28×28×1 inputs and 10 classes).
	CNN Arch = "cnn"
	// TopoNN is the paper's Appendix D network: a multilayer perceptron
	// whose input is each sample followed by the pTopoFL descriptor of
	// the batch it is in (tda.ComputeDescriptor, 48 numbers, on at most
	// TopoBatchPoints of the batch's samples, l2-normalised: see
	// topoAugment), then dense layers of
	// Config.Hidden widths with ReLU (default [64, 32], the appendix's)
	// and a dense output layer. The descriptor is an input, not a
	// parameter: no gradient flows into it. Unlike the appendix's code,
	// the hidden layers have no BatchNorm (its running statistics do not
	// average across sites, the reason the ResNet here uses GroupNorm) and
	// no dropout (package nn has none), and the descriptor is the system's
	// 48 numbers with exact H1. The appendix's listing, run as printed
	// (PyTorch 1.13, 32 samples of 20 features), builds 46 numbers for a
	// first layer sized for 48 and its forward pass fails ("mat1 and mat2
	// shapes cannot be multiplied (32x66 and 68x64)"); its H1 is a
	// placeholder of zeros, its β0 is always 1, and it records each merge's
	// death on the surviving component, overwriting the last, so that 15 of
	// a batch's 31 H0 deaths are kept (seed 1). Its text says the
	// descriptor "augments intermediate representations, enabling training
	// with topological regularisation"; its code appends it to the input
	// and adds no regulariser: TopoNN follows the code.
	TopoNN Arch = "toponn"
)

// Archs lists every architecture in a fixed order.
var Archs = []Arch{MLP, ConvNet2, ResNet, CNN, TopoNN}

// Config describes a network. The zero values of Hidden, Width, Depth and
// Groups select the defaults documented on each field.
type Config struct {
	Arch Arch
	// Input is the shape of one sample, e.g. {28, 28, 1} for MNIST-like
	// images or {32, 32, 3} for CIFAR-10.
	Input Shape
	// Classes is the number of classes, at least 2.
	Classes int
	// Hidden lists the MLP's hidden widths (default [256]), TopoNN's
	// (default [64, 32]) or the CNN's dense hidden widths (default none).
	Hidden []int
	// Width is the ResNet's first-stage channel count (default 16;
	// ResNet-18 has 64), or the CNN's first convolution's (default 16).
	Width int
	// Depth is the number of basic blocks per ResNet stage (default 2, as
	// ResNet-18).
	Depth int
	// Groups is the number of GroupNorm groups; it must divide Width
	// (default 8, or Width if that is smaller).
	Groups int
}

// withDefaults returns c with its zero-valued optional fields filled in.
func (c Config) withDefaults() Config {
	if c.Arch == MLP && c.Hidden == nil {
		c.Hidden = []int{256}
	}
	if c.Arch == TopoNN && c.Hidden == nil {
		c.Hidden = []int{64, 32}
	}
	if c.Arch == CNN && c.Width == 0 {
		c.Width = 16
	}
	if c.Arch == ResNet {
		if c.Width == 0 {
			c.Width = 16
		}
		if c.Depth == 0 {
			c.Depth = 2
		}
		if c.Groups == 0 {
			c.Groups = min(8, c.Width)
		}
	}
	return c
}

// Validate returns an error naming the first invalid field.
func (c Config) Validate() error {
	c = c.withDefaults()
	if c.Input.H < 1 || c.Input.W < 1 || c.Input.C < 1 {
		return fmt.Errorf("nn: input shape %dx%dx%d: every dimension must be at least 1", c.Input.H, c.Input.W, c.Input.C)
	}
	if c.Classes < 2 {
		return fmt.Errorf("nn: %d classes: want at least 2", c.Classes)
	}
	switch c.Arch {
	case MLP, TopoNN:
		for i, h := range c.Hidden {
			if h < 1 {
				return fmt.Errorf("nn: %s hidden layer %d has width %d: want at least 1", c.Arch, i, h)
			}
		}
	case ConvNet2:
		if c.Input.H < 4 || c.Input.W < 4 {
			return fmt.Errorf("nn: convnet2 needs inputs of at least 4x4 for its two 2x2 poolings, got %dx%d", c.Input.H, c.Input.W)
		}
	case CNN:
		if c.Input.H < 4 || c.Input.W < 4 {
			return fmt.Errorf("nn: cnn needs inputs of at least 4x4 for its two 2x2 poolings, got %dx%d", c.Input.H, c.Input.W)
		}
		if c.Width < 1 {
			return fmt.Errorf("nn: cnn width %d: want at least 1", c.Width)
		}
		for i, h := range c.Hidden {
			if h < 1 {
				return fmt.Errorf("nn: cnn hidden layer %d has width %d: want at least 1", i, h)
			}
		}
	case ResNet:
		if c.Width < 1 || c.Depth < 1 || c.Groups < 1 {
			return fmt.Errorf("nn: resnet width %d, depth %d, groups %d: each must be at least 1", c.Width, c.Depth, c.Groups)
		}
		if c.Width%c.Groups != 0 {
			return fmt.Errorf("nn: resnet groups %d must divide width %d", c.Groups, c.Width)
		}
	default:
		return fmt.Errorf("nn: unknown architecture %q; want one of %v", c.Arch, Archs)
	}
	return nil
}

func (c Config) layers() []layer {
	switch c.Arch {
	case MLP, TopoNN:
		var ls []layer
		if c.Arch == TopoNN {
			ls = append(ls, &topoAugment{})
		}
		for _, h := range c.Hidden {
			ls = append(ls, &dense{out: h}, &relu{})
		}
		return append(ls, &dense{out: c.Classes, last: true})
	case ConvNet2:
		return []layer{
			&conv{k: 5, stride: 1, pad: 2, outC: 32, bias: true}, &maxPool{}, &relu{},
			&conv{k: 5, stride: 1, pad: 2, outC: 64, bias: true}, &maxPool{}, &relu{},
			&dense{out: 2048}, &relu{},
			&dense{out: c.Classes, last: true},
		}
	case CNN:
		ls := []layer{
			&conv{k: 5, stride: 1, pad: 2, outC: c.Width, bias: true}, &maxPool{}, &relu{},
			&conv{k: 5, stride: 1, pad: 2, outC: 2 * c.Width, bias: true}, &maxPool{}, &relu{},
		}
		for _, h := range c.Hidden {
			ls = append(ls, &dense{out: h}, &relu{})
		}
		return append(ls, &dense{out: c.Classes, last: true})
	case ResNet:
		ls := []layer{&conv{k: 3, stride: 1, pad: 1, outC: c.Width}, &groupNorm{groups: c.Groups}, &relu{}}
		for stage := range 4 {
			for block := range c.Depth {
				stride := 1
				if stage > 0 && block == 0 {
					stride = 2
				}
				ls = append(ls, newBasicBlock(c.Width<<stage, stride, c.Groups))
			}
		}
		return append(ls, &globalAvgPool{}, &dense{out: c.Classes, last: true})
	}
	panic("nn: unvalidated architecture")
}

// Network is a feed-forward classifier whose parameters and gradients are
// each one flat float32 slab; every layer's weights are views into them.
// A Network keeps the activations of its last Forward for Backward and
// Penultimate, so it is not safe for concurrent use; make one per goroutine.
type Network struct {
	cfg     Config
	layers  []layer
	shapes  []Shape // shapes[0] is the input, shapes[i+1] the output of layer i
	offsets []int   // layer i's parameters are params[offsets[i]:offsets[i+1]]
	params  []float32
	grad    []float32
	workers int

	batch  int
	x      []float32   // the last forward input
	acts   [][]float32 // acts[i] is the output of layer i
	dA, dB []float32   // ping-pong activation gradients
}

// New builds the network cfg describes, with all parameters zero; call
// Init to draw initial parameters or copy a model into Params.
func New(cfg Config) (*Network, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	cfg.Hidden = append([]int(nil), cfg.Hidden...)
	return assemble(cfg, cfg.layers())
}

// assemble sets the layers up on cfg.Input and binds them to fresh slabs.
func assemble(cfg Config, layers []layer) (*Network, error) {
	n := &Network{cfg: cfg, layers: layers, workers: runtime.GOMAXPROCS(0)}
	n.shapes = []Shape{cfg.Input}
	n.offsets = []int{0}
	for _, l := range n.layers {
		out, np := l.setup(n.shapes[len(n.shapes)-1])
		if out.Size() < 1 {
			return nil, fmt.Errorf("nn: %s: input %dx%d is too small for the network (a layer's output is empty)", cfg.Arch, cfg.Input.H, cfg.Input.W)
		}
		n.shapes = append(n.shapes, out)
		n.offsets = append(n.offsets, n.offsets[len(n.offsets)-1]+np)
	}
	total := n.offsets[len(n.offsets)-1]
	n.params = make([]float32, total)
	n.grad = make([]float32, total)
	for i, l := range n.layers {
		lo, hi := n.offsets[i], n.offsets[i+1]
		l.bind(n.params[lo:hi:hi], n.grad[lo:hi:hi])
	}
	n.acts = make([][]float32, len(n.layers))
	return n, nil
}

// Config returns the configuration the network was built from, defaults
// filled in.
func (n *Network) Config() Config { return n.cfg }

// NumParams returns the length of the parameter slab.
func (n *Network) NumParams() int { return len(n.params) }

// Params returns the parameter slab itself (not a copy): writing to it
// changes the network.
func (n *Network) Params() []float32 { return n.params }

// Grad returns the gradient slab written by Backward, aligned with Params.
func (n *Network) Grad() []float32 { return n.grad }

// InputSize returns the number of values in one input sample.
func (n *Network) InputSize() int { return n.cfg.Input.Size() }

// PenultimateSize returns the number of penultimate activations per
// sample: the width of the input of the output layer.
func (n *Network) PenultimateSize() int { return n.shapes[len(n.shapes)-2].Size() }

// SetWorkers sets the number of goroutines a forward or backward pass may
// use (n < 1 means runtime.GOMAXPROCS(0)). Results do not depend on it.
func (n *Network) SetWorkers(workers int) {
	if workers < 1 {
		workers = runtime.GOMAXPROCS(0)
	}
	n.workers = workers
}

// Init draws initial parameters from a PCG generator seeded with seed:
// He-normal weights for layers followed by a ReLU, N(0, 1/fan-in) for the
// output layer, zero biases, GroupNorm scales 1 and shifts 0.
func (n *Network) Init(seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x6e6e2d696e6974)) // "nn-init"
	for _, l := range n.layers {
		l.init(rng)
	}
}

// Forward computes the logits (batch × Classes) of the batch samples in x
// (batch × InputSize, NHWC) and keeps the activations for Backward and
// Penultimate; x itself is kept, not copied, and must not change before
// Backward. The returned slice is owned by the network and valid until the
// next Forward. It panics if x is shorter than batch samples.
func (n *Network) Forward(x []float32, batch int) []float32 {
	if batch < 1 || len(x) < batch*n.InputSize() {
		panic("nn: Forward input shorter than its batch")
	}
	e := env{workers: n.workers}
	n.batch = batch
	n.x = x[:batch*n.InputSize()]
	in := n.x
	for i, l := range n.layers {
		n.acts[i] = grow(n.acts[i], batch*n.shapes[i+1].Size())
		l.forward(e, in, n.acts[i], batch)
		in = n.acts[i]
	}
	return in
}

// Backward writes into Grad the gradient of a loss whose gradient with
// respect to the last Forward's logits is dLogits (batch × Classes).
func (n *Network) Backward(dLogits []float32) {
	n.backward(env{workers: n.workers}, dLogits)
}

// backward is Backward in the environment e (a DP-SGD pass when e.dp is
// set).
func (n *Network) backward(e env, dLogits []float32) {
	if n.x == nil {
		panic("nn: Backward before Forward")
	}
	batch := n.batch
	if len(dLogits) < batch*n.cfg.Classes {
		panic("nn: Backward gradient shorter than the batch's logits")
	}
	maxSize := 0
	for _, s := range n.shapes[1:] {
		maxSize = max(maxSize, s.Size())
	}
	n.dA, n.dB = grow(n.dA, batch*maxSize), grow(n.dB, batch*maxSize)
	dy := dLogits[:batch*n.cfg.Classes]
	for i := len(n.layers) - 1; i >= 0; i-- {
		x := n.x
		if i > 0 {
			x = n.acts[i-1]
		}
		var dx []float32
		if i > 0 {
			dx = n.dA[:batch*n.shapes[i].Size()]
		}
		n.layers[i].backward(e, x, n.acts[i], dy, dx, batch)
		dy = dx
		n.dA, n.dB = n.dB, n.dA
	}
}

// Penultimate returns the last Forward's penultimate activations (batch ×
// PenultimateSize): the input of the output layer, e.g. the 2048 ReLU
// outputs of ConvNet-2 or the pooled features of the ResNet. The slice is
// owned by the network and valid until the next Forward.
func (n *Network) Penultimate() []float32 {
	if n.x == nil {
		panic("nn: Penultimate before Forward")
	}
	return n.acts[len(n.acts)-2][:n.batch*n.PenultimateSize()]
}

// evalChunk is the number of samples Predict and Embed push through at once,
// which bounds the activation memory of inference.
const evalChunk = 64

// Embed returns the penultimate activations of all d.N samples of d.X
// (d.N × PenultimateSize), computed in chunks.
func (n *Network) Embed(d Data) ([]float32, error) {
	if err := d.Validate(n.cfg.Input, n.cfg.Classes); err != nil {
		return nil, err
	}
	dim := n.PenultimateSize()
	out := make([]float32, d.N*dim)
	for lo := 0; lo < d.N; lo += evalChunk {
		b := min(evalChunk, d.N-lo)
		n.Forward(d.X[lo*n.InputSize():], b)
		copy(out[lo*dim:], n.Penultimate())
	}
	return out, nil
}

// Predict returns the predicted class (arg-max logit, the lowest class on
// ties) of each sample of d.
func (n *Network) Predict(d Data) ([]int, error) {
	if err := d.Validate(n.cfg.Input, n.cfg.Classes); err != nil {
		return nil, err
	}
	k := n.cfg.Classes
	pred := make([]int, d.N)
	for lo := 0; lo < d.N; lo += evalChunk {
		b := min(evalChunk, d.N-lo)
		logits := n.Forward(d.X[lo*n.InputSize():], b)
		for i := range b {
			pred[lo+i] = argmax(logits[i*k : (i+1)*k])
		}
	}
	return pred, nil
}

// Accuracy returns the fraction of d's samples whose predicted class is
// their label (top-1 accuracy); d must have labels.
func (n *Network) Accuracy(d Data) (float64, error) {
	if d.Labels == nil {
		return 0, errors.New("nn: accuracy needs labels")
	}
	pred, err := n.Predict(d)
	if err != nil {
		return 0, err
	}
	right := 0
	for i, p := range pred {
		if p == d.Labels[i] {
			right++
		}
	}
	return float64(right) / float64(d.N), nil
}

func argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}
