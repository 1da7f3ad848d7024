package activities

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ptopofl/ptopofl/dataset"
)

func TestSiteDataCacheFollowsTheFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(split, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "s0_"+split+".csv"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("train", "x0,x1,y\n0.1,0.2,0\n0.9,0.8,1\n0.2,0.1,0\n0.7,0.9,1\n")
	write("test", "x0,x1,y\n0.1,0.3,0\n0.8,0.8,1\n")
	s := NewSite("s0", dir, nil, dataset.SiteOptions{})

	c1, err := s.loadCached(s.dataDir)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := s.loadCached(s.dataDir)
	if err != nil {
		t.Fatal(err)
	}
	if c1 != c2 {
		t.Error("unchanged files were read again")
	}

	// Same size, new content, at once (within the timestamp resolution).
	write("test", "x0,x1,y\n0.1,0.4,0\n0.8,0.8,1\n")
	c3, err := s.loadCached(s.dataDir)
	if err != nil {
		t.Fatal(err)
	}
	if c3 == c1 || c3.data.Test.X[0][1] != 0.4 {
		t.Errorf("a same-size rewrite was not picked up: test row 0 = %v", c3.data.Test.X[0])
	}

	// Old timestamps (as after cp -p), content changed: the ctime and the
	// hash of a recently checked cache still catch it.
	write("test", "x0,x1,y\n0.1,0.5,0\n0.8,0.8,1\n")
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "s0_test.csv"), old, old); err != nil {
		t.Fatal(err)
	}
	c4, err := s.loadCached(s.dataDir)
	if err != nil {
		t.Fatal(err)
	}
	if c4.data.Test.X[0][1] != 0.5 {
		t.Errorf("a rewrite with an old mtime was not picked up: test row 0 = %v", c4.data.Test.X[0])
	}

	// A broken file is reported, not served from the cache.
	write("test", "")
	if _, err := s.loadCached(s.dataDir); err == nil {
		t.Error("an empty test file was not reported")
	}
}
