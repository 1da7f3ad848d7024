package activities

import "testing"

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
