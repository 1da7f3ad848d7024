package store

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/ptopofl/ptopofl/artifact"
)

func TestBlobCacheEvictsLeastRecentlyUsed(t *testing.T) {
	c := newBlobCache(10, 6)
	r := cacheReader{id: "me"}
	k := func(key string, n int) blobKey { return blobKey{bucket: "b", key: key, sha256: key, size: int64(n)} }
	c.add(k("a", 4), make([]byte, 4), r)
	c.add(k("b", 4), make([]byte, 4), r)
	if _, ok := c.get(k("a", 4), r); !ok { // a is now the most recent
		t.Fatal("a missing")
	}
	c.add(k("c", 4), make([]byte, 4), r) // 12 > 10: evicts b
	if _, ok := c.get(k("b", 4), r); ok {
		t.Error("b should have been evicted")
	}
	for _, key := range []string{"a", "c"} {
		if _, ok := c.get(k(key, 4), r); !ok {
			t.Errorf("%s missing", key)
		}
	}
	c.add(k("big", 7), make([]byte, 7), r) // over maxItem: not cached
	if _, ok := c.get(k("big", 7), r); ok {
		t.Error("an item over maxItem was cached")
	}
	c.add(k("short", 5), make([]byte, 4), r) // size disagrees with its ref: not cached
	if _, ok := c.get(k("short", 5), r); ok {
		t.Error("bytes whose length differs from the ref's size were cached")
	}
	if c.used != 8 {
		t.Errorf("used = %d, want 8", c.used)
	}
}

