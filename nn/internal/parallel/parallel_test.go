package parallel

import (
	"sync/atomic"
	"testing"
)

func TestRunCallsEachPieceOnce(t *testing.T) {
	for _, c := range []struct{ workers, pieces int }{{0, 5}, {1, 5}, {2, 0}, {2, 1}, {3, 100}, {8, 3}} {
		counts := make([]atomic.Int32, c.pieces)
		Run(c.workers, c.pieces, func(i int) { counts[i].Add(1) })
		for i := range counts {
			if n := counts[i].Load(); n != 1 {
				t.Errorf("workers %d, pieces %d: piece %d ran %d times", c.workers, c.pieces, i, n)
			}
		}
	}
}
