package campaign

import (
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
)

// TestCheckPrivacy: verify holds every manifest's privacy record to the
// budget and to the records before it, in the order rounds were charged
// (attempt, then round).
func TestCheckPrivacy(t *testing.T) {
	rec := func(round, attempt int, budget float64, eps ...float64) StoredManifest {
		p := &pipeline.RoundPrivacy{Delta: 1e-5, Budget: budget}
		for i, e := range eps {
			p.Sites = append(p.Sites, pipeline.SitePrivacy{Site: string(rune('a' + i)), Epsilon: e, EpsilonRound: 0.1, EpsilonTrain: e, EpsilonTest: e / 2})
		}
		return StoredManifest{Round: round, Attempt: attempt, Key: "k", Manifest: pipeline.RoundManifest{Round: round, Privacy: p}}
	}
	for i, c := range []struct {
		ms   []StoredManifest
		want string // "" for no problem, else a word of the detail
	}{
		{[]StoredManifest{rec(1, 1, 8, 1, 1), rec(2, 1, 8, 2, 2)}, ""},                            // 0
		{[]StoredManifest{rec(1, 1, 8, 1, 1), rec(2, 1, 8, 9, 2)}, "exceeds the budget"},          // 1
		{[]StoredManifest{rec(1, 1, 8, 2, 2), rec(2, 1, 8, 1, 2)}, "below"},                       // 2: the ledger lost releases
		{[]StoredManifest{rec(2, 2, 8, 3, 3), rec(1, 1, 8, 1, 1), rec(2, 1, 8, 2, 2)}, ""},        // 3: attempt 2's round 2 after attempt 1's
		{[]StoredManifest{rec(2, 2, 8, 1.5, 3), rec(1, 1, 8, 1, 1), rec(2, 1, 8, 2, 2)}, "below"}, // 4
		{[]StoredManifest{rec(1, 1, 0, 20, 20)}, ""},                                              // 5: no budget
	} {
		got := checkPrivacy(c.ms)
		switch {
		case c.want == "" && len(got) > 0:
			t.Errorf("%d: problems %+v, want none", i, got)
		case c.want != "" && (len(got) == 0 || !strings.Contains(got[0].Detail, c.want)):
			t.Errorf("%d: problems %+v, want one saying %q", i, got, c.want)
		}
	}
}

func TestPlanPrivacyNeedsCounts(t *testing.T) {
	h := method.Defaults(method.Default)
	h.DP, h.DPEpsilon = method.DPRecord, 3
	s := pipeline.CampaignSpec{Campaign: "x", Method: learn.FedAvg, Rounds: 5, Sites: []pipeline.Site{{Name: "a"}, {Name: "b"}}, Bucket: "b", Hyperparameters: h}.WithDefaults()
	if _, _, err := PlanPrivacy(s, nil, nil); err == nil || !strings.Contains(err.Error(), "site_records") {
		t.Errorf("no counts: %v", err)
	}
	given := map[string]SiteRecordCounts{"a": {NTrain: 100, NTest: 20}, "b": {NTrain: 80, NTest: 20}}
	got, budgets, err := PlanPrivacy(s, nil, given)
	if err != nil {
		t.Fatal(err)
	}
	if got.Sites[1].NTrain != 80 || got.Hyperparameters.DPNoise == 0 || len(budgets) != 2 || budgets[0].Epsilon.Epsilon > 3 {
		t.Errorf("planned spec %+v, budgets %+v", got.Sites, budgets)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("planned spec invalid: %v", err)
	}
	if _, _, err := PlanPrivacy(s, nil, map[string]SiteRecordCounts{"a": {1, 1}, "b": {1, 1}, "zz": {1, 1}}); err == nil || !strings.Contains(err.Error(), `"zz"`) {
		t.Errorf("unknown site: %v", err)
	}
	off := s
	off.Hyperparameters = method.Defaults(method.Default)
	if _, _, err := PlanPrivacy(off, nil, given); err == nil || !strings.Contains(err.Error(), "applies only") {
		t.Errorf("site_records without dp: %v", err)
	}
}
