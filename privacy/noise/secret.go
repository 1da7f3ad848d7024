package noise

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// SecretSize is the length of a site secret in bytes (256 bits).
const SecretSize = 32

// secretHeader is the first line of a secret file: what it is and the
// version of its layout.
const secretHeader = "ptopofl site secret v1"

// Secret is a site's 256-bit secret. It keys every noise draw and every
// secret subsample of the site (Stream). It is created once with the site
// worker's configuration (LoadOrCreateSecret), never derived from anything
// the server knows (the campaign seed, the site's name), and never leaves
// the site: its String and GoString print no byte of it, so a log line or
// an error that formats one by mistake leaks nothing.
type Secret struct {
	key [SecretSize]byte
	ok  bool
}

// NewSecret draws a secret from r (crypto/rand.Reader in production).
func NewSecret(r io.Reader) (Secret, error) {
	var s Secret
	if _, err := io.ReadFull(r, s.key[:]); err != nil {
		return Secret{}, fmt.Errorf("noise: draw a site secret: %w", err)
	}
	s.ok = true
	return s, nil
}

// SecretFromBytes returns the secret whose bytes are b (SecretSize of
// them). Tests and the in-memory reference run use it to give every site
// a fixed secret.
func SecretFromBytes(b []byte) (Secret, error) {
	if len(b) != SecretSize {
		return Secret{}, fmt.Errorf("noise: a site secret has %d bytes, got %d", SecretSize, len(b))
	}
	var s Secret
	copy(s.key[:], b)
	s.ok = true
	return s, nil
}

// Valid reports whether s holds a secret (the zero Secret does not).
func (s Secret) Valid() bool { return s.ok }

// String prints no part of the secret.
func (s Secret) String() string {
	if !s.ok {
		return "noise.Secret(none)"
	}
	return "noise.Secret(redacted)"
}

// GoString prints no part of the secret either (%#v).
func (s Secret) GoString() string { return s.String() }

// LoadOrCreateSecret reads the site secret in the file at path, or, when
// there is no such file, draws a new one from crypto/rand and writes it
// there with mode 0600 (its directory created with mode 0700), reporting
// created. The file holds a header line and the secret in hex. A file that
// group or others may read or write is refused, as ssh refuses such a key:
// the secret is what keeps the server from predicting the site's noise.
// A file that exists but does not parse is an error, never silently
// replaced: a new secret would change every release a crash-resumed
// campaign repeats.
func LoadOrCreateSecret(path string) (s Secret, created bool, err error) {
	if path == "" {
		return Secret{}, false, errors.New("noise: site secret: no file given")
	}
	s, err = loadSecret(path)
	if err == nil {
		return s, false, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return Secret{}, false, err
	}
	s, err = NewSecret(rand.Reader)
	if err != nil {
		return Secret{}, false, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return Secret{}, false, fmt.Errorf("noise: site secret %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		// Another worker of the same site created it first: use theirs.
		s, err = loadSecret(path)
		return s, false, err
	}
	if err != nil {
		return Secret{}, false, fmt.Errorf("noise: site secret %s: %w", path, err)
	}
	_, werr := fmt.Fprintf(f, "%s\n%s\n", secretHeader, hex.EncodeToString(s.key[:]))
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(path)
		return Secret{}, false, fmt.Errorf("noise: write site secret %s: %w", path, err)
	}
	return s, true, nil
}

// LoadSecret reads the site secret in the file at path, refusing, as
// LoadOrCreateSecret does, a file that group or others may read and one
// that does not parse. Unlike LoadOrCreateSecret it never creates one: a
// missing file is an error for which errors.Is(err, fs.ErrNotExist) holds.
func LoadSecret(path string) (Secret, error) {
	if path == "" {
		return Secret{}, errors.New("noise: site secret: no file given")
	}
	return loadSecret(path)
}

