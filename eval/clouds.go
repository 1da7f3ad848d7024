package eval

import (
	"fmt"
	"math"
)

// BlobsOptions are the settings of Blobs. The defaults (DefaultBlobsOptions)
// are the point clouds of the persistent-homology benchmarks and of
// testdata/ph: four Gaussian blobs in R^20.
type BlobsOptions struct {
	// Seed drives every random draw.
	Seed uint64
	// N is the number of points, D their dimension.
	N, D int
	// K is the number of blobs; point i belongs to blob i mod K.
	K int
	// Sigma is the standard deviation of a point around its blob's centre,
	// Spread that of the centres around the origin.
	Sigma, Spread float64
}

// DefaultBlobsOptions returns n points in R^20 from 4 blobs with unit
// standard deviation around centres drawn with standard deviation 1.5.
func DefaultBlobsOptions(n int, seed uint64) BlobsOptions {
	return BlobsOptions{Seed: seed, N: n, D: 20, K: 4, Sigma: 1, Spread: 1.5}
}

// Validate reports what is wrong with o, naming the field.
func (o BlobsOptions) Validate() error {
	switch {
	case o.N < 1:
		return fmt.Errorf("blobs options: N = %d, want at least 1 point", o.N)
	case o.D < 1:
		return fmt.Errorf("blobs options: D = %d, want at least 1 dimension", o.D)
	case o.K < 1:
		return fmt.Errorf("blobs options: K = %d, want at least 1 blob", o.K)
	case !(o.Sigma >= 0) || math.IsInf(o.Sigma, 0) || !(o.Spread >= 0) || math.IsInf(o.Spread, 0):
		return fmt.Errorf("blobs options: Sigma = %v, Spread = %v, want finite non-negative deviations", o.Sigma, o.Spread)
	}
	return nil
}

// Blobs returns a mixture of K isotropic Gaussian blobs in R^D, the point
// clouds the Vietoris–Rips benchmarks time (a stand-in for sites'
// embeddings). The K centres are drawn first, coordinate by coordinate,
// from N(0, Spread²); then point i is its blob's centre (i mod K) plus
// N(0, Sigma²) noise in every coordinate. Every coordinate is rounded to
// the nearest float32, so a float32 reader (Ripser) and a float64 reader
// (ours, GUDHI) read exactly the same numbers from the file.
//
// The draws reproduce the generator that wrote testdata/ph (Python's
// random.Random(Seed), its Mersenne Twister, with a Box–Muller transform
// over random() that keeps its spare deviate), so the same options give the
// same clouds bit for bit; that is why this generator does not use
// math/rand/v2 like the scenario generators.
func Blobs(o BlobsOptions) ([][]float64, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	rng := newPyRandom(o.Seed)
	centres := make([][]float64, o.K)
	for c := range centres {
		centres[c] = make([]float64, o.D)
		for j := range centres[c] {
			centres[c][j] = rng.gauss(0, o.Spread)
		}
	}
	pts := make([][]float64, o.N)
	for i := range pts {
		c := centres[i%o.K]
		p := make([]float64, o.D)
		for j := range p {
			p[j] = float64(float32(c[j] + rng.gauss(0, o.Sigma)))
		}
		pts[i] = p
	}
	return pts, nil
}

// pyRandom is Python's random.Random: MT19937 seeded by init_by_array with
// the seed's 32-bit words, random() from two outputs (53 bits), and the
// Box–Muller gauss of the tools that wrote testdata/ph.
type pyRandom struct {
	mt    [624]uint32
	i     int
	spare float64
	has   bool
}

func newPyRandom(seed uint64) *pyRandom {
	key := []uint32{uint32(seed)}
	if hi := uint32(seed >> 32); hi != 0 {
		key = append(key, hi)
	}
	r := &pyRandom{}
	r.initGenrand(19650218)
	i, j := 1, 0
	k := max(len(r.mt), len(key))
	for ; k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ ((r.mt[i-1] ^ (r.mt[i-1] >> 30)) * 1664525)) + key[j] + uint32(j)
		i++
		j++
		if i >= len(r.mt) {
			r.mt[0] = r.mt[len(r.mt)-1]
			i = 1
		}
		if j >= len(key) {
			j = 0
		}
	}
	for k = len(r.mt) - 1; k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ ((r.mt[i-1] ^ (r.mt[i-1] >> 30)) * 1566083941)) - uint32(i)
		i++
		if i >= len(r.mt) {
			r.mt[0] = r.mt[len(r.mt)-1]
			i = 1
		}
	}
	r.mt[0] = 0x80000000
	r.i = len(r.mt)
	return r
}

func (r *pyRandom) initGenrand(s uint32) {
	r.mt[0] = s
	for i := 1; i < len(r.mt); i++ {
		r.mt[i] = 1812433253*(r.mt[i-1]^(r.mt[i-1]>>30)) + uint32(i)
	}
}

func (r *pyRandom) uint32() uint32 {
	const n, m = 624, 397
	if r.i >= n {
		for k := 0; k < n; k++ {
			y := r.mt[k]&0x80000000 | r.mt[(k+1)%n]&0x7fffffff
			v := r.mt[(k+m)%n] ^ y>>1
			if y&1 != 0 {
				v ^= 0x9908b0df
			}
			r.mt[k] = v
		}
		r.i = 0
	}
	y := r.mt[r.i]
	r.i++
	y ^= y >> 11
	y ^= y << 7 & 0x9d2c5680
	y ^= y << 15 & 0xefc60000
	y ^= y >> 18
	return y
}

// random is a float64 in [0, 1) with 53 random bits, as Python's random().
func (r *pyRandom) random() float64 {
	a, b := r.uint32()>>5, r.uint32()>>6
	return (float64(a)*67108864 + float64(b)) * (1.0 / 9007199254740992)
}

// gauss is a normal deviate by Box–Muller over random(), the second of
// each pair kept for the next call.
func (r *pyRandom) gauss(mu, sigma float64) float64 {
	if r.has {
		r.has = false
		return mu + sigma*r.spare
	}
	u1 := r.random()
	for u1 <= 0 {
		u1 = r.random()
	}
	u2 := r.random()
	rad := math.Sqrt(-2 * math.Log(u1))
	r.spare, r.has = rad*math.Sin(2*math.Pi*u2), true
	return mu + sigma*rad*math.Cos(2*math.Pi*u2)
}
