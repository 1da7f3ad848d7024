package audit

import (
	"math"
	"reflect"
	"testing"
)

func TestNoisyImages(t *testing.T) {
	opt := ImageOptions{N: 500, Height: 10, Width: 8, Classes: 5, LabelNoise: 0.2, Seed: 7}
	a, shape, err := NoisyImages(opt)
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := NoisyImages(opt)
	if !reflect.DeepEqual(a, b) {
		t.Error("the same options gave different images")
	}
	if shape.H != 10 || shape.W != 8 || shape.C != 1 || a.N != 500 || len(a.X) != 500*80 || len(a.Labels) != 500 {
		t.Fatalf("shape %+v, %d images, %d values, %d labels", shape, a.N, len(a.X), len(a.Labels))
	}
	if err := a.Validate(shape, 5); err != nil {
		t.Fatal(err)
	}
	// A relabelled image keeps its class with probability 1/5, so about
	// 0.2·4/5 = 16 % of the labels differ from i mod 5 (binomial sd 1.6 %).
	moved := 0
	for i, y := range a.Labels {
		if y != i%5 {
			moved++
		}
	}
	if f := float64(moved) / 500; math.Abs(f-0.16) > 0.05 {
		t.Errorf("%.3f of the labels moved, want 0.16 ± 0.05", f)
	}
	// Pixels centre on 0.5 with the noise's spread 0.25·2 = 0.5 and the
	// prototypes' on top.
	var sum float64
	for _, v := range a.X {
		sum += float64(v)
	}
	if m := sum / float64(len(a.X)); math.Abs(m-0.5) > 0.1 {
		t.Errorf("mean pixel %v, want about 0.5", m)
	}
	for i, o := range []ImageOptions{
		{N: 1},                   // 0
		{Height: 3},              // 1
		{Classes: 1},             // 2
		{Noise: -1},              // 3
		{Noise: math.Inf(1)},     // 4
		{LabelNoise: 1.5},        // 5
		{LabelNoise: math.NaN()}, // 6
	} {
		if _, _, err := NoisyImages(o); err == nil {
			t.Errorf("invalid %d: no error", i)
		}
	}
}