// TestModelParamsSurviveEncoding is PutModelCached's premise: decoding an encoded
// model gives back its parameters bit for bit, so caching rec.Params as the
// decoded value at put time is what a reader would decode.
func TestModelParamsSurviveEncoding(t *testing.T) {
	params := []float64{0, math.Copysign(0, -1), 1, -1.5, math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64,
		math.MaxFloat64, -math.MaxFloat64, 0.1 + 0.2, 1e-300, math.Nextafter(1, 2)}
	b, err := EncodeModel(ModelRecord{Campaign: "c", Round: 1, Site: "s", Method: "fedavg", Kind: KindModel, Params: params})
	if err != nil {
		t.Fatal(err)
	}
	m, err := DecodeModel(b)
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

// TestCachedReadsAreCopies: what the *Cached readers return is the caller's
// to change, and the uncached readers still see what S3 holds.
func TestCachedReadsAreCopies(t *testing.T) {
	ctx := context.Background()
	key := artifact.ModelKey("cached", 1, "s1")
	ref, err := testStore.PutModelCached(ctx, key, ModelRecord{Campaign: "cached", Round: 1, Site: "s1", Method: "fedavg", Kind: KindModel, Params: []float64{1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := testStore.GetModelParamsCached(ctx, ref)
	if err != nil || !slices.Equal(p, []float64{1, 2, 3}) {
		t.Fatalf("GetModelParamsCached = %v, %v", p, err)
	}
	p[0] = 99
	if p2, _ := testStore.GetModelParamsCached(ctx, ref); p2[0] != 1 {
		t.Errorf("a caller's change reached the cache: %v", p2)
	}
	// Overwrite the object behind the ref's back: Get reports it although
	// the cache still holds the old bytes.
	if _, err := testStore.PutModel(ctx, ModelRecord{Campaign: "cached", Round: 1, Site: "s1", Kind: KindModel, Params: []float64{4}}); err != nil {
		t.Fatal(err)
	}
	if _, err := testStore.Get(ctx, ref); !errors.Is(err, ErrIntegrity) {
		t.Errorf("Get after tampering: err = %v, want ErrIntegrity", err)
	}

	vkey := artifact.ControlKey("cached", 1, "s1")
	b, err := EncodeVectors([]VectorRecord{{Campaign: "cached", Round: 1, Site: "s1", Method: "scaffold", Kind: "control", Vectors: map[string][]float64{"c": {5, 6}}}})
	if err != nil {
		t.Fatal(err)
	}
	vref, err := testStore.PutCached(ctx, vkey, b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		recs, err := testStore.GetVectorsCached(ctx, vref)
		if err != nil || len(recs) != 1 || !slices.Equal(recs[0].Vectors["c"], []float64{5, 6}) {
			t.Fatalf("%d: GetVectorsCached = %v, %v", i, recs, err)
		}
		recs[0].Vectors["c"][0] = 99
	}
}

// TestSharedCacheReaders checks what the process's shared cache answers
// each Store: an entry its identity wrote or read, one whose key its
// CanRead allows, anything when it ReadsAll, and nothing else (a Store
// with neither still reads from S3, where the bucket policy decides).
func TestSharedCacheReaders(t *testing.T) {
	c := newBlobCache(1<<20, 1<<10)
	site := func(name string) cacheReader {
		return cacheReader{id: "site." + name, canRead: func(key string) bool { return artifact.SiteMayRead(name, key) }}
	}
	root := cacheReader{id: "root", readsAll: true}
	remote := cacheReader{id: "remote"} // neither: only what it touched
	k := func(key string) blobKey { return blobKey{bucket: "b", key: key, sha256: key, size: 1} }
	aModel, bModel := artifact.ModelKey("c", 1, "a"), artifact.ModelKey("c", 1, "b")
	global := artifact.AggregateKey("c", 1, "global")
	c.add(k(aModel), []byte{1}, site("a"))
	c.add(k(bModel), []byte{2}, site("b"))
	c.add(k(global), []byte{3}, root)
	cases := []struct {
		who  string
		r    cacheReader
		key  string
		want bool
	}{
		0: {"a", site("a"), aModel, true},    // wrote it
		1: {"a", site("a"), bModel, false},   // b's model: the policy denies it
		2: {"a", site("a"), global, true},    // the global model: SiteReadPatterns
		3: {"b", site("b"), aModel, false},   // a's model
		4: {"root", root, aModel, true},      // reads all
		5: {"root", root, bModel, true},      // reads all
		6: {"remote", remote, global, false}, // touched nothing yet
	}
	for i, tc := range cases {
		if _, ok := c.get(k(tc.key), tc.r); ok != tc.want {
			t.Errorf("%d: %s reads %s from the cache: %v, want %v", i, tc.who, tc.key, ok, tc.want)
		}
		if v := c.getDecoded(k(tc.key), tc.r); v != nil {
			t.Errorf("%d: a decoded value where none was set", i)
		}
	}
	// Once the remote identity has read the global model itself (from S3,
	// which checked its right), the cache answers it too.
	c.add(k(global), []byte{3}, remote)
	if _, ok := c.get(k(global), remote); !ok {
		t.Error("remote does not see the entry it read")
	}
	if _, ok := c.get(k(bModel), remote); ok {
		t.Error("remote sees b's model")
	}
}

// TestCopyCached copies a model inside the bucket: the copy has the
// source's bytes (read back from S3, without the cache, and hashed), its
// sha256 and size in the returned ref, and a read through the cache
// decodes the same parameters; a copy from another bucket is refused
// before any request.
func TestCopyCached(t *testing.T) {
	ctx := context.Background()
	params := []float64{1.5, -2, 0.25}
	src, err := testStore.PutModelCached(ctx, artifact.AggregateKey("copy", 1, "a"), ModelRecord{
		Campaign: "copy", Round: 1, Site: "cluster-0", Method: "ptopofl", Kind: KindAggregate, Params: params,
	})
	if err != nil {
		t.Fatal(err)
	}
	dst, err := testStore.CopyCached(ctx, src, artifact.AggregateKey("copy", 1, "b"))
	if err != nil {
		t.Fatal(err)
	}
	if dst.Key != artifact.AggregateKey("copy", 1, "b") || dst.SHA256 != src.SHA256 || dst.Size != src.Size {
		t.Fatalf("copy ref %+v, source %+v", dst, src)
	}
	got, b, err := testStore.GetKey(ctx, dst.Key) // S3 itself, hashed here
	if err != nil {
		t.Fatal(err)
	}
	if got != dst {
		t.Errorf("S3 holds %+v at the copy's key, the copy's ref is %+v", got, dst)
	}
	if m, err := DecodeModel(b); err != nil || !slices.Equal(m.Params, params) || m.Site != "cluster-0" {
		t.Errorf("the copy decodes to %+v, %v", m, err)
	}
	for i := range 2 {
		p, err := testStore.GetModelParamsCached(ctx, dst)
		if err != nil || !slices.Equal(p, params) {
			t.Fatalf("%d: GetModelParamsCached(copy) = %v, %v", i, p, err)
		}
		p[0] = 99 // the caller's copy: the cache must not change
	}
	other := src
	other.Bucket = "elsewhere"
	if _, err := testStore.CopyCached(ctx, other, "x"); err == nil {
		t.Error("a copy from another bucket was accepted")
	}
}
