package privacy

import (
	"fmt"
	"math"
)

// Accountant names the method that composes a ledger into (ε, δ).
type Accountant string

// The accountants. Auto (the empty name) picks one per ledger with
// DefaultAccountant.
const (
	Auto Accountant = ""
	GDP  Accountant = "gdp" // exact Gaussian DP; only for events with Q = 1
	RDP  Accountant = "rdp" // Rényi DP of the Poisson-subsampled Gaussian
)

// Validate reports an accountant name that is none of Auto, "auto", GDP or
// RDP.
func (a Accountant) Validate() error {
	switch a {
	case Auto, "auto", GDP, RDP:
		return nil
	}
	return fmt.Errorf("privacy: accountant %q: want %s or %s", string(a), GDP, RDP)
}

// Event is one kind of Gaussian release in a ledger, repeated Count times:
// a DP-SGD step (Q = batch/records), a full-batch DP-GD step or a noised
// descriptor or metric (Q = 1).
type Event struct {
	Z     float64 // noise multiplier σ/Δ: the noise's standard deviation over the query's L2 sensitivity
	Q     float64 // Poisson sampling rate of the records; 1 = every record
	Count int     // repetitions
}

// Validate reports the first field of e that is out of range, by name:
// Z must be a positive finite number, Q in (0, 1] and Count ≥ 0.
func (e Event) Validate() error {
	switch {
	case !(e.Z > 0) || math.IsInf(e.Z, 1):
		return fmt.Errorf("Z = %v: must be a positive finite number", e.Z)
	case !(e.Q > 0 && e.Q <= 1):
		return fmt.Errorf("Q = %v: must be in (0, 1]", e.Q)
	case e.Count < 0:
		return fmt.Errorf("Count = %d: must be ≥ 0", e.Count)
	}
	return nil
}

// Spent is what a ledger has spent: it is (Epsilon, Delta)-DP by
// Accountant. Order is the Rényi order that attained Epsilon (RDP only; 0
// otherwise).
type Spent struct {
	Epsilon    float64
	Delta      float64
	Accountant Accountant
	Order      float64
}

// DefaultAccountant returns the accountant for events: GDP, which is exact,
// when every event with Count > 0 sees every record (Q = 1), otherwise RDP.
func DefaultAccountant(events []Event) Accountant {
	for _, e := range events {
		if e.Count > 0 && e.Q != 1 {
			return RDP
		}
	}
	return GDP
}

// Epsilon composes events and returns the ε they spend at delta with acc
// (Auto: DefaultAccountant). Events with Count 0 are ignored, and a ledger
// with none left spends ε = 0.
//
// GDP composes the events exactly into μ = √(Σ Count/Z²) (Dong, Roth, Su
// 2019, Corollary 3.3) and returns GaussianEpsilon(μ, delta); it fails on
// an event with Q < 1. RDP adds the events' SampledGaussianRDP on
// RDPOrders and converts with RDPToEpsilon; Spent.Order is the optimal
// order. ε is +Inf only when the noise is so small that the RDP or μ
// overflows.
//
// It fails, naming the event and field, on an invalid event, and on a delta
// outside (0, 1) or an unknown accountant.
func Epsilon(events []Event, delta float64, acc Accountant) (Spent, error) {
	if err := acc.Validate(); err != nil {
		return Spent{}, err
	}
	if err := checkDelta(delta); err != nil {
		return Spent{}, err
	}
	for i, e := range events {
		if err := e.Validate(); err != nil {
			return Spent{}, fmt.Errorf("privacy: event %d: %w", i, err)
		}
	}
	if acc == Auto || acc == "auto" {
		acc = DefaultAccountant(events)
	}
	spent := Spent{Delta: delta, Accountant: acc}
	if acc == GDP {
		var sum float64 // Σ Count/Z²
		for i, e := range events {
			if e.Count > 0 && e.Q != 1 {
				return Spent{}, fmt.Errorf("privacy: event %d: Q = %v: the GDP accountant needs Q = 1 (use %s)", i, e.Q, RDP)
			}
			sum += float64(e.Count) / (e.Z * e.Z)
		}
		var err error
		spent.Epsilon, err = GaussianEpsilon(math.Sqrt(sum), delta)
		return spent, err
	}
	orders := RDPOrders()
	total := make([]float64, len(orders))
	spends := false
	for _, e := range events {
		if e.Count == 0 {
			continue
		}
		spends = true
		rdp, err := SampledGaussianRDP(e.Q, e.Z, e.Count, orders)
		if err != nil {
			return Spent{}, err // not reached: the events are valid
		}
		for k := range total {
			total[k] += rdp[k]
		}
	}
	if !spends {
		return spent, nil
	}
	var err error
	spent.Epsilon, spent.Order, err = RDPToEpsilon(orders, total, delta)
	return spent, err
}
