package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/ptopofl/ptopofl/nn"
)

// TestModelFloat32RoundTrip checks the float32 layout of deep models:
// float32 values come back bit for bit, other values come back rounded to
// the nearest float32 (RoundFloat32), equal models give equal bytes, the
// file is compressed below 4 bytes per parameter and well below the
// float64 file, and a value beyond float32's
// range is an error.
func TestModelFloat32RoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 50000 // a small network's parameters, like the anchor CNN's 28,938
	params := make([]float64, n)
	for i := range params {
		params[i] = float64(float32(rng.NormFloat64() * 0.05))
	}
	avg := make([]float64, n) // an average of float32 models is not float32
	for i := range avg {
		avg[i] = (params[i] + float64(float32(rng.NormFloat64()*0.05))) / 3
	}
	for i, tc := range []struct {
		params []float64
		want   []float64
	}{
		{params, params},         // 0: float32 values: exact
		{avg, RoundFloat32(avg)}, // 1: rounded to nearest
	} {
		m := ModelRecord{Campaign: "c", Round: 3, Site: "site1", Method: "fedavg", Kind: KindModel, Params: tc.params,
			Extra: map[string][]float64{VecControlVariate: tc.params[:10]}, Float32: true}
		b, err := EncodeModel(m)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		again, _ := EncodeModel(m)
		if !reflect.DeepEqual(b, again) {
			t.Errorf("case %d: the same model gave different bytes", i)
		}
		got, err := DecodeModel(b)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if !reflect.DeepEqual(got.Params, tc.want) || !reflect.DeepEqual(got.Extra[VecControlVariate], tc.want[:10]) {
			t.Errorf("case %d: decoded values differ from the float32 values", i)
		}
		if got.Campaign != "c" || got.Round != 3 || got.Site != "site1" || got.Kind != KindModel {
			t.Errorf("case %d: decoded record %s/%d/%s/%s", i, got.Campaign, got.Round, got.Site, got.Kind)
		}
		m.Float32 = false
		b64, err := EncodeModel(m)
		if err != nil {
			t.Fatal(err)
		}
		// Measured: 3.5 bytes per parameter against 6.2 for the float64
		// layout (Snappy), below float32's raw 4.
		if len(b) >= 4*n || 10*len(b) > 6*len(b64) {
			t.Errorf("case %d: float32 file %d bytes, float64 file %d: want below 4 bytes per parameter and 0.6 of float64", i, len(b), len(b64))
		}
		t.Logf("case %d: %d parameters: float32 %d bytes (%.2f per parameter), float64 %d bytes", i, n, len(b), float64(len(b))/n, len(b64))
	}
	bad := ModelRecord{Campaign: "c", Round: 1, Site: "s", Method: "fedavg", Kind: KindModel, Params: []float64{1, math.MaxFloat64}, Float32: true}
	if _, err := EncodeModel(bad); err == nil {
		t.Error("a value beyond float32's range encoded without error")
	}
}

// TestVectorsFloat32RoundTrip: EncodeVectors32 records (a deep site's
// state) decode through DecodeVectors to the same float32 values, records
// and names.
func TestVectorsFloat32RoundTrip(t *testing.T) {
	recs := []VectorRecord{
		{Campaign: "c", Round: 2, Site: "a", Method: "scaffold", Kind: "site_state", Vectors: map[string][]float64{"control_variate": {0.5, -0.25, 3}, "local": {}}},
		{Campaign: "c", Round: 2, Site: "b", Method: "scaffold", Kind: "site_state", Vectors: map[string][]float64{"control_variate": {1, 2}}},
	}
	b, err := EncodeVectors32(recs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeVectors(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, recs) {
		t.Errorf("decoded %+v, want %+v", got, recs)
	}
	bad := []VectorRecord{{Campaign: "c", Site: "a", Kind: "k", Vectors: map[string][]float64{"v": {math.NaN()}}}}
	if _, err := EncodeVectors32(bad); err == nil {
		t.Error("NaN encoded without error")
	}
}

// TestModel32WithoutFloat64: EncodeModel32 writes the same bytes as
// EncodeModel of the same values as float64 with Float32 set;
// DecodeModelParams32 reads them back as stored, and a float64 model
// rounded to nearest; through S3, PutModel32 and GetModelParams32 agree
// with PutModelCached and GetModelParamsCached.
func TestModel32WithoutFloat64(t *testing.T) {
	params := []float32{1.5, -2.25, 3.0000002, 1e-30, -7}
	wide := make([]float64, len(params))
	for i, v := range params {
		wide[i] = float64(v)
	}
	rec := ModelRecord{Campaign: "c", Round: 3, Site: "s1", Method: "fedavg", Kind: KindModel}
	got, err := EncodeModel32(rec, params)
	if err != nil {
		t.Fatal(err)
	}
	old := rec
	old.Params, old.Float32 = wide, true
	want, err := EncodeModel(old)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("EncodeModel32 differs from EncodeModel with Float32 (%v)", err)
	}
	back, err := DecodeModelParams32(got)
	if err != nil || !slices.Equal(back, params) {
		t.Errorf("DecodeModelParams32: %v, %v", back, err)
	}
	old.Float32, old.Params = false, []float64{0.1, 2}
	b64, err := EncodeModel(old)
	if err != nil {
		t.Fatal(err)
	}
	if back, err := DecodeModelParams32(b64); err != nil || !slices.Equal(back, []float32{0.1, 2}) {
		t.Errorf("a float64 model as float32: %v, %v", back, err)
	}
	for i, bad := range [][]float32{nil, {1, float32(math.NaN())}} {
		if _, err := EncodeModel32(rec, bad); err == nil {
			t.Errorf("case %d: no error", i)
		}
	}

	ctx := context.Background()
	ref, err := testStore.PutModel32(ctx, "m32/site1.parquet", rec, params)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(want); ref.SHA256 != hex.EncodeToString(sum[:]) {
		t.Error("PutModel32 stored other bytes than EncodeModel32's")
	}
	p32, err := testStore.GetModelParams32(ctx, ref)
	if err != nil || !slices.Equal(p32, params) {
		t.Errorf("GetModelParams32: %v, %v", p32, err)
	}
	p64, err := testStore.GetModelParamsCached(ctx, ref)
	if err != nil || !slices.Equal(p64, wide) {
		t.Errorf("GetModelParamsCached of a PutModel32 model: %v, %v", p64, err)
	}
}

