package dataset

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestSiteCacheFollowsTheFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(split, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "s0_"+split+".csv"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("train", "x0,x1,y\n0.1,0.2,0\n0.9,0.8,1\n0.2,0.1,0\n0.7,0.9,1\n")
	write("test", "x0,x1,y\n0.1,0.3,0\n0.8,0.8,1\n")
	derived := 0
	s := NewSiteCache(dir, "s0", SiteOptions{}, func(d *SiteData) (int, error) { derived++; return derived, nil })

	c1, err := s.loadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := s.loadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c1 != c2 {
		t.Error("unchanged files were read again")
	}
	if c1.Derived != 1 || derived != 1 {
		t.Errorf("derived value %d after %d derivations, want 1 and 1", c1.Derived, derived)
	}

	// Same size, new content, at once (within the timestamp resolution).
	write("test", "x0,x1,y\n0.1,0.4,0\n0.8,0.8,1\n")
	c3, err := s.loadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c3 == c1 || c3.Data.Test.X[0][1] != 0.4 {
		t.Errorf("a same-size rewrite was not picked up: test row 0 = %v", c3.Data.Test.X[0])
	}

	// Old timestamps (as after cp -p), content changed: the ctime and the
	// hash of a recently checked cache still catch it.
	write("test", "x0,x1,y\n0.1,0.5,0\n0.8,0.8,1\n")
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "s0_test.csv"), old, old); err != nil {
		t.Fatal(err)
	}
	c4, err := s.loadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c4.Data.Test.X[0][1] != 0.5 {
		t.Errorf("a rewrite with an old mtime was not picked up: test row 0 = %v", c4.Data.Test.X[0])
	}

	// A broken file is reported, not served from the cache.
	write("test", "")
	if _, err := s.loadDir(dir); err == nil {
		t.Error("an empty test file was not reported")
	}
}

// TestShiftListingFollowsTheDirectory: the listing of shift directories is
// kept while the federation directory is unchanged, and a shift directory
// created later, even at once (within the timestamp resolution), is seen.
func TestShiftListingFollowsTheDirectory(t *testing.T) {
	dir := t.TempDir()
	s := NewSiteCache(dir, "s0", SiteOptions{}, func(*SiteData) (struct{}, error) { return struct{}{}, nil })
	if got := s.ShiftRounds(); len(got) != 0 {
		t.Fatalf("empty directory: shift rounds %v", got)
	}
	// As if the listing had been read long after the directory last
	// changed (a ctime cannot be set back to age the directory itself).
	first := s.shifts
	if first == nil {
		t.Fatal("the listing of an unchanged directory was not kept")
	}
	first.checked = time.Now().Add(time.Hour)
	s.ShiftRounds()
	if first == nil || s.shifts != first {
		t.Fatal("an unchanged, old directory was listed again")
	}
	if err := os.Mkdir(ShiftDir(dir, 6), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ShiftDir(dir, 6), "s0_train.csv"), []byte("x0,y\n1,0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := s.ShiftRounds(); len(got) != 1 || got[0] != 6 {
		t.Fatalf("after creating %s: shift rounds %v, want [6]", ShiftDir(dir, 6), got)
	}
	if got := RoundDirAmong(dir, "s0", 7, s.ShiftRounds()); got != ShiftDir(dir, 6) {
		t.Errorf("round 7 reads %s, want %s", got, ShiftDir(dir, 6))
	}
	if got := RoundDirAmong(dir, "s0", 5, s.ShiftRounds()); got != dir {
		t.Errorf("round 5 reads %s, want %s", got, dir)
	}
	// Load follows the same rule: round 7 reads the shifted training split.
	if err := os.WriteFile(filepath.Join(ShiftDir(dir, 6), "s0_test.csv"), []byte("x0,y\n1,0\n2,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ShiftDir(dir, 6), "s0_train.csv"), []byte("x0,y\n7,0\n8,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err := s.Load(7); err != nil || c.Data.Train.X[0][0] != 7 {
		t.Errorf("Load(7) = %v, %v; want the shifted rows", c, err)
	}
}