func loadSecret(path string) (Secret, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Secret{}, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return Secret{}, fmt.Errorf("noise: site secret %s has mode %04o: others may read it; chmod 600 it (or remove it to draw a new secret before a campaign starts)", path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return Secret{}, fmt.Errorf("noise: site secret %s: %w", path, err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || strings.TrimSpace(lines[0]) != secretHeader {
		return Secret{}, fmt.Errorf("noise: site secret %s: not a ptopofl site secret (want the line %q and 64 hex digits)", path, secretHeader)
	}
	key, err := hex.DecodeString(strings.TrimSpace(lines[1]))
	if err != nil || len(key) != SecretSize {
		return Secret{}, fmt.Errorf("noise: site secret %s: want %d hex digits on line 2", path, 2*SecretSize)
	}
	return SecretFromBytes(key)
}

// Key names one release of a site (or one secret draw, such as its
// descriptor subsample). Every field takes part in the derivation, each
// length-prefixed so that no two keys encode alike.
type Key struct {
	Campaign string
	// Attempt is the campaign's attempt (0 and 1 both mean the first).
	Attempt int
	Round   int
	Site    string
	// Purpose says what the draw is for ("train", "descriptor",
	// "metrics", "subsample", ...).
	Purpose string
	// Input is a digest of everything the release is computed from other
	// than the site's data (the activity's input), so that two different
	// releases never share noise even if their other fields agree.
	Input [32]byte
}

// Stream returns the stream of key k: ChaCha8 seeded with
// HMAC-SHA256(secret, "ptopofl/noise/v1" ‖ k). It panics on the zero
// Secret (a programmer error: a DP release without a secret).
func (s Secret) Stream(k Key) *Stream {
	var seed [32]byte
	copy(seed[:], s.keyed("ptopofl/noise/v1", k))
	return newStream(seed)
}

// ReleaseID names the release of key k for the site's privacy ledger:
// HMAC-SHA256(secret, "ptopofl/release/v1" ‖ k) in hex. A retried
// activity (same key) has the same ID, so the ledger charges it once; the
// same key under another secret (one drawn after the first was lost) has
// another, so the ledger charges the fresh noise it would release. It
// reveals nothing of the secret or the noise (the HMAC is a PRF), and
// nothing the key does not. It panics on the zero Secret.
func (s Secret) ReleaseID(k Key) string {
	return hex.EncodeToString(s.keyed("ptopofl/release/v1", k))
}

// Seed returns the 32-byte seed of a site's secret draw named by k for a
// purpose outside this package's mechanisms: HMAC-SHA256(secret,
// "ptopofl/seed/v1" ‖ k). A secure aggregation derives each run's keys
// and masks from it (secagg.Group.Member), so a retried activity sends
// the same bytes and the server, which never sees the secret, predicts
// none of them. It is independent of Stream's and ReleaseID's outputs
// for the same key (another label), and panics on the zero Secret.
func (s Secret) Seed(k Key) [32]byte {
	var seed [32]byte
	copy(seed[:], s.keyed("ptopofl/seed/v1", k))
	return seed
}

// Fingerprint identifies the secret without revealing it: the first 16
// bytes of HMAC-SHA256(secret, "ptopofl/secret-fingerprint/v1") in hex.
// The site's ledger records it, so that a worker started with another
// secret than the one its releases were made with can tell. It panics on
// the zero Secret.
func (s Secret) Fingerprint() string {
	if !s.ok {
		panic("noise: Fingerprint of the zero Secret")
	}
	mac := hmac.New(sha256.New, s.key[:])
	mac.Write([]byte("ptopofl/secret-fingerprint/v1"))
	return hex.EncodeToString(mac.Sum(nil)[:16])
}

// keyed returns HMAC-SHA256(secret, label ‖ k), each field of k
// length-prefixed so that no two keys encode alike.
func (s Secret) keyed(label string, k Key) []byte {
	if !s.ok {
		panic("noise: Stream of the zero Secret")
	}
	mac := hmac.New(sha256.New, s.key[:])
	mac.Write([]byte(label))
	field := func(b []byte) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		mac.Write(n[:])
		mac.Write(b)
	}
	num := func(v int) {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], uint64(int64(v)))
		field(b[:])
	}
	attempt := k.Attempt
	if attempt == 0 {
		attempt = 1
	}
	field([]byte(k.Campaign))
	num(attempt)
	num(k.Round)
	field([]byte(k.Site))
	field([]byte(k.Purpose))
	field(k.Input[:])
	return mac.Sum(nil)
}
