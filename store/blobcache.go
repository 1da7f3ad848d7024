package store

import (
	"container/list"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/minio/minio-go/v7"

	"github.com/ptopofl/ptopofl/artifact"
)

// Artifacts are immutable and named by their sha256, so the bytes of an
// artifact this Store wrote or read once can serve a later read of the same
// reference without another round trip to S3. Most reads of a round are of
// that kind: a site reads back the state it wrote last round and the model
// the aggregation wrote (in process, with `starter run --local`, where every
// worker shares one Store); the aggregation reads the models the sites
// wrote. What is cached is only ever what S3 holds under the same reference
// (bucket, key, sha256, size), and a read that misses goes to S3 and is
// checked against its sha256 as always.
//
// Only the *Cached methods use the cache. Get, GetKey and the typed readers
// always go to S3, so a check of what a bucket holds (starter verify) is
// never answered from memory.
//
// The cache is shared by every Store of the process that talks to the same
// endpoint and bucket: in `starter run --local` and the experiments, the
// server worker and every site worker live in one process, each with its
// own S3 identity and so its own Store. A Store is answered from the cache
// only what its identity may read: an entry it wrote or read itself, an
// entry whose key Config.CanRead allows (a site's store: the keys the
// bucket policy lets it read, artifact.SiteMayRead), or anything when
// Config.ReadsAll says the identity reads the whole bucket (the root
// account of the local stack). A Store configured with neither sees only
// its own entries, as when each Store had a cache of its own.

const (
	blobCacheBytes   = 64 << 20 // total, least recently used evicted first
	blobCacheMaxItem = 4 << 20  // larger artifacts are not cached
)

type blobKey struct {
	bucket, key, sha256 string
	size                int64
}

type blobEntry struct {
	k blobKey
	b []byte
	// readers are the access keys of the Stores that wrote or read the
	// entry.
	readers map[string]struct{}
	// decoded is the artifact's bytes decoded once (model parameters or
	// vector records), so a hit skips the parquet decoding too. Readers
	// get deep copies of it.
	decoded any
}

// blobCache is a least-recently-used cache of artifact bytes, bounded in
// total bytes and per item; it is safe for concurrent use.
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

// cacheReader is a Store as the cache sees it: its identity and what it
// may read (see the top of this file).
type cacheReader struct {
	id       string
	readsAll bool
	canRead  func(key string) bool
}

// may reports whether r may be answered e.
func (r cacheReader) may(e *blobEntry) bool {
	if r.readsAll {
		return true
	}
	if _, ok := e.readers[r.id]; ok {
		return true
	}
	return r.canRead != nil && r.canRead(e.k.key)
}

// entry returns k's entry if r may read it, marking it recently used.
// Callers hold c.mu.
func (c *blobCache) entry(k blobKey, r cacheReader) *blobEntry {
	el, ok := c.items[k]
	if !ok {
		return nil
	}
	e := el.Value.(*blobEntry)
	if !r.may(e) {
		return nil
	}
	c.order.MoveToFront(el)
	return e
}

func (c *blobCache) get(k blobKey, r cacheReader) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entry(k, r); e != nil {
		c.hits++
		return e.b, true
	}
	c.misses++
	return nil, false
}

// add caches b under k as written or read by r.
func (c *blobCache) add(k blobKey, b []byte, r cacheReader) {
	if int64(len(b)) > c.maxItem || int64(len(b)) != k.size {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		c.order.MoveToFront(el)
		el.Value.(*blobEntry).readers[r.id] = struct{}{}
		return
	}
	c.items[k] = c.order.PushFront(&blobEntry{k: k, b: b, readers: map[string]struct{}{r.id: {}}})
	c.used += int64(len(b))
	for c.used > c.max {
		e := c.order.Back()
		be := e.Value.(*blobEntry)
		c.order.Remove(e)
		delete(c.items, be.k)
		c.used -= int64(len(be.b))
	}
}

// alias caches, under dst, the bytes and decoded value cached under src,
// if r may read them: dst is a server-side copy of src. The two entries
// share the bytes and the decoded value, which no reader changes (readers
// get copies of decoded values); the shared bytes are counted twice, so
// the bound stays conservative.
func (c *blobCache) alias(src, dst blobKey, r cacheReader) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entry(src, r)
	if e == nil || src.sha256 != dst.sha256 || src.size != dst.size {
		return
	}
	if el, ok := c.items[dst]; ok {
		c.order.MoveToFront(el)
		el.Value.(*blobEntry).readers[r.id] = struct{}{}
		return
	}
	c.items[dst] = c.order.PushFront(&blobEntry{k: dst, b: e.b, decoded: e.decoded, readers: map[string]struct{}{r.id: {}}})
	c.used += int64(len(e.b))
	for c.used > c.max {
		el := c.order.Back()
		be := el.Value.(*blobEntry)
		c.order.Remove(el)
		delete(c.items, be.k)
		c.used -= int64(len(be.b))
	}
}

