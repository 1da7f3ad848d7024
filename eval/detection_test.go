package eval

import (
	"math"
	"testing"
)

func TestDetectionCounts(t *testing.T) {
	// Sites: adversarial 0 and 3; flagged 0 and 1. TP = 1 (0), FN = 1 (3),
	// FP = 1 (1), TN = 2 (2, 4); pooled twice, the rates stay 1/2 and 1/3.
	c := CountDetections([]bool{true, true, false, false, false}, []bool{true, false, false, true, false})
	if c != (DetectionCounts{TP: 1, FN: 1, FP: 1, TN: 2}) {
		t.Fatalf("counts %+v", c)
	}
	p := c.Add(c)
	if p != (DetectionCounts{TP: 2, FN: 2, FP: 2, TN: 4}) || p.DetectionRate() != 0.5 || p.FalsePositiveRate() != 1.0/3 {
		t.Errorf("pooled %+v: detection %v FPR %v", p, p.DetectionRate(), p.FalsePositiveRate())
	}
	// No adversarial site: detection is undefined (NaN), not 0.
	h := CountDetections([]bool{false, true}, []bool{false, false})
	if !math.IsNaN(h.DetectionRate()) || h.FalsePositiveRate() != 0.5 {
		t.Errorf("honest only: detection %v FPR %v", h.DetectionRate(), h.FalsePositiveRate())
	}
	defer func() {
		if recover() == nil {
			t.Error("length mismatch did not panic")
		}
	}()
	CountDetections([]bool{true}, nil)
}
