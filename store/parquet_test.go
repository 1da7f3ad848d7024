package store

import (
	"bytes"
	"math"
	"reflect"
	"strings"
	"testing"
)

// awkward holds float64 values whose bits a lossy path would change.
var awkward = []float64{0, math.Copysign(0, -1), 1, -1, math.Pi, math.SmallestNonzeroFloat64, math.MaxFloat64, -math.MaxFloat64, 1e-310, 0.1 + 0.2}

func sameBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

func testDescriptor() DescriptorRecord {
	desc := make([]float64, 48)
	for i := range desc {
		desc[i] = float64(i)/7 - 3
	}
	copy(desc, awkward)
	return DescriptorRecord{
		Campaign: "c1", Round: 3, Site: "site-a", Method: "ptopofl",
		Descriptor: desc,
		H0:         []Pair{{0, 0.5}, {0, 1.25}, {0, math.Inf(1)}},
		H1:         []Pair{},
	}
}

func TestDescriptorRoundTrip(t *testing.T) {
	d := testDescriptor()
	b, err := EncodeDescriptor(d)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeDescriptor(b)
	if err != nil {
		t.Fatal(err)
	}
	if !sameBits(got.Descriptor, d.Descriptor) {
		t.Errorf("descriptor changed:\n got %v\nwant %v", got.Descriptor, d.Descriptor)
	}
	if !reflect.DeepEqual(got, d) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, d)
	}
	// Without pairs, H0 and H1 stay nil.
	d.H0, d.H1 = nil, nil
	b, _ = EncodeDescriptor(d)
	got, err = DecodeDescriptor(b)
	if err != nil || got.H0 != nil || got.H1 != nil {
		t.Errorf("no pairs: got H0 %v H1 %v err %v, want nil nil nil", got.H0, got.H1, err)
	}
}

func TestModelRoundTrip(t *testing.T) {
	m := ModelRecord{
		Campaign: "c1", Round: 14, Site: "cluster-0", Method: "scaffold", Kind: KindAggregate,
		Params: awkward,
		Extra:  map[string][]float64{VecControlVariate: {1e-300, -2}, VecPersonal: awkward[:3], "empty": {}},
	}
	b, err := EncodeModel(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeModel(b)
	if err != nil {
		t.Fatal(err)
	}
	if !sameBits(got.Params, m.Params) || !sameBits(got.Extra[VecPersonal], m.Extra[VecPersonal]) {
		t.Errorf("bits changed: got %v", got)
	}
	if !reflect.DeepEqual(got, m) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, m)
	}
	m.Extra = nil
	b, _ = EncodeModel(m)
	if got, _ := DecodeModel(b); got.Extra != nil {
		t.Errorf("Extra = %v, want nil", got.Extra)
	}
}

func TestModelRejectsNonFinite(t *testing.T) {
	for i, tc := range []struct {
		m    ModelRecord
		want string
	}{
		{ModelRecord{Campaign: "c", Site: "s1", Kind: KindModel, Params: []float64{1, math.NaN()}}, "params[1] is NaN"},
		{ModelRecord{Campaign: "c", Site: "s1", Kind: KindModel, Params: []float64{math.Inf(-1)}}, "params[0] is -Inf"},
		{ModelRecord{Campaign: "c", Site: "s1", Kind: KindModel, Params: []float64{1}, Extra: map[string][]float64{VecControlVariate: {0, 0, math.NaN()}}}, "control_variate[2] is NaN"},
		{ModelRecord{Campaign: "c", Site: "s1", Kind: KindModel}, "no parameters"},
		{ModelRecord{Campaign: "c", Site: "s1", Kind: "weights", Params: []float64{1}}, `kind "weights"`},
	} {
		_, err := EncodeModel(tc.m)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%d: err = %v, want one containing %q", i, err, tc.want)
		}
	}
	// NaN is rejected in any vector record, not only models.
	_, err := EncodeVectors([]VectorRecord{{Site: "s1", Vectors: map[string][]float64{"x": {math.NaN()}}}})
	if err == nil || !strings.Contains(err.Error(), `vector "x" has NaN at index 0`) {
		t.Errorf("EncodeVectors with NaN: err = %v", err)
	}
}

func TestVectorsManyRecords(t *testing.T) {
	recs := []VectorRecord{
		{Campaign: "c", Round: 1, Site: "a", Method: "m", Kind: KindModel, Vectors: map[string][]float64{"params": {1, 2}}},
		{Campaign: "c", Round: 1, Site: "b", Method: "m", Kind: KindModel, Vectors: map[string][]float64{"params": {3}, "z": {}, "a": {4}}},
	}
	b, err := EncodeVectors(recs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeVectors(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, recs) {
		t.Errorf("got %+v\nwant %+v", got, recs)
	}
}

func TestMetricsRoundTrip(t *testing.T) {
	rows := []MetricsRecord{
		{Campaign: "c", Round: 2, Site: "a", Method: "fedavg", AUC: 0.8125, Acc: 0.75, N: 64},
		{Campaign: "c", Round: 2, Site: "b", Method: "fedavg", AUC: math.NaN(), Acc: 1, N: 3},
	}
	b, err := EncodeMetrics(rows)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeMetrics(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != rows[0] || !math.IsNaN(got[1].AUC) || got[1].Acc != 1 || got[1].N != 3 {
		t.Errorf("metrics: got %+v, want %+v", got, rows)
	}
}

func TestEncodingIsDeterministic(t *testing.T) {
	first, err := EncodeDescriptor(testDescriptor())
	if err != nil {
		t.Fatal(err)
	}
	// Many encodings: map iteration order differs between them.
	m := ModelRecord{Campaign: "c", Site: "s", Kind: KindModel, Params: awkward, Extra: map[string][]float64{"a": {1}, "b": {2}, "c": {3}, "d": {4}}}
	firstModel, _ := EncodeModel(m)
	for i := range 20 {
		b, _ := EncodeDescriptor(testDescriptor())
		if !bytes.Equal(b, first) {
			t.Fatalf("descriptor encoding %d differs from the first", i)
		}
		b, _ = EncodeModel(m)
		if !bytes.Equal(b, firstModel) {
			t.Fatalf("model encoding %d differs from the first", i)
		}
	}
	if bytes.Contains(first, []byte("parquet-go version")) {
		t.Error("file footer carries the library version; created_by must be fixed")
	}
}

func TestDecodeRejectsWrongSchema(t *testing.T) {
	b, _ := EncodeMetrics([]MetricsRecord{{Campaign: "c", Site: "a"}})
	_, err := DecodeModel(b)
	if err == nil || !strings.Contains(err.Error(), "expected (campaign utf8") {
		t.Errorf("DecodeModel(metrics file): err = %v", err)
	}
	if _, err := DecodeMetrics([]byte("not parquet")); err == nil {
		t.Error("DecodeMetrics(garbage) = nil error")
	}
}

func BenchmarkEncodeDecodeDescriptor(b *testing.B) {
	d := testDescriptor()
	d.H0 = make([]Pair, 200)
	d.H1 = make([]Pair, 50)
	for b.Loop() {
		buf, err := EncodeDescriptor(d)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := DecodeDescriptor(buf); err != nil {
			b.Fatal(err)
		}
	}
}
