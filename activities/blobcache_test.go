package activities

import (
	"math"
	"testing"

	"github.com/ptopofl/ptopofl/store"
)

func TestBlobCacheEvictsLeastRecentlyUsed(t *testing.T) {
	c := newBlobCache(10, 6)
	k := func(key string, n int) blobKey { return blobKey{bucket: "b", key: key, sha256: key, size: int64(n)} }
	c.add(k("a", 4), make([]byte, 4))
	c.add(k("b", 4), make([]byte, 4))
	if _, ok := c.get(k("a", 4)); !ok { // a is now the most recent
		t.Fatal("a missing")
	}
	c.add(k("c", 4), make([]byte, 4)) // 12 > 10: evicts b
	if _, ok := c.get(k("b", 4)); ok {
		t.Error("b should have been evicted")
	}
	for _, key := range []string{"a", "c"} {
		if _, ok := c.get(k(key, 4)); !ok {
			t.Errorf("%s missing", key)
		}
	}
	c.add(k("big", 7), make([]byte, 7)) // over maxItem: not cached
	if _, ok := c.get(k("big", 7)); ok {
		t.Error("an item over maxItem was cached")
	}
	c.add(k("short", 5), make([]byte, 4)) // size disagrees with its ref: not cached
	if _, ok := c.get(k("short", 5)); ok {
		t.Error("bytes whose length differs from the ref's size were cached")
	}
	if c.used != 8 {
		t.Errorf("used = %d, want 8", c.used)
	}
}

// TestModelParamsSurviveEncoding is putModel's premise: decoding an encoded
// model gives back its parameters bit for bit, so caching rec.Params as the
// decoded value at put time is what a reader would decode.
func TestModelParamsSurviveEncoding(t *testing.T) {
	params := []float64{0, math.Copysign(0, -1), 1, -1.5, math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64,
		math.MaxFloat64, -math.MaxFloat64, 0.1 + 0.2, 1e-300, math.Nextafter(1, 2)}
	b, err := store.EncodeModel(store.ModelRecord{Campaign: "c", Round: 1, Site: "s", Method: "fedavg", Kind: store.KindModel, Params: params})
	if err != nil {
		t.Fatal(err)
	}
	m, err := store.DecodeModel(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Params) != len(params) {
		t.Fatalf("%d params decoded, %d encoded", len(m.Params), len(params))
	}
	for i := range params {
		if math.Float64bits(m.Params[i]) != math.Float64bits(params[i]) {
			t.Errorf("param %d: decoded %v (%#x), encoded %v (%#x)", i, m.Params[i], math.Float64bits(m.Params[i]), params[i], math.Float64bits(params[i]))
		}
	}
}