func (c *blobCache) getDecoded(k blobKey, r cacheReader) any {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entry(k, r); e != nil {
		return e.decoded
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

// cached reports whether k has an entry (one too large to cache has none).
func (c *blobCache) cached(k blobKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.items[k]
	return ok
}

func (s *Store) blobKey(r artifact.Ref) blobKey {
	b := r.Bucket
	if b == "" {
		b = s.bucket
	}
	return blobKey{bucket: b, key: r.Key, sha256: r.SHA256, size: r.Size}
}

// sharedCaches holds the process's blob cache of each S3 endpoint (by
// host and scheme) and bucket.
var sharedCaches sync.Map // string → *blobCache

func sharedCache(endpoint string, secure bool, bucket string) *blobCache {
	k := fmt.Sprintf("%t\x00%s\x00%s", secure, endpoint, bucket)
	if c, ok := sharedCaches.Load(k); ok {
		return c.(*blobCache)
	}
	c, _ := sharedCaches.LoadOrStore(k, newBlobCache(blobCacheBytes, blobCacheMaxItem))
	return c.(*blobCache)
}

// GetCached is Get through the Store's cache of recently written and read
// artifacts. The caller must not change the bytes it gets.
func (s *Store) GetCached(ctx context.Context, ref artifact.Ref) ([]byte, error) {
	defer timed(ctx)()
	k := s.blobKey(ref)
	if b, ok := s.cache.get(k, s.reader); ok {
		return b, nil
	}
	b, err := s.Get(ctx, ref) // checks size and sha256
	if err != nil {
		return nil, err
	}
	s.cache.add(k, b, s.reader)
	return b, nil
}

// PutCached is Put, remembering what was written for GetCached. The caller
// must not change data afterwards.
func (s *Store) PutCached(ctx context.Context, key string, data []byte) (artifact.Ref, error) {
	defer timed(ctx)()
	ref, err := s.Put(ctx, key, data)
	if err != nil {
		return ref, err
	}
	s.cache.add(s.blobKey(ref), data, s.reader)
	return ref, nil
}

// PutModelCached encodes rec, writes it at key like PutCached, and caches
// its parameters as the decoded value, so a reader through this Store (the
// aggregation reading a site's model, a site reading its aggregate) skips
// the parquet decoding too. The plain encoding stores each float64's bits,
// so what GetModelParamsCached would decode is exactly rec.Params (rounded
// to float32 for a Float32 record).
func (s *Store) PutModelCached(ctx context.Context, key string, rec ModelRecord) (artifact.Ref, error) {
	defer timed(ctx)()
	b, err := EncodeModel(rec)
	if err != nil {
		return artifact.Ref{}, err
	}
	return s.putModelBytes(ctx, key, b, func() any {
		if rec.Float32 {
			return RoundFloat32(rec.Params)
		}
		return slices.Clone(rec.Params)
	})
}

// putModelBytes writes an encoded model at key like PutCached and attaches
// decoded() to its cache entry. A model too large to cache (a deep one of
// millions of parameters) gets no decoded copy: it would be garbage at
// once, so decoded is not even called.
func (s *Store) putModelBytes(ctx context.Context, key string, b []byte, decoded func() any) (artifact.Ref, error) {
	ref, err := s.PutCached(ctx, key, b)
	if err != nil {
		return ref, err
	}
	if k := s.blobKey(ref); s.cache.cached(k) {
		s.cache.setDecoded(k, decoded())
	}
	return ref, nil
}

// CopyCached copies the object src points at to key inside the bucket (S3
// CopyObject: the bytes do not travel through this process) and returns
// the copy's ref, which has src's sha256 and size. What the cache holds
// for src it then holds for the copy too, so a reader of the copy through
// this Store skips S3 and the decoding as for src. A copy is how the server
// gives several sites the same model, each under its own name
// (artifact.RoundKeys.Aggregate), uploading it once.
func (s *Store) CopyCached(ctx context.Context, src artifact.Ref, key string) (artifact.Ref, error) {
	defer timed(ctx)()
	if src.Bucket != "" && src.Bucket != s.bucket {
		return artifact.Ref{}, fmt.Errorf("store: copy %s: it is in bucket %s, this store writes bucket %s", src.Key, src.Bucket, s.bucket)
	}
	_, err := s.client.CopyObject(ctx,
		minio.CopyDestOptions{Bucket: s.bucket, Object: key},
		minio.CopySrcOptions{Bucket: s.bucket, Object: src.Key})
	if err != nil {
		return artifact.Ref{}, fmt.Errorf("store: copy %s to %s: %w", src.Key, key, err)
	}
	ref := artifact.Ref{Bucket: s.bucket, Key: key, SHA256: src.SHA256, Size: src.Size}
	s.cache.alias(s.blobKey(src), s.blobKey(ref), s.reader)
	return ref, nil
}

// GetModelParamsCached returns the parameters of the model ref points at,
// from the cache or by reading and decoding it. The slice is the caller's.
func (s *Store) GetModelParamsCached(ctx context.Context, ref artifact.Ref) ([]float64, error) {
	defer timed(ctx)()
	if p, ok := s.cache.getDecoded(s.blobKey(ref), s.reader).([]float32); ok {
		return widen(p), nil // a float32 model's decoding is exactly this
	}
	return getDecoded(ctx, s, ref, func(b []byte) ([]float64, error) {
		m, err := DecodeModel(b)
		if err != nil {
			return nil, fmt.Errorf("decode %s: %w", ref.Key, err)
		}
		return m.Params, nil
	}, slices.Clone[[]float64])
}

// GetModelParams32 returns the parameters of the model ref points at as
// float32 (DecodeModelParams32): what a deep site reads, without the
// float64 copy GetModelParamsCached makes. A cached decoded copy is used
// when there is one, and a model read from S3 keeps one: a deep site reads
// each aggregate twice, to score it and to train from it next round.
func (s *Store) GetModelParams32(ctx context.Context, ref artifact.Ref) ([]float32, error) {
	defer timed(ctx)()
	k := s.blobKey(ref)
	switch p := s.cache.getDecoded(k, s.reader).(type) {
	case []float32:
		return slices.Clone(p), nil
	case []float64:
		return narrow(p), nil
	}
	b, err := s.GetCached(ctx, ref)
	if err != nil {
		return nil, err
	}
	p, err := DecodeModelParams32(b)
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", ref.Key, err)
	}
	if s.cache.cached(k) {
		s.cache.setDecoded(k, slices.Clone(p))
	}
	return p, nil
}

// PutModel32 writes a Float32 model record whose parameters are float32
// (EncodeModel32) at key through the cache, as PutModelCached does for
// float64 parameters.
func (s *Store) PutModel32(ctx context.Context, key string, rec ModelRecord, params []float32) (artifact.Ref, error) {
	defer timed(ctx)()
	b, err := EncodeModel32(rec, params)
	if err != nil {
		return artifact.Ref{}, err
	}
	return s.putModelBytes(ctx, key, b, func() any { return slices.Clone(params) })
}

// narrow returns p rounded to float32s.
func narrow(p []float64) []float32 {
	out := make([]float32, len(p))
	for i, v := range p {
		out[i] = float32(v)
	}
	return out
}

// widen returns p as float64s.
func widen(p []float32) []float64 {
	out := make([]float64, len(p))
	for i, v := range p {
		out[i] = float64(v)
	}
	return out
}

// GetVectorsCached returns the vector records ref points at, from the cache
// or by reading and decoding them. The records are the caller's.
func (s *Store) GetVectorsCached(ctx context.Context, ref artifact.Ref) ([]VectorRecord, error) {
	defer timed(ctx)()
	return getDecoded(ctx, s, ref, func(b []byte) ([]VectorRecord, error) {
		recs, err := DecodeVectors(b)
		if err != nil {
			return nil, fmt.Errorf("decode %s: %w", ref.Key, err)
		}
		return recs, nil
	}, cloneVectorRecords)
}

// getDecoded returns what ref decodes to, from the cache or by reading and
// decoding it (and then caching a private copy); clone makes the copies,
// so no caller ever shares memory with the cache or with another caller.
func getDecoded[T any](ctx context.Context, s *Store, ref artifact.Ref, decode func([]byte) (T, error), clone func(T) T) (T, error) {
	k := s.blobKey(ref)
	if v, ok := s.cache.getDecoded(k, s.reader).(T); ok {
		return clone(v), nil
	}
	var zero T
	b, err := s.GetCached(ctx, ref)
	if err != nil {
		return zero, err
	}
	v, err := decode(b)
	if err != nil {
		return zero, err
	}
	s.cache.setDecoded(k, clone(v))
	return v, nil
}

func cloneVectorRecords(recs []VectorRecord) []VectorRecord {
	if recs == nil {
		return nil
	}
	out := make([]VectorRecord, len(recs))
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
