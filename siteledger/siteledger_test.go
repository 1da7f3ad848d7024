package siteledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ptopofl/ptopofl/privacy"
	"github.com/ptopofl/ptopofl/privacy/ledger"
	"github.com/ptopofl/ptopofl/privacy/noise"
)

func release(id, data, campaign string, z float64) ledger.Release {
	return ledger.Release{ID: id, Data: data, Split: ledger.SplitTrain, Campaign: campaign, Round: 1, Purpose: "train",
		Mechanism: ledger.Gaussian, Params: ledger.GaussianParams(privacy.Event{Z: z, Q: 1, Count: 1})}
}

// epsilonOf is the ε of k Gaussian releases at noise multiplier z on the
// same data, at δ 1e-5 (exact Gaussian DP: μ = √k/z).
func epsilonOf(t *testing.T, k int, z float64) float64 {
	t.Helper()
	e, err := privacy.GaussianEpsilon(math.Sqrt(float64(k))/z, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestOpenCreates: the first Open draws the secret and writes the ledger
// (mode 0600) with its header, the secret's fingerprint and the budget; a
// second Open with the same settings appends nothing; another budget is
// recorded, and so is its absence.
func TestOpenCreates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "secrets")
	b := &ledger.Budget{Epsilon: 10, Delta: 1e-5}
	s, err := Open(dir, "site0", Options{Budget: b})
	if err != nil || !s.SecretCreated {
		t.Fatalf("first open: created %v, err %v", s != nil && s.SecretCreated, err)
	}
	fi, err := os.Stat(LedgerFile(dir, "site0"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("ledger file: %v, mode %v", err, fi.Mode())
	}
	lines := func() []string {
		b, err := os.ReadFile(LedgerFile(dir, "site0"))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	if n := len(lines()); n != 3 {
		t.Errorf("a new ledger has %d lines, want header, secret and budget:\n%s", n, strings.Join(lines(), "\n"))
	}
	again, err := Open(dir, "site0", Options{Budget: b})
	if err != nil || again.SecretCreated || again.Secret.Fingerprint() != s.Secret.Fingerprint() {
		t.Fatalf("second open: %v", err)
	}
	if n := len(lines()); n != 3 {
		t.Errorf("a second open with the same settings appended: %d lines", n)
	}
	if _, err := Open(dir, "site0", Options{}); err != nil {
		t.Fatal(err)
	}
	l, err := Read(LedgerFile(dir, "site0"))
	if err != nil || l.Budget != nil || l.Secret != s.Secret.Fingerprint() || l.Site != "site0" {
		t.Errorf("after an open without a budget: %+v, %v", l, err)
	}
}

// TestCharge: a charge is on disk when Charge returns (another reader
// sees it), a retry of it is free, the lifetime ε composes every release
// exactly, and a release beyond the budget is refused and not written.
func TestCharge(t *testing.T) {
	dir := t.TempDir()
	budget := &ledger.Budget{Epsilon: epsilonOf(t, 2, 3) * (1 + 1e-12), Delta: 1e-5}
	s, err := Open(dir, "site0", Options{Budget: budget})
	if err != nil {
		t.Fatal(err)
	}
	f := s.Ledger
	got, err := f.Charge([]ledger.Release{release("a", "d", "c1", 3)})
	if err != nil || got.Charged != 1 || math.Abs(got.Epsilon-epsilonOf(t, 1, 3)) > 1e-9 || got.Delta != 1e-5 || got.Budget != budget {
		t.Fatalf("first charge: %+v, %v", got, err)
	}
	if l, err := Read(f.Path()); err != nil || len(l.Releases) != 1 {
		t.Fatalf("a reader sees %v releases (%v)", l, err)
	}
	if got, err := f.Charge([]ledger.Release{release("a", "d", "c1", 3)}); err != nil || got.Charged != 0 {
		t.Errorf("a retry: %+v, %v; want it free", got, err)
	}
	if got, err = f.Charge([]ledger.Release{release("b", "d", "c2", 3)}); err != nil || got.Charged != 1 || math.Abs(got.Epsilon-epsilonOf(t, 2, 3)) > 1e-9 {
		t.Fatalf("second release: %+v, %v", got, err)
	}
	_, err = f.Charge([]ledger.Release{release("c", "d", "c3", 3)})
	var ex *ledger.ExceededError
	if !errors.As(err, &ex) {
		t.Fatalf("beyond the budget: %v", err)
	}
	l, err := Read(f.Path())
	if err != nil || len(l.Releases) != 2 {
		t.Errorf("a refused release was written: %d releases, %v", len(l.Releases), err)
	}
	// The retry of a charged release is free even with the budget spent.
	if _, err := f.Charge([]ledger.Release{release("b", "d", "c2", 3)}); err != nil {
		t.Errorf("a retry with the budget spent: %v", err)
	}
	r, err := ReportDir(dir)
	if err != nil || len(r.Sites) != 1 || r.Sites[0].Budget == nil || len(r.Sites[0].Campaigns) != 2 {
		t.Fatalf("report %+v, %v", r, err)
	}
	b, _ := json.Marshal(r)
	t.Logf("%s", b)
}

// TestSharedLedger: two openings of one site's ledger (two workers of the
// site) see each other's charges before they check the budget, so their
// releases together stay within it; 40 concurrent charges of distinct
// releases at a budget for 25 are split 25 charged and 15 refused.
func TestSharedLedger(t *testing.T) {
	dir := t.TempDir()
	budget := &ledger.Budget{Epsilon: epsilonOf(t, 25, 10) * (1 + 1e-12), Delta: 1e-5}
	a, err := Open(dir, "site0", Options{Budget: budget})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(dir, "site0", Options{Budget: budget})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	charged, refused := 0, 0
	for i := range 40 {
		f := a.Ledger
		if i%2 == 1 {
			f = b.Ledger
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := f.Charge([]ledger.Release{release(fmt.Sprint(i), "d", "c", 10)})
			mu.Lock()
			defer mu.Unlock()
			var ex *ledger.ExceededError
			switch {
			case err == nil:
				charged++
			case errors.As(err, &ex):
				refused++
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	l, err := Read(LedgerFile(dir, "site0"))
	if err != nil {
		t.Fatal(err)
	}
	if charged != 25 || refused != 15 || len(l.Releases) != 25 {
		t.Errorf("charged %d, refused %d, ledger holds %d; want 25, 15, 25", charged, refused, len(l.Releases))
	}
}

// TestTornLine: a last line a crash cut short is ignored by readers and
// truncated by the next charge, whose line then follows the last complete
// one; a broken complete line is an error naming the file and line.
func TestTornLine(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, "site0", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Ledger.Charge([]ledger.Release{release("a", "d", "c", 3)}); err != nil {
		t.Fatal(err)
	}
	path := LedgerFile(dir, "site0")
	fd, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	fd.WriteString(`{"kind":"release","release":{"id":"b","da`)
	fd.Close()
	if l, err := Read(path); err != nil || len(l.Releases) != 1 {
		t.Fatalf("reading past a torn line: %v", err)
	}
	other, err := Open(dir, "site0", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Ledger.Charge([]ledger.Release{release("c", "d", "c", 3)}); err != nil {
		t.Fatal(err)
	}
	l, err := Read(path)
	if err != nil || len(l.Releases) != 2 || l.Releases[1].ID != "c" {
		t.Fatalf("after the torn line: %+v, %v", l, err)
	}
	b, _ := os.ReadFile(path)
	os.WriteFile(path, append(b, []byte("{broken}\n")...), 0o600)
	if _, err := Read(path); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "line 5") {
		t.Errorf("a broken line: %v", err)
	}
}

// TestSecretNeverSilentlyReplaced: once the ledger records a release, a
// missing secret, or another one, stops Open with the files named and
// what to restore; restoring the original works; NewSecret starts with a
// new one, recorded in the ledger, under which the same noise key is a
// new release. A ledger without releases takes a new secret silently.
func TestSecretNeverSilentlyReplaced(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, "site0", Options{})
	if err != nil {
		t.Fatal(err)
	}
	spath := SecretFile(dir, "site0")
	// No releases yet: a lost secret is simply drawn again.
	os.Remove(spath)
	if s, err = Open(dir, "site0", Options{}); err != nil || !s.SecretCreated {
		t.Fatalf("no releases, no secret: %v", err)
	}
	id := s.Secret.ReleaseID(keyOf("c", 1))
	if _, err := s.Ledger.Charge([]ledger.Release{release(id, "d", "c", 3)}); err != nil {
		t.Fatal(err)
	}
	original, _ := os.ReadFile(spath)
	os.Remove(spath)
	_, err = Open(dir, "site0", Options{})
	if err == nil || !strings.Contains(err.Error(), spath+", which is missing: restore "+spath) || !strings.Contains(err.Error(), LedgerFile(dir, "site0")) {
		t.Errorf("missing secret: %v", err)
	}
	if _, err := os.Stat(spath); err == nil {
		t.Error("the refusal drew a new secret")
	}
	// Another secret in its place.
	other := filepath.Join(t.TempDir(), "other.secret")
	if _, err := Open(filepath.Dir(other), "other", Options{}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(SecretFile(filepath.Dir(other), "other"))
	os.WriteFile(spath, b, 0o600)
	if _, err := Open(dir, "site0", Options{}); err == nil || !strings.Contains(err.Error(), "is not the one its privacy ledger") || !strings.Contains(err.Error(), "restore the original "+spath) {
		t.Errorf("another secret: %v", err)
	}
	// The original restored.
	os.WriteFile(spath, original, 0o600)
	if _, err := Open(dir, "site0", Options{}); err != nil {
		t.Errorf("the original restored: %v", err)
	}
	// Lost for good: a new one, recorded; the same key is then a new release.
	os.Remove(spath)
	n, err := Open(dir, "site0", Options{NewSecret: true})
	if err != nil || !n.SecretCreated {
		t.Fatalf("NewSecret: %v", err)
	}
	l, _ := Read(LedgerFile(dir, "site0"))
	if l.Secret != n.Secret.Fingerprint() {
		t.Errorf("the ledger records secret %s, the worker uses %s", l.Secret, n.Secret.Fingerprint())
	}
	got, err := n.Ledger.Charge([]ledger.Release{release(n.Secret.ReleaseID(keyOf("c", 1)), "d", "c", 3)})
	if err != nil || got.Charged != 1 {
		t.Errorf("the same key under the new secret: %+v, %v; want a new release", got, err)
	}
}

func TestReportJSON(t *testing.T) {
	dir := t.TempDir()
	for _, site := range []string{"site1", "site0"} {
		var opt Options
		if site == "site0" {
			opt.Budget = &ledger.Budget{Epsilon: 10, Delta: 1e-6}
		}
		s, err := Open(dir, site, opt)
		if err != nil {
			t.Fatal(err)
		}
		if site == "site1" {
			if _, err := s.Ledger.Charge([]ledger.Release{release("x", "d", "camp", 2)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	r, err := ReportDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(r)
	want := fmt.Sprintf(`{"sites":[{"site":"site0","epsilon":0,"delta":0.000001,"budget":10,"campaigns":[]},{"site":"site1","epsilon":%v,"delta":0.00001,"budget":null,"campaigns":[{"campaign":"camp","epsilon":%v}]}]}`,
		epsilonOf(t, 1, 2), epsilonOf(t, 1, 2))
	if string(b) != want {
		t.Errorf("JSON\n%s\nwant\n%s", b, want)
	}
	if _, err := ReportDir(filepath.Join(dir, "none")); err == nil {
		t.Error("a missing directory was reported as empty")
	}
}

func keyOf(campaign string, round int) noise.Key {
	return noise.Key{Campaign: campaign, Round: round, Site: "site0", Purpose: "train"}
}
