package noise

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Stream is a deterministic, cryptographically strong random stream for
// one release (Secret.Stream). It is not safe for concurrent use: one
// release draws from one stream in one fixed order, which is what makes
// the release repeatable bit for bit.
type Stream struct {
	src   *rand.ChaCha8
	rng   *rand.Rand
	spare float64
	has   bool
}

func newStream(seed [32]byte) *Stream {
	src := rand.NewChaCha8(seed)
	return &Stream{src: src, rng: rand.New(src)}
}

// Uint64 returns 64 uniformly random bits.
func (s *Stream) Uint64() uint64 { return s.src.Uint64() }

// Float64 returns a uniform number in [0, 1) with 53 random bits (a
// multiple of 2⁻⁵³).
func (s *Stream) Float64() float64 { return float64(s.src.Uint64()>>11) * 0x1p-53 }

// IntN returns a uniform integer in [0, n) without modulo bias (math/rand's
// Lemire reduction); n must be positive.
func (s *Stream) IntN(n int) int { return s.rng.IntN(n) }

// Normal returns a standard normal deviate by the Box–Muller transform
// (Box & Muller 1958) of two 53-bit uniforms, u₁ ∈ (0, 1] and u₂ ∈ [0, 1):
// √(−2 ln u₁)·cos(2πu₂), and the sine branch on the next call. It never
// returns beyond √(106 ln 2) ≈ 8.57 standard deviations (the smallest u₁
// is 2⁻⁵³); that tail has probability about 1e-17.
func (s *Stream) Normal() float64 {
	if s.has {
		s.has = false
		return s.spare
	}
	u1 := float64(s.src.Uint64()>>11+1) * 0x1p-53
	u2 := float64(s.src.Uint64()>>11) * 0x1p-53
	r := math.Sqrt(-2 * math.Log(u1))
	sin, cos := math.Sincos(2 * math.Pi * u2)
	s.spare, s.has = r*sin, true
	return r * cos
}

// Sample returns k distinct indices of 0..n−1 drawn uniformly without
// replacement (the first k entries of a Fisher–Yates shuffle), in the
// order drawn. k > n or negative arguments are a programmer error.
func (s *Stream) Sample(n, k int) []int {
	if k < 0 || n < 0 || k > n {
		panic(fmt.Sprintf("noise: Sample(%d, %d)", n, k))
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	for i := 0; i < k; i++ {
		j := i + s.rng.IntN(n-i)
		idx[i], idx[j] = idx[j], idx[i]
	}
	return idx[:k:k]
}
