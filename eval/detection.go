package eval

import (
	"fmt"
	"math"
)

// DetectionCounts tallies a detector's flags against the truth: flagged
// adversarial sites (TP), missed ones (FN), flagged honest sites (FP) and
// honest sites left alone (TN). Counts from several federations add up.
type DetectionCounts struct {
	TP, FN, FP, TN int
}

// CountDetections returns the counts of flagged against adversarial, site
// by site. The slices must have equal lengths (a programmer error panics).
func CountDetections(flagged, adversarial []bool) DetectionCounts {
	if len(flagged) != len(adversarial) {
		panic(fmt.Sprintf("eval: %d flags for %d sites", len(flagged), len(adversarial)))
	}
	var c DetectionCounts
	for k, f := range flagged {
		switch {
		case adversarial[k] && f:
			c.TP++
		case adversarial[k]:
			c.FN++
		case f:
			c.FP++
		default:
			c.TN++
		}
	}
	return c
}

// Add returns the element-wise sum of c and d (pooling federations).
func (c DetectionCounts) Add(d DetectionCounts) DetectionCounts {
	return DetectionCounts{TP: c.TP + d.TP, FN: c.FN + d.FN, FP: c.FP + d.FP, TN: c.TN + d.TN}
}

// DetectionRate returns TP/(TP+FN), the fraction of adversarial sites
// flagged; NaN when there are none (0 % adversarial).
func (c DetectionCounts) DetectionRate() float64 {
	return ratio(c.TP, c.TP+c.FN)
}

// FalsePositiveRate returns FP/(FP+TN), the fraction of honest sites
// flagged; NaN when there are none.
func (c DetectionCounts) FalsePositiveRate() float64 {
	return ratio(c.FP, c.FP+c.TN)
}

func ratio(a, b int) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}
