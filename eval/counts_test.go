package eval

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestCountsMatchExactMetrics: on scores that sit at bin centres (so that
// binning loses nothing), CountsAUC equals ROCAUC (sklearn's definition,
// ties averaged) and CountsAccuracy equals Accuracy, for random samples of
// every size from 1 to 60.
func TestCountsMatchExactMetrics(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for n := 1; n <= 60; n++ {
		s := make([]float64, n)
		y := make([]float64, n)
		for i := range s {
			s[i] = (float64(rng.IntN(ScoreBins)) + 0.5) / ScoreBins
			y[i] = float64(rng.IntN(2))
		}
		c, err := ScoreCounts(s, y)
		if err != nil {
			t.Fatal(err)
		}
		wantAcc, err := Accuracy(s, y)
		if err != nil {
			t.Fatal(err)
		}
		if got := CountsAccuracy(c, n); math.Abs(got-wantAcc) > 1e-12 {
			t.Errorf("n=%d: CountsAccuracy %v, Accuracy %v", n, got, wantAcc)
		}
		wantAUC, err := ROCAUC(s, y)
		if err != nil {
			t.Fatal(err)
		}
		if got := CountsAUC(c); math.Abs(got-wantAUC) > 1e-12 {
			t.Errorf("n=%d: CountsAUC %v, ROCAUC %v", n, got, wantAUC)
		}
	}
}

func TestScoreCountsSensitivity(t *testing.T) {
	for i, c := range []struct {
		scores, labels []float64
		want           []float64 // by hand
	}{
		{[]float64{0, 0.05, 0.5, 1}, []float64{0, 1, 1, 0}, []float64{1, 0, 0, 1, 1, 0, 1, 0}}, // 0: edges 0, 0.5 and 1
		{[]float64{0.49999, 0.99}, []float64{1, 0}, []float64{0, 0, 0, 1, 0, 1, 0, 0}},         // 1
	} {
		got, err := ScoreCounts(c.scores, c.labels)
		if err != nil {
			t.Fatal(err)
		}
		for b := range got {
			if got[b] != c.want[b] {
				t.Fatalf("%d: counts %v, want %v", i, got, c.want)
			}
		}
		// Dropping any one record changes one count by one: L2 distance 1.
		for r := range c.scores {
			less, _ := ScoreCounts(append(append([]float64{}, c.scores[:r]...), c.scores[r+1:]...),
				append(append([]float64{}, c.labels[:r]...), c.labels[r+1:]...))
			d := 0.0
			for b := range got {
				d += (got[b] - less[b]) * (got[b] - less[b])
			}
			if d != 1 {
				t.Errorf("%d: dropping record %d moved the counts by %v in L2², want 1", i, r, d)
			}
		}
	}
	if _, err := ScoreCounts([]float64{1.5}, []float64{0}); err == nil {
		t.Error("a score above 1 was accepted")
	}
	if got := CountsAUC(make([]float64, 2*ScoreBins)); got != 0.5 {
		t.Errorf("empty counts: AUC %v, want 0.5", got)
	}
}
