package nn

import "github.com/ptopofl/ptopofl/nn/internal/parallel"

// chunksPerWorker is how many pieces parallelFor cuts its range into per
// worker: a descheduled goroutine then holds up a quarter of its share.
const chunksPerWorker = 4

// parallelFor calls fn on contiguous ranges [lo, hi) that cover [0, n),
// on at most workers goroutines. Callers use it only for work whose result
// does not depend on the split or on which goroutine runs a range: each
// index writes its own outputs.
func parallelFor(workers, n int, fn func(lo, hi int)) {
	if workers <= 1 || n <= 1 {
		if n > 0 {
			fn(0, n)
		}
		return
	}
	chunks := min(n, chunksPerWorker*workers)
	parallel.Run(workers, chunks, func(c int) { fn(n*c/chunks, n*(c+1)/chunks) })
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
