package tda_test

import (
	"fmt"
	"log"
	"math"
	"math/rand/v2"

	"github.com/ptopofl/ptopofl/tda"
)

// ExampleDPDescriptor computes the DP descriptor of 60 points on a circle
// of radius 4 (half the default clipping radius, so radius 0.5 on the
// grid) with a narrow kernel and levels up to T = 0.1, and releases it
// with noise multiplier z = 1 (σ = Δ), as a site would. The circle shows
// as an H1 class: the density is about 0.074 along the circle and about
// 4e-6 in its middle (every point 0.5 = 5h away), so the H1 bar is about
// [0, 0.074] and its tent, λ1 of H1, rises with slope 1 to 0.034 at
// t = 0.04 and falls back to 0 at 0.074. The release
// adds noise of σ = Δ = √48/60 ≈ 0.115 to every number, larger than the
// tent itself: with 60 rows the loop does not survive z = 1, and the
// post-processing only clamps the noisy values into the range a noiseless
// vector can take.
func ExampleDPDescriptor() {
	const m = 60
	x := make([][]float64, m)
	for i := range x {
		a := 2 * math.Pi * float64(i) / m
		x[i] = []float64{4 * math.Cos(a), 4 * math.Sin(a)}
	}
	rows := make([]int, m) // drawn from a secret stream in a deployment
	for i := range rows {
		rows[i] = i
	}
	opt := tda.DPDescriptorOptions{Bandwidth: 0.1, LandscapeMax: 0.1}
	v, delta, err := tda.DPDescriptor(x, rows, opt)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("Δ = %.4f\n", delta)
	fmt.Printf("H1 λ1: %.3f\n", v[tda.DPH1Lambda1:tda.DPH1Lambda1+tda.DPLandscapeSteps])

	rng := rand.New(rand.NewPCG(1, 2)) // a simulation; a release uses a secure source
	noisy := make([]float64, len(v))
	for k := range v {
		noisy[k] = v[k] + delta*rng.NormFloat64()
	}
	released, err := tda.DPDescriptorVector(noisy, opt)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("released H1 λ1: %.3f\n", released[tda.DPH1Lambda1:tda.DPH1Lambda1+tda.DPLandscapeSteps])
	// Output:
	// Δ = 0.1155
	// H1 λ1: [0.010 0.020 0.030 0.034 0.024 0.014 0.004 0.000 0.000 0.000]
	// released H1 λ1: [0.010 0.000 0.030 0.040 0.050 0.057 0.070 0.080 0.033 0.000]
}

// ExampleDPLabelBlock turns the DP label statistics of 200 points of two
// separated classes into the label-aware block the server reads, with
// clean labels and with 30 % of them flipped: the ratio at
// tda.LabelMSTOffset goes from far below 1 (labels are locally pure) to
// 0.84: (1−2·0.3)² = 0.16 of the gap 1 − ratio remains, as the derivation
// in DPLabelBlock predicts. Noise is left out to show the statistic
// itself; tda.DPLabelSensitivity(200) gives the Δ it would be scaled by.
func ExampleDPLabelBlock() {
	const m = 200
	rng := rand.New(rand.NewPCG(3, 4))
	x := make([][]float64, m)
	y := make([]float64, m)
	for i := range x {
		c := float64(i % 2)
		x[i] = []float64{6*c + rng.NormFloat64(), rng.NormFloat64()}
		y[i] = c
	}
	flipped := make([]float64, m)
	copy(flipped, y)
	for i := 0; i < 60; i++ { // 30 labels of each class
		flipped[i] = 1 - flipped[i]
	}
	rows := make([]int, m)
	for i := range rows {
		rows[i] = i
	}
	opt := tda.DPLabelOptions{Radii: []float64{1.5, 2, 3, 4, 5, 6, 7, 8, 9, 10}}
	for _, labels := range [][]float64{y, flipped} {
		raw, delta, err := tda.DPLabelRaw(x, labels, rows, opt)
		if err != nil {
			log.Fatal(err)
		}
		block, err := tda.DPLabelBlock(raw, m) // noise would be added to raw first
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("Δ = %.5f, ratio = %.2f\n", delta, block[tda.LabelMSTOffset])
	}
	// Output:
	// Δ = 0.00498, ratio = 0.00
	// Δ = 0.00498, ratio = 0.84
}
