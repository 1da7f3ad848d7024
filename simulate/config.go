package simulate

import (
	"fmt"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
)

// Config is an in-memory run: the method's configuration (method.Resolve
// or method.Preset), how many rounds, and the method seed.
type Config struct {
	method.Config
	// Rounds is R (paper Table 3: 15 for Scenarios A/B).
	Rounds int
	// Seed is the method seed; site k draws its round-1 parameters from
	// Seed + k (the reference used 242 for FedProx, 342 for SCAFFOLD and 442
	// for pFedMe; its L-BFGS methods use no randomness).
	Seed uint32
	// Noise gives, under dp record (Config.DP.On), the noise of site's
	// local training in round r (the pipeline's sites draw it from their
	// secret streams). Run scores every site exactly (no metrics noise):
	// it measures what the private training costs, not what a site
	// releases.
	Noise func(site string, round int) learn.DPRandom
}

// Preset returns the configuration of method m under the named preset,
// with the paper's R = 15 rounds and seed 42.
func Preset(preset string, m learn.Method) (Config, error) {
	c, err := method.Preset(preset, m)
	if err != nil {
		return Config{}, err
	}
	return Config{Config: c, Rounds: 15, Seed: 42}, nil
}

// Validate returns an error naming the first invalid field; the method
// configuration is checked where method.Resolve built it, and here only
// for what a caller may have changed by hand.
func (c Config) Validate() error {
	if _, err := learn.ParseMethod(string(c.Method)); err != nil {
		return fmt.Errorf("config Method: %w", err)
	}
	switch {
	case c.Rounds < 1:
		return fmt.Errorf("config Rounds = %d, want ≥ 1", c.Rounds)
	case !(c.Site.C > 0):
		return fmt.Errorf("config Site.C = %v, want > 0", c.Site.C)
	case c.Server.Beta < 0 || c.Server.Beta > 1:
		return fmt.Errorf("config Server.Beta = %v, want a value in [0, 1]", c.Server.Beta)
	case c.Server.TrustMin > c.Server.TrustMax:
		return fmt.Errorf("config Server.TrustMin = %v exceeds TrustMax = %v", c.Server.TrustMin, c.Server.TrustMax)
	case c.DP.On && c.Noise == nil:
		return fmt.Errorf("config Noise: nil under dp record")
	}
	return nil
}
