package dataset

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"
)

// SiteCache keeps one site's data as last read and validated, with a value
// derived from them once (a site worker's standardised splits), per data
// directory: a site worker runs every round's training and evaluation (and
// any retry) on the same files, so parsing them again for each call only
// burns CPU. There is more than one directory only in a continual
// scenario, where the site's data change from some round on (RoundDir).
//
// A cached reading is served only while its files are unchanged: same
// path, inode, size, mtime and ctime, and, while those timestamps are too
// recent to trust, the same sha256 (see racyWindow). Errors are not
// cached: a missing or bad file is looked at again by the next call, so a
// fixed file is picked up at once. A SiteCache is safe for concurrent use.
type SiteCache[T any] struct {
	dir, site string
	opt       SiteOptions
	derive    func(*SiteData) (T, error)

	mu      sync.Mutex
	entries map[string]*CachedSite[T]
	// shifts is the listing of dir's shift directories as last read
	// (ShiftRounds), kept while the directory is unchanged.
	shifts *shiftListing
}

// CachedSite is what one reading of a site's files gave. Nothing in it is
// ever written after it is cached: callers read the rows and the derived
// value and must never modify them.
type CachedSite[T any] struct {
	Data *SiteData
	// Derived and DeriveErr are what the SiteCache's derive function
	// returned for Data: bad data stays bad until the files change.
	Derived   T
	DeriveErr error

	stamps [2]fileStamp // train, test
	// digested are the stamps taken just before the files were read
	// (zero when they could not be), for Digests.
	digested [2]fileStamp
	// checked is when the files were last hashed (see fresh).
	checked time.Time
}

// Digests returns the hex SHA-256 of the training and the test file the
// data were read from (hashed just before they were read), for a privacy
// ledger keyed by data rather than by file name. When the files could not
// be hashed then, it hashes them now.
func (e *CachedSite[T]) Digests() (train, test string, err error) {
	var sums [2]string
	for i, st := range e.digested {
		if st.path != "" {
			sums[i] = hex.EncodeToString(st.sha256[:])
			continue
		}
		path := e.Data.TrainFile
		if i == 1 {
			path = e.Data.TestFile
		}
		sum, err := hashFile(path)
		if err != nil {
			return "", "", fmt.Errorf("site %s: digest of %s: %w", e.Data.Site, path, err)
		}
		sums[i] = hex.EncodeToString(sum[:])
	}
	return sums[0], sums[1], nil
}

// FilesDigest returns the hex SHA-256 of the concatenated SHA-256 of the
// files at paths, in order: one digest for data kept in several files (an
// image split's images and labels).
func FilesDigest(paths ...string) (string, error) {
	h := sha256.New()
	for _, p := range paths {
		sum, err := hashFile(p)
		if err != nil {
			return "", fmt.Errorf("digest of %s: %w", p, err)
		}
		h.Write(sum[:])
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// NewSiteCache returns an empty cache of site's data in dir (a federation
// directory or the site's own; see LoadSite), read with opt; derive
// computes the derived value of each reading.
func NewSiteCache[T any](dir, site string, opt SiteOptions, derive func(*SiteData) (T, error)) *SiteCache[T] {
	return &SiteCache[T]{dir: dir, site: site, opt: opt, derive: derive}
}

// Load returns the site's data as they are in round (1-based; files under
// ShiftDir(dir, r) replace the originals from round r on), from the cache
// while the files are unchanged. Its errors are LoadSite's.
func (c *SiteCache[T]) Load(round int) (*CachedSite[T], error) {
	return c.loadDir(RoundDirAmong(c.dir, c.site, round, c.ShiftRounds()))
}

// shiftListing is ShiftRounds(dir) read at checked, while dir's stat was
// st. Adding or removing a shift directory changes dir's mtime and ctime,
// so an unchanged stat, both times safely older than the reading
// (racyWindow), means an unchanged listing.
type shiftListing struct {
	st      fileStat
	checked time.Time
	rounds  []int
}

// fileStat is what a stat says about a file's identity and version: path,
// device and inode, size, modification and status-change times. The
// status-change time (ctime) moves on every write, rename onto the path or
// metadata change, and no tool can set it back, unlike the mtime that
// cp -p, rsync or touch can.
type fileStat struct {
	path                      string
	dev, ino                  uint64
	size, modTime, changeTime int64 // ns
}

// fileStamp is a fileStat and the file's sha256.
type fileStamp struct {
	fileStat
	sha256 [sha256.Size]byte
}

func statFile(path string) (fileStat, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStat{}, err
	}
	st := fileStat{path: path, size: fi.Size(), modTime: fi.ModTime().UnixNano()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.dev, st.ino = uint64(sys.Dev), uint64(sys.Ino)
		st.changeTime = sys.Ctim.Sec*1e9 + sys.Ctim.Nsec
	}
	return st, nil
}

func hashFile(path string) (sum [sha256.Size]byte, err error) {
	f, err := os.Open(path)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return sum, err
	}
	h.Sum(sum[:0])
	return sum, nil
}

