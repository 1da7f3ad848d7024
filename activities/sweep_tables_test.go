package activities_test

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/activities"
)

func TestSweepTablesRoundTrip(t *testing.T) {
	rows := []activities.SweepResultRow{
		{Sweep: "sw", Campaign: "sw-a", Method: "ptopofl", Seed: 1 << 63, Rounds: 3, RoundsDone: 3, State: "done",
			Beta: 0.3, Clusters: 2, Descriptor: "exact", FinalAUC: 0.81, FinalAcc: 0.7, BestAUC: 0.82, ConvRound: 2, Flagged: "site1,site5"},
		{Sweep: "sw", Campaign: "sw-b", Method: "fedavg", State: "failed", Error: "below quorum",
			FinalAUC: math.NaN(), FinalAcc: math.NaN(), BestAUC: math.NaN()},
	}
	b, err := activities.EncodeSweepResults(rows)
	if err != nil {
		t.Fatal(err)
	}
	again, err := activities.EncodeSweepResults(rows)
	if err != nil || string(again) != string(b) {
		t.Fatal("encoding is not deterministic")
	}
	got, err := activities.DecodeSweepResults(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !reflect.DeepEqual(got[0], rows[0]) || !math.IsNaN(got[1].FinalAUC) || got[1].Error != "below quorum" {
		t.Errorf("round trip: %+v", got)
	}
	j, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(j), `"final_auc":null`) || !strings.Contains(string(j), `"final_auc":0.81`) {
		t.Errorf("json: %s", j)
	}
	curves := []activities.SweepCurveRow{{Sweep: "sw", Campaign: "sw-a", Round: 1, AUC: 0.7, DescriptorsRecomputed: true, MaxDrift: 0.2}}
	cb, err := activities.EncodeSweepCurves(curves)
	if err != nil {
		t.Fatal(err)
	}
	gc, err := activities.DecodeSweepCurves(cb)
	if err != nil || !reflect.DeepEqual(gc, curves) {
		t.Errorf("curves round trip: %+v, %v", gc, err)
	}
	if _, err := activities.DecodeSweepCurves(b); err == nil {
		t.Error("a results file decoded as curves")
	}
}
