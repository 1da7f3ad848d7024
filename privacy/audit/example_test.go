package audit_test

import (
	"fmt"
	"log"

	"github.com/ptopofl/ptopofl/privacy/audit"
)

// ExampleReconstruct inverts the update of a site that holds one record:
// without DP the server reads the record off θ0 − θ1 exactly; the same
// update released under DP at ε = 1 gives back noise.
func ExampleReconstruct() {
	cfg := audit.ReconstructionConfig{
		X:    [][]float64{{0.5, -1.25, 2}, {3, 0.75, -0.5}},
		Y:    []float64{1, 0},
		Seed: 1,
	}
	plain, err := audit.Reconstruct(cfg)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("without DP: x̂ = %.6f, %.6f\n", plain.Reconstructed[0], plain.Reconstructed[1])
	fmt.Printf("max relative error below 1e-12: %v, labels right: %.0f %%\n", plain.MaxError < 1e-12, 100*plain.LabelAccuracy)

	cfg.Epsilon = 1
	private, err := audit.Reconstruct(cfg)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("ε = 1: z = %.4f, median relative error above 0.5: %v\n", private.NoiseMultiplier, private.MedianError > 0.5)
	// Output:
	// without DP: x̂ = [0.500000 -1.250000 2.000000], [3.000000 0.750000 -0.500000]
	// max relative error below 1e-12: true, labels right: 100 %
	// ε = 1: z = 3.7306, median relative error above 0.5: true
}

// ExampleClopperPearson bounds a rate from 0 events in 10 trials: the
// one-sided 95 % upper bound (the two-sided 90 % interval's upper end) is
// 1 − 0.05^(1/10).
func ExampleClopperPearson() {
	lo, hi := audit.ClopperPearson(0, 10, 0.90)
	fmt.Printf("[%.4f, %.4f]\n", lo, hi)
	lo, hi = audit.ClopperPearson(5, 10, 0.95)
	fmt.Printf("[%.4f, %.4f]\n", lo, hi)
	// Output:
	// [0.0000, 0.2589]
	// [0.1871, 0.8129]
}

// ExampleAuditDPGD audits two steps of DP-GD accounted to ε = 3 at
// δ = 1e-5 with 20,000 trials a world: the lower bound stays below the
// accountant's ε, as it must, and finds more than ε = 1 of it (1.68 here;
// 1.24–1.94 over seeds 1–4; more trials tighten it, see AuditDPGD).
func ExampleAuditDPGD() {
	r, err := audit.AuditDPGD(audit.AuditConfig{Epsilon: 3, Steps: 2, Trials: 20_000, Seed: 1})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("z = %.4f, accountant ε = %.3f\n", r.NoiseMultiplier, r.Epsilon)
	fmt.Printf("ε_LB ≤ ε: %v, ε_LB > 1: %v, canary clipped at every step: %v\n",
		r.EpsilonLowerBound <= r.Epsilon, r.EpsilonLowerBound > 1, r.UnclippedSteps == 0)
	// Output:
	// z = 1.9666, accountant ε = 3.000
	// ε_LB ≤ ε: true, ε_LB > 1: true, canary clipped at every step: true
}