// racyWindow: a file whose mtime or ctime is this close to (or after) the
// moment it was hashed may have been rewritten within the resolution of
// those timestamps without changing them, so its hash is checked again on
// the next call (git's "racily clean" rule). Otherwise an unchanged stat
// means unchanged content, and no hashing is needed.
const racyWindow = 2 * time.Second

// fresh reports whether stats still describe the files e was read from
// without reading them: same path, inode, size, mtime and ctime, and both
// times safely older than the last hash.
func (e *CachedSite[T]) fresh(stats [2]fileStat) bool {
	limit := e.checked.Add(-racyWindow).UnixNano()
	for i, st := range stats {
		if e.stamps[i].fileStat != st || st.modTime >= limit || st.changeTime >= limit {
			return false
		}
	}
	return true
}

// ShiftRounds returns ShiftRounds(dir), listing the directory again only
// when its stat changed or is too recent to trust.
func (c *SiteCache[T]) ShiftRounds() []int {
	st, err := statFile(c.dir)
	if err != nil {
		return ShiftRounds(c.dir)
	}
	c.mu.Lock()
	l := c.shifts
	c.mu.Unlock()
	if l != nil {
		limit := l.checked.Add(-racyWindow).UnixNano()
		if l.st == st && st.modTime < limit && st.changeTime < limit {
			return l.rounds
		}
	}
	checked := time.Now()
	rounds := ShiftRounds(c.dir)
	if after, err := statFile(c.dir); err == nil && after == st {
		c.mu.Lock()
		c.shifts = &shiftListing{st: st, checked: checked, rounds: rounds}
		c.mu.Unlock()
	}
	return rounds
}

// loadDir returns the site's data in dir, parsed and derived, re-reading
// the files only when one of them changed (see SiteCache).
func (c *SiteCache[T]) loadDir(dir string) (*CachedSite[T], error) {
	stats := func() ([2]fileStat, error) {
		var st [2]fileStat
		for i, split := range []string{TrainSplit, TestSplit} {
			p, err := SiteFile(dir, c.site, split)
			if err != nil {
				return st, err
			}
			if st[i], err = statFile(p); err != nil {
				return st, err
			}
		}
		return st, nil
	}
	stamps := func() (t time.Time, st [2]fileStamp, err error) {
		t = time.Now()
		sts, err := stats()
		if err != nil {
			return t, st, err
		}
		for i := range sts {
			st[i].fileStat = sts[i]
			if st[i].sha256, err = hashFile(sts[i].path); err != nil {
				return t, st, err
			}
		}
		return t, st, nil
	}
	c.mu.Lock()
	e := c.entries[dir]
	c.mu.Unlock()
	if e != nil {
		if st, err := stats(); err == nil {
			c.mu.Lock()
			ok := e.fresh(st)
			c.mu.Unlock()
			if ok {
				return e, nil
			}
		}
	}
	checked, before, err := stamps()
	if err == nil && e != nil && e.stamps == before {
		c.mu.Lock()
		if checked.After(e.checked) {
			e.checked = checked
		}
		c.mu.Unlock()
		return e, nil
	}
	// A missing file or one that cannot be read: LoadSite reports it the
	// way it reports every problem with the data.
	d, lerr := LoadSite(dir, c.site, c.opt)
	if lerr != nil {
		return nil, lerr
	}
	e = &CachedSite[T]{Data: d, checked: checked}
	if err == nil {
		e.digested = before // what was hashed just before the reading
	}
	e.Derived, e.DeriveErr = c.derive(d)
	// Cache only what was read from files that did not change while they
	// were being read; otherwise the next call reads them again.
	if _, after, err2 := stamps(); err == nil && err2 == nil && after == before {
		e.stamps = before
		c.mu.Lock()
		if c.entries == nil {
			c.entries = map[string]*CachedSite[T]{}
		}
		c.entries[dir] = e
		c.mu.Unlock()
	}
	return e, nil
}
