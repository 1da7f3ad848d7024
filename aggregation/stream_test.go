package aggregation

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/learn"
)

// TestAggregateStream: for every method it streams, reading the models one
// by one gives AggregateRound's output bit for bit (over two rounds, so
// pTopoFL's second round reuses its clusters and SCAFFOLD its control
// variate), the loader is called once per site in site order, and without
// the models in memory; a loader error and a bad model are errors naming
// the site; the robust methods are refused.
func TestAggregateStream(t *testing.T) {
	sites := benchSites(7, 50)
	cfg := DefaultConfig()
	for _, m := range []learn.Method{learn.FedAvg, learn.FedProx, learn.PFedMe, learn.SCAFFOLD, learn.PTopoFL} {
		if !Streams(m) {
			t.Fatalf("%s: Streams false", m)
		}
		var state, streamState ServerState
		for round := 1; round <= 2; round++ {
			want, err := AggregateRound(RoundInput{Method: m, Round: round, Sites: sites, State: state, Config: cfg})
			if err != nil {
				t.Fatalf("%s round %d: %v", m, round, err)
			}
			bare := make([]SiteResult, len(sites))
			for i, s := range sites {
				bare[i] = SiteResult{N: s.N, Descriptor: s.Descriptor}
			}
			var calls []int
			got, err := AggregateStream(RoundInput{Method: m, Round: round, Sites: bare, State: streamState, Config: cfg},
				func(i int) ([]float64, []float64, error) {
					calls = append(calls, i)
					return sites[i].Params, sites[i].Control, nil
				})
			if err != nil {
				t.Fatalf("%s round %d: stream: %v", m, round, err)
			}
			if !reflect.DeepEqual(calls, []int{0, 1, 2, 3, 4, 5, 6}) {
				t.Errorf("%s round %d: loader calls %v, want each site once in order", m, round, calls)
			}
			if !sameBits(got.Models, want.Models) || !sameBits(got.ClusterModels, want.ClusterModels) ||
				!sameBits([][]float64{got.Control, got.State.Global, got.State.Control}, [][]float64{want.Control, want.State.Global, want.State.Control}) ||
				!reflect.DeepEqual(got.Labels, want.Labels) {
				t.Errorf("%s round %d: the streamed aggregate differs from AggregateRound's", m, round)
			}
			state, streamState = want.State, got.State
		}
	}
	load := func(fail int, bad bool) SiteLoader {
		return func(i int) ([]float64, []float64, error) {
			if i == fail && !bad {
				return nil, nil, errors.New("S3 is down")
			}
			if i == fail {
				p := append([]float64(nil), sites[i].Params...)
				p[3] = math.NaN()
				return p, sites[i].Control, nil
			}
			return sites[i].Params, sites[i].Control, nil
		}
	}
	for i, c := range []struct {
		method learn.Method
		load   SiteLoader
		want   string
	}{
		{learn.FedAvg, load(2, false), "site 2: S3 is down"},              // 0
		{learn.FedAvg, load(4, true), "site 4 model: value 3 is NaN"},     // 1
		{learn.Median, load(-1, false), "needs every site model at once"}, // 2
	} {
		_, err := AggregateStream(RoundInput{Method: c.method, Round: 1, Sites: sites, Config: cfg}, c.load)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("case %d: error %v, want %q", i, err, c.want)
		}
	}
}

// sameBits reports whether two lists of vectors are equal bit for bit.
func sameBits(a, b [][]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if math.Float64bits(a[i][j]) != math.Float64bits(b[i][j]) {
				return false
			}
		}
	}
	return true
}