// TestModel32CachedAfterRead: a float32 model read from S3 (written by
// another Store, as a site reads the server's aggregate) keeps its decoded
// copy, so the second read decodes nothing; every read is the caller's to
// change, and GetModelParamsCached widens the same copy exactly.
func TestModel32CachedAfterRead(t *testing.T) {
	ctx := context.Background()
	params := []float32{0.5, -1.25, 3.0000002}
	rec := ModelRecord{Campaign: "c", Round: 4, Site: "s2", Method: "fedavg", Kind: KindModel}
	b, err := EncodeModel32(rec, params)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := testStore.Put(ctx, "m32/read-twice.parquet", b) // uncached write
	if err != nil {
		t.Fatal(err)
	}
	k := testStore.blobKey(ref)
	if testStore.cache.getDecoded(k, testStore.reader) != nil {
		t.Fatal("Put cached a decoded copy")
	}
	p, err := testStore.GetModelParams32(ctx, ref)
	if err != nil || !slices.Equal(p, params) {
		t.Fatalf("first read: %v, %v", p, err)
	}
	if d, ok := testStore.cache.getDecoded(k, testStore.reader).([]float32); !ok || !slices.Equal(d, params) {
		t.Fatalf("after the first read the cache holds %v, want the decoded float32 parameters", testStore.cache.getDecoded(k, testStore.reader))
	}
	p[0] = 99
	if p2, err := testStore.GetModelParams32(ctx, ref); err != nil || !slices.Equal(p2, params) {
		t.Errorf("second read: %v, %v (a caller's change reached the cache?)", p2, err)
	}
	wide, err := testStore.GetModelParamsCached(ctx, ref)
	if err != nil || !slices.Equal(wide, []float64{0.5, -1.25, float64(float32(3.0000002))}) {
		t.Errorf("GetModelParamsCached: %v, %v", wide, err)
	}
}

// BenchmarkEncodeDeepAggregate encodes the model the server sends a site
// under each deep preset (EncodeModel32, as Aggregate stores it) and
// reports the object's size: deep-small and deep-d-small's CNN (28,938
// parameters), deep-d's ConvNet-2 with FEMNIST's 62 classes (6,603,710) and
// deep-c's ResNet-18 (11,173,962), with freshly initialised weights (nn's
// Init; trained weights compress a few percent differently). Under pTopoFL
// every site gets such an object under its own name (members of a cluster
// byte-identical copies made inside the bucket), so a round stores one per
// site where it stored one per cluster before: K − M more objects of this
// size (docs/how-to/deep-models.md).
//
//	go test -run '^$' -bench EncodeDeepAggregate -benchtime 1x ./store/
func BenchmarkEncodeDeepAggregate(b *testing.B) {
	for _, tc := range []struct {
		name string
		cfg  nn.Config
	}{
		{"deep-small=cnn", nn.Config{Arch: nn.CNN, Input: nn.Shape{H: 28, W: 28, C: 1}, Classes: 10}},
		{"deep-d=convnet2-62", nn.Config{Arch: nn.ConvNet2, Input: nn.Shape{H: 28, W: 28, C: 1}, Classes: 62}},
		{"deep-c=resnet18", nn.Config{Arch: nn.ResNet, Input: nn.Shape{H: 32, W: 32, C: 3}, Classes: 10, Width: 64}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			net, err := nn.New(tc.cfg)
			if err != nil {
				b.Fatal(err)
			}
			net.Init(42)
			rec := ModelRecord{Campaign: "c", Round: 1, Site: "cluster-0", Method: "ptopofl", Kind: KindAggregate, Float32: true}
			var size int
			for b.Loop() {
				enc, err := EncodeModel32(rec, net.Params())
				if err != nil {
					b.Fatal(err)
				}
				size = len(enc)
			}
			b.ReportMetric(float64(net.NumParams()), "params")
			b.ReportMetric(float64(size), "bytes/object")
			b.ReportMetric(float64(size)/float64(4*net.NumParams()), "of-raw-float32")
		})
	}
}
