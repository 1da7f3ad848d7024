package devstack

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// The memory budget of a process that runs the stack (a devstack, or a
// `starter --local` with the stack, its workers and every site in it).
//
// The embedded Temporal server allocates a great deal of short-lived
// memory for every request while the live heap of a tabular campaign
// stays near 70 MB, so at Go's default GOGC of 100 the collector runs
// very often: about a tenth of all CPU time of a local campaign. At
// gcPercent the heap may grow to four times what is live between
// collections, which made the paper table through the pipeline 8-14 %
// faster, but a process then held 400-500 MB for 70 MB of live data.
// heapFloor caps that: the collector also runs when the process's Go
// memory reaches max(heapFloor, heapFactor × live heap), a soft limit
// (debug.SetMemoryLimit) that follows the live heap, so a deep campaign
// whose models keep hundreds of megabytes live gets room in proportion
// instead of a collector that never stops. `starter experiment table1
// --local --seeds 1 --preset paper` peaks at about 270 MB instead of 390
// MB (with releaseStartupPages) for the same CPU time within the noise
// of this 2-core machine; scripts/bench-table1.py measures it.
const (
	gcPercent  = 300
	heapFloor  = 160 << 20
	heapFactor = 1.5
)

// budgetEvery is how often the soft limit follows the live heap; the live
// heap changes only at a collection, which a tabular campaign does every
// second or so.
const budgetEvery = 250 * time.Millisecond

var budgetOnce sync.Once

// tuneGC applies gcPercent and the memory budget unless the user set GOGC
// or GOMEMLIMIT: the process's collector settings are theirs to choose.
// The budget's goroutine runs for the rest of the process (one per
// process, however many stacks it starts).
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	budgetOnce.Do(func() {
		debug.SetMemoryLimit(memoryLimit(liveHeap()))
		go func() {
			for range time.Tick(budgetEvery) {
				debug.SetMemoryLimit(memoryLimit(liveHeap()))
			}
		}()
	})
}

// memoryLimit is the soft memory limit for a live heap of live bytes.
func memoryLimit(live uint64) int64 {
	return max(heapFloor, int64(heapFactor*float64(live)))
}

// liveHeap is the heap the last collection found live, in bytes (0 before
// the first).
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
