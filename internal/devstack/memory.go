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
// The limit counts the Go memory that is not live heap (goroutine stacks,
// the runtime's own structures, heap spans not yet returned) on top of the
// heap's allowance, since the runtime holds the total to it: a limit of
// heapFactor × live heap alone sat below a 200-site campaign's total,
// and its collector ran without pause (2.94 s a round instead of 1.01 s
// without the budget, make bench-pipeline part 1, SQLite).
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
		debug.SetMemoryLimit(memoryLimit(liveHeap()) + nonHeap())
		go func() {
			for range time.Tick(budgetEvery) {
				debug.SetMemoryLimit(memoryLimit(liveHeap()) + nonHeap())
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

// nonHeap is the Go memory the runtime holds against its limit beyond
// the heap's live objects: /memory/classes/total minus
// /memory/classes/heap/objects and /memory/classes/heap/released (which
// the limit does not count), that is goroutine stacks, the runtime's
// metadata and the heap spans not yet returned to the system, in bytes.
func nonHeap() int64 {
	s := []metrics.Sample{
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
	}
	metrics.Read(s)
	for _, m := range s {
		if m.Value.Kind() != metrics.KindUint64 {
			return 0
		}
	}
	return max(0, int64(s[0].Value.Uint64())-int64(s[1].Value.Uint64())-int64(s[2].Value.Uint64()))
}
