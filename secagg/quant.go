package secagg

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Quantize maps each coordinate of x to an integer in [0, 2ᵇ − 1]: it is
// clipped to [−c, c], scaled to y = (x + c)·(2ᵇ − 1)/(2c), and rounded down
// or up with the probability that makes the result's mean y (stochastic
// rounding: up with probability y − ⌊y⌋), the coin drawn from rnd. It
// returns the integers and the number of coordinates clipped. A value that
// is not finite is an error naming its position.
func Quantize(x []float64, c float64, b int, rnd rand.Source) ([]uint64, int, error) {
	top := float64(uint64(1)<<b - 1)
	scale := top / (2 * c)
	out := make([]uint64, len(x))
	clipped := 0
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, 0, fmt.Errorf("secagg: coordinate %d of the input is not finite", i)
		}
		if v > c {
			v, clipped = c, clipped+1
		} else if v < -c {
			v, clipped = -c, clipped+1
		}
		y := (v + c) * scale
		f := math.Floor(y)
		// A uniform draw in [0, 1) with 53 bits.
		u := float64(rnd.Uint64()>>11) * 0x1p-53
		if u < y-f {
			f++
		}
		out[i] = uint64(min(f, top))
	}
	return out, clipped, nil
}

// Dequantize inverts Quantize for a sum of n members' quantised vectors:
// Σx ≈ s·2c/(2ᵇ − 1) − n·c for each coordinate s of the sum (exact up to
// each member's rounding, at most 2c/(2ᵇ − 1) per member and zero in the
// mean, and the clipping).
func Dequantize(sum []uint64, n int, c float64, b int) []float64 {
	step := 2 * c / float64(uint64(1)<<b-1)
	out := make([]float64, len(sum))
	off := float64(n) * c
	for i, s := range sum {
		out[i] = float64(s)*step - off
	}
	return out
}

// Signed reads a word of a sum modulo 2ᵐ (m = modBits) as the integer in
// [−2ᵐ⁻¹, 2ᵐ⁻¹) it stands for: a sum of integer inputs (MaskInts) whose
// true value lies in that range.
func Signed(w uint64, modBits int) int64 {
	if modBits == 64 {
		return int64(w)
	}
	if w >= 1<<(modBits-1) {
		return int64(w) - 1<<modBits
	}
	return int64(w)
}

// Unsigned is the word modulo 2ᵐ that stands for the integer v (Signed's
// inverse for v in [−2ᵐ⁻¹, 2ᵐ⁻¹)).
func Unsigned(v int64, modBits int) uint64 {
	if modBits == 64 {
		return uint64(v)
	}
	return uint64(v) & (1<<modBits - 1)
}
