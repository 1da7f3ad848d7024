package audit

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/ptopofl/ptopofl/privacy/noise"
)

// The second words of the PCG generators each experiment draws from, so
// that two experiments with the same seed never share a stream.
const (
	streamInit uint64 = iota + 0x61756469 // "audi"
	streamMembership
	streamCanary
	streamRecords
	streamImages
)

// Defaults shared by the experiments: the repository's (method/params.go)
// DP clip, δ and the one-sided confidence of the audit bounds.
const (
	DefaultClip       = 1.5
	DefaultDelta      = 1e-5
	DefaultConfidence = 0.95
)

// siteSecret returns s, or, for the zero Secret, a fixed secret derived
// from seed (SHA-256 of a label and the seed): a simulated site whose
// noise the experiment can repeat. A real site's secret is never needed.
func siteSecret(s noise.Secret, seed uint64) noise.Secret {
	if s.Valid() {
		return s
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h := sha256.Sum256(append([]byte("ptopofl/audit/secret/v1"), b[:]...))
	out, err := noise.SecretFromBytes(h[:])
	if err != nil {
		panic("audit: " + err.Error()) // not reached: the length is right
	}
	return out
}

// keyInput packs up to four numbers into a noise.Key's Input, which
// names one trial of an experiment.
func keyInput(v ...uint64) [32]byte {
	if len(v) > 4 {
		panic("audit: keyInput takes at most four numbers")
	}
	var in [32]byte
	for i, x := range v {
		binary.LittleEndian.PutUint64(in[8*i:], x)
	}
	return in
}

// pcg returns a PCG generator for seed and one of the stream constants.
func pcg(seed, stream uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, stream)) }

// workers returns w, or GOMAXPROCS when w ≤ 0.
func workers(w int) int {
	if w <= 0 {
		return runtime.GOMAXPROCS(0)
	}
	return w
}

// parallel calls fn(i) for i in [0, n) on w goroutines (0: GOMAXPROCS),
// handing out contiguous blocks of indices, and returns the error of the
// smallest i that failed, so the error does not depend on the scheduling.
// Each fn must write only its own results.
func parallel(n, w int, fn func(i int) error) error {
	w = min(workers(w), max(n, 1))
	block := max(1, n/(16*w))
	errs := make([]error, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				lo := int(next.Add(int64(block))) - block
				if lo >= n {
					return
				}
				for i := lo; i < min(lo+block, n); i++ {
					errs[i] = fn(i)
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// checkDP validates the privacy settings shared by the configurations:
// ε ≥ 0 finite (0: no DP), δ in (0, 1) and a positive finite clip. name
// prefixes the field names.
func checkDP(name string, eps, delta, clip float64) error {
	switch {
	case !(eps >= 0) || math.IsInf(eps, 1):
		return fmt.Errorf("audit: %s.Epsilon = %v: want a finite ε ≥ 0 (0: no DP)", name, eps)
	case !(delta > 0 && delta < 1):
		return fmt.Errorf("audit: %s.Delta = %v: want δ in (0, 1)", name, delta)
	case !(clip > 0) || math.IsInf(clip, 1):
		return fmt.Errorf("audit: %s.Clip = %v: want a positive finite clipping norm", name, clip)
	}
	return nil
}

// orDefault returns v, or def when v is 0.
func orDefault[T int | float64](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}
