package textout

import (
	"fmt"
	"io"
)

// PrivacyEpsilon is what `starter privacy epsilon` reports: the ε that
// Steps Gaussian releases with noise multiplier Z at sampling rate Q spend
// at δ. Its JSON keys (epsilon, accountant, order) are a contract external
// scripts rely on; the plan's fields are for the text only.
type PrivacyEpsilon struct {
	Epsilon    float64 `json:"epsilon"`
	Accountant string  `json:"accountant"`
	Order      float64 `json:"order,omitempty"` // the optimal Rényi order; rdp only

	Steps       int     `json:"-"`
	Z, Q, Delta float64 `json:"-"`
}

// WritePrivacyEpsilon prints r in two lines.
func WritePrivacyEpsilon(w io.Writer, r PrivacyEpsilon) {
	fmt.Fprintf(w, "%d steps with noise multiplier %v at sampling rate %v\n", r.Steps, r.Z, r.Q)
	fmt.Fprintf(w, "ε = %.4f at δ = %v (%s)\n", r.Epsilon, r.Delta, accounting(r.Accountant, r.Order))
}

// PrivacyNoise is what `starter privacy noise` reports: the noise
// multiplier for which Steps releases at sampling rate Q spend at most
// Target at δ, and what it spends. Its JSON keys (noise_multiplier,
// accountant, epsilon, order) are a contract external scripts rely on.
type PrivacyNoise struct {
	NoiseMultiplier float64 `json:"noise_multiplier"`
	Accountant      string  `json:"accountant"`
	Epsilon         float64 `json:"epsilon"`         // what noise_multiplier spends
	Order           float64 `json:"order,omitempty"` // rdp only

	Steps            int     `json:"-"`
	Q, Delta, Target float64 `json:"-"`
}

// WritePrivacyNoise prints r in two lines.
func WritePrivacyNoise(w io.Writer, r PrivacyNoise) {
	z := r.NoiseMultiplier
	fmt.Fprintf(w, "noise multiplier %.4f (σ = %.4f × the clipping norm) for %d steps at sampling rate %v\n", z, z, r.Steps, r.Q)
	fmt.Fprintf(w, "spends ε = %.4f ≤ %v at δ = %v (%s)\n", r.Epsilon, r.Target, r.Delta, accounting(r.Accountant, r.Order))
}

// accounting describes how ε was accounted.
func accounting(accountant string, order float64) string {
	if accountant == "gdp" {
		return "gdp accountant, exact"
	}
	return fmt.Sprintf("rdp accountant, optimal Rényi order %v", order)
}
