package learn_test

import (
	"fmt"

	"github.com/ptopofl/ptopofl/learn"
)

// One FedProx site update in round 2: the site steps from the pushed global
// model with the proximal pull μ(θ − θ_g), and sends its model and n_k.
func ExampleUpdateSite() {
	train := learn.Data{
		X: [][]float64{{-1.5}, {-0.5}, {0.2}, {0.5}, {1.5}, {-0.1}},
		Y: []float64{0, 0, 1, 1, 1, 0},
	}
	out, err := learn.UpdateSite(learn.SiteInput{
		Method: learn.FedProx, Round: 2, Train: train,
		Pushed: []float64{0.5, 0}, Config: learn.DefaultSiteConfig(),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("n = %d, model [%.4f %.4f]\n", out.N, out.Params[0], out.Params[1])
	// Output:
	// n = 6, model [0.6918 -0.0030]
}
