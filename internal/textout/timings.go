package textout

import (
	"fmt"
	"io"

	"github.com/ptopofl/ptopofl/campaign"
)

// Timings is what `starter timings --format json` prints.
type Timings struct {
	Campaign string                 `json:"campaign"`
	Rounds   []campaign.RoundTiming `json:"rounds"`
}

// WriteTimings prints a row per round and their mean: wall time and its
// split (campaign.RoundTiming.Split) in seconds, and storage plus
// orchestration as a share of the wall time.
func WriteTimings(stdout io.Writer, t Timings) {
	fmt.Fprintf(stdout, "%5s %8s %9s %11s %10s %8s %13s %9s %6s %5s %6s %6s\n",
		"round", "wall_s", "training", "descriptors", "evaluation", "storage", "orchestration", "st+orch", "events", "wfts", "acts", "locals")
	var sum [10]float64
	unknown := 0
	row := func(label string, v [10]float64) {
		fmt.Fprintf(stdout, "%5s %8.3f %9.3f %11.3f %10.3f %8.3f %13.3f %8.1f%% %6.4g %5.3g %6.4g %6.4g\n",
			label, v[0], v[1], v[2], v[3], v[4], v[5], 100*(v[4]+v[5])/v[0], v[6], v[7], v[8], v[9])
	}
	for _, r := range t.Rounds {
		tr, de, ev, st, or := r.Split()
		v := [10]float64{r.WallSeconds, tr, de, ev, st, or, float64(r.Events), float64(r.WorkflowTasks), float64(r.ActivityTasks), float64(r.LocalActivities)}
		row(fmt.Sprint(r.Round), v)
		for i := range sum {
			sum[i] += v[i]
		}
		unknown += r.StoreUnknown
	}
	if n := float64(len(t.Rounds)); n > 1 {
		for i := range sum {
			sum[i] /= n
		}
		row("mean", sum)
	}
	if unknown > 0 {
		fmt.Fprintf(stdout, "%d activities did not say how long they spent in the store (older workers, or results sealed with another key): counted as 0\n", unknown)
	}
}
