package theory

import (
	"fmt"

	"github.com/ptopofl/ptopofl/method"
)

// CampaignRun is one pTopoFL campaign of the theory experiment as its
// manifests and artifacts record it: the federation's sites, the resolved
// configuration the campaign ran, and per committed round what each site
// sent and received. The checks of Thm 3.5, Thm 3.6 and Prop. 3.11 read
// the system's weights off these models (RecoverWeights), so a campaign
// whose aggregation did something other than its rule shows it.
type CampaignRun struct {
	Campaign   string `json:"campaign"`
	Federation string `json:"federation"`
	// Setting is the sweep setting the campaign ran under, Level the
	// federation's attack ("2 of 8 sites flip 30 %"; "" for none).
	Setting string `json:"setting"`
	Level   string `json:"level"`
	// Config is the campaign's resolved configuration (method.Resolve).
	Config method.Config `json:"-"`
	Sites  []RunSite     `json:"-"`
	Rounds []RunRound    `json:"-"`
}

// RunSite is one site of a CampaignRun.
type RunSite struct {
	Name string
	// Adversarial says the site flips labels (the federation's ground
	// truth, which no part of the system reads).
	Adversarial bool
	// N is the site's number of training rows (what it reported).
	N int
}

// RunRound is one committed round in which every site took part: per
// site, in the campaign's site order, the descriptor the server used (the
// round's, or the site's last one when it computed none), the model it
// started the round from (nil when the manifest names none, as in round
// 1), the model it sent (its local model) and the model it held after the
// aggregation.
type RunRound struct {
	Round       int
	Descriptors [][]float64
	Start       [][]float64
	Local       [][]float64
	Received    [][]float64
}

// check returns an error naming what is inconsistent in the run.
func (c CampaignRun) check() error {
	k := len(c.Sites)
	if k < 2 {
		return fmt.Errorf("theory: campaign %s: %d sites, want at least 2", c.Campaign, k)
	}
	for _, r := range c.Rounds {
		if len(r.Descriptors) != k || len(r.Local) != k || len(r.Received) != k || (r.Start != nil && len(r.Start) != k) {
			return fmt.Errorf("theory: campaign %s round %d: %d descriptors, %d local and %d received models for %d sites",
				c.Campaign, r.Round, len(r.Descriptors), len(r.Local), len(r.Received), k)
		}
	}
	return nil
}

// consensus returns the mean over sites of the models they hold after the
// round: Σ_c (|C_c|/K) θ*_c, which for pTopoFL's blend (Eq. 7) is the
// consensus θ̄ = Σ_c (|C_c|/K) θ_c, and for one global model is that model.
func (r RunRound) consensus() []float64 {
	out := make([]float64, len(r.Received[0]))
	for _, m := range r.Received {
		for j, v := range m {
			out[j] += v / float64(len(r.Received))
		}
	}
	return out
}

// consensusWeights reads the weight of every site's local model in the
// round's consensus off the stored models, normalised to sum to 1 (the
// system's sum to 1 − O(1e-8)).
func (r RunRound) consensusWeights() ([]float64, Recovered, error) {
	rec, err := RecoverWeights(r.Local, r.consensus())
	if err != nil {
		return nil, rec, err
	}
	s := 0.0
	for _, w := range rec.W {
		s += w
	}
	alpha := make([]float64, len(rec.W))
	for i, w := range rec.W {
		alpha[i] = w / s
	}
	return alpha, rec, nil
}
