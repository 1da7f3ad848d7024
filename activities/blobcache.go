package activities

import (
	"container/list"
	"context"
	"slices"
	"sync"

	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/store"
)

// Artifacts are immutable and named by their sha256, so the bytes of an
// artifact this process wrote or read once can serve a later read of the
// same reference without another round trip to S3. Most reads of a round
// are of that kind: a site reads back the state it wrote last round and the
// model the aggregation wrote (in process, with `starter run --local`); the
// aggregation reads the models the sites wrote. What is cached is only
// ever what S3 holds under the same reference (bucket, key, sha256, size),
// derived numbers and never a site's raw rows; a read that misses goes to
// S3 and is checked against its sha256 as before.
//
// The cache holds the bytes, not decoded values: every reader decodes into
// fresh slices, so nothing a caller does can change what the next one gets.
var blobs = newBlobCache(blobCacheBytes, blobCacheMaxItem)

const (
	blobCacheBytes   = 64 << 20 // total, least recently used evicted first
	blobCacheMaxItem = 4 << 20  // larger artifacts are not cached
)

type blobKey struct {
	bucket, key, sha256 string
	size                int64
}

func blobKeyOf(st *store.Store, r store.ArtifactRef) blobKey {
	b := r.Bucket
	if b == "" {
		b = st.Bucket()
	}
	return blobKey{bucket: b, key: r.Key, sha256: r.SHA256, size: r.Size}
}

type blobEntry struct {
	k blobKey
	b []byte
	// decoded is the artifact's bytes decoded once (model parameters or
	// vector records), so a hit skips the parquet decoding too. Readers
	// get deep copies of it.
	decoded any
}

type blobCache struct {
	mu           sync.Mutex
	max, maxItem int64
	used         int64
	order        *list.List // front: most recently used *blobEntry
	items        map[blobKey]*list.Element
	hits, misses int64
}

func newBlobCache(max, maxItem int64) *blobCache {
	return &blobCache{max: max, maxItem: maxItem, order: list.New(), items: map[blobKey]*list.Element{}}
}

func (c *blobCache) get(k blobKey) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[k]; ok {
		c.order.MoveToFront(e)
		c.hits++
		return e.Value.(*blobEntry).b, true
	}
	c.misses++
	return nil, false
}

func (c *blobCache) add(k blobKey, b []byte) {
	if int64(len(b)) > c.maxItem || int64(len(b)) != k.size {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[k]; ok {
		c.order.MoveToFront(e)
		return
	}
	c.items[k] = c.order.PushFront(&blobEntry{k: k, b: b})
	c.used += int64(len(b))
	for c.used > c.max {
		e := c.order.Back()
		be := e.Value.(*blobEntry)
		c.order.Remove(e)
		delete(c.items, be.k)
		c.used -= int64(len(be.b))
	}
}

func (c *blobCache) getDecoded(k blobKey) any {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[k]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*blobEntry).decoded
	}
	return nil
}

// setDecoded attaches v to k's entry, if k is still cached.
func (c *blobCache) setDecoded(k blobKey, v any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[k]; ok {
		e.Value.(*blobEntry).decoded = v
	}
}

// getBlob is st.Get through the cache.
func getBlob(ctx context.Context, st *store.Store, ref pipeline.ArtifactRef) ([]byte, error) {
	r := toStore(ref)
	k := blobKeyOf(st, r)
	if b, ok := blobs.get(k); ok {
		return b, nil
	}
	b, err := st.Get(ctx, r) // checks size and sha256
	if err != nil {
		return nil, err
	}
	blobs.add(k, b)
	return b, nil
}

// putBlob is st.Put, remembering what was written. The caller must not
// change data afterwards.
func putBlob(ctx context.Context, st *store.Store, key string, data []byte) (store.ArtifactRef, error) {
	ref, err := st.Put(ctx, key, data)
	if err != nil {
		return ref, err
	}
	blobs.add(blobKeyOf(st, ref), data)
	return ref, nil
}

// putModel encodes rec, writes it at key like putBlob, and caches its
// parameters as the decoded value, so a reader in this process (the
// aggregation reading a site's model, a site reading its aggregate) skips
// the parquet decoding too. The plain encoding stores each float64's bits,
// so what getParams would decode is exactly rec.Params.
func putModel(ctx context.Context, st *store.Store, key string, rec store.ModelRecord) (store.ArtifactRef, error) {
	b, err := store.EncodeModel(rec)
	if err != nil {
		return store.ArtifactRef{}, err
	}
	ref, err := putBlob(ctx, st, key, b)
	if err != nil {
		return ref, err
	}
	blobs.setDecoded(blobKeyOf(st, ref), cloneFloats(rec.Params))
	return ref, nil
}

// getDecoded returns what ref decodes to, from the cache or by reading and
// decoding it (and then caching a private copy); clone makes the copies,
// so no caller ever shares memory with the cache or with another caller.
func getDecoded[T any](ctx context.Context, st *store.Store, ref pipeline.ArtifactRef, decode func([]byte) (T, error), clone func(T) T) (T, error) {
	k := blobKeyOf(st, toStore(ref))
	if v, ok := blobs.getDecoded(k).(T); ok {
		return clone(v), nil
	}
	var zero T
	b, err := getBlob(ctx, st, ref)
	if err != nil {
		return zero, err
	}
	v, err := decode(b)
	if err != nil {
		return zero, err
	}
	blobs.setDecoded(k, clone(v))
	return v, nil
}

func cloneFloats(v []float64) []float64 { return slices.Clone(v) }

func cloneVectorRecords(recs []store.VectorRecord) []store.VectorRecord {
	if recs == nil {
		return nil
	}
	out := make([]store.VectorRecord, len(recs))
	for i, r := range recs {
		out[i] = r
		if r.Vectors != nil {
			out[i].Vectors = make(map[string][]float64, len(r.Vectors))
			for name, v := range r.Vectors {
				out[i].Vectors[name] = slices.Clone(v)
			}
		}
	}
	return out
}
