package store_test

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/store"
)

func TestSweepTablesRoundTrip(t *testing.T) {
	rows := []store.SweepResultRow{
		{Sweep: "sw", Campaign: "sw-a", Method: "ptopofl", Seed: 1 << 63, Rounds: 3, RoundsDone: 3, State: "done",
			Hyperparameters: method.Defaults(method.Default), FinalAUC: 0.81, FinalAcc: 0.7, BestAUC: 0.82, ConvRound: 2, Flagged: "site1,site5"},
		{Sweep: "sw", Campaign: "sw-b", Method: "fedavg", State: "failed", Error: "below quorum",
			FinalAUC: math.NaN(), FinalAcc: math.NaN(), BestAUC: math.NaN()},
	}
	b, err := store.EncodeSweepResults(rows)
	if err != nil {
		t.Fatal(err)
	}
	again, err := store.EncodeSweepResults(rows)
	if err != nil || string(again) != string(b) {
		t.Fatal("encoding is not deterministic")
	}
	got, err := store.DecodeSweepResults(b)
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
	curves := []store.SweepCurveRow{{Sweep: "sw", Campaign: "sw-a", Round: 1, AUC: 0.7, DescriptorsRecomputed: true, MaxDrift: 0.2}}
	cb, err := store.EncodeSweepCurves(curves)
	if err != nil {
		t.Fatal(err)
	}
	gc, err := store.DecodeSweepCurves(cb)
	if err != nil || !reflect.DeepEqual(gc, curves) {
		t.Errorf("curves round trip: %+v, %v", gc, err)
	}
	if _, err := store.DecodeSweepCurves(b); err == nil {
		t.Error("a results file decoded as curves")
	}
}

// TestSweepResultsHaveEveryHyperparameter checks that every declared
// hyper-parameter is a column of results.parquet, in declaration order,
// and survives the round trip (a column the table forgot would read back
// as zero).
func TestSweepResultsHaveEveryHyperparameter(t *testing.T) {
	h, err := method.Defaults(method.Paper).Apply([]method.ParamValue{{Name: "personal_steps", Value: 9}, {Name: "max_clusters", Value: 5}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := store.EncodeSweepResults([]store.SweepResultRow{{Sweep: "s", Hyperparameters: h}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := store.DecodeSweepResults(b)
	if err != nil || len(got) != 1 || got[0].Hyperparameters != h {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	names := store.SweepResultColumns()
	at := map[string]int{}
	for i, n := range names {
		at[n] = i
	}
	prev := -1
	for _, p := range method.Params {
		i, ok := at[p.Name]
		if !ok || i <= prev {
			t.Errorf("column %s: at %d (ok %v), after %d", p.Name, i, ok, prev)
		}
		prev = i
	}
}
