package nn

import (
	"math"
	"math/rand/v2"
	"testing"
)

// closeTol is the tolerance of the hand-computed float32 results below.
const closeTol = 1e-5

func near(a, b float64, tol float64) bool {
	return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b))
}

func TestSoftmaxCrossEntropy(t *testing.T) {
	for i, c := range []struct {
		logits   []float32
		classes  int
		labels   []int
		weights  []float32
		wantLoss float64
		wantGrad []float32
	}{
		{ // 0: equal logits: loss ln 2, gradient ±1/2
			logits: []float32{0, 0}, classes: 2, labels: []int{0},
			wantLoss: math.Ln2, wantGrad: []float32{-0.5, 0.5},
		},
		{ // 1: logits ln 1, ln 3: softmax (1/4, 3/4), loss −ln(3/4)
			logits: []float32{0, float32(math.Log(3))}, classes: 2, labels: []int{1},
			wantLoss: -math.Log(0.75), wantGrad: []float32{0.25, -0.25},
		},
		{ // 2: two samples, weights 2 and 0, mean over the batch of 2:
			// loss (2·ln 3 + 0)/2 = ln 3, gradient 2·(1/3 − onehot)/2
			logits: []float32{5, 5, 5, 1, 2, 3}, classes: 3, labels: []int{2, 0}, weights: []float32{2, 0},
			wantLoss: math.Log(3), wantGrad: []float32{1.0 / 3, 1.0 / 3, -2.0 / 3, 0, 0, 0},
		},
		{ // 3: large logits do not overflow: softmax (1, 0) to float64 precision
			logits: []float32{1000, 0}, classes: 2, labels: []int{1},
			wantLoss: 1000, wantGrad: []float32{1, -1},
		},
	} {
		grad := make([]float32, len(c.logits))
		loss := SoftmaxCrossEntropy(c.logits, c.classes, c.labels, c.weights, grad)
		if !near(loss, c.wantLoss, closeTol) {
			t.Errorf("case %d: loss %v, want %v", i, loss, c.wantLoss)
		}
		for j := range grad {
			if !near(float64(grad[j]), float64(c.wantGrad[j]), closeTol) {
				t.Errorf("case %d: gradient %v, want %v", i, grad, c.wantGrad)
				break
			}
		}
	}
}

