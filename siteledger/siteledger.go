// Package siteledger keeps a site's privacy ledger (package
// privacy/ledger) in a file beside the site's secret: <site>.ledger next
// to <site>.secret in the worker's secret directory, one JSON entry a
// line, append-only, each charge written and fsynced before the release
// it pays for leaves the activity. It also holds the secret and the
// ledger together: a worker whose ledger records releases refuses to
// start when the secret they were made with is missing or another.
//
// Several workers of one site (processes, or several openings in one
// process) may share the files: a charge holds an exclusive flock(2) on
// the ledger while it reads what the others appended, checks the budget
// and appends, so no two charges compose against a stale ledger. What it
// is not: an accountant (package privacy composes) or a policy (the
// worker's configuration gives the budget).
package siteledger

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ptopofl/ptopofl/privacy/ledger"
	"github.com/ptopofl/ptopofl/privacy/noise"
)

// LedgerFile is the file of site's ledger in dir.
func LedgerFile(dir, site string) string { return filepath.Join(dir, site+".ledger") }

// SecretFile is the file of site's secret in dir.
func SecretFile(dir, site string) string { return filepath.Join(dir, site+".secret") }

// Options configures Open.
type Options struct {
	// Budget is the site operator's lifetime limit (nil: none; the
	// ledger is kept and nothing is refused).
	Budget *ledger.Budget
	// NewSecret starts the site even though its ledger records releases
	// made with another secret than the one in the directory (or one
	// that is missing, which it then draws): the releases made with the
	// new secret are charged afresh. Campaigns that ran with the old one
	// cannot repeat their releases.
	NewSecret bool
	// Now stamps the entries (nil: time.Now).
	Now func() time.Time
}

// Site is a site's secret and its ledger, as Open checked them.
type Site struct {
	Secret noise.Secret
	// SecretCreated reports that Open drew the secret.
	SecretCreated bool
	Ledger        *File
}

