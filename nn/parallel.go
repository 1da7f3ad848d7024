package nn

import "sync"

// parallelFor calls fn on contiguous ranges [lo, hi) that cover [0, n),
// at most workers of them at once. Callers use it only for work whose result
// does not depend on the split: each index writes its own outputs.
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
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := n*w/workers, n*(w+1)/workers
		if lo == hi {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(lo, hi)
		}()
	}
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
