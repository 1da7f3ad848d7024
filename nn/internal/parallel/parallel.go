// Package parallel runs independent pieces of work on a few goroutines,
// handing the pieces out as goroutines become free. It is for work whose
// result does not depend on which goroutine runs which piece: package nn
// and nn/sgemm use it only where each piece writes its own outputs, which is
// what keeps their results independent of the number of threads.
package parallel

import (
	"sync"
	"sync/atomic"
)

// Run calls piece(i) once for each i in [0, pieces), on at most workers
// goroutines (the caller's included), and returns when all have returned.
// Pieces are taken in increasing order as goroutines become free, so a
// goroutine that the OS deschedules (the cores are shared) holds up one
// piece, not a fixed share.
func Run(workers, pieces int, piece func(i int)) {
	workers = min(workers, pieces)
	if workers <= 1 {
		for i := range pieces {
			piece(i)
		}
		return
	}
	var next atomic.Int64
	work := func() {
		for {
			i := int(next.Add(1)) - 1
			if i >= pieces {
				return
			}
			piece(i)
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
