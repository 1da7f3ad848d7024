package search

import (
	"errors"
	"math"
	"reflect"
	"testing"
)

func mixedSpace(t *testing.T) Space {
	t.Helper()
	s, err := NewSpace([]Dimension{
		{Name: "beta", Uniform: []float64{0, 1}},
		{Name: "lr", LogUniform: []float64{0.001, 0.1}},
		{Name: "clusters", Int: []float64{1, 4}},
		{Name: "n_sub", Int: []float64{20, 320}, Log: true},
		{Name: "descriptor", Choice: []any{"exact", "triangle"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The generator is pinned: splitmix64's first output from state 0 is the
// reference value of Vigna's splitmix64.c (0xe220a8397b1dcdaf); xoshiro256**
// from state {1, 2, 3, 4} gives 11520, 0, 1509978240,
// 1215971899390074240, the reference outputs that the Rust crate
// rand_xoshiro tests against; newRNG(42, 7)'s outputs are this
// implementation's, recorded so that any change to the seeding (and so to
// every sweep's suggestions) fails here.
func TestRNGPinned(t *testing.T) {
	x := uint64(0)
	if got := splitmix64(&x); got != 0xe220a8397b1dcdaf {
		t.Errorf("splitmix64(0) = %#x, want 0xe220a8397b1dcdaf", got)
	}
	ref := rng{s: [4]uint64{1, 2, 3, 4}}
	if got := []uint64{ref.next(), ref.next(), ref.next(), ref.next()}; !reflect.DeepEqual(got, []uint64{11520, 0, 1509978240, 1215971899390074240}) {
		t.Errorf("xoshiro256** from {1, 2, 3, 4}: %d, want 11520 0 1509978240 1215971899390074240", got)
	}
	r := newRNG(42, 7)
	got := []uint64{r.next(), r.next(), r.next()}
	want := pinnedRNG
	if !reflect.DeepEqual(got, want) {
		t.Errorf("newRNG(42, 7) first outputs %#x, want %#x", got, want)
	}
}

// pinnedRNG are newRNG(42, 7)'s first three outputs, recorded from this
// implementation.
var pinnedRNG = []uint64{0x4150452ab869a892, 0x63980fc0383ce41b, 0x6276ee9c4552e56d}

// The i-th suggestion depends only on the seed and i: the same calls in
// another order give the same configurations, and another seed others.
func TestSuggestRandomDeterministic(t *testing.T) {
	s := mixedSpace(t)
	const n = 20
	forward := make([]Config, n)
	for i := range n {
		forward[i] = SuggestRandom(s, 7, i)
	}
	for i := n - 1; i >= 0; i-- {
		if got := SuggestRandom(s, 7, i); !reflect.DeepEqual(got, forward[i]) {
			t.Errorf("index %d: %s called in reverse order, %s in order", i, got, forward[i])
		}
	}
	same := 0
	for i := range n {
		if reflect.DeepEqual(SuggestRandom(s, 8, i), forward[i]) {
			same++
		}
	}
	if same > 0 {
		t.Errorf("seeds 7 and 8 gave %d identical configurations of %d", same, n)
	}
}

// Every draw lies in its dimension, integers are integers, and over 2000
// draws each end of every integer range and every choice comes up.
func TestSuggestRandomRanges(t *testing.T) {
	s := mixedSpace(t)
	seen := map[string]bool{}
	for i := range 2000 {
		c := SuggestRandom(s, 1, i)
		if !s.Contains(c) {
			t.Fatalf("index %d: %s is not in the space", i, c)
		}
		seen["clusters="+fmtNum(c[2].Value)] = true
		seen["n_sub="+fmtNum(c[3].Value)] = true
		seen[c[4].Text] = true
	}
	for _, k := range []string{"clusters=1", "clusters=4", "n_sub=20", "n_sub=320", "exact", "triangle"} {
		if !seen[k] {
			t.Errorf("%s never drawn in 2000 suggestions", k)
		}
	}
}

// fromUnit at the ends of [0, 1): Optuna's RandomSampler maps u = 0 to lo
// and keeps floats below hi (nextafter); integers are widened by ½ so that
// lo and hi are as likely as the others.
func TestFromUnit(t *testing.T) {
	s := mixedSpace(t)
	below1 := math.Nextafter(1, 0)
	for i, test := range []struct {
		dim     int
		u, want float64
	}{
		{0, 0, 0},                         // 0: uniform lo
		{0, below1, math.Nextafter(1, 0)}, // 1: uniform stays below hi
		{0, 0.25, 0.25},                   // 2
		{1, 0.5, math.Exp((math.Log(0.001) + math.Log(0.1)) / 2)}, // 3: log midpoint 0.01
		{2, 0, 1},      // 4: [0.5, 4.5) → 1
		{2, 0.125, 1},  // 5: 0.5+0.5 = 1.0 → floor(1.0−1+0.5)+1 = 1
		{2, 0.2499, 1}, // 6: x = 1.4996 → 1
		{2, 0.25, 2},   // 7: x = 1.5 rounds up (floor(x−lo+0.5))
		{2, below1, 4}, // 8
		{4, 0.49, 0},   // 9: choice index
		{4, 0.5, 1},    // 10
	} {
		if got := s.Dims[test.dim].fromUnit(test.u); math.Abs(got-test.want) > 1e-15*math.Max(1, math.Abs(test.want)) {
			t.Errorf("case %d: fromUnit(%v) in %s = %v, want %v", i, test.u, s.Dims[test.dim].Name, got, test.want)
		}
	}
}

func TestSuggestGrid(t *testing.T) {
	s, err := NewSpace([]Dimension{
		{Name: "clusters", Choice: []any{1, 2}},
		{Name: "beta", Choice: []any{0.1, 0.2, 0.3}},
	})
	if err != nil {
		t.Fatal(err)
	}
	// itertools.product order: the last dimension varies fastest.
	want := []string{
		"clusters=1 beta=0.1", "clusters=1 beta=0.2", "clusters=1 beta=0.3",
		"clusters=2 beta=0.1", "clusters=2 beta=0.2", "clusters=2 beta=0.3",
	}
	for i, w := range want {
		c, err := SuggestGrid(s, i)
		if err != nil || c.String() != w {
			t.Errorf("index %d: %s, %v; want %s", i, c, err, w)
		}
	}
	if _, err := SuggestGrid(s, 6); !errors.Is(err, ErrGridExhausted) {
		t.Errorf("index 6 of 6: error %v, want ErrGridExhausted", err)
	}
	if _, err := Suggest(mixedSpace(t), StrategyGrid, nil, 0, 0); err == nil {
		t.Error("grid over a continuous space: no error")
	}
}
