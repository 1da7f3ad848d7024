package privacy_test

import (
	"fmt"

	"github.com/ptopofl/ptopofl/privacy"
)

// A cross-silo campaign: 30 rounds of full-batch DP-GD at every site
// (q = 1) with noise multiplier 8, plus 30 descriptor releases with noise
// multiplier 40. Every release sees every record, so the exact GDP
// accountant applies; RDP would over-report.
func ExampleEpsilon() {
	ledger := []privacy.Event{
		{Z: 8, Q: 1, Count: 30},  // model updates
		{Z: 40, Q: 1, Count: 30}, // topological descriptors
	}
	for _, acc := range []privacy.Accountant{privacy.Auto, privacy.RDP} {
		spent, err := privacy.Epsilon(ledger, 1e-5, acc)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: ε = %.3f at δ = %g\n", spent.Accountant, spent.Epsilon, spent.Delta)
	}
	// Output:
	// gdp: ε = 2.901 at δ = 1e-05
	// rdp: ε = 3.144 at δ = 1e-05
}

// Opacus's get_noise_multiplier: the noise for DP-SGD with batches of 4% of
// the records, 2000 steps and a budget of (8, 1e-5).
func ExampleNoiseMultiplier() {
	z, err := privacy.NoiseMultiplier(8, 1e-5, 0.04, 2000, privacy.RDP)
	if err != nil {
		fmt.Println(err)
		return
	}
	spent, _ := privacy.Epsilon([]privacy.Event{{Z: z, Q: 0.04, Count: 2000}}, 1e-5, privacy.RDP)
	fmt.Printf("z = %.4f spends ε = %.3f (optimal Rényi order %g)\n", z, spent.Epsilon, spent.Order)
	// Output:
	// z = 1.3562 spends ε = 7.999 (optimal Rényi order 3.7)
}

// SolveNoise finds the DP-SGD noise that leaves room in the budget for
// descriptors released with a noise of their own.
func ExampleSolveNoise() {
	plan := func(z float64) []privacy.Event {
		return []privacy.Event{
			{Z: z, Q: 0.05, Count: 600}, // DP-SGD steps
			{Z: 20, Q: 1, Count: 30},    // descriptors, fixed noise
		}
	}
	z, err := privacy.SolveNoise(3, 1e-5, plan, privacy.Auto)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("z = %.3f\n", z)
	// Output:
	// z = 2.186
}