// TestLayersClosedForm runs each layer's forward pass on inputs whose
// outputs are computed by hand.
func TestLayersClosedForm(t *testing.T) {
	e := env{workers: 2}
	// 0: dense, W = [[1 2] [3 4] [5 6]] (3 in × 2 out), b = (0.5, −1):
	// (1, 0, −1)·W + b = (1−5+0.5, 2−6−1) = (−3.5, −5).
	d := &dense{out: 2}
	d.setup(Shape{1, 1, 3})
	p, g := []float32{1, 2, 3, 4, 5, 6, 0.5, -1}, make([]float32, 8)
	d.bind(p, g)
	y := make([]float32, 2)
	d.forward(e, []float32{1, 0, -1}, y, 1)
	checkSlice(t, "dense", y, []float32{-3.5, -5})

	// 1: 3×3 convolution of the 3×3 image 1..9 with an all-ones kernel and
	// padding 1: each output is the sum of its 3×3 neighbourhood, e.g. the
	// corner 1+2+4+5 = 12 and the centre 45; plus the bias 1.
	c := &conv{k: 3, stride: 1, pad: 1, outC: 1, bias: true}
	c.setup(Shape{3, 3, 1})
	cp := make([]float32, 10)
	for i := range 9 {
		cp[i] = 1
	}
	cp[9] = 1
	c.bind(cp, make([]float32, 10))
	y = make([]float32, 9)
	c.forward(e, []float32{1, 2, 3, 4, 5, 6, 7, 8, 9}, y, 1)
	checkSlice(t, "conv", y, []float32{13, 22, 17, 28, 46, 34, 25, 40, 29})

	// 2: the same with stride 2: the corners 12, 16, 24, 28 plus 1.
	c2 := &conv{k: 3, stride: 2, pad: 1, outC: 1, bias: true}
	if out, _ := c2.setup(Shape{3, 3, 1}); out != (Shape{2, 2, 1}) {
		t.Fatalf("stride-2 output shape %v, want 2x2x1", out)
	}
	c2.bind(cp, make([]float32, 10))
	y = make([]float32, 4)
	c2.forward(e, []float32{1, 2, 3, 4, 5, 6, 7, 8, 9}, y, 1)
	checkSlice(t, "conv stride 2", y, []float32{13, 17, 25, 29})

	// 3: 2×2 max-pooling of a 4×4×1 image; the odd-sized 5×5 case drops
	// the last row and column.
	m := &maxPool{}
	m.setup(Shape{4, 4, 1})
	y = make([]float32, 4)
	m.forward(e, []float32{1, 2, 3, 4, 8, 7, 6, 5, 0, -1, -2, -3, -5, -6, 9, -4}, y, 1)
	checkSlice(t, "maxpool", y, []float32{8, 6, 0, 9})

	// 4: GroupNorm, one group over x = (1, 2, 3, 4): mean 2.5, variance
	// 1.25, so y = γ(x − 2.5)/√(1.25 + 1e-5) + β with γ = 2, β = 1.
	gn := &groupNorm{groups: 1}
	gn.setup(Shape{1, 1, 4})
	gn.bind([]float32{2, 2, 2, 2, 1, 1, 1, 1}, make([]float32, 8))
	y = make([]float32, 4)
	gn.forward(e, []float32{1, 2, 3, 4}, y, 1)
	s := 1 / math.Sqrt(1.25+1e-5)
	checkSlice(t, "groupnorm", y, []float32{float32(1 - 3*s), float32(1 - s), float32(1 + s), float32(1 + 3*s)})

	// 5: global average pooling of a 2×2×2 image.
	gp := &globalAvgPool{}
	gp.setup(Shape{2, 2, 2})
	y = make([]float32, 2)
	gp.forward(e, []float32{1, 10, 2, 20, 3, 30, 4, 40}, y, 1)
	checkSlice(t, "avgpool", y, []float32{2.5, 25})
}

func checkSlice(t *testing.T, name string, got, want []float32) {
	t.Helper()
	for i := range want {
		if !near(float64(got[i]), float64(want[i]), closeTol) {
			t.Errorf("%s: got %v, want %v", name, got, want)
			return
		}
	}
}

