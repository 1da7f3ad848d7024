package nn_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/nn"
)

// toyRandom is an nn.DPRandom for the example only: a seeded PCG stream
// and unsnapped float noise. A site uses a cryptographically seeded stream
// and a floating-point-safe mechanism instead.
type toyRandom struct{ r *rand.Rand }

func (t toyRandom) Float64() float64 { return t.r.Float64() }

func (t toyRandom) Perturb32(v []float32, sensitivity, z float64) {
	for i := range v {
		v[i] += float32(t.r.NormFloat64() * sensitivity * z)
	}
}

// Train a small CNN by DP-SGD on a toy problem (is the left or the right
// half of a 12×12 image bright?): Poisson samples of expected size 32 of
// the 256 images, each image's gradient clipped to norm 1 and noise of
// standard deviation 0.8 added to each step's sum. DPUse gives what an
// accountant composes for the round: 24 releases of the subsampled
// Gaussian mechanism at q = 1/8 and z = 0.8.
func ExampleDPConfig() {
	const n, side = 256, 12
	rng := rand.New(rand.NewPCG(1, 2))
	d := nn.Data{N: n, X: make([]float32, n*side*side), Labels: make([]int, n)}
	for s := range n {
		d.Labels[s] = s % 2
		for r := range side {
			for c := range side {
				v := 0.3 * rng.NormFloat64()
				if (c < side/2) == (s%2 == 0) {
					v++
				}
				d.X[(s*side+r)*side+c] = float32(v)
			}
		}
	}
	net, err := nn.New(nn.Config{Arch: nn.CNN, Input: nn.Shape{H: side, W: side, C: 1}, Classes: 2, Width: 4})
	if err != nil {
		fmt.Println(err)
		return
	}
	net.Init(1)
	cfg := nn.SiteConfig{Train: nn.TrainConfig{Optimizer: nn.SGD, LR: 0.1, Momentum: 0.9, Epochs: 3, BatchSize: 32,
		DP: &nn.DPConfig{Clip: 1, NoiseMultiplier: 0.8, Random: toyRandom{rand.New(rand.NewPCG(3, 4))}}}}
	out, err := nn.UpdateSite(net, nn.SiteInput{Method: learn.FedAvg, Round: 1, InitSeed: 1, Train: d, Config: cfg})
	if err != nil {
		fmt.Println(err)
		return
	}
	copy(net.Params(), out.Params)
	acc, err := net.Accuracy(d)
	if err != nil {
		fmt.Println(err)
		return
	}
	q, steps, z := nn.DPUse(learn.FedAvg, cfg, n)
	fmt.Printf("%d DP-SGD steps at q = %.3f, z = %.1f; accuracy above 0.9: %v\n", steps, q, z, acc > 0.9)
	// pFedMe's K = 4 personal steps per sample halve the effective noise
	// multiplier.
	cfg.PFedMeSteps = 4
	_, _, z = nn.DPUse(learn.PFedMe, cfg, n)
	fmt.Printf("pFedMe with K = 4: z = %.1f per sample\n", z)
	// Output:
	// 24 DP-SGD steps at q = 0.125, z = 0.8; accuracy above 0.9: true
	// pFedMe with K = 4: z = 0.4 per sample
}
