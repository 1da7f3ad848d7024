package nn_test

import (
	"fmt"

	"github.com/ptopofl/ptopofl/nn"
)

// Train LEAF's ConvNet-2 for a few epochs on a toy problem (is the left or
// the right half of a 12×12 image bright?) and read its accuracy and the
// size of its penultimate layer, the activations topological descriptors
// are computed from.
func Example() {
	const n, side = 64, 12
	d := nn.Data{N: n, X: make([]float32, n*side*side), Labels: make([]int, n)}
	for s := range n {
		d.Labels[s] = s % 2
		for r := range side {
			for c := range side {
				if (c < side/2) == (s%2 == 0) {
					d.X[(s*side+r)*side+c] = 1
				}
			}
		}
	}
	net, err := nn.New(nn.Config{Arch: nn.ConvNet2, Input: nn.Shape{H: side, W: side, C: 1}, Classes: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	net.Init(1)
	cfg := nn.TrainConfig{Optimizer: nn.SGD, LR: 0.01, Momentum: 0.9, Epochs: 3, BatchSize: 16, Seed: 1}
	res, err := nn.Train(net, d, cfg, nn.Terms{})
	if err != nil {
		fmt.Println(err)
		return
	}
	acc, _ := net.Accuracy(d)
	fmt.Println("parameters:", net.NumParams()) // 832 + 51,264 + 3·3·64·2048+2048 + 2048·2+2
	fmt.Println("steps:", res.Steps)
	fmt.Println("accuracy:", acc)
	fmt.Println("penultimate size:", net.PenultimateSize())
	// Output:
	// parameters: 1237890
	// steps: 12
	// accuracy: 1
	// penultimate size: 2048
}
