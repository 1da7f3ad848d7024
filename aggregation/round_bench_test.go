package aggregation

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ptopofl/ptopofl/learn"
)

func benchSites(k, np int) []SiteResult {
	rng := rand.New(rand.NewPCG(7, 11))
	sites := make([]SiteResult, k)
	for i := range sites {
		p := make([]float64, np)
		for j := range p {
			p[j] = rng.NormFloat64()
		}
		d := make([]float64, 48)
		for j := range d {
			d[j] = rng.Float64() * 50
		}
		sites[i] = SiteResult{Params: p, Control: p, N: 50 + rng.IntN(200), Descriptor: d}
	}
	return sites
}

// BenchmarkAggregateRound aggregates 1,000 sites with 48-number descriptors
// and 10,000-parameter models. "ptopofl/first" includes the first-round
// clustering; "ptopofl/later" reuses the clusters (trust and drift are
// recomputed every round).
func BenchmarkAggregateRound(b *testing.B) {
	const k, np = 1000, 10000
	sites := benchSites(k, np)
	cfg := DefaultConfig()
	first, err := AggregateRound(RoundInput{Method: learn.PTopoFL, Round: 1, Sites: sites, Config: cfg})
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		method learn.Method
		state  ServerState
		round  int
	}{
		{"ptopofl/first", learn.PTopoFL, ServerState{}, 1},
		{"ptopofl/later", learn.PTopoFL, first.State, 2},
		{"fedavg", learn.FedAvg, ServerState{}, 1},
		{"scaffold", learn.SCAFFOLD, ServerState{}, 1},
	} {
		b.Run(fmt.Sprintf("%s/K=%d/P=%d", tc.name, k, np), func(b *testing.B) {
			for b.Loop() {
				if _, err := AggregateRound(RoundInput{Method: tc.method, Round: tc.round, Sites: sites, State: tc.state, Config: cfg}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("ptopofl/auto-M/K=1000", func(b *testing.B) {
		c := cfg
		c.M = 0
		for b.Loop() {
			if _, err := AggregateRound(RoundInput{Method: learn.PTopoFL, Round: 1, Sites: sites, Config: c}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