// TestParamCounts checks the architectures' parameter counts against
// counts computed by hand: ConvNet-2 (28×28×1, 62 classes) has
// 5·5·1·32+32 + 5·5·32·64+64 + 7·7·64·2048+2048 + 2048·62+62 = 6,603,710;
// the MLP 784-256-10 has 784·256+256 + 256·10+10 = 203,530. The ResNet with
// Width 64 and Depth 2 on 32×32×3 and 10 classes is the CIFAR ResNet-18
// (bias-free convolutions, normalisation γ and β per channel, 1×1
// projection shortcuts): 11,173,962 parameters, the widely quoted count of
// that model with BatchNorm (same parameters as GroupNorm), and what
// PyTorch 1.13 counts for the same layout built with nn.GroupNorm (checked
// here with python3-torch).
func TestParamCounts(t *testing.T) {
	for i, c := range []struct {
		cfg  Config
		want int
	}{
		{Config{Arch: ConvNet2, Input: Shape{28, 28, 1}, Classes: 62}, 6603710},                  // 0
		{Config{Arch: MLP, Input: Shape{28, 28, 1}, Classes: 10}, 203530},                        // 1
		{Config{Arch: ResNet, Input: Shape{32, 32, 3}, Classes: 10, Width: 64}, 11173962},        // 2
		{Config{Arch: MLP, Input: Shape{1, 1, 3}, Classes: 2, Hidden: []int{}}, 3*2 + 2},         // 3: logistic regression
		{Config{Arch: MLP, Input: Shape{1, 1, 4}, Classes: 3, Hidden: []int{5, 2}}, 25 + 12 + 9}, // 4
		// 5: the Fashion-MNIST anchor's CNN, by hand: (25·1·16 + 16) + (25·16·32 + 32) + (7·7·32·10 + 10)
		{Config{Arch: CNN, Input: Shape{28, 28, 1}, Classes: 10}, 416 + 12832 + 15690},
		// 6: CNN at ConvNet-2's size is ConvNet-2 (case 0's count)
		{Config{Arch: CNN, Input: Shape{28, 28, 1}, Classes: 62, Width: 32, Hidden: []int{2048}}, 6603710},
	} {
		n, err := New(c.cfg)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if n.NumParams() != c.want {
			t.Errorf("case %d (%s): %d parameters, want %d", i, c.cfg.Arch, n.NumParams(), c.want)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for i, c := range []Config{
		{Arch: "vgg", Input: Shape{28, 28, 1}, Classes: 10},                       // 0
		{Arch: MLP, Input: Shape{0, 28, 1}, Classes: 10},                          // 1
		{Arch: MLP, Input: Shape{28, 28, 1}, Classes: 1},                          // 2
		{Arch: MLP, Input: Shape{28, 28, 1}, Classes: 10, Hidden: []int{0}},       // 3
		{Arch: ConvNet2, Input: Shape{3, 3, 1}, Classes: 10},                      // 4
		{Arch: ResNet, Input: Shape{32, 32, 3}, Classes: 10, Width: 6, Groups: 4}, // 5
		{Arch: CNN, Input: Shape{3, 3, 1}, Classes: 10},                           // 6
		{Arch: CNN, Input: Shape{8, 8, 1}, Classes: 10, Hidden: []int{0}},         // 7
	} {
		if _, err := New(c); err == nil {
			t.Errorf("case %d: no error for %+v", i, c)
		}
	}
}

// TestPoolReluCommute checks the reordering ConvNet2 relies on: ReLU after
// max-pooling gives the same logits and gradients, bit for bit, as ReLU
// before it (max and ReLU commute; no rounding is involved).
func TestPoolReluCommute(t *testing.T) {
	in := Shape{6, 6, 2}
	build := func(poolFirst bool) *Network {
		mid := []layer{&relu{}, &maxPool{}}
		if poolFirst {
			mid = []layer{&maxPool{}, &relu{}}
		}
		ls := append([]layer{&conv{k: 3, stride: 1, pad: 1, outC: 3, bias: true}}, mid...)
		n, err := assemble(Config{Input: in, Classes: 4}, append(ls, &dense{out: 4, last: true}))
		if err != nil {
			t.Fatal(err)
		}
		n.Init(3)
		return n
	}
	a, b := build(false), build(true)
	rng := rand.New(rand.NewPCG(8, 8))
	x := randomInput(rng, 5*in.Size())
	labels := []int{0, 1, 2, 3, 1}
	var grads [2][]float32
	for i, n := range []*Network{a, b} {
		d := make([]float32, 5*4)
		SoftmaxCrossEntropy(n.Forward(x, 5), 4, labels, nil, d)
		n.Backward(d)
		grads[i] = clone(n.Grad())
	}
	for j := range grads[0] {
		if math.Float32bits(grads[0][j]) != math.Float32bits(grads[1][j]) {
			t.Fatalf("gradient %d: %v with ReLU first, %v with pooling first", j, grads[0][j], grads[1][j])
		}
	}
}

func TestFillRows(t *testing.T) {
	for _, rows := range []int{0, 1, 2, 7, 64} {
		row := []float32{1, -2, 3}
		dst := make([]float32, rows*3)
		fillRows(dst, row)
		for i, v := range dst {
			if v != row[i%3] {
				t.Fatalf("%d rows: element %d is %v, want %v", rows, i, v, row[i%3])
			}
		}
	}
}
