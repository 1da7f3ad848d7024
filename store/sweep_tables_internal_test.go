package store

import (
	"math"
	"slices"
	"testing"
)

// TestSweepResultsWrittenBeforeAColumn: a results table written before
// final_update_acc and a hyper-parameter column existed reads back with
// NaN and zero there and every other column intact; a table without a
// required column (the campaign name) is refused.
func TestSweepResultsWrittenBeforeAColumn(t *testing.T) {
	without := func(names ...string) []column[resultRow] {
		return slices.DeleteFunc(slices.Clone(resultColumns), func(c column[resultRow]) bool { return slices.Contains(names, c.name) })
	}
	rows := []SweepResultRow{{Sweep: "s", Campaign: "s-a", FinalAcc: 0.75, FinalUpdateAcc: 0.9}}
	rows[0].Hyperparameters.MaxClusters = 6
	b, err := encodeTable(without("final_update_acc", "max_clusters"), rows)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeSweepResults(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Campaign != "s-a" || got[0].FinalAcc != 0.75 || !math.IsNaN(got[0].FinalUpdateAcc) || got[0].Hyperparameters.MaxClusters != 0 {
		t.Errorf("older table read as %+v", got)
	}
	b, err = encodeTable(without("campaign"), rows)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeSweepResults(b); err == nil {
		t.Error("a table without the campaign column decoded")
	}
}
