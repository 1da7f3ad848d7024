package theory

import (
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/aggregation"
)

// TestThm35BrokenAggregation: Thm 3.5's verdict comes from the weights the
// aggregation applied, read off the models, so an aggregation that ignores
// the trust weights (every t_k clipped to 1) changes it. Healthcare
// federation of seed 1000 (the adversarial experiment's first), sites 1
// and 5 flipping 30 % of their labels, pTopoFL under the default preset
// (labelled detector, τ 1.8), 3 rounds in memory with the system's site
// update and aggregation:
//   - intact: the premise holds (Δ > 0 on the label score g) and the
//     adversaries' share is below their FedAvg share in every round, but
//     above the theorem's bound (trust is floored at 0.05 and is 1 up to
//     z = 1, where the bound's weights e^{−λδ} keep falling);
//   - trust ignored: the premise is the same (it reads descriptors), the
//     share is no longer below FedAvg's in every round.
func TestThm35BrokenAggregation(t *testing.T) {
	fed := adversarialFederation(t, 1000, []int{1, 5})
	cfg := ptopoflConfig(t, "labelled")
	intact := runInMemory(t, fed, cfg, 3, nil)
	broken := runInMemory(t, fed, cfg, 3, func(in aggregation.RoundInput) (aggregation.RoundOutput, error) {
		in.Config.TrustMin, in.Config.TrustMax = 1, 1
		return aggregation.AggregateRound(in)
	})
	var verdicts []string
	for i, run := range []CampaignRun{intact, broken} {
		rounds, err := MeasureThm35(run)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rounds {
			t.Logf("run %d round %d: Δ %.4f λ %.3g share %.4f (worst honest %.4f) FedAvg %.4f bound %.4g residual %.1e cond %.3g", i, r.Round, r.Delta, r.Lambda, r.Share, r.WorstHonest, r.FedAvgShare, r.Bound, r.Residual, r.Cond)
			if r.Residual > 1e-9 {
				t.Errorf("run %d round %d: weight recovery residual %v", i, r.Round, r.Residual)
			}
		}
		s := SummariseThm35(rounds)
		if len(s) != 1 {
			t.Fatalf("%d summaries", len(s))
		}
		verdicts = append(verdicts, s[0].Verdict())
		t.Logf("run %d: %s", i, s[0].Verdict())
	}
	if verdicts[0] == verdicts[1] {
		t.Errorf("breaking the aggregation left the verdict at %q", verdicts[0])
	}
	if !strings.Contains(verdicts[0], "below FedAvg's on every one") || strings.Contains(verdicts[1], "below FedAvg's on every one") {
		t.Errorf("verdicts %q / %q", verdicts[0], verdicts[1])
	}
}
