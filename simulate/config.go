package simulate

import (
	"fmt"

	"github.com/ptopofl/ptopofl/aggregation"
	"github.com/ptopofl/ptopofl/learn"
)

// Descriptor variants: how sites compute the H1 part of their 48-number
// descriptor (golden README, "Descriptor spec").
const (
	// ExactDescriptor uses true Vietoris–Rips H1 persistent homology.
	ExactDescriptor = "exact"
	// TriangleDescriptor is the authors' paper-era approximation, used only
	// to reproduce their table.
	TriangleDescriptor = "triangle"
)

// Config is a campaign's complete configuration.
type Config struct {
	Method learn.Method
	// Rounds is R (paper Table 4: 15 for Scenarios A/B).
	Rounds int
	// Seed is the method seed; site k draws its round-1 parameters from
	// Seed + k (the reference used 242 for FedProx, 342 for SCAFFOLD and 442
	// for pFedMe; its L-BFGS methods use no randomness).
	Seed uint32
	// Descriptor names the descriptor variant the sites compute.
	Descriptor string
	// NSub is the number of rows subsampled per site for the descriptor
	// (paper Table 4: 80 for Scenarios A/B).
	NSub   int
	Site   learn.SiteConfig
	Server aggregation.Config
}

// Preset names.
const (
	PaperPreset   = "paper"
	DefaultPreset = "default"
)

// Preset returns the named configuration for method:
//
//   - "paper" reproduces the authors' published table: triangle descriptor,
//     pTopoFL's `flagged` as trust < 0.5 (their τ is unused), no drift
//     re-clustering (their clusters are fitted once). SCAFFOLD stays correct
//     (set Site.SCAFFOLD.ReferenceBug to reproduce their SCAFFOLD row).
//   - "default" is the paper's intent: exact descriptor, flags by z > τ,
//     drift re-clustering above aggregation.DefaultConfig's threshold.
//
// Both use the paper's Table 4 and §4.1 hyper-parameters and seed 42.
func Preset(name string, method learn.Method) (Config, error) {
	if _, err := learn.ParseMethod(string(method)); err != nil {
		return Config{}, fmt.Errorf("preset %s: %w", name, err)
	}
	c := Config{
		Method: method, Rounds: 15, Seed: 42, NSub: 80,
		Site:   learn.DefaultSiteConfig(),
		Server: aggregation.DefaultConfig(),
	}
	switch name {
	case PaperPreset:
		c.Descriptor = TriangleDescriptor
		c.Server.FlagTrustBelow = 0.5
		c.Server.DriftThreshold = 0
	case DefaultPreset:
		c.Descriptor = ExactDescriptor
	default:
		return Config{}, fmt.Errorf("unknown preset %q; want %q or %q", name, PaperPreset, DefaultPreset)
	}
	return c, nil
}

// Validate returns an error naming the first invalid field.
func (c Config) Validate() error {
	if _, err := learn.ParseMethod(string(c.Method)); err != nil {
		return fmt.Errorf("config Method: %w", err)
	}
	switch {
	case c.Rounds < 1:
		return fmt.Errorf("config Rounds = %d, want ≥ 1", c.Rounds)
	case c.Descriptor != ExactDescriptor && c.Descriptor != TriangleDescriptor:
		return fmt.Errorf("config Descriptor = %q, want %q or %q", c.Descriptor, ExactDescriptor, TriangleDescriptor)
	case !(c.Site.C > 0):
		return fmt.Errorf("config Site.C = %v, want > 0", c.Site.C)
	case c.Site.LBFGS.MaxIter < 1:
		return fmt.Errorf("config Site.LBFGS.MaxIter = %d, want ≥ 1", c.Site.LBFGS.MaxIter)
	case c.Server.M < 0:
		return fmt.Errorf("config Server.M = %d, want ≥ 0 (0 chooses by silhouette)", c.Server.M)
	case c.Server.Beta < 0 || c.Server.Beta > 1:
		return fmt.Errorf("config Server.Beta = %v, want a value in [0, 1]", c.Server.Beta)
	case c.Server.TrustMin > c.Server.TrustMax:
		return fmt.Errorf("config Server.TrustMin = %v exceeds TrustMax = %v", c.Server.TrustMin, c.Server.TrustMax)
	}
	return nil
}
