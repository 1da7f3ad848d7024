package method

import (
	"fmt"
	"math"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/secagg"
)

// Values and defaults of the secure-aggregation parameters.
const (
	// SecAggOff: the server reads every site's model (the default).
	SecAggOff = "off"
	// SecAggPlus: SecAgg+ per aggregation group (secagg.Group).
	SecAggPlus = "secagg+"

	// DefaultSecAggMinGroup is secagg_min_group: the fewest sites of a
	// group (a group of two would give each member the other's input).
	DefaultSecAggMinGroup = 3
	// DefaultSecAggClip and DefaultSecAggQuantBits are Flower's
	// SecAggPlusWorkflow defaults (clipping_range 8, quantization_range
	// 2²²), secagg.DefaultClip and secagg.DefaultQuantBits.
	DefaultSecAggClip      = secagg.DefaultClip
	DefaultSecAggQuantBits = secagg.DefaultQuantBits

	// DPSplitSite: under dp record every site adds its whole noise.
	DPSplitSite = "site"
	// DPSplitSum: each site would add a share of the noise that a
	// group's sum carries whole; refused as not implemented.
	DPSplitSum = "sum"
)

// SecAggSettings is the resolved secure-aggregation configuration (the
// secagg_* parameters).
type SecAggSettings struct {
	// On is secure_aggregation = "secagg+".
	On bool
	// Threshold is secagg_threshold: 0 for the default, a fraction in
	// (0, 1) of a member's share holders, or a whole number of them.
	Threshold float64
	// MinGroup is secagg_min_group.
	MinGroup int
	// Clip and QuantBits are the quantisation's clipping range c and bits
	// b (secagg.Config.Clip, QuantBits).
	Clip      float64
	QuantBits int
}

// IsSecAgg reports whether h asks for secure aggregation.
func (h Hyperparameters) IsSecAgg() bool { return h.SecureAggregation == SecAggPlus }

// SecAggMethods are the methods secure aggregation serves: those whose
// server step is a weighted sum of the site models with weights known
// before any model is read (aggregation.Streams), local training aside
// (it aggregates nothing).
var SecAggMethods = []learn.Method{learn.FedAvg, learn.FedProx, learn.PFedMe, learn.SCAFFOLD, learn.PTopoFL}

// GroupConfig returns the secagg.Config of a group of n members under s:
// k = secagg.DefaultShares(n), t from Threshold (the default ⌈2k/3⌉, a
// fraction of k rounded up, or a count capped at k; at least 2), and the
// quantisation's clipping range and bits.
func (s SecAggSettings) GroupConfig(n int) secagg.Config {
	k := secagg.DefaultShares(n)
	t := secagg.DefaultThreshold(k)
	switch {
	case s.Threshold > 0 && s.Threshold < 1:
		t = max(2, int(math.Ceil(s.Threshold*float64(k)-1e-9)))
	case s.Threshold >= 1:
		t = int(s.Threshold)
	}
	t = min(t, k)
	return secagg.Config{Shares: k, Threshold: t, Clip: s.Clip, QuantBits: s.QuantBits}
}

// validateSecAgg checks the secure-aggregation parameters together with
// the others: off, none of them may be set; under secagg+, the method
// must be one whose server step is a weighted sum (SecAggMethods, each
// refused method named with the alternative).
func (h Hyperparameters) validateSecAgg(m learn.Method) error {
	if !h.IsSecAgg() {
		for _, f := range []struct {
			name string
			set  bool
		}{
			{"secagg_threshold", h.SecAggThreshold != 0}, {"secagg_min_group", h.SecAggMinGroup != 0},
			{"secagg_clip", h.SecAggClip != 0}, {"secagg_quant_bits", h.SecAggQuantBits != 0},
			{"dp_noise_split", h.DPNoiseSplit != ""},
		} {
			if f.set {
				p, _ := Lookup(f.name)
				return fmt.Errorf("hyperparameters.%s = %s: applies only under secure_aggregation %q", f.name, quoteText(p.Get(h)), SecAggPlus)
			}
		}
		return nil
	}
	if !contains(SecAggMethods, m) {
		why := "it reads every site's model on its own"
		switch m {
		case learn.Median, learn.TrimmedMean:
			why = "it sorts the sites' values coordinate by coordinate"
		case learn.Krum:
			why = "it compares every pair of site models"
		case learn.FoolsGold:
			why = "it compares the sites' update histories"
		case learn.NormClip:
			why = "it measures and clips each site's update on the server; under secure aggregation clip at the sites instead (dp record's dp_clip bounds every record's gradient)"
		case learn.LocalOnly:
			why = "local training aggregates nothing"
		}
		return fmt.Errorf("hyperparameters.secure_aggregation = %q: method %s is refused, since %s, and the server of a secure aggregation learns only each group's sum; use one of %v", SecAggPlus, m, why, SecAggMethods)
	}
	if h.IsExternal() && m == learn.PFedMe {
		return fmt.Errorf("hyperparameters.secure_aggregation = %q: a site's own training program (model %q) scores pFedMe's personal model from the store, where secure aggregation keeps no site model; use model %q or %q", SecAggPlus, ModelExternal, ModelLogistic, ModelCNN)
	}
	return nil
}

// ValidateSecAggFederation reports a federation too small for h's secure
// aggregation: min_sites below secagg_min_group (a round could then
// aggregate fewer sites than a group needs).
func (h Hyperparameters) ValidateSecAggFederation(fewest int) error {
	if !h.IsSecAgg() {
		return nil
	}
	p, _ := Lookup("secagg_min_group")
	least := int(p.Get(h).Num)
	if fewest < least {
		return fmt.Errorf("hyperparameters.secure_aggregation = %q: min_sites = %d, below secagg_min_group = %d: a round could aggregate fewer sites than a secure-aggregation group needs; raise min_sites to %d or more", SecAggPlus, fewest, least, least)
	}
	return nil
}

// SecAggMinGroupValue returns secagg_min_group in force (its default
// when the spec leaves it out).
func (h Hyperparameters) SecAggMinGroupValue() int {
	if h.SecAggMinGroup == 0 {
		return DefaultSecAggMinGroup
	}
	return h.SecAggMinGroup
}
