package simulate_test

import (
	"fmt"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/simulate"
)

// Three rounds of FedAvg over two tiny sites with the paper preset.
func ExampleRun() {
	site := func(name string, shift float64) simulate.Site {
		s := simulate.Site{Name: name}
		for i := 0; i < 8; i++ {
			x := float64(i) - 3.5 + shift
			y := 0.0
			if i%4 >= 2 {
				y = 1
			}
			s.TrainX = append(s.TrainX, []float64{x, float64(i % 3)})
			s.TrainY = append(s.TrainY, y)
			s.TestX = append(s.TestX, []float64{x + 0.25, float64(i % 2)})
			s.TestY = append(s.TestY, y)
		}
		return s
	}
	cfg, err := simulate.Preset(method.Paper, learn.FedAvg)
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg.Rounds = 3
	res, err := simulate.Run([]simulate.Site{site("a", 0), site("b", 1)}, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("AUC per round %.4f, convergence round %d\n", res.AUCCurve, res.ConvRound)
	// Output:
	// AUC per round [0.7500 0.7500 0.7500], convergence round 1
}
