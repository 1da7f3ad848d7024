package nn

import (
	"sync"
	"sync/atomic"
)

// chunksPerWorker is how many pieces parallelFor cuts its range into per
// worker. Workers take pieces as they become free, so a goroutine that the
// OS deschedules (the cores are shared) holds up a quarter of its share, not
// all of it.
const chunksPerWorker = 4

// parallelFor calls fn on contiguous ranges [lo, hi) that cover [0, n),
// on at most workers goroutines (the caller's included). Callers use it only
// for work whose result does not depend on the split or on which goroutine
// runs a range: each index writes its own outputs.
func parallelFor(workers, n int, fn func(lo, hi int)) {
	if workers > n {
		workers = n
	}
	if workers <= 1 {
		if n > 0 {
			fn(0, n)
		}
		return
	}
	chunks := min(n, chunksPerWorker*workers)
	var next atomic.Int64
	work := func() {
		for {
			c := int(next.Add(1)) - 1
			if c >= chunks {
				return
			}
			fn(n*c/chunks, n*(c+1)/chunks)
		}
	}
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work()
		}()
	}
	work()
	wg.Wait()
}

// grow returns buf resliced to n elements, reallocating only if its
// capacity is too small. The contents are not cleared.
func grow(buf []float32, n int) []float32 {
	if cap(buf) < n {
		return make([]float32, n)
	}
	return buf[:n]
}

// addVecGo is the portable addVec.
func addVecGo(dst, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] += v
	}
}