// Open opens site's secret and ledger in dir, creating what is missing
// (the directory with mode 0700, the secret with noise.LoadOrCreateSecret,
// the ledger with mode 0600 and its header), and records in the ledger the
// secret's fingerprint and opt.Budget when they differ from its last. It
// refuses, naming the files and what to restore, a ledger that records
// releases when the secret is missing or is not the one they were made
// with (unless opt.NewSecret): a new secret would release again, with
// fresh noise, every round a resumed campaign repeats, while the ledger
// would charge those as retries of releases it already holds.
func Open(dir, site string, opt Options) (*Site, error) {
	if dir == "" || site == "" {
		return nil, errors.New("siteledger: no directory or site")
	}
	if opt.Budget != nil {
		if err := opt.Budget.Validate(); err != nil {
			return nil, fmt.Errorf("site %s: privacy budget: %w", site, err)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("site %s: secret directory: %w", site, err)
	}
	lpath, spath := LedgerFile(dir, site), SecretFile(dir, site)
	var before *ledger.Ledger
	if _, err := os.Stat(lpath); err == nil {
		if before, err = Read(lpath); err != nil {
			return nil, err
		}
		if before.Site != site {
			return nil, fmt.Errorf("site %s: privacy ledger %s is site %s's; give each site its own secret directory or name", site, lpath, before.Site)
		}
	}
	spending := before != nil && before.Spending()
	secret, err := noise.LoadSecret(spath)
	created := false
	switch {
	case err == nil:
		if spending && before.Secret != "" && before.Secret != secret.Fingerprint() && !opt.NewSecret {
			return nil, fmt.Errorf("site %s: the secret %s is not the one its privacy ledger %s records %d releases made with (fingerprint %s, the ledger's %s): restore the original %s from the site's backup (another secret would release again, with fresh noise, every round a resumed campaign repeats); if it is lost for good, start the worker with --new-secret and the releases made with this one are charged afresh",
				site, spath, lpath, len(before.Releases), secret.Fingerprint(), before.Secret, spath)
		}
	case errors.Is(err, fs.ErrNotExist):
		if spending && !opt.NewSecret {
			return nil, fmt.Errorf("site %s: its privacy ledger %s records %d releases made with the secret %s, which is missing: restore %s from the site's backup (a new secret would release again, with fresh noise, every round a resumed campaign repeats); if it is lost for good, start the worker with --new-secret and the releases made with a new one are charged afresh",
				site, lpath, len(before.Releases), spath, spath)
		}
		if secret, created, err = noise.LoadOrCreateSecret(spath); err != nil {
			return nil, err
		}
	default:
		return nil, err
	}
	f := &File{path: lpath, site: site, budget: opt.Budget, now: opt.Now}
	if f.now == nil {
		f.now = time.Now
	}
	if err := f.create(); err != nil {
		return nil, err
	}
	err = f.locked(func(fd *os.File) error {
		var add []ledger.Entry
		if f.l.Secret != secret.Fingerprint() {
			add = append(add, ledger.Entry{Kind: ledger.KindSecret, Fingerprint: secret.Fingerprint()})
		}
		if !sameBudget(f.l.Budget, opt.Budget) {
			e := ledger.Entry{Kind: ledger.KindBudget}
			if b := opt.Budget; b != nil {
				e.Epsilon, e.Delta = b.Epsilon, b.Delta
			}
			add = append(add, e)
		}
		return f.append(fd, add)
	})
	if err != nil {
		return nil, err
	}
	return &Site{Secret: secret, SecretCreated: created, Ledger: f}, nil
}

func sameBudget(a, b *ledger.Budget) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// File is a site's ledger file. Its methods are safe for concurrent use.
type File struct {
	path, site string
	budget     *ledger.Budget
	now        func() time.Time

	mu sync.Mutex
	l  *ledger.Ledger
	// off is how many bytes of the file l has applied, lines how many
	// lines.
	off   int64
	lines int
}

// Path is the ledger's file.
func (f *File) Path() string { return f.path }

// Budget is the limit the site's worker enforces (nil: none).
func (f *File) Budget() *ledger.Budget { return f.budget }

// create writes the ledger's header when the file does not exist yet,
// with mode 0600, and fsyncs it and its directory.
func (f *File) create() error {
	fd, err := os.OpenFile(f.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("site %s: privacy ledger: %w", f.site, err)
	}
	b, err := ledger.Encode(ledger.Entry{Kind: ledger.KindHeader, Time: f.stamp(), Format: ledger.Format, Site: f.site})
	if err == nil {
		_, err = fd.Write(b)
	}
	err = errors.Join(err, fd.Sync(), fd.Close())
	if err == nil {
		err = syncDir(filepath.Dir(f.path))
	}
	if err != nil {
		os.Remove(f.path)
		return fmt.Errorf("site %s: privacy ledger %s: %w", f.site, f.path, err)
	}
	return nil
}

func (f *File) stamp() string { return f.now().UTC().Format(time.RFC3339) }

// syncDir fsyncs a directory, so that a file created in it survives a
// crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// locked runs fn holding f's mutex and an exclusive flock on the ledger,
// after bringing f.l up to date with what other writers appended; a last
// line a crash cut short (its writer held the lock it now has, so no one
// is writing it) is truncated away.
func (f *File) locked(fn func(fd *os.File) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	fd, err := os.OpenFile(f.path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("site %s: privacy ledger: %w", f.site, err)
	}
	defer fd.Close()
	if err := flock(fd, syscall.LOCK_EX); err != nil {
		return fmt.Errorf("site %s: lock privacy ledger %s: %w", f.site, f.path, err)
	}
	defer syscall.Flock(int(fd.Fd()), syscall.LOCK_UN)
	torn, err := f.refresh(fd)
	if err != nil {
		return err
	}
	if torn {
		if err := fd.Truncate(f.off); err != nil {
			return fmt.Errorf("site %s: privacy ledger %s: drop a torn last line: %w", f.site, f.path, err)
		}
	}
	return fn(fd)
}

func flock(fd *os.File, how int) error {
	for {
		err := syscall.Flock(int(fd.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// refresh applies what the file holds beyond f.off (everything, when the
// file is new to f or shorter than f.off) and reports a torn last line.
func (f *File) refresh(fd *os.File) (torn bool, err error) {
	fi, err := fd.Stat()
	if err != nil {
		return false, fmt.Errorf("site %s: privacy ledger %s: %w", f.site, f.path, err)
	}
	if f.l == nil || fi.Size() < f.off {
		f.l, f.off, f.lines = &ledger.Ledger{}, 0, 0
	}
	if fi.Size() == f.off {
		return false, nil
	}
	b := make([]byte, fi.Size()-f.off)
	if _, err := fd.ReadAt(b, f.off); err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("site %s: privacy ledger %s: %w", f.site, f.path, err)
	}
	entries, complete, err := ledger.Parse(b, f.lines+1)
	if err != nil {
		return false, fmt.Errorf("site %s: privacy ledger %s: %w", f.site, f.path, err)
	}
	for i, e := range entries {
		if err := f.l.Apply(e); err != nil {
			return false, fmt.Errorf("site %s: privacy ledger %s: entry %d after line %d: %w", f.site, f.path, i+1, f.lines, err)
		}
	}
	f.off += int64(complete)
	f.lines += strings.Count(string(b[:complete]), "\n")
	return complete < len(b), nil
}

// append writes entries at the end of the ledger in one write, fsyncs
// it, and applies them to f.l.
func (f *File) append(fd *os.File, entries []ledger.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	var buf []byte
	for _, e := range entries {
		e.Time = f.stamp()
		b, err := ledger.Encode(e)
		if err != nil {
			return err
		}
		buf = append(buf, b...)
	}
	if _, err := fd.WriteAt(buf, f.off); err != nil {
		return fmt.Errorf("site %s: append to privacy ledger %s: %w", f.site, f.path, err)
	}
	if err := fd.Sync(); err != nil {
		return fmt.Errorf("site %s: fsync privacy ledger %s: %w", f.site, f.path, err)
	}
	for _, e := range entries {
		if err := f.l.Apply(e); err != nil {
			return fmt.Errorf("site %s: privacy ledger %s: %w", f.site, f.path, err)
		}
	}
	f.off += int64(len(buf))
	f.lines += len(entries)
	return nil
}

// Lifetime is the site's lifetime privacy loss after a charge: ε at δ
// over every data file (the largest), and the budget enforced.
type Lifetime struct {
	Epsilon, Delta float64
	Budget         *ledger.Budget
	// Charged counts the releases the charge added (0: all were retries).
	Charged int
}

// Charge charges rs to the ledger before their bytes leave the site:
// those not yet in it (a retried activity's are) are checked against the
// budget and, when they fit, appended and fsynced; when they do not, none
// is, and the error is a *ledger.ExceededError. It returns the site's
// lifetime ε afterwards.
func (f *File) Charge(rs []ledger.Release) (Lifetime, error) {
	var out Lifetime
	err := f.locked(func(fd *os.File) error {
		fresh, err := f.l.Check(rs, f.budget)
		if err != nil {
			return err
		}
		entries := make([]ledger.Entry, len(fresh))
		for i := range fresh {
			entries[i] = ledger.Entry{Kind: ledger.KindRelease, Release: &fresh[i]}
		}
		if err := f.append(fd, entries); err != nil {
			return err
		}
		out.Charged = len(fresh)
		return f.lifetime(&out)
	})
	return out, err
}

// Lifetime returns the site's lifetime ε as the ledger now holds it.
func (f *File) Lifetime() (Lifetime, error) {
	var out Lifetime
	err := f.locked(func(*os.File) error { return f.lifetime(&out) })
	return out, err
}

func (f *File) lifetime(out *Lifetime) error {
	eps, err := f.l.Epsilon()
	if err != nil {
		return fmt.Errorf("site %s: privacy ledger %s: %w", f.site, f.path, err)
	}
	out.Epsilon, out.Delta, out.Budget = eps, f.l.Delta(), f.budget
	return nil
}

// Read reads the ledger in the file at path under a shared lock (a charge
// in progress finishes first). A last line a crash cut short is left out.
func Read(path string) (*ledger.Ledger, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("privacy ledger: %w", err)
	}
	defer fd.Close()
	if err := flock(fd, syscall.LOCK_SH); err != nil {
		return nil, fmt.Errorf("lock privacy ledger %s: %w", path, err)
	}
	defer syscall.Flock(int(fd.Fd()), syscall.LOCK_UN)
	b, err := io.ReadAll(fd)
	if err != nil {
		return nil, fmt.Errorf("privacy ledger %s: %w", path, err)
	}
	entries, _, err := ledger.Parse(b, 1)
	if err != nil {
		return nil, fmt.Errorf("privacy ledger %s: %w", path, err)
	}
	l := &ledger.Ledger{}
	for i, e := range entries {
		if err := l.Apply(e); err != nil {
			return nil, fmt.Errorf("privacy ledger %s: entry %d: %w", path, i+1, err)
		}
	}
	if l.Site == "" {
		return nil, fmt.Errorf("privacy ledger %s: no header (an empty or foreign file)", path)
	}
	return l, nil
}

// ReadDir reads every ledger (*.ledger) in dir, in the order of their
// sites' names. A directory without one gives none.
func ReadDir(dir string) ([]*ledger.Ledger, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("secret directory: %w", err)
	}
	names, err := filepath.Glob(filepath.Join(dir, "*.ledger"))
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	var out []*ledger.Ledger
	for _, n := range names {
		l, err := Read(n)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}

// SiteReport is one site's line of the ledger commands' JSON (`worker
// ledger`, `starter privacy ledger`): the site's lifetime ε at δ (the
// largest over its data files), its budget's ε (null when none) and the ε
// of each campaign's releases alone, in the order they first released.
// Scripts rely on these names.
type SiteReport struct {
	Site      string                 `json:"site"`
	Epsilon   float64                `json:"epsilon"`
	Delta     float64                `json:"delta"`
	Budget    *float64               `json:"budget"`
	Campaigns []ledger.CampaignSpend `json:"campaigns"`
	// Releases counts the releases charged (text output only).
	Releases int `json:"-"`
}

// Report is the ledger commands' JSON: {"sites": [...]}.
type Report struct {
	Sites []SiteReport `json:"sites"`
}

// ReportDir reads every ledger in dir (ReadDir) into a Report.
func ReportDir(dir string) (Report, error) {
	ls, err := ReadDir(dir)
	if err != nil {
		return Report{}, err
	}
	r := Report{Sites: []SiteReport{}}
	for _, l := range ls {
		s, err := l.Summary()
		if err != nil {
			return Report{}, fmt.Errorf("privacy ledger of site %s: %w", l.Site, err)
		}
		sr := SiteReport{Site: s.Site, Epsilon: s.Epsilon, Delta: s.Delta, Campaigns: s.Campaigns, Releases: s.Releases}
		if s.Budget != nil {
			b := s.Budget.Epsilon
			sr.Budget = &b
		}
		r.Sites = append(r.Sites, sr)
	}
	return r, nil
}
